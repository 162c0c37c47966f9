/*
 * expr.c - integer expressions over a leaderboard's shape variables.
 *
 * A recursive-descent parser (grammar in expr.h) that evaluates as it parses.
 * The directive parser calls it for launch dimensions and workspace sizes,
 * the spec loader for buffer shapes and byte counts; both get an int64 value
 * or a kj_err whose message quotes the expression and the 1-based column.
 *
 * Semantics, where C leaves a choice or has undefined behaviour:
 * - literals are decimal or 0x hex; a leading zero ("010") is rejected so
 *   nobody mistakes it for octal; a literal above INT64_MAX is an error;
 * - every + - * / %, unary minus and INT64_MIN / -1 that overflows int64 is
 *   an error; / and % truncate toward zero as in C;
 * - comparisons, &&, || and ! yield 0 or 1; && and || short-circuit and ?:
 *   evaluates only the chosen branch, so "GS == 0 ? 1 : T/GS" is fine; names
 *   in a branch not taken must still be known;
 * - comparisons do not chain ("a < b < c" is an error);
 * - ceil_div(a, b) requires b > 0 and is the exact ceiling of a/b for any a
 *   (negative a included); min and max take exactly two arguments.
 */
#include "expr.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define EXPR_MAX_DEPTH 64 /* nested expressions (parentheses, arguments, ?:)
                            * plus prefix operators; the whole text is one */
#define EXPR_QUOTE 80     /* at most this much of the text is quoted in errors */
#define EXPR_NAME_SHOW 40 /* at most this much of a name is quoted in errors */

/* Parser state for one expression; lives on the caller's stack. */
struct pstate {
    const char *s;                /* the expression, NUL-terminated, borrowed */
    size_t pos;                   /* offset of the next byte */
    const struct expr_vars *vars; /* borrowed; NULL = no variables */
    int any_name;                 /* 1: every variable name is accepted */
    int eval;                     /* 1: compute values; 0: syntax and names only */
    int depth;                    /* current nesting */
    char *unknown;                /* where to copy an unknown name, or NULL */
    size_t unknownsz;
    struct kj_err *err;
};

static int parse_expr(struct pstate *p, size_t at, int64_t *v);
static int parse_unary(struct pstate *p, int64_t *v);

/* ---- errors and characters ---- */

static int pfail(struct pstate *p, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Fail with "<what> in '<text>' at column <at+1>". */
static int pfail(struct pstate *p, size_t at, const char *fmt, ...)
{
    char what[160], quote[EXPR_QUOTE + 4];
    size_t len = strlen(p->s);
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    kj_printable(quote, sizeof quote, p->s, EXPR_QUOTE);
    if (len > EXPR_QUOTE)
        memcpy(quote + EXPR_QUOTE, "...", 4);
    return KJ_FAIL(p->err, KJ_EINVAL, "%s in '%s' at column %zu", what, quote, at + 1);
}

static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_alnum(int c) { return is_alpha(c) || is_digit(c); }

static int hex_value(int c)
{
    if (is_digit(c))
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Skip blanks and return the next byte without consuming it. */
static int peek(struct pstate *p)
{
    while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t')
        p->pos++;
    return (unsigned char)p->s[p->pos];
}

/* Consume op (one or two bytes) if it comes next. */
static int accept(struct pstate *p, const char *op)
{
    size_t n = strlen(op);
    peek(p);
    if (strncmp(p->s + p->pos, op, n) != 0)
        return 0;
    p->pos += n;
    return 1;
}

/* Error for an unexpected byte (or the end) at the current position. */
static int unexpected(struct pstate *p)
{
    int c = peek(p);
    if (c == '\0')
        return pfail(p, p->pos, "unexpected end of expression");
    if (c < 0x20 || c >= 0x7f)
        return pfail(p, p->pos, "unexpected byte 0x%02x", (unsigned)c);
    return pfail(p, p->pos, "unexpected '%c'", c);
}

/* Count one level of nesting, opened by the byte at offset at; the caller
 * undoes it with p->depth--. */
static int enter(struct pstate *p, size_t at)
{
    if (++p->depth > EXPR_MAX_DEPTH)
        return pfail(p, at, "nesting too deep (max %d levels)", EXPR_MAX_DEPTH);
    return 0;
}

/* ---- primaries ---- */

/* INT: decimal or 0x hex, must fit int64, must not run into a name. */
static int parse_number(struct pstate *p, int64_t *v)
{
    size_t start = p->pos;
    const char *s = p->s;
    int base = 10, d, ndig = 0;
    int64_t x = 0;

    if (s[p->pos] == '0' && (s[p->pos + 1] == 'x' || s[p->pos + 1] == 'X')) {
        base = 16;
        p->pos += 2;
    } else if (s[p->pos] == '0' && is_digit(s[p->pos + 1])) {
        return pfail(p, start, "leading zero in integer literal (octal is not supported)");
    }
    while ((d = hex_value((unsigned char)s[p->pos])) >= 0 && d < base) {
        if (__builtin_mul_overflow(x, (int64_t)base, &x) ||
            __builtin_add_overflow(x, (int64_t)d, &x))
            return pfail(p, start, "integer literal too large (max %" PRId64 ")", INT64_MAX);
        p->pos++;
        ndig++;
    }
    if (ndig == 0 || is_alnum((unsigned char)s[p->pos]))
        return pfail(p, start, "bad integer literal");
    *v = x;
    return 0;
}

static int lookup_var(struct pstate *p, size_t start, size_t len, int64_t *v)
{
    const struct expr_vars *vars = p->vars;
    int i;

    *v = 0;
    for (i = 0; vars != NULL && vars->names != NULL && i < vars->n; i++) {
        const char *nm = vars->names[i];
        if (nm != NULL && strlen(nm) == len && memcmp(nm, p->s + start, len) == 0) {
            if (p->eval)
                *v = vars->values[i];
            return 0;
        }
    }
    if (p->any_name)
        return 0;
    if (p->unknown != NULL && p->unknownsz > 0) {
        size_t n = len < p->unknownsz - 1 ? len : p->unknownsz - 1;
        memcpy(p->unknown, p->s + start, n);
        p->unknown[n] = '\0';
    }
    return pfail(p, start, "unknown variable '%.*s'",
                 (int)(len < EXPR_NAME_SHOW ? len : EXPR_NAME_SHOW), p->s + start);
}

/* The functions: index into this table is the function id. */
static const char *const expr_funcs[] = {"min", "max", "ceil_div"};
enum { FN_MIN, FN_MAX, FN_CEIL_DIV, FN_COUNT };

static int apply_func(struct pstate *p, int fn, size_t at, const int64_t a[2], int64_t *v)
{
    if (fn == FN_MIN) {
        *v = a[0] < a[1] ? a[0] : a[1];
    } else if (fn == FN_MAX) {
        *v = a[0] > a[1] ? a[0] : a[1];
    } else {
        if (a[1] <= 0)
            return pfail(p, at, "ceil_div divisor must be > 0, got %" PRId64, a[1]);
        /* Truncation is the ceiling for a < 0; no a + b - 1, so no overflow. */
        *v = a[0] / a[1] + (a[0] > 0 && a[0] % a[1] != 0);
    }
    return 0;
}

/* NAME '(' expr (',' expr)* ')' with the '(' already next. */
static int parse_call(struct pstate *p, size_t start, size_t len, int64_t *v)
{
    int fn, nargs = 0, rc;
    int64_t args[2] = {0, 0}, x;

    for (fn = 0; fn < FN_COUNT; fn++)
        if (strlen(expr_funcs[fn]) == len && memcmp(expr_funcs[fn], p->s + start, len) == 0)
            break;
    if (fn == FN_COUNT)
        return pfail(p, start, "unknown function '%.*s' (known: min, max, ceil_div)",
                     (int)(len < EXPR_NAME_SHOW ? len : EXPR_NAME_SHOW), p->s + start);
    p->pos++; /* '(' */
    if (peek(p) != ')') {
        do {
            if ((rc = parse_expr(p, start, &x)) != 0)
                return rc;
            if (nargs < 2)
                args[nargs] = x;
            nargs++;
        } while (accept(p, ","));
    }
    if (!accept(p, ")"))
        return peek(p) == '\0' ? pfail(p, p->pos, "missing ')' after arguments of %s",
                                       expr_funcs[fn])
                               : unexpected(p);
    if (nargs != 2)
        return pfail(p, start, "%s takes 2 arguments, got %d", expr_funcs[fn], nargs);
    *v = 0;
    return p->eval ? apply_func(p, fn, start, args, v) : 0;
}

static int parse_primary(struct pstate *p, int64_t *v)
{
    int c = peek(p), rc;
    size_t start = p->pos;

    if (is_digit(c))
        return parse_number(p, v);
    if (is_alpha(c)) {
        while (is_alnum((unsigned char)p->s[p->pos]))
            p->pos++;
        size_t len = p->pos - start;
        if (peek(p) == '(')
            return parse_call(p, start, len, v);
        return lookup_var(p, start, len, v);
    }
    if (c == '(') {
        p->pos++;
        if ((rc = parse_expr(p, start, v)) != 0)
            return rc;
        if (accept(p, ")"))
            return 0;
        if (peek(p) == '\0')
            return pfail(p, p->pos, "missing ')' to close '(' at column %zu", start + 1);
        return unexpected(p);
    }
    return unexpected(p);
}

/* ---- operators, from the tightest binding up ---- */

/* unary := ('-'|'+'|'!') unary | primary; each prefix operator is one level. */
static int parse_unary(struct pstate *p, int64_t *v)
{
    int c = peek(p), rc;
    size_t at = p->pos;

    if (c != '-' && c != '+' && c != '!')
        return parse_primary(p, v);
    p->pos++;
    rc = enter(p, at);
    if (rc == 0)
        rc = parse_unary(p, v);
    p->depth--;
    if (rc != 0)
        return rc;
    if (c == '!') {
        *v = !*v;
    } else if (c == '-' && p->eval) {
        if (*v == INT64_MIN)
            return pfail(p, at, "integer overflow in unary minus");
        *v = -*v;
    }
    return 0;
}

static int parse_term(struct pstate *p, int64_t *v)
{
    int rc = parse_unary(p, v), c;
    int64_t r;

    while (rc == 0 && ((c = peek(p)) == '*' || c == '/' || c == '%')) {
        size_t at = p->pos++;
        if ((rc = parse_unary(p, &r)) != 0 || !p->eval)
            continue;
        if (c == '*') {
            if (__builtin_mul_overflow(*v, r, v))
                rc = pfail(p, at, "integer overflow in '*'");
        } else if (r == 0) {
            rc = pfail(p, at, c == '/' ? "division by zero" : "modulo by zero");
        } else if (*v == INT64_MIN && r == -1) {
            rc = pfail(p, at, "integer overflow in '%c'", c);
        } else {
            *v = c == '/' ? *v / r : *v % r;
        }
    }
    return rc;
}

static int parse_sum(struct pstate *p, int64_t *v)
{
    int rc = parse_term(p, v), c;
    int64_t r;

    while (rc == 0 && ((c = peek(p)) == '+' || c == '-')) {
        size_t at = p->pos++;
        if ((rc = parse_term(p, &r)) != 0 || !p->eval)
            continue;
        if (c == '+' ? __builtin_add_overflow(*v, r, v) : __builtin_sub_overflow(*v, r, v))
            rc = pfail(p, at, "integer overflow in '%c'", c);
    }
    return rc;
}

/* Consume a comparison operator if one comes next; return its index or -1. */
static int accept_cmp(struct pstate *p)
{
    static const char *const ops[] = {"==", "!=", "<=", ">=", "<", ">"};
    int i;
    for (i = 0; i < 6; i++)
        if (accept(p, ops[i]))
            return i;
    return -1;
}

static int parse_cmp(struct pstate *p, int64_t *v)
{
    int rc = parse_sum(p, v), op;
    int64_t a = *v, b;
    size_t at;

    if (rc != 0 || (op = accept_cmp(p)) < 0)
        return rc;
    if ((rc = parse_sum(p, &b)) != 0)
        return rc;
    switch (op) {
    case 0: *v = a == b; break;
    case 1: *v = a != b; break;
    case 2: *v = a <= b; break;
    case 3: *v = a >= b; break;
    case 4: *v = a < b; break;
    default: *v = a > b; break;
    }
    peek(p);
    at = p->pos;
    if (accept_cmp(p) >= 0)
        return pfail(p, at, "comparisons do not chain (use &&)");
    return 0;
}

static int parse_and(struct pstate *p, int64_t *v)
{
    int rc = parse_cmp(p, v), live = p->eval;
    int64_t r;

    while (rc == 0 && accept(p, "&&")) {
        p->eval = live && *v != 0; /* short-circuit: skip when already false */
        rc = parse_cmp(p, &r);
        p->eval = live;
        *v = *v != 0 && r != 0;
    }
    return rc;
}

static int parse_or(struct pstate *p, int64_t *v)
{
    int rc = parse_and(p, v), live = p->eval;
    int64_t r;

    while (rc == 0 && accept(p, "||")) {
        p->eval = live && *v == 0; /* short-circuit: skip when already true */
        rc = parse_and(p, &r);
        p->eval = live;
        *v = *v != 0 || r != 0;
    }
    return rc;
}

/* cond := or ( '?' expr ':' expr )?, evaluating only the chosen branch. */
static int parse_cond(struct pstate *p, int64_t *v)
{
    int rc = parse_or(p, v), live = p->eval;
    int64_t c = *v, a = 0, b = 0;
    size_t at;

    peek(p);
    at = p->pos;
    if (rc != 0 || !accept(p, "?"))
        return rc;
    p->eval = live && c != 0;
    rc = parse_expr(p, at, &a);
    if (rc == 0) {
        peek(p);
        at = p->pos;
        if (!accept(p, ":"))
            rc = p->s[at] == '\0' ? pfail(p, at, "missing ':' of '?:'") : unexpected(p);
    }
    if (rc == 0) {
        p->eval = live && c == 0;
        rc = parse_expr(p, at, &b);
    }
    p->eval = live;
    *v = c != 0 ? a : b;
    return rc;
}

/* expr, one nesting level opened by the byte at offset at. */
static int parse_expr(struct pstate *p, size_t at, int64_t *v)
{
    int rc = enter(p, at);
    if (rc == 0)
        rc = parse_cond(p, v);
    p->depth--;
    return rc;
}

/* ---- entry points ---- */

/* Parse (and with eval, evaluate) the whole of text. */
static int expr_run(struct pstate *p, int64_t *out)
{
    size_t len = 0;
    int64_t v = 0;
    int rc;

    if (p->s == NULL)
        return KJ_FAIL(p->err, KJ_EINVAL, "empty expression");
    while (len <= EXPR_MAX_LEN && p->s[len] != '\0')
        len++;
    if (len > EXPR_MAX_LEN)
        return KJ_FAIL(p->err, KJ_EINVAL, "expression too long (max %d characters)",
                       EXPR_MAX_LEN);
    if (p->eval && p->vars != NULL && p->vars->n > 0 && p->vars->values == NULL)
        return KJ_FAIL(p->err, KJ_EINTERNAL, "expr_eval called without variable values");
    if (peek(p) == '\0')
        return KJ_FAIL(p->err, KJ_EINVAL, "empty expression");
    if ((rc = parse_expr(p, p->pos, &v)) != 0)
        return rc;
    if (peek(p) != '\0')
        return unexpected(p);
    *out = v;
    return 0;
}

int expr_eval(const char *text, const struct expr_vars *vars, int64_t *out, struct kj_err *err)
{
    struct pstate p = {.s = text, .vars = vars, .eval = 1, .err = err};
    return expr_run(&p, out);
}

int expr_check_unknown(const char *text, const struct expr_vars *vars,
                       char *name, size_t namesz, struct kj_err *err)
{
    struct pstate p = {.s = text, .vars = vars, .any_name = vars == NULL,
                       .unknown = name, .unknownsz = namesz, .err = err};
    int64_t v;

    if (name != NULL && namesz > 0)
        name[0] = '\0';
    return expr_run(&p, &v);
}

int expr_check(const char *text, const struct expr_vars *vars, struct kj_err *err)
{
    return expr_check_unknown(text, vars, NULL, 0, err);
}
