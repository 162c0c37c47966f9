/*
 * fuzz_fexpr.c - libFuzzer harness for common/fexpr.c, the real-valued
 * tolerance expressions of a leaderboard ("1e-5 * sqrt(N)").
 *
 * The input is one expression, evaluated with two sets of shape variables
 * (ordinary sizes, then values at the edges of int64) and checked without
 * values (names only, as the spec loader does first). Properties besides
 * ASan/UBSan's: a value is always finite; whatever evaluates also passes the
 * names-only check, which then gives 0; whatever fails that check never
 * evaluates; every error is KJ_EINVAL with a printable message; "(E)",
 * "(E)*1" and "0+(E)" have E's value when they fit the limits.
 */
#include "fuzz.h"
#include "fexpr.h"
#include "kj_err.h"

#include <math.h>

static const char *const names[] = {"T", "H", "GS", "N", "M", "K", "C", "S"};
static const int64_t ordinary[] = {128, 4096, 64, 1 << 20, 1000, 7, 3, 0};
static const int64_t edges[] = {INT64_MAX, INT64_MIN, -1, 0, 1, INT64_MAX / 2, -3, 2};

static void check_err(const char *what, const struct kj_err *err)
{
    if (err->code != KJ_EINVAL)
        fuzz_fail("%s: error code %d (%s), want EINVAL: %s", what, err->code,
                  kj_code_name(err->code), err->msg);
    if (err->msg[0] == '\0')
        fuzz_fail("%s: empty error message", what);
    for (const char *m = err->msg; *m; m++)
        if ((unsigned char)*m < 0x20 || (unsigned char)*m >= 0x7f)
            fuzz_fail("%s: non-printable byte in the message '%s'", what, err->msg);
}

static void check_wrapped(const char *fmt, const char *text, const struct expr_vars *vars,
                          double want)
{
    char buf[3 * EXPR_MAX_LEN];
    struct kj_err err;
    double got = 0;
    snprintf(buf, sizeof buf, fmt, text);
    kj_err_clear(&err);
    if (fexpr_eval(buf, vars, &got, &err) == 0) {
        if (got != want)
            fuzz_fail("'%s' = %.17g but '%s' = %.17g", buf, got, text, want);
        return;
    }
    if (strstr(err.msg, "too long") == NULL && strstr(err.msg, "nesting too deep") == NULL)
        fuzz_fail("'%s' evaluates to %.17g but '%s' fails: %s", text, want, buf, err.msg);
}

static void run_vars(const char *text, const int64_t *values, int names_ok)
{
    struct expr_vars vars = {(int)(sizeof names / sizeof names[0]), names, values};
    struct kj_err err;
    double v = 0;
    kj_err_clear(&err);
    if (fexpr_eval(text, &vars, &v, &err) != 0) {
        check_err("fexpr_eval", &err);
        return;
    }
    if (!isfinite(v))
        fuzz_fail("'%.300s' evaluates to %g, not finite", text, v);
    if (!names_ok)
        fuzz_fail("'%.300s' evaluates to %.17g but fails the names-only check", text, v);
    check_wrapped("(%s)", text, &vars, v);
    check_wrapped("(%s)*1", text, &vars, v);
    check_wrapped("0+(%s)", text, &vars, v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct expr_vars names_only = {(int)(sizeof names / sizeof names[0]), names, NULL};
    struct kj_err err;
    double v = 1;
    int names_ok;
    char *text;
    if (size > 4 * EXPR_MAX_LEN)
        return 0;
    text = fuzz_text(data, size);
    kj_err_clear(&err);
    names_ok = fexpr_eval(text, &names_only, &v, &err) == 0;
    if (!names_ok)
        check_err("fexpr_eval (names only)", &err);
    else if (v != 0)
        fuzz_fail("names-only check of '%.300s' gives %g, not 0", text, v);
    run_vars(text, ordinary, names_ok);
    run_vars(text, edges, names_ok);
    free(text);
    return 0;
}
