/*
 * fuzz_directive.c - libFuzzer harness for common/directive.c, the
 * "//!kjudge" lines that the server reads from every uploaded source and the
 * runner reads again before it launches anything.
 *
 * The input is a source file. After dir_parse, the parsed directives are
 * checked against the leaderboard variables and every launch and the
 * workspace are evaluated with two sets of values. Properties besides
 * ASan/UBSan's: every error is KJ_EINVAL, printable, and names its line
 * ("line N: ...", N within the file; only "no launch line" has none); a
 * parsed file has 1..DIR_MAX_LAUNCHES launches whose kernel names and
 * expressions are non-empty and NUL-terminated, whose expressions pass the
 * syntax check, and whose nvrtc options are on the allow-list; evaluated
 * dimensions are within the documented ranges; and the same file with CRLF
 * line ends parses to exactly the same directives or the same error.
 */
#include "fuzz.h"
#include "directive.h"
#include "kj_err.h"

static const char *const names[] = {"T", "H", "GS", "N", "M", "K", "B", "C", "S", "V"};
static const int64_t ordinary[] = {128, 4096, 64, 1 << 20, 1000, 64, 3, 16, 9, 128};
static const int64_t edges[] = {INT64_MAX, INT64_MIN, -1, 0, 1, INT32_MAX, 2, 3, 1 << 30, 7};

static void check_msg(const char *what, const struct kj_err *err, int nlines)
{
    if (err->code != KJ_EINVAL)
        fuzz_fail("%s: error code %s, want EINVAL: %s", what, kj_code_name(err->code), err->msg);
    for (const char *m = err->msg; *m; m++)
        if ((unsigned char)*m < 0x20 || (unsigned char)*m >= 0x7f)
            fuzz_fail("%s: non-printable byte in the message '%s'", what, err->msg);
    if (err->line < 0 || err->line > nlines)
        fuzz_fail("%s: line %d outside the file's %d lines: %s", what, err->line, nlines,
                  err->msg);
    if (err->line == 0 && strstr(err->msg, "no '//!kjudge launch' line") == NULL)
        fuzz_fail("%s: an error without a line: %s", what, err->msg);
    if (err->line > 0) {
        char want[24];
        snprintf(want, sizeof want, "line %d: ", err->line);
        if (strncmp(err->msg, want, strlen(want)) != 0)
            fuzz_fail("%s: message does not start with '%s': %s", what, want, err->msg);
    }
}

static void check_str(const char *what, const char *s, size_t cap, int nonempty)
{
    if (memchr(s, '\0', cap) == NULL)
        fuzz_fail("%s is not NUL-terminated", what);
    if (nonempty && s[0] == '\0')
        fuzz_fail("%s is empty", what);
}

static void check_expr(const char *what, const char *text)
{
    struct kj_err e;
    check_str(what, text, EXPR_MAX_LEN, 1);
    kj_err_clear(&e);
    if (expr_check(text, NULL, &e) != 0)
        fuzz_fail("%s '%s' was stored but fails the syntax check: %s", what, text, e.msg);
}

static void check_parsed(const struct directives *d, int nlines)
{
    if (d->nlaunch < 1 || d->nlaunch > DIR_MAX_LAUNCHES)
        fuzz_fail("%d launches", d->nlaunch);
    if (d->nnvrtc < 0 || d->nnvrtc > DIR_MAX_NVRTC)
        fuzz_fail("%d nvrtc options", d->nnvrtc);
    check_str("leaderboard", d->leaderboard, sizeof d->leaderboard, 0);
    for (int i = 0; i < d->nlaunch; i++) {
        const struct dir_launch *l = &d->launch[i];
        if (l->line < 1 || l->line > nlines)
            fuzz_fail("launch %d on line %d of %d", i, l->line, nlines);
        if (l->ngrid < 1 || l->ngrid > 3 || l->nblock < 1 || l->nblock > 3 ||
            l->ncluster < 0 || l->ncluster > 3)
            fuzz_fail("launch %d: %d/%d/%d components", i, l->ngrid, l->nblock, l->ncluster);
        check_str("kernel", l->kernel, sizeof l->kernel, 1);
        for (int c = 0; c < l->ngrid; c++)
            check_expr("grid", l->grid[c]);
        for (int c = 0; c < l->nblock; c++)
            check_expr("block", l->block[c]);
        for (int c = 0; c < l->ncluster; c++)
            check_expr("cluster", l->cluster[c]);
        if (l->smem[0] != '\0')
            check_expr("smem", l->smem);
    }
    if (d->workspace[0] != '\0')
        check_expr("workspace", d->workspace);
    for (int i = 0; i < d->nnvrtc; i++) {
        check_str("nvrtc option", d->nvrtc[i], DIR_MAX_OPT, 1);
        if (!dir_nvrtc_allowed(d->nvrtc[i]))
            fuzz_fail("nvrtc option '%s' stored but not allowed", d->nvrtc[i]);
    }
}

static void check_dims(const struct dir_dims *x, const struct dir_launch *l)
{
    for (int c = 0; c < 3; c++) {
        if (x->grid[c] < 1 || x->grid[c] > INT32_MAX || x->block[c] < 1 ||
            x->block[c] > INT32_MAX || x->cluster[c] < 1 || x->cluster[c] > INT32_MAX)
            fuzz_fail("launch on line %d: component %d out of range", l->line, c);
        if (!x->has_cluster && x->cluster[c] != 1)
            fuzz_fail("launch on line %d: no cluster but cluster[%d] = %u", l->line, c,
                      x->cluster[c]);
    }
    if (x->has_cluster != (l->ncluster > 0))
        fuzz_fail("launch on line %d: has_cluster %d with %d components", l->line,
                  x->has_cluster, l->ncluster);
}

static void evaluate(const struct directives *d, const int64_t *values, int nlines)
{
    struct expr_vars vars = {(int)(sizeof names / sizeof names[0]), names, values};
    struct dir_dims x;
    struct kj_err e;
    uint64_t ws = 0;
    for (int i = 0; i < d->nlaunch; i++) {
        kj_err_clear(&e);
        if (dir_eval_launch(&d->launch[i], &vars, &x, &e) != 0)
            check_msg("dir_eval_launch", &e, nlines);
        else
            check_dims(&x, &d->launch[i]);
    }
    kj_err_clear(&e);
    if (dir_eval_workspace(d, &vars, &ws, &e) != 0)
        check_msg("dir_eval_workspace", &e, nlines);
    else if (ws > (UINT64_C(1) << 34) || (d->workspace[0] == '\0' && ws != 0))
        fuzz_fail("workspace %llu", (unsigned long long)ws);
}

/* Parse the input with its '\n' turned into "\r\n"; must give what *d and rc gave. */
static void check_crlf(const uint8_t *data, size_t size, const struct directives *d, int rc,
                       const struct kj_err *err, struct directives *d2)
{
    struct kj_err e;
    char *crlf;
    size_t n = 0;
    if (memchr(data, '\r', size) != NULL || (crlf = malloc(2 * size + 1)) == NULL)
        return;
    for (size_t i = 0; i < size; i++) {
        if (data[i] == '\n')
            crlf[n++] = '\r';
        crlf[n++] = (char)data[i];
    }
    kj_err_clear(&e);
    int rc2 = dir_parse(crlf, n, d2, &e);
    free(crlf);
    if (rc2 != rc || (rc == 0 && memcmp(d, d2, sizeof *d) != 0))
        fuzz_fail("with CRLF line ends: rc %d (%s), with LF: rc %d (%s)", rc2, e.msg, rc,
                  err->msg);
    if (rc != 0 && (e.line != err->line || strcmp(e.msg, err->msg) != 0))
        fuzz_fail("with CRLF line ends: '%s', with LF: '%s'", e.msg, err->msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct directives *d = calloc(2, sizeof *d);
    struct expr_vars names_only = {(int)(sizeof names / sizeof names[0]), names, NULL};
    struct kj_err err;
    int nlines = 1, rc;
    if (d == NULL)
        abort();
    for (size_t i = 0; i < size; i++)
        nlines += data[i] == '\n';
    kj_err_clear(&err);
    rc = dir_parse((const char *)data, size, d, &err);
    if (rc != 0)
        check_msg("dir_parse", &err, nlines);
    else
        check_parsed(d, nlines);
    check_crlf(data, size, d, rc, &err, d + 1);
    if (rc == 0) {
        kj_err_clear(&err);
        if (dir_check_names(d, &names_only, &err) != 0) {
            check_msg("dir_check_names", &err, nlines);
        } else {
            evaluate(d, ordinary, nlines);
            evaluate(d, edges, nlines);
        }
    }
    free(d);
    return 0;
}
