/*
 * spec_int.h - what the files of the leaderboard loader share (internal).
 *
 * spec.c reads leaderboard.json and drives the load; spec_fields.c checks
 * the top-level fields (name, GPUs, vars, constraints, sizes, limits) with
 * the shared field readers; spec_buffers.c the buffers, tests and
 * benchmarks; spec_python.c the Python interface; spec_query.c answers questions about a loaded spec. Every
 * loader function fills c->s and reports through LD_FAIL, so an error
 * reads "<path>: <field>: <what is wrong>". Not for use outside these five
 * files.
 */
#ifndef KJ_SPEC_INT_H
#define KJ_SPEC_INT_H

#include "spec.h"

#include <cjson/cJSON.h>

#define SPEC_MAX_FILE (1024 * 1024) /* leaderboard.json larger than this is refused */
#define SPEC_MAX_CONSTRAINTS 8
#define SPEC_MAX_SECONDS 86400.0    /* upper bound on any time limit */
#define SPEC_MAX_SAFE_INT 9007199254740992.0 /* 2^53: JSON numbers above lose precision */
#define SPEC_NDTYPES 9              /* the values of enum spec_dtype */

/* Loading context: where errors go and what they name. */
struct ld {
    const char *path;     /* borrowed: ".../leaderboard.json", prefix of every message */
    struct spec *s;       /* borrowed: the spec being filled */
    struct kj_err *err;   /* borrowed: caller's error */
};

/* Names and element sizes of enum spec_dtype, indexed by it (spec_query.c). */
extern const char *const spec_dtype_names[SPEC_NDTYPES];
extern const size_t spec_dtype_sizes[SPEC_NDTYPES];

/* Fail with "<path>: <field>: <message>"; returns the error code. */
int ld_failf(struct ld *c, int src_line, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define LD_FAIL(c, field, ...) ld_failf((c), __LINE__, (field), __VA_ARGS__)

/* Field readers and checks (spec_fields.c). */
int ld_is_whole(double d);
int ld_is_ident(const char *v);
int ld_is_board_name(const char *v);
int ld_is_gpu_name(const char *v);
int ld_keys(struct ld *c, const cJSON *obj, const char *where, const char *const *allowed);
int ld_str(struct ld *c, const cJSON *obj, const char *key, const char *field, int required,
           char *dst, size_t dstsz);
int ld_num(struct ld *c, const cJSON *obj, const char *key, const char *field, int required,
           double *out);
int ld_expr(struct ld *c, const char *field, const char *text);
int ld_expr_item(struct ld *c, const cJSON *v, const char *field, char *dst);

/* Top-level fields, in load order (spec_fields.c). */
int ld_header(struct ld *c, const cJSON *root, const char *dir);
int ld_gpus(struct ld *c, const cJSON *root);
int ld_resolution(struct ld *c, const cJSON *root);
int ld_vars(struct ld *c, const cJSON *root);
int ld_constraints(struct ld *c, const cJSON *root);
int ld_sizes(struct ld *c, const cJSON *root);
int ld_limits(struct ld *c, const cJSON *root);

/* Buffers, then tests and benchmarks (spec_buffers.c). */
int ld_buffers(struct ld *c, const cJSON *root);
int ld_cases(struct ld *c, const cJSON *root, const char *key, struct spec_case *cases,
             int *n);

/* The "python" block, after buffers and vars (spec_python.c). */
int ld_python(struct ld *c, const cJSON *root);

#endif
