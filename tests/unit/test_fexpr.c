/*
 * test_fexpr.c - unit tests for common/fexpr.c, the real-valued expressions
 * that leaderboards use for shape-dependent tolerances.
 *
 * Covers literals, precedence, the functions and their arity, non-finite
 * results, syntax errors with their column and check-only evaluation.
 * Prints "test_fexpr: N passed, N failed, N skipped".
 */
#define KT_MAIN
#include "kt.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fexpr.h"

static const char *const names[] = {"N", "K", "zero"};
static const int64_t values[] = {1048576, 3, 0};
static const struct expr_vars VARS = {3, names, values};

static void ok(const char *text, double want)
{
    struct kj_err e;
    double v = -1;
    kj_err_clear(&e);
    int rc = fexpr_eval(text, &VARS, &v, &e);
    KT_CHECK(rc == 0 && fabs(v - want) <= 1e-12 * fmax(1.0, fabs(want)),
             "'%s': rc=%d value=%.17g want %.17g msg=%s", text, rc, v, want, e.msg);
}

static void bad(const char *text, const char *w1, const char *w2)
{
    struct kj_err e;
    double v = 0;
    kj_err_clear(&e);
    int rc = fexpr_eval(text, &VARS, &v, &e);
    KT_CHECK(rc == KJ_EINVAL, "'%s' must fail (rc %d)", text, rc);
    KT_CHECK(w1 == NULL || strstr(e.msg, w1) != NULL, "'%s': want '%s' in: %s", text, w1, e.msg);
    KT_CHECK(w2 == NULL || strstr(e.msg, w2) != NULL, "'%s': want '%s' in: %s", text, w2, e.msg);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    ok("1e-5 * sqrt(N)", 1e-5 * 1024.0);
    ok("1e-3", 1e-3);
    ok("0.25", 0.25);
    ok(".5", 0.5);
    ok("3", 3.0);
    ok("2.5E+2", 250.0);
    ok("1 + 2 * 3", 7.0);
    ok("(1 + 2) * 3", 9.0);
    ok("-K + 10", 7.0);
    ok("--K", 3.0);
    ok("N / K", 1048576.0 / 3.0);
    ok("log2(N)", 20.0);
    ok("min(K, 2) + max(K, 2)", 5.0);
    ok("  sqrt( K * 3 )  ", 3.0);
    ok("1e-6 * K - 1", 3e-6 - 1.0);

    bad("", "empty", NULL);
    bad("   ", "empty", NULL);
    bad("1 / zero", "division by zero", "column 3");
    bad("sqrt(-1)", "sqrt", "not a finite");
    bad("log2(zero)", "log2", "not a finite");
    bad("1e999", "literal", "not a finite");
    bad("Q * 2", "unknown variable 'Q'", "column 1");
    bad("pow(2, 3)", "unknown function 'pow'", NULL);
    bad("sqrt(1, 2)", "sqrt takes 1 argument", NULL);
    bad("min(1)", "min takes 2 arguments", NULL);
    bad("1 +", "unexpected end", NULL);
    bad("(1 + 2", "missing ')'", NULL);
    bad("1 2", "unexpected '2'", "column 3");
    bad("1.", "bad number", NULL);
    bad("1e", "bad exponent", NULL);
    bad("2x", "bad number", NULL);
    bad("0x10", "bad number", NULL);
    bad("nan", "unknown variable 'nan'", NULL);
    bad("1 % 2", "unexpected '%'", NULL);
    bad("N < 2", "unexpected '<'", NULL);
    bad("\x01", "unexpected byte 0x01", NULL);

    char deep[200];
    memset(deep, '(', 60);
    deep[60] = '1';
    memset(deep + 61, ')', 60);
    deep[121] = '\0';
    bad(deep, "nesting too deep", NULL);
    char lng[400];
    memset(lng, '1', sizeof lng - 1);
    lng[sizeof lng - 1] = '\0';
    bad(lng, "too long", NULL);

    /* Check-only: names are resolved but no value is computed. */
    struct expr_vars check = {3, names, NULL};
    struct kj_err e;
    double v = 5;
    kj_err_clear(&e);
    KT_CHECK(fexpr_eval("1 / zero + sqrt(N)", &check, &v, &e) == 0 && v == 0,
             "check-only accepts what only fails with values: %s", e.msg);
    KT_CHECK(fexpr_eval("Q", &check, &v, &e) == KJ_EINVAL, "check-only still rejects names");
    v = 5;
    KT_CHECK(fexpr_eval("0.001 + 2", &check, &v, &e) == 0 && v == 0,
             "check-only gives 0 for a constant too, got %g", v);
    return kt_done("test_fexpr");
}
