/*
 * fexpr.c - real-valued expressions (grammar and semantics in fexpr.h).
 *
 * A recursive-descent parser that evaluates as it parses, kept apart from
 * expr.c because its numbers are doubles and its rules differ (no integer
 * overflow, no comparisons; non-finite values are errors instead).
 */
#include "fexpr.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FEXPR_MAX_DEPTH 32
#define FEXPR_QUOTE 80

/* Parser state; lives on the caller's stack. */
struct fstate {
    const char *s;                /* borrowed, NUL-terminated */
    size_t pos;
    const struct expr_vars *vars; /* borrowed */
    int eval;                     /* 0: values absent, check only */
    int depth;
    struct kj_err *err;
};

static int fparse_expr(struct fstate *p, double *v);

static int ffail(struct fstate *p, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int ffail(struct fstate *p, size_t at, const char *fmt, ...)
{
    char what[160], quote[FEXPR_QUOTE + 4];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    kj_printable(quote, sizeof quote, p->s, FEXPR_QUOTE);
    if (strlen(p->s) > FEXPR_QUOTE)
        memcpy(quote + FEXPR_QUOTE, "...", 4);
    return KJ_FAIL(p->err, KJ_EINVAL, "%s in '%s' at column %zu", what, quote, at + 1);
}

static int f_digit(int c) { return c >= '0' && c <= '9'; }
static int f_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

static int fpeek(struct fstate *p)
{
    while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t')
        p->pos++;
    return (unsigned char)p->s[p->pos];
}

static int funexpected(struct fstate *p)
{
    int c = fpeek(p);
    if (c == '\0')
        return ffail(p, p->pos, "unexpected end of expression");
    if (c < 0x20 || c >= 0x7f)
        return ffail(p, p->pos, "unexpected byte 0x%02x", (unsigned)c);
    return ffail(p, p->pos, "unexpected '%c'", c);
}

/* A finished value must be finite; at is where its operator stands. */
static int fcheck(struct fstate *p, size_t at, double v, const char *what)
{
    if (p->eval && !isfinite(v))
        return ffail(p, at, "%s is not a finite number", what);
    return 0;
}

/* digits [. digits] [(e|E) [+-] digits], validated by hand so that strtod
 * never sees hex, "inf" or "nan". */
static int fparse_number(struct fstate *p, double *v)
{
    const char *s = p->s;
    size_t start = p->pos, i = p->pos;
    char buf[64];

    while (f_digit(s[i]))
        i++;
    if (s[i] == '.') {
        i++;
        if (!f_digit(s[i]))
            return ffail(p, start, "bad number");
        while (f_digit(s[i]))
            i++;
    }
    if (s[i] == 'e' || s[i] == 'E') {
        i++;
        if (s[i] == '+' || s[i] == '-')
            i++;
        if (!f_digit(s[i]))
            return ffail(p, start, "bad exponent");
        while (f_digit(s[i]))
            i++;
    }
    if (f_alpha(s[i]) || i - start >= sizeof buf)
        return ffail(p, start, "bad number");
    memcpy(buf, s + start, i - start);
    buf[i - start] = '\0';
    *v = strtod(buf, NULL);
    p->pos = i;
    return fcheck(p, start, *v, "the literal");
}

static int fvar(struct fstate *p, size_t start, size_t len, double *v)
{
    const struct expr_vars *vars = p->vars;
    for (int i = 0; vars != NULL && i < vars->n; i++)
        if (strlen(vars->names[i]) == len && memcmp(vars->names[i], p->s + start, len) == 0) {
            *v = p->eval ? (double)vars->values[i] : 0.0;
            return 0;
        }
    return ffail(p, start, "unknown variable '%.*s'", (int)(len < 40 ? len : 40), p->s + start);
}

static const char *const fexpr_funcs[] = {"sqrt", "log2", "min", "max"};
static const int fexpr_arity[] = {1, 1, 2, 2};
enum { FF_SQRT, FF_LOG2, FF_MIN, FF_MAX, FF_COUNT };

static int fcall(struct fstate *p, size_t start, size_t len, double *v)
{
    double a[2] = {0, 0}, x;
    int fn, n = 0, rc;

    for (fn = 0; fn < FF_COUNT; fn++)
        if (strlen(fexpr_funcs[fn]) == len && memcmp(fexpr_funcs[fn], p->s + start, len) == 0)
            break;
    if (fn == FF_COUNT)
        return ffail(p, start, "unknown function '%.*s' (known: sqrt, log2, min, max)",
                     (int)(len < 40 ? len : 40), p->s + start);
    p->pos++; /* '(' */
    do {
        if ((rc = fparse_expr(p, &x)) != 0)
            return rc;
        if (n < 2)
            a[n] = x;
        n++;
        fpeek(p);
    } while (p->s[p->pos] == ',' && ++p->pos);
    if (fpeek(p) != ')')
        return funexpected(p);
    p->pos++;
    if (n != fexpr_arity[fn])
        return ffail(p, start, "%s takes %d argument%s, got %d", fexpr_funcs[fn],
                     fexpr_arity[fn], fexpr_arity[fn] == 1 ? "" : "s", n);
    switch (fn) {
    case FF_SQRT: *v = sqrt(a[0]); break;
    case FF_LOG2: *v = log2(a[0]); break;
    case FF_MIN: *v = fmin(a[0], a[1]); break;
    default: *v = fmax(a[0], a[1]); break;
    }
    return fcheck(p, start, *v, fexpr_funcs[fn]);
}

static int fparse_primary(struct fstate *p, double *v)
{
    int c = fpeek(p), rc;
    size_t start = p->pos;

    if (f_digit(c) || c == '.')
        return fparse_number(p, v);
    if (f_alpha(c)) {
        while (f_alpha((unsigned char)p->s[p->pos]) || f_digit((unsigned char)p->s[p->pos]))
            p->pos++;
        size_t len = p->pos - start;
        return fpeek(p) == '(' ? fcall(p, start, len, v) : fvar(p, start, len, v);
    }
    if (c == '(') {
        p->pos++;
        if ((rc = fparse_expr(p, v)) != 0)
            return rc;
        if (fpeek(p) != ')')
            return p->s[p->pos] == '\0'
                   ? ffail(p, p->pos, "missing ')' to close '(' at column %zu", start + 1)
                   : funexpected(p);
        p->pos++;
        return 0;
    }
    return funexpected(p);
}

static int fparse_unary(struct fstate *p, double *v)
{
    int c = fpeek(p), rc;
    if (c != '-' && c != '+')
        return fparse_primary(p, v);
    p->pos++;
    if (++p->depth > FEXPR_MAX_DEPTH)
        return ffail(p, p->pos - 1, "nesting too deep (max %d levels)", FEXPR_MAX_DEPTH);
    rc = fparse_unary(p, v);
    p->depth--;
    if (rc == 0 && c == '-')
        *v = -*v;
    return rc;
}

static int fparse_term(struct fstate *p, double *v)
{
    int rc = fparse_unary(p, v), c;
    double r;
    while (rc == 0 && ((c = fpeek(p)) == '*' || c == '/')) {
        size_t at = p->pos++;
        if ((rc = fparse_unary(p, &r)) != 0)
            break;
        if (c == '/' && p->eval && r == 0.0)
            return ffail(p, at, "division by zero");
        *v = c == '*' ? *v * r : (p->eval ? *v / r : 0.0);
        rc = fcheck(p, at, *v, c == '*' ? "the product" : "the quotient");
    }
    return rc;
}

static int fparse_expr(struct fstate *p, double *v)
{
    int rc, c;
    double r;
    size_t at0 = p->pos;

    if (++p->depth > FEXPR_MAX_DEPTH)
        return ffail(p, at0, "nesting too deep (max %d levels)", FEXPR_MAX_DEPTH);
    rc = fparse_term(p, v);
    while (rc == 0 && ((c = fpeek(p)) == '+' || c == '-')) {
        size_t at = p->pos++;
        if ((rc = fparse_term(p, &r)) != 0)
            break;
        *v = c == '+' ? *v + r : *v - r;
        rc = fcheck(p, at, *v, c == '+' ? "the sum" : "the difference");
    }
    p->depth--;
    return rc;
}

int fexpr_eval(const char *text, const struct expr_vars *vars, double *out, struct kj_err *err)
{
    struct fstate p = {.s = text, .vars = vars, .err = err};
    double v = 0.0;
    int rc;

    *out = 0.0;
    if (text == NULL)
        return KJ_FAIL(err, KJ_EINVAL, "empty expression");
    if (strnlen(text, EXPR_MAX_LEN + 1) > EXPR_MAX_LEN)
        return KJ_FAIL(err, KJ_EINVAL, "expression too long (max %d characters)", EXPR_MAX_LEN);
    p.eval = vars == NULL || vars->n == 0 || vars->values != NULL;
    if (fpeek(&p) == '\0')
        return KJ_FAIL(err, KJ_EINVAL, "empty expression");
    if ((rc = fparse_expr(&p, &v)) != 0)
        return rc;
    if (fpeek(&p) != '\0')
        return funexpected(&p);
    *out = p.eval ? v : 0.0; /* a names-only check computes no value (fexpr.h) */
    return 0;
}
