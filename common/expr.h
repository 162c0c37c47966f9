/*
 * expr.h - integer expressions over a leaderboard's shape variables.
 *
 * Used by the directive parser (launch grid/block/smem/cluster, workspace)
 * and by the spec loader (buffer shapes, bytes moved). Grammar, lowest
 * precedence first:
 *   expr    := cond
 *   cond    := or ( '?' expr ':' expr )?
 *   or      := and ( '||' and )*
 *   and     := cmp ( '&&' cmp )*
 *   cmp     := sum ( ('=='|'!='|'<'|'<='|'>'|'>=') sum )?
 *   sum     := term ( ('+'|'-') term )*
 *   term    := unary ( ('*'|'/'|'%') unary )*
 *   unary   := ('-'|'+'|'!') unary | primary
 *   primary := INT | NAME | NAME '(' expr (',' expr)* ')' | '(' expr ')'
 * Functions: min(a,b), max(a,b), ceil_div(a,b). Values are int64; overflow,
 * division or modulo by zero, unknown names and bad syntax are errors whose
 * message quotes the expression and the 1-based column.
 */
#ifndef KJ_EXPR_H
#define KJ_EXPR_H

#include <stddef.h>
#include <stdint.h>
#include "kj_err.h"

#define EXPR_MAX_LEN 256 /* longer text is rejected */

struct expr_vars {
    int n;
    const char *const *names; /* borrowed, n entries */
    const int64_t *values;    /* borrowed, n entries; may be NULL for expr_check */
};

/* Evaluate text with vars. On success *out holds the value.
 * Errors: KJ_EINVAL with a message such as
 *   "division by zero in 'T/(GS-64)' at column 2". err->line is left 0. */
int expr_eval(const char *text, const struct expr_vars *vars, int64_t *out, struct kj_err *err);

/* Check syntax and that every name is a known variable or function, without
 * evaluating (values may be NULL). vars == NULL means "syntax only": any
 * variable name is accepted, but function names, their arity, literals,
 * length and nesting are still checked. Same message format as expr_eval. */
int expr_check(const char *text, const struct expr_vars *vars, struct kj_err *err);

/* expr_check, and when it fails because of an unknown variable, that
 * variable's name is copied into name (namesz bytes, NUL-terminated, cut if
 * longer); on success or any other error name is "". name may be NULL. */
int expr_check_unknown(const char *text, const struct expr_vars *vars,
                       char *name, size_t namesz, struct kj_err *err);

#endif
