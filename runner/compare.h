/*
 * compare.h - the judge's check of a submission's output against the expected output.
 *
 * Runs on the host in the trusted runner process, on buffers copied back
 * from the device: the judge (runner/judge.c) calls compare_buffers() for
 * every output of every checked call and compare_exact() to catch inputs the
 * submission modified. A failing compare_report becomes the result's
 * "mismatch" object (compare_report_json) and the verdict message
 * (compare_report_text); see docs/protocol.md.
 */
#ifndef KJ_COMPARE_H
#define KJ_COMPARE_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "spec.h"

#define COMPARE_MAX_SHOWN 8

/* One mismatching element: its row-major multi-dimensional index (the
 * buffer's dims; a buffer given without dims gets its linear index as a
 * single dimension) and both values as doubles. */
struct compare_mismatch {
    int64_t index[SPEC_MAX_DIMS];
    int ndim;
    double expected, got;
};

/* Outcome of one comparison. Plain data, no heap pointers. */
struct compare_report {
    int64_t count, total;      /* mismatching elements, elements compared */
    double max_abs_err;        /* over pairs where both values are finite; 0 if none */
    double max_rel_err;        /* abs err / |expected| over those with expected != 0 */
    int nshown;                /* entries used in first[] */
    struct compare_mismatch first[COMPARE_MAX_SHOWN]; /* first mismatches, in index order */
};

/* Compare nelem elements of dtype: got (the submission's output) against
 * expected (the reference's). dims[0..ndim) are the buffer's dimensions
 * (row-major, last fastest); their product must be nelem. ndim == 0 (a
 * scalar or an unshaped buffer; dims may then be NULL) reports linear
 * indices. Rules:
 *   float types (f32, f16, bf16, f64): a pair matches if both are NaN, or
 *     both are the same infinity, or both are finite and
 *     |got - expected| <= atol + rtol * |expected|. A NaN or infinity on
 *     one side only is a mismatch.
 *   integer types: must be exactly equal (atol/rtol are ignored).
 * Buffers larger than 1M elements are split across up to min(16, online
 * CPUs) threads; the result is the same as a single pass. The buffers are
 * borrowed for the call and need no alignment.
 * Returns 0 when the comparison ran (out->count says whether it passed), or
 * KJ_EINVAL for bad arguments (NULL pointers with nelem > 0, nelem < 0,
 * ndim outside [0, SPEC_MAX_DIMS], dims that do not multiply to nelem,
 * negative or NaN tolerances, an unknown dtype); out is then zeroed. */
int compare_buffers(enum spec_dtype dtype, const void *expected, const void *got,
                    int64_t nelem, const int64_t *dims, int ndim, double atol, double rtol,
                    struct compare_report *out);

/* Byte-exact comparison of two nbytes-long buffers made of elem_size-byte
 * elements. Returns 0 if equal (*first_diff = -1), 1 if they differ
 * (*first_diff = index of the first differing element), KJ_EINVAL if
 * elem_size is 0, nbytes is not a multiple of it, or a pointer is NULL
 * (a and b may be NULL when nbytes is 0; first_diff may be NULL). */
int compare_exact(const void *a, const void *b, size_t nbytes, size_t elem_size,
                  int64_t *first_diff);

/* {"buffer":..,"count":..,"total":..,"max_abs_err":..,"max_rel_err":..,
 *  "first":[{"index":[..],"expected":..,"got":..}]}. NaN and infinities
 * are written as the strings "nan", "inf", "-inf". buffer_name is copied.
 * Caller owns the result (cJSON_Delete); NULL if out of memory. */
cJSON *compare_report_json(const struct compare_report *r, const char *buffer_name);

/* One human line into buf (always NUL-terminated, truncated to bufsz), e.g.
 * "x_q: 12 of 1024 elements differ (max abs err 0.5, max rel err 0.1);
 *  first at [0, 17]: expected 1.5, got 2". */
void compare_report_text(const struct compare_report *r, const char *buffer_name,
                         char *buf, size_t bufsz);

#endif
