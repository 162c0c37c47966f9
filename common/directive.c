/*
 * directive.c - parse and evaluate the "//!kjudge" lines of a submission.
 *
 * The server calls dir_parse() on upload (leaderboard name, early rejection);
 * the runner calls it again, then dir_check_names() against the spec's
 * variables and dir_eval_launch()/dir_eval_workspace() for every shape, and
 * passes the nvrtc options to the compile box. Expressions go to expr.c.
 *
 * Decisions the header leaves open:
 * - Purely line-based: a line is a directive when its first non-blank bytes
 *   (space, tab) are "//!kjudge", even inside a block comment. "//!kjudgeX"
 *   is an error, not ordinary text. A trailing '\r' (CRLF) is dropped.
 * - launch items are key=value (blanks around '=' allowed) in any order; a
 *   value runs to the first blank outside parentheses, so "smem=a + b" must
 *   be written "smem=(a + b)". grid/block/cluster must be "(E[,E[,E]])".
 * - Expressions are stored trimmed; each must fit EXPR_MAX_LEN - 1 bytes.
 * - "no launch line" is the one error with no line: err->line is 0.
 */
#include "directive.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define DIR_PREFIX "//!kjudge"
#define DIR_PREFIX_LEN 9
#define DIR_MAX_LINE 4096     /* bytes of one directive line after the prefix */
#define DIR_SHOW 32           /* bytes of user text quoted in a message */
#define DIR_MAX_WORKSPACE (INT64_C(1) << 34)

/* ---- errors ---- */

static int dir_fail(struct kj_err *err, int line, const char *file, int src_line,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Fill err with "line N: <message>" and err->line = N. */
static int dir_fail(struct kj_err *err, int line, const char *file, int src_line,
                    const char *fmt, ...)
{
    char what[KJ_ERR_MSG];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    kj_errf(err, KJ_EINVAL, file, src_line, "line %d: %s", line, what);
    if (err != NULL)
        err->line = line;
    return KJ_EINVAL;
}
#define DFAIL(err, line, ...) dir_fail((err), (line), __FILE__, __LINE__, __VA_ARGS__)

/* Printable copy of n bytes of user text, cut at max (<= DIR_SHOW) bytes. */
struct shown { char s[DIR_SHOW + 4]; };

static struct shown show_max(const char *s, size_t n, size_t max)
{
    struct shown out;
    kj_printable(out.s, max + 1, s, n);
    if (n > max)
        memcpy(out.s + max, "...", 4);
    return out;
}

static struct shown show(const char *s, size_t n)
{
    return show_max(s, n, DIR_SHOW);
}

static int is_blank(int c) { return c == ' ' || c == '\t'; }
static int is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_alnum(int c) { return is_alpha(c) || is_digit(c); }

static const char *skip_blanks(const char *p)
{
    while (is_blank(*p))
        p++;
    return p;
}

/* Length of the run of non-blank bytes at p. */
static size_t word_len(const char *p)
{
    size_t n = 0;
    while (p[n] != '\0' && !is_blank(p[n]))
        n++;
    return n;
}

/* ---- expressions and lists ---- */

/* Trim s[0..n), check its syntax and copy it into dst (EXPR_MAX_LEN bytes). */
static int store_expr(int line, const char *label, const char *s, size_t n, char *dst,
                      struct kj_err *err)
{
    struct kj_err e;

    while (n > 0 && is_blank(*s)) {
        s++;
        n--;
    }
    while (n > 0 && is_blank(s[n - 1]))
        n--;
    if (n == 0)
        return DFAIL(err, line, "%s: empty expression", label);
    if (n >= EXPR_MAX_LEN)
        return DFAIL(err, line, "%s: expression too long (%zu characters, max %d)", label, n,
                     EXPR_MAX_LEN - 1);
    memcpy(dst, s, n);
    dst[n] = '\0';
    kj_err_clear(&e);
    if (expr_check(dst, NULL, &e) != 0)
        return DFAIL(err, line, "%s: %s", label, e.msg);
    return 0;
}

/* Scan a launch value at *pp: up to the first blank outside parentheses. */
static int scan_value(int line, const char *key, const char **pp, size_t *n,
                      struct kj_err *err)
{
    const char *p = *pp;
    int depth = 0;

    while (*p != '\0' && !(depth == 0 && is_blank(*p))) {
        if (*p == '(') {
            depth++;
        } else if (*p == ')') {
            if (depth == 0)
                return DFAIL(err, line, "launch: %s: unbalanced parentheses (')' without '(')",
                             key);
            depth--;
        }
        p++;
    }
    if (depth > 0)
        return DFAIL(err, line, "launch: %s: unbalanced parentheses (missing ')')", key);
    if (p == *pp)
        return DFAIL(err, line, "launch: %s: missing value after '='", key);
    *n = (size_t)(p - *pp);
    return 0;
}

static int all_blank(const char *s, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (!is_blank(s[i]))
            return 0;
    return 1;
}

/* Split "(E[,E[,E]])" (n bytes at v, balanced) into comps; count in *ncomp. */
static int split_list(int line, const char *key, const char *v, size_t n,
                      char comps[3][EXPR_MAX_LEN], int *ncomp, struct kj_err *err)
{
    char label[24];
    size_t i, piece = 1;
    int depth = 0, rc;

    for (i = 0; i < n; i++) {
        depth += v[i] == '(' ? 1 : v[i] == ')' ? -1 : 0;
        if (depth == 0)
            break;
    }
    if (v[0] != '(' || i != n - 1)
        return DFAIL(err, line, "launch: %s must be a parenthesized list such as "
                     "%s=(X, Y, Z), got '%s'", key, key, show(v, n).s);
    *ncomp = 0;
    for (i = 1; i < n; i++) {
        if (v[i] == '(')
            depth++;
        else if (v[i] == ')' && i < n - 1)
            depth--;
        if (i < n - 1 && !(v[i] == ',' && depth == 0))
            continue;
        /* A top-level ',' or the closing ')' ends a component. */
        if (*ncomp == 3)
            return DFAIL(err, line, "launch: %s has more than 3 components", key);
        if (all_blank(v + piece, i - piece))
            return DFAIL(err, line, "launch: %s: empty component %d in '%s'", key, *ncomp + 1,
                         show(v, n).s);
        snprintf(label, sizeof label, "%s.%c", key, "xyz"[*ncomp]);
        if ((rc = store_expr(line, label, v + piece, i - piece, comps[*ncomp], err)) != 0)
            return rc;
        (*ncomp)++;
        piece = i + 1;
    }
    return 0;
}

/* ---- launch ---- */

enum { KEY_GRID = 1, KEY_BLOCK = 2, KEY_SMEM = 4, KEY_CLUSTER = 8 };

static const struct launch_key {
    const char *name;
    int bit;
} launch_keys[] = {
    {"grid", KEY_GRID}, {"block", KEY_BLOCK}, {"smem", KEY_SMEM}, {"cluster", KEY_CLUSTER},
};

static int kernel_char_ok(int c, int depth)
{
    return is_alnum(c) || c == ':' || c == '<' || c == '>' ||
           (depth > 0 && (c == ',' || c == ' '));
}

/* KERNEL at *pp: an identifier or template-id with balanced <>, ends at a
 * blank outside <>. Copied as written into out (DIR_MAX_KERNEL bytes). */
static int scan_kernel(int line, const char **pp, char *out, struct kj_err *err)
{
    const char *start = skip_blanks(*pp), *p = start;
    int depth = 0;

    if (*p == '\0' || *p == '=')
        return DFAIL(err, line, "launch: missing kernel name");
    if (!is_alpha(*p) && *p != ':')
        return DFAIL(err, line, "launch: kernel name must start with a letter, '_' or "
                     "'::', got '%s'", show(p, word_len(p)).s);
    for (; *p != '\0' && !(depth == 0 && is_blank(*p)); p++) {
        if (*p == '=' && depth == 0)
            return DFAIL(err, line, "launch: missing kernel name before '%s'",
                         show(start, word_len(start)).s);
        if (*p == '=') /* ran on past a '<' into "key=" */
            return DFAIL(err, line, "launch: unbalanced '<' in kernel name");
        if (!kernel_char_ok((unsigned char)*p, depth))
            return DFAIL(err, line, "launch: bad character '%s' in kernel name",
                         show(p, 1).s);
        if (*p == '<')
            depth++;
        else if (*p == '>' && --depth < 0)
            return DFAIL(err, line, "launch: unbalanced '>' in kernel name");
    }
    if (depth > 0)
        return DFAIL(err, line, "launch: unbalanced '<' in kernel name");
    if (*skip_blanks(p) == '=')
        return DFAIL(err, line, "launch: missing kernel name before '%s'",
                     show(start, (size_t)(p - start)).s);
    if ((size_t)(p - start) >= DIR_MAX_KERNEL)
        return DFAIL(err, line, "launch: kernel name too long (max %d characters)",
                     DIR_MAX_KERNEL - 1);
    memcpy(out, start, (size_t)(p - start));
    out[p - start] = '\0';
    *pp = p;
    return 0;
}

/* One key=value item of a launch line at *pp; *seen collects the keys. */
static int parse_launch_item(int line, struct dir_launch *l, const char **pp, int *seen,
                             struct kj_err *err)
{
    const char *p = *pp, *key = p, *val;
    size_t klen = 0, vlen = 0, i;
    int rc;

    while (is_alnum(p[klen]))
        klen++;
    if (klen == 0 || *skip_blanks(p + klen) != '=')
        return DFAIL(err, line, "launch: expected key=value, got '%s' (an expression with "
                     "spaces needs parentheses)", show(p, word_len(p)).s);
    for (i = 0; i < sizeof launch_keys / sizeof launch_keys[0]; i++)
        if (strlen(launch_keys[i].name) == klen && memcmp(launch_keys[i].name, key, klen) == 0)
            break;
    if (i == sizeof launch_keys / sizeof launch_keys[0])
        return DFAIL(err, line, "launch: unknown key '%s' (expected grid, block, smem or "
                     "cluster)", show(key, klen).s);
    if (*seen & launch_keys[i].bit)
        return DFAIL(err, line, "launch: duplicate key '%s'", launch_keys[i].name);
    *seen |= launch_keys[i].bit;
    val = skip_blanks(skip_blanks(p + klen) + 1);
    if ((rc = scan_value(line, launch_keys[i].name, &val, &vlen, err)) != 0)
        return rc;
    *pp = val + vlen;
    switch (launch_keys[i].bit) {
    case KEY_GRID: return split_list(line, "grid", val, vlen, l->grid, &l->ngrid, err);
    case KEY_BLOCK: return split_list(line, "block", val, vlen, l->block, &l->nblock, err);
    case KEY_CLUSTER:
        return split_list(line, "cluster", val, vlen, l->cluster, &l->ncluster, err);
    default: return store_expr(line, "smem", val, vlen, l->smem, err);
    }
}

/* launch KERNEL key=value... (p points after the verb). */
static int parse_launch(struct directives *d, int line, const char *p, struct kj_err *err)
{
    struct dir_launch *l;
    int seen = 0, rc;

    if (d->nlaunch >= DIR_MAX_LAUNCHES)
        return DFAIL(err, line, "too many launch lines (max %d)", DIR_MAX_LAUNCHES);
    l = &d->launch[d->nlaunch];
    memset(l, 0, sizeof *l);
    l->line = line;
    if ((rc = scan_kernel(line, &p, l->kernel, err)) != 0)
        return rc;
    for (p = skip_blanks(p); *p != '\0'; p = skip_blanks(p))
        if ((rc = parse_launch_item(line, l, &p, &seen, err)) != 0)
            return rc;
    if (!(seen & KEY_GRID))
        return DFAIL(err, line, "launch: missing grid=(...)");
    if (!(seen & KEY_BLOCK))
        return DFAIL(err, line, "launch: missing block=(...)");
    d->nlaunch++;
    return 0;
}

/* ---- the other verbs ---- */

static int parse_leaderboard(struct directives *d, int line, const char *p,
                             struct kj_err *err)
{
    size_t n, i;

    if (d->leaderboard_line != 0)
        return DFAIL(err, line, "leaderboard given twice (first on line %d)",
                     d->leaderboard_line);
    p = skip_blanks(p);
    n = word_len(p);
    if (n == 0)
        return DFAIL(err, line, "leaderboard: missing name");
    for (i = 0; i < n; i++)
        if (!((p[i] >= 'a' && p[i] <= 'z') || is_digit(p[i]) || p[i] == '_'))
            return DFAIL(err, line, "leaderboard: bad name '%s' (use a-z, 0-9 and _)",
                         show(p, n).s);
    if (n >= sizeof d->leaderboard)
        return DFAIL(err, line, "leaderboard: name too long (max %zu characters)",
                     sizeof d->leaderboard - 1);
    if (*skip_blanks(p + n) != '\0')
        return DFAIL(err, line, "leaderboard: unexpected '%s' after the name",
                     show(skip_blanks(p + n), word_len(skip_blanks(p + n))).s);
    memcpy(d->leaderboard, p, n);
    d->leaderboard[n] = '\0';
    d->leaderboard_line = line;
    return 0;
}

/* The single word after a verb: blanks around it skipped, nothing after it.
 * *n gets its length; 0 when missing (the caller names what is missing). */
static int one_word(int line, const char *verb, const char **pp, size_t *n, struct kj_err *err)
{
    const char *p = skip_blanks(*pp), *rest;
    *n = word_len(p);
    rest = skip_blanks(p + *n);
    if (*n > 0 && *rest != '\0')
        return DFAIL(err, line, "%s: unexpected '%s' after the name", verb,
                     show(rest, word_len(rest)).s);
    *pp = p;
    return 0;
}

static int parse_gpu(struct directives *d, int line, const char *p, struct kj_err *err)
{
    size_t n, i;
    int rc;

    if (d->gpu_line != 0)
        return DFAIL(err, line, "gpu given twice (first on line %d)", d->gpu_line);
    if ((rc = one_word(line, "gpu", &p, &n, err)) != 0)
        return rc;
    if (n == 0)
        return DFAIL(err, line, "gpu: missing name (a GPU type of the leaderboard, e.g. H200)");
    for (i = 0; i < n; i++)
        if (!(is_alnum(p[i]) || p[i] == '-'))
            return DFAIL(err, line, "gpu: bad name '%s' (use A-Z, a-z, 0-9, _ and -)",
                         show(p, n).s);
    if (n >= sizeof d->gpu)
        return DFAIL(err, line, "gpu: name too long (max %zu characters)", sizeof d->gpu - 1);
    memcpy(d->gpu, p, n);
    d->gpu[n] = '\0';
    d->gpu_line = line;
    return 0;
}

static int parse_mode(struct directives *d, int line, const char *p, struct kj_err *err)
{
    static const char *const modes[] = {"test", "benchmark", "leaderboard"};
    size_t n;
    int rc;

    if (d->mode_line != 0)
        return DFAIL(err, line, "mode given twice (first on line %d)", d->mode_line);
    if ((rc = one_word(line, "mode", &p, &n, err)) != 0)
        return rc;
    if (n == 0)
        return DFAIL(err, line, "mode: missing (test, benchmark or leaderboard)");
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        if (strlen(modes[i]) == n && memcmp(modes[i], p, n) == 0) {
            memcpy(d->mode, p, n);
            d->mode[n] = '\0';
            d->mode_line = line;
            return 0;
        }
    }
    return DFAIL(err, line, "mode: '%s' is not test, benchmark or leaderboard", show(p, n).s);
}

static int parse_workspace(struct directives *d, int line, const char *p,
                           struct kj_err *err)
{
    int rc;

    if (d->workspace_line != 0)
        return DFAIL(err, line, "workspace given twice (first on line %d)", d->workspace_line);
    p = skip_blanks(p);
    if (*p == '\0')
        return DFAIL(err, line, "workspace: missing size expression");
    if ((rc = store_expr(line, "workspace", p, strlen(p), d->workspace, err)) != 0)
        return rc;
    d->workspace_line = line;
    return 0;
}

/* Write the allow-list for messages into buf. */
static void nvrtc_allowed_list(char *buf, size_t sz);

static int parse_nvrtc(struct directives *d, int line, const char *p, struct kj_err *err)
{
    char allowed[200];
    int count = 0;
    size_t n;

    for (p = skip_blanks(p); *p != '\0'; p = skip_blanks(p + n), count++) {
        n = word_len(p);
        if (n >= DIR_MAX_OPT)
            return DFAIL(err, line, "nvrtc: option '%s' is too long (max %d characters)",
                         show(p, n).s, DIR_MAX_OPT - 1);
        if (d->nnvrtc >= DIR_MAX_NVRTC)
            return DFAIL(err, line, "too many nvrtc options (max %d)", DIR_MAX_NVRTC);
        memcpy(d->nvrtc[d->nnvrtc], p, n);
        d->nvrtc[d->nnvrtc][n] = '\0';
        if (!dir_nvrtc_allowed(d->nvrtc[d->nnvrtc])) {
            nvrtc_allowed_list(allowed, sizeof allowed);
            return DFAIL(err, line, "nvrtc option '%s' not allowed; allowed: %s",
                         show_max(p, n, 20).s, allowed);
        }
        d->nvrtc_line[d->nnvrtc++] = line;
    }
    if (count == 0)
        return DFAIL(err, line, "nvrtc: no options given");
    return 0;
}

/* ---- lines ---- */

/* One directive; text is what follows "//!kjudge" on the line. */
static int parse_directive(struct directives *d, int line, const char *text,
                           struct kj_err *err)
{
    const char *verb = skip_blanks(text);
    size_t n = word_len(verb);

    if (n == 0)
        return DFAIL(err, line, "'//!kjudge' without a directive (expected leaderboard, "
                     "gpu, mode, launch, workspace or nvrtc)");
    if (n == 6 && memcmp(verb, "launch", 6) == 0)
        return parse_launch(d, line, verb + n, err);
    if (n == 11 && memcmp(verb, "leaderboard", 11) == 0)
        return parse_leaderboard(d, line, verb + n, err);
    if (n == 3 && memcmp(verb, "gpu", 3) == 0)
        return parse_gpu(d, line, verb + n, err);
    if (n == 4 && memcmp(verb, "mode", 4) == 0)
        return parse_mode(d, line, verb + n, err);
    if (n == 9 && memcmp(verb, "workspace", 9) == 0)
        return parse_workspace(d, line, verb + n, err);
    if (n == 5 && memcmp(verb, "nvrtc", 5) == 0)
        return parse_nvrtc(d, line, verb + n, err);
    return DFAIL(err, line, "unknown directive '%s' (expected leaderboard, gpu, mode, launch, "
                 "workspace or nvrtc)", show(verb, n).s);
}

/* One source line (n bytes, without its '\n' and '\r'); ignored unless it
 * is a directive. */
static int handle_line(struct directives *d, int line, const char *s, size_t n,
                       struct kj_err *err)
{
    char buf[DIR_MAX_LINE];
    size_t i = 0;

    while (i < n && is_blank(s[i]))
        i++;
    if (n - i < DIR_PREFIX_LEN || memcmp(s + i, DIR_PREFIX, DIR_PREFIX_LEN) != 0)
        return 0;
    i += DIR_PREFIX_LEN;
    if (i < n && !is_blank(s[i]))
        return DFAIL(err, line, "'//!kjudge' must be followed by a blank and a directive, "
                     "got '//!kjudge%s'", show(s + i, n - i).s);
    if (n - i >= sizeof buf)
        return DFAIL(err, line, "directive too long (max %zu bytes)", sizeof buf - 1);
    memcpy(buf, s + i, n - i);
    buf[n - i] = '\0';
    return parse_directive(d, line, buf, err);
}

int dir_parse(const char *src, size_t len, struct directives *out, struct kj_err *err)
{
    const char *nul, *nl;
    size_t pos = 0, end, n;
    int line = 0, rc;

    memset(out, 0, sizeof *out);
    if (src == NULL)
        len = 0;
    if (len > 0 && (nul = memchr(src, '\0', len)) != NULL) {
        for (pos = 0, line = 1; pos < (size_t)(nul - src); pos++)
            line += src[pos] == '\n';
        return DFAIL(err, line, "the source contains a NUL byte");
    }
    while (pos < len) {
        line++;
        nl = memchr(src + pos, '\n', len - pos);
        end = nl != NULL ? (size_t)(nl - src) : len;
        n = end - pos;
        if (n > 0 && src[end - 1] == '\r')
            n--;
        if ((rc = handle_line(out, line, src + pos, n, err)) != 0)
            return rc;
        pos = end + 1;
    }
    if (out->nlaunch == 0)
        return KJ_FAIL(err, KJ_EINVAL, "no '//!kjudge launch' line: a submission must "
                       "declare at least one kernel launch");
    return 0;
}

/* ---- names and evaluation ---- */

/* "T, H, GS" into buf, or "none". */
static void known_list(const struct expr_vars *vars, char *buf, size_t sz)
{
    size_t used = 0, n;
    int i;

    buf[0] = '\0';
    for (i = 0; vars != NULL && vars->names != NULL && i < vars->n; i++) {
        n = strlen(vars->names[i]);
        if (used + n + 3 > sz)
            break;
        if (used > 0) {
            memcpy(buf + used, ", ", 2);
            used += 2;
        }
        memcpy(buf + used, vars->names[i], n + 1);
        used += n;
    }
    if (used == 0)
        snprintf(buf, sz, "none");
}

static void label_of(char *buf, size_t sz, const char *key, int comp)
{
    if (comp < 0)
        snprintf(buf, sz, "%s", key);
    else
        snprintf(buf, sz, "%s.%c", key, "xyz"[comp]);
}

static int check_one(int line, const char *key, int comp, const char *text,
                     const struct expr_vars *vars, struct kj_err *err)
{
    char name[EXPR_MAX_LEN], known[128], label[24];
    struct kj_err e;

    kj_err_clear(&e);
    if (expr_check_unknown(text, vars, name, sizeof name, &e) == 0)
        return 0;
    label_of(label, sizeof label, key, comp);
    if (name[0] != '\0') {
        known_list(vars, known, sizeof known);
        return DFAIL(err, line, "unknown variable '%s' in %s (known: %s)",
                     show(name, strlen(name)).s, label, known);
    }
    return DFAIL(err, line, "%s: %s", label, e.msg);
}

int dir_check_names(const struct directives *d, const struct expr_vars *vars,
                    struct kj_err *err)
{
    const struct dir_launch *l;
    int i, c, rc = 0;

    for (i = 0; i < d->nlaunch && rc == 0; i++) {
        l = &d->launch[i];
        for (c = 0; c < l->ngrid && rc == 0; c++)
            rc = check_one(l->line, "grid", c, l->grid[c], vars, err);
        for (c = 0; c < l->nblock && rc == 0; c++)
            rc = check_one(l->line, "block", c, l->block[c], vars, err);
        for (c = 0; c < l->ncluster && rc == 0; c++)
            rc = check_one(l->line, "cluster", c, l->cluster[c], vars, err);
        if (rc == 0 && l->smem[0] != '\0')
            rc = check_one(l->line, "smem", -1, l->smem, vars, err);
    }
    if (rc == 0 && d->workspace[0] != '\0')
        rc = check_one(d->workspace_line, "workspace", -1, d->workspace, vars, err);
    return rc;
}

/* Evaluate text and check lo <= value <= hi. */
static int eval_range(int line, const char *key, int comp, const char *text,
                      const struct expr_vars *vars, int64_t lo, int64_t hi, int64_t *v,
                      struct kj_err *err)
{
    char label[24];
    struct kj_err e;
    int rc;

    kj_err_clear(&e);
    label_of(label, sizeof label, key, comp);
    if ((rc = expr_eval(text, vars, v, &e)) != 0) {
        if (rc != KJ_EINVAL)
            return KJ_FAIL(err, rc, "line %d: %s: %s", line, label, e.msg);
        return DFAIL(err, line, "%s: %s", label, e.msg);
    }
    if (*v < lo)
        return DFAIL(err, line, "%s = %" PRId64 ", must be >= %" PRId64, label, *v, lo);
    if (*v > hi)
        return DFAIL(err, line, "%s = %" PRId64 " is too large (max %" PRId64 ")", label, *v,
                     hi);
    return 0;
}

/* Evaluate n components of a list into dims (missing ones stay 1). */
static int eval_list(int line, const char *key, int n, const char comps[3][EXPR_MAX_LEN],
                     const struct expr_vars *vars, uint32_t dims[3], struct kj_err *err)
{
    int64_t v;
    int c, rc;

    for (c = 0; c < 3; c++)
        dims[c] = 1;
    for (c = 0; c < n && c < 3; c++) {
        if ((rc = eval_range(line, key, c, comps[c], vars, 1, INT32_MAX, &v, err)) != 0)
            return rc;
        dims[c] = (uint32_t)v;
    }
    return 0;
}

int dir_eval_launch(const struct dir_launch *l, const struct expr_vars *vars,
                    struct dir_dims *out, struct kj_err *err)
{
    int64_t v = 0;
    int rc;

    memset(out, 0, sizeof *out);
    if (l->ngrid < 1 || l->ngrid > 3 || l->nblock < 1 || l->nblock > 3 ||
        l->ncluster < 0 || l->ncluster > 3)
        return KJ_FAIL(err, KJ_EINTERNAL, "line %d: launch was not filled by dir_parse",
                       l->line);
    if ((rc = eval_list(l->line, "grid", l->ngrid, l->grid, vars, out->grid, err)) != 0 ||
        (rc = eval_list(l->line, "block", l->nblock, l->block, vars, out->block, err)) != 0 ||
        (rc = eval_list(l->line, "cluster", l->ncluster, l->cluster, vars, out->cluster,
                        err)) != 0)
        return rc;
    out->has_cluster = l->ncluster > 0;
    if (l->smem[0] != '\0' &&
        (rc = eval_range(l->line, "smem", -1, l->smem, vars, 0, UINT32_MAX, &v, err)) != 0)
        return rc;
    out->smem = (uint32_t)v;
    return 0;
}

int dir_eval_workspace(const struct directives *d, const struct expr_vars *vars,
                       uint64_t *out, struct kj_err *err)
{
    int64_t v;
    int rc;

    *out = 0;
    if (d->workspace[0] == '\0')
        return 0;
    rc = eval_range(d->workspace_line, "workspace", -1, d->workspace, vars, 0,
                    DIR_MAX_WORKSPACE, &v, err);
    if (rc == 0)
        *out = (uint64_t)v;
    return rc;
}

/* ---- the NVRTC allow-list ---- */

enum opt_kind {
    OPT_EXACT,  /* the text itself */
    OPT_BOOL,   /* text followed by true or false */
    OPT_REGS,   /* text followed by a register count 16..255 */
    OPT_DEFINE  /* -DNAME or -DNAME=VALUE, VALUE of [A-Za-z0-9_.] */
};

static const struct nvrtc_rule {
    const char *text;
    enum opt_kind kind;
    const char *shown; /* how the allow-list message shows it; NULL = an alias */
} nvrtc_rules[] = {
    {"--use_fast_math", OPT_EXACT, "--use_fast_math"},
    {"-use_fast_math", OPT_EXACT, NULL},
    {"--ftz=", OPT_BOOL, "--ftz=B"},
    {"--prec-div=", OPT_BOOL, "--prec-div=B"},
    {"--prec-sqrt=", OPT_BOOL, "--prec-sqrt=B"},
    {"--fmad=", OPT_BOOL, "--fmad=B"},
    {"--maxrregcount=", OPT_REGS, "--maxrregcount=N"},
    {"-maxrregcount=", OPT_REGS, NULL},
    {"--extra-device-vectorization", OPT_EXACT, "--extra-device-vectorization"},
    {"--generate-line-info", OPT_EXACT, "--generate-line-info"},
    {"-lineinfo", OPT_EXACT, "-lineinfo"},
    {"-D", OPT_DEFINE, "-DNAME[=VALUE]"},
};
#define NVRTC_LIST_NOTE "(B: true|false, N: 16..255)"

static void nvrtc_allowed_list(char *buf, size_t sz)
{
    size_t i, used = 0, n;

    buf[0] = '\0';
    for (i = 0; i < sizeof nvrtc_rules / sizeof nvrtc_rules[0]; i++) {
        if (nvrtc_rules[i].shown == NULL)
            continue;
        n = strlen(nvrtc_rules[i].shown);
        if (used + n + 2 > sz)
            return;
        memcpy(buf + used, nvrtc_rules[i].shown, n);
        buf[used + n] = ' ';
        used += n + 1;
        buf[used] = '\0';
    }
    if (used + sizeof NVRTC_LIST_NOTE <= sz)
        memcpy(buf + used, NVRTC_LIST_NOTE, sizeof NVRTC_LIST_NOTE);
}

static int regs_ok(const char *s)
{
    int v = 0, n = 0;

    if (*s == '0')
        return 0;
    for (; is_digit(*s) && n < 4; s++, n++)
        v = v * 10 + (*s - '0');
    return *s == '\0' && n > 0 && v >= 16 && v <= 255;
}

static int define_ok(const char *s)
{
    if (!is_alpha(*s))
        return 0;
    while (is_alnum(*s))
        s++;
    if (*s == '\0')
        return 1;
    if (*s++ != '=' || *s == '\0')
        return 0;
    while (is_alnum(*s) || *s == '.')
        s++;
    return *s == '\0';
}

static int rule_matches(const struct nvrtc_rule *r, const char *opt)
{
    size_t n = strlen(r->text);

    if (r->kind == OPT_EXACT)
        return strcmp(opt, r->text) == 0;
    if (strncmp(opt, r->text, n) != 0)
        return 0;
    opt += n;
    if (r->kind == OPT_BOOL)
        return strcmp(opt, "true") == 0 || strcmp(opt, "false") == 0;
    if (r->kind == OPT_REGS)
        return regs_ok(opt);
    return define_ok(opt);
}

int dir_nvrtc_allowed(const char *opt)
{
    size_t i, n = 0;

    if (opt == NULL)
        return 0;
    while (n < DIR_MAX_OPT && opt[n] != '\0')
        n++;
    if (n >= DIR_MAX_OPT)
        return 0;
    for (i = 0; i < sizeof nvrtc_rules / sizeof nvrtc_rules[0]; i++)
        if (rule_matches(&nvrtc_rules[i], opt))
            return 1;
    return 0;
}
