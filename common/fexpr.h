/*
 * fexpr.h - real-valued expressions over a leaderboard's shape variables.
 *
 * The spec loader uses them for tolerances that depend on the shape, e.g.
 * "atol": "1e-5 * sqrt(N)"; the runner evaluates them per case before it
 * compares outputs. Integer shapes and sizes use expr.h instead. Grammar:
 *   expr    := term ( ('+'|'-') term )*
 *   term    := unary ( ('*'|'/') unary )*
 *   unary   := ('-'|'+') unary | primary
 *   primary := NUMBER | NAME | NAME '(' expr (',' expr)* ')' | '(' expr ')'
 * NUMBER is a decimal literal with optional fraction and exponent ("1e-5",
 * "0.25", "3"). NAME is a variable (its int64 value as a double). Functions:
 * sqrt(x), log2(x), min(a,b), max(a,b). A result or intermediate that is not
 * finite (division by zero, sqrt of a negative) is an error whose message
 * quotes the expression and the 1-based column, like expr.h's.
 */
#ifndef KJ_FEXPR_H
#define KJ_FEXPR_H

#include "expr.h"

/* Evaluate text with vars (values may be NULL only to check syntax and
 * names: then *out is 0). */
int fexpr_eval(const char *text, const struct expr_vars *vars, double *out, struct kj_err *err);

#endif
