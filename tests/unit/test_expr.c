/*
 * test_expr.c - unit tests for common/expr.c, the shape-expression evaluator.
 *
 * Covers precedence, the functions, ?: and short-circuit evaluation, every
 * overflow and division case, every syntax error with its column, the limits
 * on length and nesting, and the check-only entry points that the directive
 * parser uses. Prints "test_expr: N passed, N failed, N skipped".
 */
#define KT_MAIN
#include "kt.h"

#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "expr.h"

static const char *const shape_names[] = {"T", "H", "GS", "a", "zero", "neg"};
static const int64_t shape_values[] = {4096, 7168, 128, 5, 0, -3};
static const struct expr_vars SHAPE = {6, shape_names, shape_values};

/* Evaluate text and check that it succeeds with the value want. */
#define EVAL_OK(vars, text, want)                                                  \
    do {                                                                           \
        struct kj_err e_;                                                          \
        int64_t v_ = -77777;                                                       \
        kj_err_clear(&e_);                                                         \
        int rc_ = expr_eval((text), (vars), &v_, &e_);                             \
        KT_CHECK(rc_ == 0 && v_ == (int64_t)(want),                                \
                 "'%s': rc=%d value=%" PRId64 " want %" PRId64 " msg=%s", (text),  \
                 rc_, v_, (int64_t)(want), e_.msg);                                \
    } while (0)

/* Evaluate text and check that it fails with KJ_EINVAL and a message that
 * contains both w1 and w2. */
#define EVAL_ERR(vars, text, w1, w2)                                               \
    do {                                                                           \
        struct kj_err e_;                                                          \
        int64_t v_ = 0;                                                            \
        kj_err_clear(&e_);                                                         \
        int rc_ = expr_eval((text), (vars), &v_, &e_);                             \
        KT_CHECK(rc_ == KJ_EINVAL && e_.code == KJ_EINVAL && e_.line == 0 &&       \
                     strstr(e_.msg, (w1)) != NULL && strstr(e_.msg, (w2)) != NULL, \
                 "'%s': rc=%d msg='%s' want '%s' and '%s'", (text), rc_, e_.msg,   \
                 (w1), (w2));                                                      \
    } while (0)

/* expr_check with vars; ok says whether it must pass. */
#define CHECK_RC(vars, text, ok, w1)                                               \
    do {                                                                           \
        struct kj_err e_;                                                          \
        kj_err_clear(&e_);                                                         \
        int rc_ = expr_check((text), (vars), &e_);                                 \
        KT_CHECK((ok) ? rc_ == 0 : (rc_ == KJ_EINVAL && strstr(e_.msg, (w1))),     \
                 "check '%s': rc=%d msg='%s'", (text), rc_, e_.msg);               \
    } while (0)

static void test_precedence(void)
{
    EVAL_OK(NULL, "42", 42);
    EVAL_OK(NULL, "1+2*3", 7);
    EVAL_OK(NULL, "(1+2)*3", 9);
    EVAL_OK(NULL, "10-4-3", 3);
    EVAL_OK(NULL, "100/10/5", 2);
    EVAL_OK(NULL, "2*3%4", 2);
    EVAL_OK(NULL, "7%4*2", 6);
    EVAL_OK(NULL, "2+3*4-5", 9);
    EVAL_OK(NULL, "-3*-3", 9);
    EVAL_OK(NULL, "-2+5", 3);
    EVAL_OK(NULL, "--1", 1);
    EVAL_OK(NULL, "- - 1", 1);
    EVAL_OK(NULL, "+7", 7);
    EVAL_OK(NULL, "-(2+3)", -5);
    EVAL_OK(NULL, "!0", 1);
    EVAL_OK(NULL, "!5", 0);
    EVAL_OK(NULL, "!!7", 1);
    EVAL_OK(NULL, "!0+1", 2);
    EVAL_OK(NULL, "-7/2", -3);
    EVAL_OK(NULL, "7/-2", -3);
    EVAL_OK(NULL, "-7%2", -1);
    EVAL_OK(NULL, "7%-2", 1);
    EVAL_OK(NULL, "1+2==3", 1);
    EVAL_OK(NULL, "2*2!=4", 0);
    EVAL_OK(NULL, "3<4", 1);
    EVAL_OK(NULL, "4<4", 0);
    EVAL_OK(NULL, "4<=4", 1);
    EVAL_OK(NULL, "5>4", 1);
    EVAL_OK(NULL, "4>=5", 0);
    EVAL_OK(NULL, "(1<2)==1", 1);
    EVAL_OK(NULL, "1<2 && 2<3", 1);
    EVAL_OK(NULL, "1 || 0 && 0", 1);
    EVAL_OK(NULL, "0 && 1 || 1", 1);
    EVAL_OK(NULL, "(1 || 0) && 0", 0);
    EVAL_OK(NULL, "5 && 7", 1);
    EVAL_OK(NULL, "0 || -4", 1);
    EVAL_OK(NULL, "0 || 0", 0);
    EVAL_OK(NULL, "1 ? 2 : 3", 2);
    EVAL_OK(NULL, "0 ? 2 : 3", 3);
    EVAL_OK(NULL, "0 ? 2 : 0 ? 3 : 4", 4);
    EVAL_OK(NULL, "1 ? 0 ? 5 : 6 : 7", 6);
    EVAL_OK(NULL, "1+1 ? 10 : 20", 10);
    EVAL_OK(NULL, "2 > 1 ? 3 + 4 : 5", 7);
    EVAL_OK(NULL, "0 || 0 ? 1 : 2", 2);
    EVAL_OK(NULL, "(0 ? 1 : 2) * 3", 6);
    EVAL_OK(NULL, "\t1 +\t2 ", 3);
    EVAL_OK(NULL, "0x10", 16);
    EVAL_OK(NULL, "0XfF", 255);
    EVAL_OK(NULL, "0", 0);
    EVAL_OK(NULL, "0x0", 0);
    EVAL_OK(NULL, "9223372036854775807", INT64_MAX);
    EVAL_OK(NULL, "0x7fffffffffffffff", INT64_MAX);
    EVAL_OK(NULL, "-9223372036854775807-1", INT64_MIN);
}

static void test_vars_and_functions(void)
{
    EVAL_OK(&SHAPE, "T*H/GS", 229376);
    EVAL_OK(&SHAPE, "ceil_div(T*H/GS, 8)", 28672);
    EVAL_OK(&SHAPE, " ceil_div ( T * H / GS , 8 ) ", 28672);
    EVAL_OK(&SHAPE, "T/GS", 32);
    EVAL_OK(&SHAPE, "a*a-neg", 28);
    EVAL_OK(&SHAPE, "min(3,5)", 3);
    EVAL_OK(&SHAPE, "min(5,3)", 3);
    EVAL_OK(&SHAPE, "max(-1,-2)", -1);
    EVAL_OK(&SHAPE, "min(max(1,2),3)", 2);
    EVAL_OK(&SHAPE, "max(T, H) - min(T, H)", 3072);
    EVAL_OK(&SHAPE, "ceil_div(7,2)", 4);
    EVAL_OK(&SHAPE, "ceil_div(8,2)", 4);
    EVAL_OK(&SHAPE, "ceil_div(1,8)", 1);
    EVAL_OK(&SHAPE, "ceil_div(0,5)", 0);
    EVAL_OK(&SHAPE, "ceil_div(-7,2)", -3);
    EVAL_OK(&SHAPE, "ceil_div(-8,2)", -4);
    EVAL_OK(&SHAPE, "ceil_div(9223372036854775807, 2)", INT64_C(4611686018427387904));
    EVAL_OK(&SHAPE, "ceil_div(9223372036854775807, 1)", INT64_MAX);
    EVAL_OK(&SHAPE, "GS == 128 ? 256 : 128", 256);
    EVAL_OK(&SHAPE, "T >= 4096 && H > 4096 ? 8 : 4", 8);

    static const char *const under_names[] = {"n_tok", "_x1", "min"};
    static const int64_t under_values[] = {12, 30, 2};
    const struct expr_vars under = {3, under_names, under_values};
    EVAL_OK(&under, "n_tok*_x1", 360);
    /* A variable may share a function's name: a call needs '('. */
    EVAL_OK(&under, "min(min, 5)", 2);
    EVAL_ERR(&under, "n_tok1", "unknown variable 'n_tok1'", "column 1");
    EVAL_ERR(&under, "n_to", "unknown variable 'n_to'", "column 1");
}

static void test_short_circuit(void)
{
    /* The branch not taken is never evaluated, so its errors do not count. */
    EVAL_OK(&SHAPE, "zero == 0 ? 1 : T/zero", 1);
    EVAL_OK(&SHAPE, "zero != 0 ? T/zero : 2", 2);
    EVAL_OK(&SHAPE, "zero != 0 && T/zero > 1", 0);
    EVAL_OK(&SHAPE, "zero == 0 || T/zero > 1", 1);
    EVAL_OK(&SHAPE, "0 ? 1/0 : 2", 2);
    EVAL_OK(&SHAPE, "1 ? 2 : 1/0", 2);
    EVAL_OK(&SHAPE, "0 ? 9223372036854775807+1 : 3", 3);
    EVAL_OK(&SHAPE, "0 ? ceil_div(1, 0) : 4", 4);
    EVAL_OK(&SHAPE, "0 && (0 ? 1 : 1/0)", 0);
    EVAL_ERR(&SHAPE, "1 ? 1/0 : 2", "division by zero", "column 6");
    EVAL_ERR(&SHAPE, "zero == 0 && T/zero", "division by zero", "column 15");
    /* Names in the branch not taken must still be known. */
    EVAL_ERR(&SHAPE, "1 ? 2 : X", "unknown variable 'X'", "column 9");
    EVAL_ERR(&SHAPE, "0 && foo(1)", "unknown function 'foo'", "column 6");
}

static void test_arith_errors(void)
{
    EVAL_ERR(&SHAPE, "T/(GS-128)", "division by zero in 'T/(GS-128)' at column 2", "");
    EVAL_ERR(&SHAPE, "5%0", "modulo by zero", "column 2");
    EVAL_ERR(&SHAPE, "1 + 5 % zero", "modulo by zero in '1 + 5 % zero' at column 7", "");
    EVAL_ERR(&SHAPE, "9223372036854775807+1", "overflow", "column 20");
    EVAL_ERR(&SHAPE, "-9223372036854775807-2", "overflow", "column 21");
    EVAL_ERR(&SHAPE, "3037000500*3037000500", "overflow", "column 11");
    EVAL_ERR(&SHAPE, "4294967296*4294967296", "overflow", "'*'");
    EVAL_ERR(&SHAPE, "T*H*GS*T*H*GS", "overflow", "column");
    EVAL_ERR(&SHAPE, "-(-9223372036854775807-1)", "overflow", "column 1");
    EVAL_ERR(&SHAPE, "(-9223372036854775807-1)/-1", "overflow", "column 25");
    EVAL_ERR(&SHAPE, "(-9223372036854775807-1)%-1", "overflow", "column 25");
    EVAL_ERR(&SHAPE, "9223372036854775808", "integer literal too large", "column 1");
    EVAL_ERR(&SHAPE, "1+99999999999999999999", "too large", "column 3");
    EVAL_ERR(&SHAPE, "0x8000000000000000", "too large", "column 1");
    EVAL_ERR(&SHAPE, "ceil_div(5, 0)", "ceil_div divisor must be > 0, got 0", "column 1");
    EVAL_ERR(&SHAPE, "1+ceil_div(5, neg)", "got -3", "column 3");
    /* Near the edges, no false alarms. */
    EVAL_OK(&SHAPE, "9223372036854775806+1", INT64_MAX);
    EVAL_OK(&SHAPE, "3037000499*3037000499", INT64_C(9223372030926249001));
    EVAL_OK(&SHAPE, "(-9223372036854775807-1)/1", INT64_MIN);
    EVAL_OK(&SHAPE, "(-9223372036854775807-1)%2", 0);
}

static void test_syntax_errors(void)
{
    EVAL_ERR(&SHAPE, "", "empty expression", "");
    EVAL_ERR(&SHAPE, "   ", "empty expression", "");
    EVAL_ERR(&SHAPE, "1+", "unexpected end", "column 3");
    EVAL_ERR(&SHAPE, "(1+2", "missing ')'", "column 5");
    EVAL_ERR(&SHAPE, "((1)", "missing ')' to close '(' at column 1", "");
    EVAL_ERR(&SHAPE, "1 2", "unexpected '2'", "column 3");
    EVAL_ERR(&SHAPE, "1)", "unexpected ')' in '1)' at column 2", "");
    EVAL_ERR(&SHAPE, "*3", "unexpected '*'", "column 1");
    EVAL_ERR(&SHAPE, "a=1", "unexpected '='", "column 2");
    EVAL_ERR(&SHAPE, "1 & 2", "unexpected '&'", "column 3");
    EVAL_ERR(&SHAPE, "1 | 2", "unexpected '|'", "column 3");
    EVAL_ERR(&SHAPE, "1<2<3", "do not chain", "column 4");
    EVAL_ERR(&SHAPE, "1==1==1", "do not chain", "column 5");
    EVAL_ERR(&SHAPE, "010", "leading zero", "column 1");
    EVAL_ERR(&SHAPE, "12abc", "bad integer literal", "column 1");
    EVAL_ERR(&SHAPE, "4u", "bad integer literal", "column 1");
    EVAL_ERR(&SHAPE, "0x", "bad integer literal", "column 1");
    EVAL_ERR(&SHAPE, "0xg", "bad integer literal", "column 1");
    EVAL_ERR(&SHAPE, "1 ? 2", "missing ':'", "column 6");
    EVAL_ERR(&SHAPE, "1 ? 2 ; 3", "unexpected ';'", "column 7");
    EVAL_ERR(&SHAPE, "min(1,2", "missing ')' after arguments of min", "");
    EVAL_ERR(&SHAPE, "min(1;2)", "unexpected ';'", "column 6");
    EVAL_ERR(&SHAPE, "#", "unexpected '#'", "column 1");
    EVAL_ERR(&SHAPE, "1+\x01", "unexpected byte 0x01", "column 3");
    EVAL_ERR(&SHAPE, "T*H/GS)", "unexpected ')'", "column 7");
    EVAL_ERR(&SHAPE, "()", "unexpected ')'", "column 2");
    EVAL_ERR(&SHAPE, "1.5", "unexpected '.'", "column 2");
    EVAL_ERR(&SHAPE, "1 << 2", "unexpected '<'", "column 4");
    EVAL_ERR(&SHAPE, "X+1", "unknown variable 'X' in 'X+1' at column 1", "");
    EVAL_ERR(&SHAPE, "T + t", "unknown variable 't'", "column 5");
    EVAL_ERR(&SHAPE, "min", "unknown variable 'min'", "column 1");
    EVAL_ERR(&SHAPE, "foo(1)", "unknown function 'foo'", "column 1");
    EVAL_ERR(&SHAPE, "T(1)", "unknown function 'T'", "column 1");
    EVAL_ERR(&SHAPE, "min(1)", "min takes 2 arguments, got 1", "column 1");
    EVAL_ERR(&SHAPE, "2*max(1,2,3)", "max takes 2 arguments, got 3", "column 3");
    EVAL_ERR(&SHAPE, "ceil_div()", "ceil_div takes 2 arguments, got 0", "column 1");
    EVAL_ERR(&SHAPE, "min(1,)", "unexpected ')'", "column 7");
    EVAL_ERR(NULL, "T", "unknown variable 'T'", "column 1");
}

static void test_limits(void)
{
    char buf[512];
    int i;

    /* Exactly EXPR_MAX_LEN characters pass, one more fails. */
    strcpy(buf, "11");
    for (i = 0; i < 127; i++)
        strcat(buf, "+1");
    KT_CHECK(strlen(buf) == EXPR_MAX_LEN, "len %zu", strlen(buf));
    EVAL_OK(&SHAPE, buf, 138);
    buf[0] = '9';
    memmove(buf + 1, buf, strlen(buf) + 1);
    KT_CHECK(strlen(buf) == EXPR_MAX_LEN + 1, "len %zu", strlen(buf));
    EVAL_ERR(&SHAPE, buf, "expression too long (max 256 characters)", "");
    CHECK_RC(NULL, buf, 0, "too long");

    /* A long expression is quoted in part, and the column still counts. */
    strcpy(buf, "1");
    for (i = 0; i < 100; i++)
        strcat(buf, "+1");
    strcat(buf, "/0");
    EVAL_ERR(&SHAPE, buf, "...' at column 202", "division by zero");

    /* Nesting: 63 parentheses pass (the whole text is one level), 64 fail. */
    memset(buf, '(', 63);
    buf[63] = '7';
    memset(buf + 64, ')', 63);
    buf[127] = '\0';
    EVAL_OK(&SHAPE, buf, 7);
    memset(buf, '(', 64);
    buf[64] = '7';
    memset(buf + 65, ')', 64);
    buf[129] = '\0';
    EVAL_ERR(&SHAPE, buf, "nesting too deep (max 64", "column 64");
    CHECK_RC(NULL, buf, 0, "nesting too deep");
    memset(buf, '-', 100);
    strcpy(buf + 100, "1");
    EVAL_ERR(&SHAPE, buf, "nesting too deep", "column");
    buf[0] = '\0';
    for (i = 0; i < 60; i++)
        strcat(buf, "0?0:");
    strcat(buf, "1");
    EVAL_OK(&SHAPE, buf, 1);
    buf[0] = '\0';
    for (i = 0; i < 70; i++)
        strcat(buf, "1?");
    EVAL_ERR(&SHAPE, buf, "nesting too deep", "column 128"); /* the 64th "?" */
    strcpy(buf, "1");
    for (i = 0; i < 70; i++)
        strcat(buf, "+(1");
    EVAL_ERR(&SHAPE, buf, "nesting too deep", "");
}

static void test_check(void)
{
    static const char *const names[] = {"T", "H", "GS"};
    const struct expr_vars novalues = {3, names, NULL};
    struct kj_err e;
    char name[8];
    int rc;

    /* NULL vars: syntax only, any variable name is allowed. */
    CHECK_RC(NULL, "X*Y + ceil_div(Z, 2)", 1, "");
    CHECK_RC(NULL, "1/0", 1, "");
    CHECK_RC(NULL, "9223372036854775807+1", 1, "");
    CHECK_RC(NULL, "foo(1)", 0, "unknown function 'foo'");
    CHECK_RC(NULL, "min(1)", 0, "takes 2 arguments");
    CHECK_RC(NULL, "1+", 0, "unexpected end");
    CHECK_RC(NULL, "", 0, "empty expression");
    CHECK_RC(NULL, "9223372036854775808", 0, "too large");
    CHECK_RC(NULL, "X Y", 0, "unexpected 'Y'");
    /* With names, values may be NULL. */
    CHECK_RC(&novalues, "ceil_div(T*H/GS, 8)", 1, "");
    CHECK_RC(&novalues, "GS == 0 ? 1 : T/GS", 1, "");
    CHECK_RC(&novalues, "T*X", 0, "unknown variable 'X' in 'T*X' at column 3");
    CHECK_RC(&novalues, "0 ? Q : 1", 0, "unknown variable 'Q'");

    kj_err_clear(&e);
    rc = expr_check_unknown("T + LONGNAME", &novalues, name, sizeof name, &e);
    KT_CHECK(rc == KJ_EINVAL && strcmp(name, "LONGNAM") == 0, "rc=%d name='%s'", rc, name);
    KT_CHECK(strstr(e.msg, "unknown variable 'LONGNAME'") != NULL, "msg='%s'", e.msg);
    rc = expr_check_unknown("T + (X", &novalues, name, sizeof name, &e);
    KT_CHECK(rc == KJ_EINVAL && strcmp(name, "X") == 0, "rc=%d name='%s'", rc, name);
    strcpy(name, "junk");
    rc = expr_check_unknown("T + (", &novalues, name, sizeof name, &e);
    KT_CHECK(rc == KJ_EINVAL && name[0] == '\0', "rc=%d name='%s'", rc, name);
    strcpy(name, "junk");
    rc = expr_check_unknown("T + GS", &novalues, name, sizeof name, &e);
    KT_CHECK(rc == 0 && name[0] == '\0', "rc=%d name='%s'", rc, name);
    rc = expr_check_unknown("Z", &novalues, NULL, 0, &e);
    KT_CHECK(rc == KJ_EINVAL, "rc=%d", rc);
    rc = expr_check_unknown("Z", NULL, name, sizeof name, NULL);
    KT_CHECK(rc == 0 && name[0] == '\0', "rc=%d name='%s'", rc, name);
}

static void test_misc(void)
{
    static const char *const names[] = {"T"};
    const struct expr_vars novalues = {1, names, NULL};
    struct kj_err e;
    int64_t v = 123;
    int rc;

    /* Evaluation without values is our own bug, not the user's. */
    kj_err_clear(&e);
    rc = expr_eval("T", &novalues, &v, &e);
    KT_CHECK(rc == KJ_EINTERNAL && e.code == KJ_EINTERNAL, "rc=%d msg=%s", rc, e.msg);
    /* NULL text and NULL err are handled. */
    rc = expr_eval(NULL, &SHAPE, &v, &e);
    KT_CHECK(rc == KJ_EINVAL && strstr(e.msg, "empty") != NULL, "rc=%d", rc);
    rc = expr_eval("1/0", &SHAPE, &v, NULL);
    KT_CHECK(rc == KJ_EINVAL, "rc=%d", rc);
    /* A failure leaves the message printable. */
    kj_err_clear(&e);
    rc = expr_eval("\x7f\x1b", &SHAPE, &v, &e);
    KT_CHECK(rc == KJ_EINVAL && strchr(e.msg, '\x1b') == NULL && strchr(e.msg, '\x7f') == NULL &&
                 strstr(e.msg, "0x7f") != NULL,
             "msg=%s", e.msg);
    /* Success does not disturb err, failure records where. */
    kj_err_clear(&e);
    rc = expr_eval("T", &SHAPE, &v, &e);
    KT_CHECK(rc == 0 && v == 4096 && e.code == 0 && e.msg[0] == '\0', "rc=%d", rc);
    rc = expr_eval("T/zero", &SHAPE, &v, &e);
    KT_CHECK(rc == KJ_EINVAL && e.file != NULL && e.src_line > 0, "file=%s", e.file);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_precedence());
    KT_RUN(test_vars_and_functions());
    KT_RUN(test_short_circuit());
    KT_RUN(test_arith_errors());
    KT_RUN(test_syntax_errors());
    KT_RUN(test_limits());
    KT_RUN(test_check());
    KT_RUN(test_misc());
    return kt_done("test_expr");
}
