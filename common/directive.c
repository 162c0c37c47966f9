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
 *
 * The names and evaluation are in directive_eval.c, the NVRTC allow-list
 * in directive_nvrtc.c (shared: directive_int.h).
 */
#include "directive_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define DIR_PREFIX "//!kjudge"
#define DIR_PREFIX_LEN 9
#define DIR_MAX_LINE 4096     /* bytes of one directive line after the prefix */

/* ---- errors ---- */

int dir_fail(struct kj_err *err, int line, const char *file, int src_line,
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

struct shown dir_show_max(const char *s, size_t n, size_t max)
{
    struct shown out;
    kj_printable(out.s, max + 1, s, n);
    if (n > max)
        memcpy(out.s + max, "...", 4);
    return out;
}

struct shown dir_show(const char *s, size_t n)
{
    return dir_show_max(s, n, DIR_SHOW);
}

static const char *skip_blanks(const char *p)
{
    while (dir_is_blank(*p))
        p++;
    return p;
}

/* Length of the run of non-blank bytes at p. */
static size_t word_len(const char *p)
{
    size_t n = 0;
    while (p[n] != '\0' && !dir_is_blank(p[n]))
        n++;
    return n;
}

/* ---- expressions and lists ---- */

/* Trim s[0..n), check its syntax and copy it into dst (EXPR_MAX_LEN bytes). */
static int store_expr(int line, const char *label, const char *s, size_t n, char *dst,
                      struct kj_err *err)
{
    struct kj_err e;

    while (n > 0 && dir_is_blank(*s)) {
        s++;
        n--;
    }
    while (n > 0 && dir_is_blank(s[n - 1]))
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

    while (*p != '\0' && !(depth == 0 && dir_is_blank(*p))) {
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
        if (!dir_is_blank(s[i]))
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
                     "%s=(X, Y, Z), got '%s'", key, key, dir_show(v, n).s);
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
                         dir_show(v, n).s);
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
    return dir_is_alnum(c) || c == ':' || c == '<' || c == '>' ||
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
    if (!dir_is_alpha(*p) && *p != ':')
        return DFAIL(err, line, "launch: kernel name must start with a letter, '_' or "
                     "'::', got '%s'", dir_show(p, word_len(p)).s);
    for (; *p != '\0' && !(depth == 0 && dir_is_blank(*p)); p++) {
        if (*p == '=' && depth == 0)
            return DFAIL(err, line, "launch: missing kernel name before '%s'",
                         dir_show(start, word_len(start)).s);
        if (*p == '=') /* ran on past a '<' into "key=" */
            return DFAIL(err, line, "launch: unbalanced '<' in kernel name");
        if (!kernel_char_ok((unsigned char)*p, depth))
            return DFAIL(err, line, "launch: bad character '%s' in kernel name",
                         dir_show(p, 1).s);
        if (*p == '<')
            depth++;
        else if (*p == '>' && --depth < 0)
            return DFAIL(err, line, "launch: unbalanced '>' in kernel name");
    }
    if (depth > 0)
        return DFAIL(err, line, "launch: unbalanced '<' in kernel name");
    if (*skip_blanks(p) == '=')
        return DFAIL(err, line, "launch: missing kernel name before '%s'",
                     dir_show(start, (size_t)(p - start)).s);
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

    while (dir_is_alnum(p[klen]))
        klen++;
    if (klen == 0 || *skip_blanks(p + klen) != '=')
        return DFAIL(err, line, "launch: expected key=value, got '%s' (an expression with "
                     "spaces needs parentheses)", dir_show(p, word_len(p)).s);
    for (i = 0; i < sizeof launch_keys / sizeof launch_keys[0]; i++)
        if (strlen(launch_keys[i].name) == klen && memcmp(launch_keys[i].name, key, klen) == 0)
            break;
    if (i == sizeof launch_keys / sizeof launch_keys[0])
        return DFAIL(err, line, "launch: unknown key '%s' (expected grid, block, smem or "
                     "cluster)", dir_show(key, klen).s);
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
        if (!((p[i] >= 'a' && p[i] <= 'z') || dir_is_digit(p[i]) || p[i] == '_'))
            return DFAIL(err, line, "leaderboard: bad name '%s' (use a-z, 0-9 and _)",
                         dir_show(p, n).s);
    if (n >= sizeof d->leaderboard)
        return DFAIL(err, line, "leaderboard: name too long (max %zu characters)",
                     sizeof d->leaderboard - 1);
    if (*skip_blanks(p + n) != '\0')
        return DFAIL(err, line, "leaderboard: unexpected '%s' after the name",
                     dir_show(skip_blanks(p + n), word_len(skip_blanks(p + n))).s);
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
                     dir_show(rest, word_len(rest)).s);
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
        if (!(dir_is_alnum(p[i]) || p[i] == '-'))
            return DFAIL(err, line, "gpu: bad name '%s' (use A-Z, a-z, 0-9, _ and -)",
                         dir_show(p, n).s);
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
    return DFAIL(err, line, "mode: '%s' is not test, benchmark or leaderboard", dir_show(p, n).s);
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

static int parse_nvrtc(struct directives *d, int line, const char *p, struct kj_err *err)
{
    char allowed[200];
    int count = 0;
    size_t n;

    for (p = skip_blanks(p); *p != '\0'; p = skip_blanks(p + n), count++) {
        n = word_len(p);
        if (n >= DIR_MAX_OPT)
            return DFAIL(err, line, "nvrtc: option '%s' is too long (max %d characters)",
                         dir_show(p, n).s, DIR_MAX_OPT - 1);
        if (d->nnvrtc >= DIR_MAX_NVRTC)
            return DFAIL(err, line, "too many nvrtc options (max %d)", DIR_MAX_NVRTC);
        memcpy(d->nvrtc[d->nnvrtc], p, n);
        d->nvrtc[d->nnvrtc][n] = '\0';
        if (!dir_nvrtc_allowed(d->nvrtc[d->nnvrtc])) {
            dir_nvrtc_allowed_list(allowed, sizeof allowed);
            return DFAIL(err, line, "nvrtc option '%s' not allowed; allowed: %s",
                         dir_show_max(p, n, 20).s, allowed);
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
                 "workspace or nvrtc)", dir_show(verb, n).s);
}

/* One source line (n bytes, without its '\n' and '\r'); ignored unless it
 * is a directive. */
static int handle_line(struct directives *d, int line, const char *s, size_t n,
                       struct kj_err *err)
{
    char buf[DIR_MAX_LINE];
    size_t i = 0;

    while (i < n && dir_is_blank(s[i]))
        i++;
    if (n - i < DIR_PREFIX_LEN || memcmp(s + i, DIR_PREFIX, DIR_PREFIX_LEN) != 0)
        return 0;
    i += DIR_PREFIX_LEN;
    if (i < n && !dir_is_blank(s[i]))
        return DFAIL(err, line, "'//!kjudge' must be followed by a blank and a directive, "
                     "got '//!kjudge%s'", dir_show(s + i, n - i).s);
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
