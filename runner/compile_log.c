/*
 * compile_log.c - NVRTC's log, read and cleaned (see compile_int.h): the
 * "__nv_name_map" errors of name expressions that do not resolve, ptxas's
 * per-kernel resource report, the messages for launch lines whose kernel
 * is missing or not a kernel, and the log given to users (ptxas's info
 * lines dropped, host paths replaced, valid UTF-8, capped at
 * COMPILE_MAX_LOG bytes).
 */
#include "compile_int.h"
#include "kj_utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CC_TRUNC_FMT "\n[log truncated at %d bytes]\n"

/* ---- NVRTC's log: name expressions and ptxas's report ---- */

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Copy s without blanks into buf. */
static void squash(const char *s, size_t n, char *buf, size_t bufsz)
{
    size_t i, k = 0;
    for (i = 0; i < n && s[i] != '\0' && k + 1 < bufsz; i++)
        if (s[i] != ' ' && s[i] != '\t')
            buf[k++] = s[i];
    buf[k] = '\0';
}

/* Mark the kernel whose name is the name expression text t (n bytes). */
static int mark_name(struct cc_job *j, const char *t, size_t n, int not_global)
{
    char a[2 * DIR_MAX_KERNEL], b[2 * DIR_MAX_KERNEL];
    int k, hit = 0;

    squash(t, n, a, sizeof a);
    for (k = 0; k < j->out->nkernels; k++) {
        squash(j->out->kernels[k].name, DIR_MAX_KERNEL, b, sizeof b);
        if (a[0] == '\0' || strcmp(a, b) != 0)
            continue;
        if (not_global)
            j->kstate[k] = K_NOT_GLOBAL;
        else if (j->kstate[k] == K_OK)
            j->kstate[k] = K_MISSING;
        hit = 1;
    }
    return hit;
}

/* Read the "__nv_name_map" errors NVRTC gives for name expressions that do
 * not resolve; mark those kernels. Returns how many errors named a kernel. */
static int cc_scan_name_map(struct cc_job *j)
{
    const char *line = j->raw, *key = "Input name expression was: \"";
    int in_map = 0, not_global = 0, hits = 0;

    while (line != NULL && *line != '\0') {
        const char *end = strchr(line, '\n'), *t;
        size_t n = end ? (size_t)(end - line) : strlen(line);
        if (starts(line, "__nv_name_map(")) {
            in_map = 1;
            not_global = memmem(line, n, "non-__global__", 14) != NULL ||
                         memmem(line, n, "must form address of a __global__", 33) != NULL;
            t = memmem(line, n, key, strlen(key));
            if (t != NULL) {
                const char *q;
                t += strlen(key);
                q = memchr(t, '"', n - (size_t)(t - line));
                hits += mark_name(j, t, q ? (size_t)(q - t) : 0, not_global);
            }
        } else if (n > 0 && (line[0] == ' ' || line[0] == '\t')) {
            t = memmem(line, n, "#pragma nv_mangled_name ", 24);
            if (in_map && t != NULL)
                hits += mark_name(j, t + 24, n - (size_t)(t + 24 - line), not_global);
        } else {
            in_map = 0;
        }
        line = end ? end + 1 : NULL;
    }
    return hits;
}

/* Apply one "N what" item of ptxas's report to kernel k. */
static void ptxas_item(struct compile_kernel *k, const char *item, int is_entry_line)
{
    long v;
    char what[32] = "";

    if (sscanf(item, " %*[Uu]sed %ld %31[a-z]", &v, what) != 2 &&
        sscanf(item, " %ld bytes %31[a-z ]", &v, what) != 2)
        return;
    if (v < 0 || v > INT_MAX)
        v = INT_MAX;
    if (strcmp(what, "registers") == 0)
        k->registers = (int)v;
    else if (strcmp(what, "barriers") == 0)
        k->barriers = (int)v;
    else if (strcmp(what, "smem") == 0)
        k->smem_static = (int)v;
    else if (strcmp(what, "stack frame") == 0 && !is_entry_line)
        k->stack_frame = (int)v;
    else if (strcmp(what, "cumulative stack size") == 0 && v > k->stack_frame)
        k->stack_frame = (int)v; /* includes the frames of called functions */
    else if (strcmp(what, "spill stores") == 0)
        k->spill_stores = (int)v;
    else if (strcmp(what, "spill loads") == 0)
        k->spill_loads = (int)v;
}

/* Apply a comma-separated ptxas message to every kernel lowered to name. */
static void ptxas_apply(struct cc_job *j, const char *name, size_t nlen,
                        const char *msg, size_t mlen, int is_entry_line)
{
    char buf[512];
    int k;

    for (k = 0; k < j->out->nkernels; k++) {
        struct compile_kernel *ck = &j->out->kernels[k];
        if (strlen(ck->lowered) != nlen || strncmp(ck->lowered, name, nlen) != 0)
            continue;
        snprintf(buf, sizeof buf, "%.*s", (int)mlen, msg);
        for (char *save = NULL, *it = strtok_r(buf, ",", &save); it != NULL;
             it = strtok_r(NULL, ",", &save))
            ptxas_item(ck, it, is_entry_line);
        if (is_entry_line)
            j->kentry[k] = 1;
    }
}

/* If line is ptxas output ("ptxas info    : m" or "ptxas         . m"),
 * return 1 and point *msg at m. */
static int ptxas_line(const char *line, size_t n, int *is_info, const char **msg)
{
    size_t i = 5;

    if (n < 6 || strncmp(line, "ptxas", 5) != 0)
        return 0;
    *is_info = n >= 10 && strncmp(line + 5, " info", 5) == 0;
    if (*is_info)
        i = 10;
    while (i < n && line[i] == ' ')
        i++;
    if (i >= n || (line[i] != ':' && !(line[i] == '.' && !*is_info)))
        return 0;
    i++;
    while (i < n && line[i] == ' ')
        i++;
    *msg = line + i;
    return 1;
}

/* Read ptxas's per-kernel report. Later lines win over earlier ones, so
 * text that the source made the front end print cannot override ptxas. */
static void cc_parse_ptxas(struct cc_job *j)
{
    const char *line = j->raw, *entry = "", *props = "", *msg;
    size_t elen = 0, plen = 0;
    int info;

    while (line != NULL && *line != '\0') {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        if (ptxas_line(line, n, &info, &msg)) {
            size_t m = n - (size_t)(msg - line);
            const char *q;
            if (info && starts(msg, "Compiling entry function '") &&
                (q = memchr(msg + 26, '\'', m - 26)) != NULL) {
                entry = msg + 26, elen = (size_t)(q - entry);
                ptxas_apply(j, entry, elen, "", 0, 1);
            } else if (info && starts(msg, "Function properties for ")) {
                props = msg + 24, plen = m - 24;
            } else if (info && starts(msg, "Used ")) {
                ptxas_apply(j, entry, elen, msg, m, 1);
            } else if (!info) {
                ptxas_apply(j, props, plen, msg, m, 0);
            }
        }
        line = end ? end + 1 : NULL;
    }
}

/* Copy the raw log into dst without ptxas's info lines and, when drop_map,
 * without the "__nv_name_map" error blocks (replaced by our messages). A
 * block is a line at column 0 and the indented lines under it, up to a
 * blank line. ptxas's warnings and errors stay. */
void cc_filter_log(const char *raw, int drop_map, struct kj_buf *dst)
{
    const char *line = raw, *msg;
    int dropping = 0, info, keep;

    while (line != NULL && *line != '\0') {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        if (ptxas_line(line, n, &info, &msg)) {
            keep = 0;
            dropping = 0;
        } else if (n == 0) {
            keep = !dropping;
            dropping = 0;
        } else if (line[0] != ' ' && line[0] != '\t') {
            dropping = drop_map && starts(line, "__nv_name_map(");
            keep = !dropping;
        } else {
            keep = !dropping;
        }
        if (keep) {
            kj_buf_putn(dst, line, n);
            kj_buf_puts(dst, "\n");
        }
        line = end ? end + 1 : NULL;
    }
}

/* ---- cleaning the log for users ---- */

static int path_char(int c)
{
    return cc_is_ident(c) || c == '.' || c == '-' || c == '+' || c == '~' || c == '@';
}

/* Length of an absolute path of at least two components at s[i], 0 if none. */
static size_t abs_path_len(const char *s, size_t n, size_t i)
{
    size_t k = i, comps = 0;

    if (s[i] != '/' || (i > 0 && (path_char((unsigned char)s[i - 1]) || s[i - 1] == ')' ||
                                  s[i - 1] == ']' || s[i - 1] == '/')))
        return 0;
    while (k < n && s[k] == '/') {
        size_t c = k + 1;
        while (c < n && path_char((unsigned char)s[c]))
            c++;
        if (c == k + 1)
            break;
        comps++;
        k = c;
    }
    return comps >= 2 ? k - i : 0;
}

/* If one of the toolkit prefixes starts at s[i], emit its stand-in, return
 * the prefix length (the relative rest stays), else 0. */
static size_t cuda_prefix(const char *s, size_t n, size_t i, const struct cc_paths *p,
                          struct kj_buf *dst)
{
    const char *pre[4] = {p->cutlass_real, p->cutlass, p->inc_real, p->inc};
    size_t k;

    for (k = 0; k < 4; k++) {
        size_t m = strlen(pre[k]);
        if (m > 1 && i + m <= n && memcmp(s + i, pre[k], m) == 0 &&
            (i + m == n || !path_char((unsigned char)s[i + m]))) {
            kj_buf_puts(dst, k < 2 ? "<cutlass>" : "<cuda>");
            return m;
        }
    }
    return 0;
}

/* Copy s into dst: toolkit include dir -> "<cuda>", CUTLASS's -> "<cutlass>", other absolute paths ->
 * "<path>", control characters and invalid UTF-8 -> '?', "\r\n" -> "\n". */
void cc_clean_log(const char *s, size_t n, const struct cc_paths *p, struct kj_buf *dst)
{
    size_t i = 0, m;
    unsigned cp;

    /* Past the cap the rest is cut anyway (cc_cap_log). */
    while (i < n && kj_buf_status(dst) == KJ_OK && dst->len <= COMPILE_MAX_LOG) {
        unsigned char c = (unsigned char)s[i];
        if ((m = cuda_prefix(s, n, i, p, dst)) > 0) {
            i += m;
            while (i < n && (path_char((unsigned char)s[i]) || s[i] == '/'))
                kj_buf_putn(dst, s + i++, 1);
        } else if ((m = abs_path_len(s, n, i)) > 0) {
            kj_buf_puts(dst, "<path>");
            i += m;
        } else if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)) {
            kj_buf_putn(dst, s + i++, 1);
        } else if (c == '\r' && i + 1 < n && s[i + 1] == '\n') {
            i++;
        } else if (c >= 0x80 && (m = kj_utf8_decode((const unsigned char *)s + i, n - i, &cp)) > 0) {
            if (cp <= 0x9F) /* a C1 control (U+0080..U+009F) */
                kj_buf_puts(dst, "?");
            else
                kj_buf_putn(dst, s + i, m);
            i += m;
        } else {
            kj_buf_puts(dst, "?");
            i++;
        }
    }
}

/* Cut b to COMPILE_MAX_LOG bytes, marker included, at a UTF-8 boundary. */
void cc_cap_log(struct kj_buf *b)
{
    char mark[64], *text;
    int mlen = snprintf(mark, sizeof mark, CC_TRUNC_FMT, COMPILE_MAX_LOG);
    size_t cut;

    if (kj_buf_status(b) != KJ_OK || b->len <= COMPILE_MAX_LOG)
        return;
    cut = COMPILE_MAX_LOG - (size_t)mlen;
    while (cut > 0 && ((unsigned char)b->p[cut] & 0xC0) == 0x80)
        cut--;
    text = kj_buf_take(b, NULL);
    kj_buf_putn(b, text, cut);
    kj_buf_putn(b, mark, (size_t)mlen);
    free(text);
}

/* Messages for kernels that did not resolve; returns how many. */
static int kernel_messages(struct cc_job *j)
{
    int k, bad = 0;

    for (k = 0; k < j->out->nkernels; k++) {
        char shown[DIR_MAX_KERNEL];
        kj_printable(shown, sizeof shown, j->out->kernels[k].name, DIR_MAX_KERNEL - 1);
        switch (j->kstate[k]) {
        case K_OK:
            continue;
        case K_MISSING:
            kj_buf_printf(&j->pre, "line %d: launch: no kernel named '%s' in the source\n",
                      j->kline[k], shown);
            break;
        case K_NOT_GLOBAL:
            kj_buf_printf(&j->pre, "line %d: launch: '%s' is not a __global__ kernel "
                      "(declare it extern \"C\" __global__)\n", j->kline[k], shown);
            break;
        case K_BAD_NAME:
            kj_buf_printf(&j->pre, "line %d: launch: '%s' is not a valid kernel name\n",
                      j->kline[k], shown);
            break;
        default:
            kj_buf_printf(&j->pre, "line %d: launch: the mangled name of '%s' is longer "
                      "than %d bytes\n", j->kline[k], shown,
                      (int)sizeof j->out->kernels[k].lowered - 1);
        }
        bad++;
    }
    return bad;
}

/* Decide which kernels failed, by NVRTC's log; returns how many. */
int cc_judge_kernels(struct cc_job *j, int *map_hits)
{
    int k;

    *map_hits = 0;
    if (j->raw != NULL && j->user_fault)
        *map_hits = cc_scan_name_map(j);
    if (j->raw != NULL && !j->user_fault) {
        cc_parse_ptxas(j);
        /* Only when ptxas reported its entries (a compile served from a
         * cache reports none; the run box then checks the function). */
        for (k = 0; k < j->out->nkernels && strstr(j->raw, "Compiling entry function"); k++)
            if (j->kstate[k] == K_OK && !j->kentry[k])
                j->kstate[k] = K_NOT_GLOBAL; /* resolved, but not to an entry */
    }
    return kernel_messages(j);
}

