/*
 * plan.h - every test and benchmark case of a job, resolved once.
 *
 * A leaderboard writes its shapes, tolerances and floor as expressions over
 * the case's variables, and a source writes its launch lines and workspace
 * the same way. The judge (judge.c) resolves all of them for every case
 * with plan_build() right after it has parsed the directives and before it
 * starts any box: buffer offsets, sizes, element counts and dimensions in
 * the shared region, tolerances, the launch dimensions of the submission's,
 * the reference's and generate.cu's launch lines, the workspace bytes, the
 * vars as kernel arguments and the bytes of the physical floor. Nothing
 * after that evaluates an expression: the run boxes (box.c) size buffers
 * and launch from the plan, the judge compares and reports from it, and
 * the dump (dump.c) writes it.
 *
 * Trust: the plan is computed by the judge from the board's files and the
 * parsed directives, and reaches the run boxes only as part of the judge's
 * memory that fork() copies: nothing a box or a submission sends back ever
 * changes it. A launch line that does not evaluate for a case is not an
 * error here: the plan records why, and the box that runs the case reports
 * it at the moment it would have evaluated the line (a "rejected" verdict
 * for the submission, the judge's error for the reference or generate.cu).
 */
#ifndef KJ_PLAN_H
#define KJ_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include "directive.h"
#include "kj_err.h"
#include "spec.h"

#define PLAN_ALIGN 256 /* every buffer starts at a multiple of this in the region */

/* The directive sets whose launch lines a case is resolved for. */
enum plan_set {
    PLAN_SUB = 0, /* the submission's (the submission box) */
    PLAN_REF,     /* the board's reference.cu (the reference box) */
    PLAN_GEN,     /* the board's generate.cu (both boxes); unused when the board has none */
    PLAN_NSETS
};

/* One directive set's launch lines and workspace, evaluated for one case. */
struct plan_launches {
    int nlaunch;
    int ok[DIR_MAX_LAUNCHES];              /* 1: dims[l] holds launch line l's dimensions */
    struct dir_dims dims[DIR_MAX_LAUNCHES];
    int bad;                               /* -1: every line and the workspace evaluate;
                                            * l < nlaunch: line l is the first that does not;
                                            * nlaunch: the workspace does not */
    struct kj_err err;                     /* why, when bad >= 0 (message and source line) */
    uint64_t ws_bytes;                     /* the workspace (0 without a workspace line) */
};

/* One case resolved. */
struct case_plan {
    int bench, index;                      /* benchmarks[index] (bench = 1) or tests[index] */
    int64_t val[SPEC_MAX_VARS];            /* the variables, in the board's order */
    uint64_t seed;                         /* the case's public seed */
    int bad_var;                           /* -1, or the first variable that does not fit in int */
    int32_t ivals[SPEC_MAX_VARS];          /* the variables as kernel arguments */
    size_t off[SPEC_MAX_BUFFERS];          /* byte offset of each buffer in the region */
    size_t size[SPEC_MAX_BUFFERS];         /* its bytes */
    size_t total;                          /* region bytes the case needs */
    int64_t nelem[SPEC_MAX_BUFFERS];       /* its elements */
    int ndim[SPEC_MAX_BUFFERS];
    int64_t dims[SPEC_MAX_BUFFERS][SPEC_MAX_DIMS];
    double atol[SPEC_MAX_BUFFERS], rtol[SPEC_MAX_BUFFERS]; /* outputs; 0 for inputs */
    struct plan_launches set[PLAN_NSETS];
    int has_floor;                         /* 0: the board's "bytes" does not evaluate */
    double floor_bytes;                    /* bytes that must move (the physical floor) */
};

struct plan {
    int ntests, nbenchmarks;
    struct case_plan tests[SPEC_MAX_CASES];
    struct case_plan benches[SPEC_MAX_CASES];
    size_t max_total;                      /* region bytes for the largest case */
};

/* Resolve every case of s for the directive sets sub, ref and gen (NULL
 * when the board has no generate.cu). *out: free with plan_free(). Fails
 * (the judge's error, err names the buffer) only when a buffer of the
 * board has no valid size for a case, or out of memory. */
int plan_build(const struct spec *s, const struct directives *sub, const struct directives *ref,
               const struct directives *gen, struct plan **out, struct kj_err *err);

/* Free p; accepts NULL. */
void plan_free(struct plan *p);

/* The plan of benchmarks[idx] (bench = 1) or tests[idx]; NULL when p is
 * NULL or idx is out of range. Borrowed from p. */
const struct case_plan *plan_case(const struct plan *p, int bench, int idx);

#endif
