/*
 * fuzz_expr.c - libFuzzer harness for common/expr.c, the integer expressions
 * of launch dimensions, workspace sizes and buffer shapes.
 *
 * The input is one expression. It is checked without variables, checked and
 * evaluated with two sets of shape variables (ordinary sizes, then values at
 * the edges of int64), and must keep these properties besides ASan/UBSan's:
 * an expression that evaluates also passes expr_check; one that fails
 * expr_check never evaluates; every error is KJ_EINVAL with a printable
 * message; an unknown name reported by expr_check_unknown is an identifier
 * that is not a variable; "(E)", "(E)*1" and "0+(E)" have E's value
 * whenever they fit the length and nesting limits.
 */
#include "fuzz.h"
#include "expr.h"
#include "kj_err.h"

#include <inttypes.h>

static const char *const names[] = {"T", "H", "GS", "N", "M", "K", "B", "S", "contention"};
static const int64_t ordinary[] = {128, 4096, 64, 1 << 20, 1000, 7, 3, 1, 0};
static const int64_t edges[] = {INT64_MAX, INT64_MIN, -1, 0, 1, INT64_MAX / 2, -3, 2, INT32_MAX};

static void check_err(const char *what, const char *text, const struct kj_err *err)
{
    if (err->code != KJ_EINVAL)
        fuzz_fail("%s: error code %d (%s), want EINVAL: %s", what, err->code,
                  kj_code_name(err->code), err->msg);
    if (err->msg[0] == '\0')
        fuzz_fail("%s: empty error message for '%.300s'", what, text);
    for (const char *m = err->msg; *m; m++)
        if ((unsigned char)*m < 0x20 || (unsigned char)*m >= 0x7f)
            fuzz_fail("%s: non-printable byte 0x%02x in the message '%s'", what,
                      (unsigned)(unsigned char)*m, err->msg);
}

/* The value of wrap (E put inside some neutral context) must be E's value. */
static void check_wrapped(const char *fmt, const char *text, const struct expr_vars *vars,
                          int64_t want)
{
    char buf[3 * EXPR_MAX_LEN];
    struct kj_err err;
    int64_t got = 0;
    snprintf(buf, sizeof buf, fmt, text);
    kj_err_clear(&err);
    if (expr_eval(buf, vars, &got, &err) == 0) {
        if (got != want)
            fuzz_fail("'%s' = %" PRId64 " but '%s' = %" PRId64, buf, got, text, want);
        return;
    }
    if (strstr(err.msg, "too long") == NULL && strstr(err.msg, "nesting too deep") == NULL)
        fuzz_fail("'%s' evaluates to %" PRId64 " but '%s' fails: %s", text, want, buf, err.msg);
}

static void run_vars(const char *text, const int64_t *values)
{
    struct expr_vars vars = {(int)(sizeof names / sizeof names[0]), names, values};
    struct kj_err err, cerr;
    char unknown[32];
    int64_t v = 0, v2 = 0;
    int rc, crc;

    kj_err_clear(&cerr);
    crc = expr_check_unknown(text, &vars, unknown, sizeof unknown, &cerr);
    if (crc != 0)
        check_err("expr_check_unknown", text, &cerr);
    if (crc == 0 && unknown[0] != '\0')
        fuzz_fail("expr_check_unknown passed but names '%s' unknown", unknown);
    for (int i = 0; unknown[0] != '\0' && i < vars.n; i++)
        if (strcmp(unknown, names[i]) == 0)
            fuzz_fail("expr_check_unknown calls the variable '%s' unknown", unknown);

    kj_err_clear(&err);
    rc = expr_eval(text, &vars, &v, &err);
    if (rc != 0) {
        check_err("expr_eval", text, &err);
        return;
    }
    if (crc != 0)
        fuzz_fail("'%.300s' evaluates to %" PRId64 " but expr_check fails: %s", text, v, cerr.msg);
    if (expr_eval(text, &vars, &v2, &err) != 0 || v2 != v)
        fuzz_fail("'%.300s' evaluates to %" PRId64 ", then to something else", text, v);
    check_wrapped("(%s)", text, &vars, v);
    check_wrapped("(%s)*1", text, &vars, v);
    check_wrapped("0+(%s)", text, &vars, v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text;
    struct kj_err err;
    if (size > 4 * EXPR_MAX_LEN)
        return 0;
    text = fuzz_text(data, size);
    kj_err_clear(&err);
    if (expr_check(text, NULL, &err) != 0)
        check_err("expr_check (syntax only)", text, &err);
    run_vars(text, ordinary);
    run_vars(text, edges);
    free(text);
    return 0;
}
