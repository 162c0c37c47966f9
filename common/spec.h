/*
 * spec.h - a leaderboard's definition, loaded from leaderboards/<name>/leaderboard.json.
 *
 * The server loads every spec at start to validate submissions and serve
 * /api/v1/leaderboards; the runner loads the spec named by a job to know the
 * kernel signature, how to generate inputs, the tolerances and the shapes.
 * The file format is documented in leaderboards/README.md; spec_load()
 * rejects anything it does not understand with a message naming the field.
 */
#ifndef KJ_SPEC_H
#define SPEC_MAX_TOOL_S 3600.0 /* time_limits_s.tools: at most an hour */
#define KJ_SPEC_H

#include <stdint.h>
#include <stddef.h>
#include "kj_err.h"

#define SPEC_MAX_NAME 64     /* names of leaderboards, buffers, variables, GPUs */
#define SPEC_MAX_EXPR 128    /* a shape or size expression */
#define SPEC_MAX_BUFFERS 12
#define SPEC_MAX_DIMS 6
#define SPEC_MAX_VARS 12
#define SPEC_MAX_CASES 64
#define SPEC_MAX_GPUS 8
#define SPEC_MAX_PATH 512

enum spec_dtype {
    SPEC_F32 = 0, SPEC_F16, SPEC_BF16, SPEC_F64,
    SPEC_I8, SPEC_U8, SPEC_I32, SPEC_U32, SPEC_I64
};

enum spec_role { SPEC_INPUT = 0, SPEC_OUTPUT = 1 };

/* How an input buffer is filled by the trusted generator (kernels/fill.cu).
 * SPEC_DIST_NONE is used for outputs. SPEC_DIST_GENERATED means the
 * leaderboard's own generate.cu fills it. */
enum spec_dist { SPEC_DIST_NONE = 0, SPEC_DIST_NORMAL, SPEC_DIST_UNIFORM, SPEC_DIST_INT, SPEC_DIST_GENERATED };

struct spec_buffer {
    char name[SPEC_MAX_NAME];
    enum spec_dtype dtype;
    enum spec_role role;
    int ndim;                               /* 0 = scalar (one element) */
    char shape[SPEC_MAX_DIMS][SPEC_MAX_EXPR]; /* expressions over the vars */
    enum spec_dist dist;
    double p0, p1;                          /* normal: mean,std; uniform: lo,hi; int: lo,hi inclusive */
    double atol, rtol;                      /* outputs only; integer outputs compare exactly */
    char atol_expr[SPEC_MAX_EXPR];          /* "" or a fexpr.h expression that replaces atol */
    char rtol_expr[SPEC_MAX_EXPR];          /* per case (spec_tolerance), e.g. "1e-5 * sqrt(N)" */
};

/* "python": the board's interface for Python submissions in KernelBot's
 * form (leaderboards/README.md): the tuple custom_kernel(data) receives
 * and the tuple it returns. */
#define SPEC_MAX_PYARGS 16
enum spec_pyarg_kind { SPEC_PYARG_BUFFER = 0, SPEC_PYARG_VAR = 1 };
struct spec_pyarg { int kind; int index; };  /* index into spec->buffers or spec->vars */
struct spec_python {
    int present;                     /* 1: the board takes Python submissions */
    int nargs;
    struct spec_pyarg args[SPEC_MAX_PYARGS];
    int nreturns;
    int returns[SPEC_MAX_PYARGS];    /* buffer indices (outputs), in the returned tuple's order */
};

/* One test or benchmark case: a value per variable (same order as spec.vars) and a seed. */
struct spec_case {
    int64_t val[SPEC_MAX_VARS];
    uint64_t seed;
};

struct spec {
    char name[SPEC_MAX_NAME];
    char title[128];
    char dir[SPEC_MAX_PATH];              /* folder the spec was loaded from */
    char description_file[SPEC_MAX_NAME]; /* relative to dir */
    char deadline[32];                    /* ISO 8601 UTC "2027-03-15T00:00:00Z", "" = none */
    int64_t deadline_unix;                /* 0 = none */
    int ngpus;
    char gpus[SPEC_MAX_GPUS][SPEC_MAX_NAME]; /* GPU types this board ranks, e.g. "H200" */
    double resolution_pct[SPEC_MAX_GPUS]; /* "resolution_pct" of gpus[i]: the smallest score
                                           * difference (% of the better score) that is
                                           * significant on that GPU, measured; 0 = not measured */
    double gpu_resolution_pct[SPEC_MAX_GPUS]; /* "gpu_time_resolution_pct": the same for
                                               * GPU-time scores (docs/timing.md 6) */
    int nvars;
    char vars[SPEC_MAX_VARS][SPEC_MAX_NAME]; /* integer shape variables, passed as int after the buffers */
    int nbuffers;
    struct spec_buffer buffers[SPEC_MAX_BUFFERS]; /* in kernel-argument order */
    int ntests;
    struct spec_case tests[SPEC_MAX_CASES];
    int nbenchmarks;
    struct spec_case benchmarks[SPEC_MAX_CASES];
    char ranking[16];                     /* "geomean" */
    int score_gpu_time;                   /* "score": "gpu_time" (the default): rank the
                                           * GPU-time medians (CUPTI), not the events'; 0 =
                                           * "events" (docs/timing.md 8) */
    double limit_test_s, limit_benchmark_s, limit_leaderboard_s; /* wall limits per job */
    double limit_tools_s;                 /* time_limits_s.tools: a profile or sanitize job's wall
                                           * limit on this board; 0 = the runner's default
                                           * (docs/operator-tools.md) */
    char bytes_expr[SPEC_MAX_EXPR];       /* "bytes": minimum bytes moved, for the physical floor; "" = sum of all buffers */
    char flops_expr[SPEC_MAX_EXPR];       /* "flops": minimum flops, "" = none */
    int nconstraints;
    char constraints[8][SPEC_MAX_EXPR];   /* "constraints": expressions every case must satisfy (non-zero) */
    int has_generate;                     /* generate.cu exists in dir */
    int public_reference;                 /* "public_reference": true: anyone may download reference.cu */
    struct spec_python python;            /* "python"; present 0 when the board has none */
};

/* "YYYY-MM-DDTHH:MM:SSZ" (a board's deadline) -> unix seconds in *out: 0;
 * -1 for anything else, an impossible date (Feb 30) included. */
int spec_parse_utc(const char *v, int64_t *out);

/* Load dir/leaderboard.json. On success *out is a new spec the caller frees
 * with spec_free(). On failure *out is NULL and err names the file and field. */
int spec_load(const char *dir, struct spec **out, struct kj_err *err);

/* spec_load's work once dir/leaderboard.json is read: text (NUL-terminated)
 * is that file's content; dir is still consulted for the folder name, the
 * description file and generate.cu. Same results and messages. */
int spec_parse(const char *text, const char *dir, struct spec **out, struct kj_err *err);

void spec_free(struct spec *s);

/* Size of one element of dtype in bytes. */
size_t spec_dtype_size(enum spec_dtype t);
/* "float32", "float16", "bfloat16", "float64", "int8", "uint8", "int32", "uint32", "int64". */
const char *spec_dtype_name(enum spec_dtype t);
/* 1 if the dtype is an integer type (compared exactly). */
int spec_dtype_is_int(enum spec_dtype t);

/* Index of variable name in s->vars, or -1. */
int spec_var_index(const struct spec *s, const char *name);

/* Number of elements of buffer b for case c (product of its shape
 * expressions, each evaluated with c's variables). Fails on a bad or
 * non-positive dimension or overflow. */
int spec_buffer_elems(const struct spec *s, int b, const struct spec_case *c,
                      int64_t *out, struct kj_err *err);

/* Dimensions of buffer b for case c into dims[SPEC_MAX_DIMS]; returns ndim via *ndim. */
int spec_buffer_dims(const struct spec *s, int b, const struct spec_case *c,
                     int64_t *dims, int *ndim, struct kj_err *err);

/* The tolerances of output buffer b for case c: the numbers of the file, or
 * its expressions evaluated with c's variables (finite and >= 0, which the
 * loader has checked for every case of the file). */
int spec_tolerance(const struct spec *s, int b, const struct spec_case *c,
                   double *atol, double *rtol, struct kj_err *err);

struct expr_vars;

/* *out = s's variables for expr.h: names (the caller's SPEC_MAX_VARS array)
 * filled with pointers into s->vars, values borrowed (NULL for a names-only
 * check). */
void spec_expr_vars(const struct spec *s, const char **names, const int64_t *values,
                    struct expr_vars *out);

/* Write "T=1 H=256 GS=64" for case c into buf. */
void spec_case_label(const struct spec *s, const struct spec_case *c, char *buf, size_t bufsz);

/* Load every spec under root (one per subfolder holding leaderboard.json).
 * *out is an array of *n specs; free with spec_free_all(). A folder whose
 * spec fails to load is an error (the server refuses to start). */
int spec_load_all(const char *root, struct spec ***out, int *n, struct kj_err *err);
void spec_free_all(struct spec **specs, int n);

/* The board named name among *specs (*n of them, loaded from root); when
 * none is, root is read again once and, if it loads, replaces *specs (a
 * board added since: the server may have a newer folder). NULL when root
 * has no such board either. The runner's supervisor and its compile-ahead
 * process look up each job's board so. */
const struct spec *spec_find_reload(const char *root, struct spec ***specs, int *n,
                                    const char *name);

#endif
