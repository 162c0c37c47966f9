/*
 * result_floor.c - is a timed shape's median a measurement? Called by
 * result_check.c's third pass for every passing benchmark entry of a
 * benchmark or leaderboard result (result_int.h): a median below the
 * shape's physical floor, or below the empty-kernel time, is refused, so a
 * made-up result (every median 1 ns) is never stored or ranked.
 *
 * The floor is the server's own, never the result's floor_ns: the bytes
 * the board's "bytes" expression says the shape must move (every buffer
 * once when the board has none), less what the L2 can still hold when the
 * sample ends (the timed kernel's last writes need not have reached memory;
 * its inputs were flushed out before it started), at the result's
 * bandwidth, the larger of system.peak_bandwidth_gbs and
 * measured_copy_bandwidth_gbs as the runner computes its own floor, but
 * never above the GPU type's bound (rc_gpu_bounds); a result that names no
 * bandwidth, or one above the bound, gets the bound. The L2 size is the
 * result's system.l2_bytes under the same kind of bound. A real median
 * cannot be below that floor; RCHECK_FLOOR_MARGIN more is allowed for the
 * "bytes" expressions and the datasheet figures. The empty-kernel time is
 * the result's baseline_empty_kernel_ns (when it has one): a real median,
 * which holds at least one launch between the same two events, is not
 * below it by more than the process-to-process spread of the launch path
 * (RCHECK_BASELINE_MARGIN).
 */
#include "result_int.h"
#include "expr.h"
#include "gputype.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Upper bounds per GPU type: memory bandwidth a little above the
 * datasheet's (and above the runner's clock x bus width figure, 4915.5
 * GB/s on an H200), and the L2 size rounded up. Others get
 * RCHECK_MAX_BANDWIDTH_GBS and RCHECK_MAX_L2_BYTES. */
static const struct {
    const char *type;
    double bw_gbs;
    double l2_bytes;
} rc_gpu_bounds[] = {
    {"A100", 2600.0, 48.0 * 1024 * 1024},  /* 2.0 TB/s (80 GB), 40 MB */
    {"H100", 4500.0, 64.0 * 1024 * 1024},  /* 3.35-3.9 TB/s, 50 MB */
    {"H200", 6000.0, 64.0 * 1024 * 1024},  /* 4.8 TB/s (4915.5 by clock), 60 MiB */
    {"B200", 10000.0, 256.0 * 1024 * 1024}, /* 8 TB/s */
};

/* A number of o's key when it is one and positive, else 0. */
static double pos_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && v->valuedouble > 0 ? v->valuedouble : 0;
}

void rc_limits_of(const struct rcheck_job *job, const cJSON *res, struct rc_limits *out)
{
    const cJSON *sys = cJSON_GetObjectItemCaseSensitive(res, "system");
    double bw = pos_of(sys, "peak_bandwidth_gbs"), copy = pos_of(sys, "measured_copy_bandwidth_gbs");
    double l2 = pos_of(sys, "l2_bytes");
    double max_bw = RCHECK_MAX_BANDWIDTH_GBS, max_l2 = RCHECK_MAX_L2_BYTES;
    for (size_t i = 0; i < sizeof rc_gpu_bounds / sizeof rc_gpu_bounds[0]; i++)
        if (job->gpu != NULL && strcmp(job->gpu, rc_gpu_bounds[i].type) == 0) {
            max_bw = rc_gpu_bounds[i].bw_gbs;
            max_l2 = rc_gpu_bounds[i].l2_bytes;
        }
    bw = copy > bw ? copy : bw;
    out->claimed_bw = bw > 0 && bw <= max_bw;
    out->bw_gbs = out->claimed_bw ? bw : max_bw;
    out->l2_bytes = l2 > 0 && l2 <= max_l2 ? l2 : max_l2;
    out->baseline_ns = pos_of(res, "baseline_empty_kernel_ns");
}

/* Bytes benchmark shape i must move: the board's "bytes" at its values,
 * or every buffer once. 0 when it cannot be worked out. */
static double rc_shape_bytes(const struct spec *s, int i)
{
    const struct spec_case *k = &s->benchmarks[i];
    double sum = 0;
    if (s->bytes_expr[0] != '\0') {
        const char *names[SPEC_MAX_VARS];
        struct expr_vars vars;
        int64_t v = 0;
        spec_expr_vars(s, names, k->val, &vars);
        return expr_eval(s->bytes_expr, &vars, &v, NULL) == KJ_OK && v > 0 ? (double)v : 0;
    }
    for (int b = 0; b < s->nbuffers; b++) {
        int64_t n = 0;
        struct kj_err err;
        if (spec_buffer_elems(s, b, k, &n, &err) != KJ_OK)
            return 0;
        sum += (double)n * (double)spec_dtype_size(s->buffers[b].dtype);
    }
    return sum;
}

int rc_plausible(struct rc *c, const struct spec *s, const struct rc_limits *lim, const cJSON *e,
                 int i)
{
    const cJSON *med = cJSON_GetObjectItemCaseSensitive(e, "median_ns");
    const cJSON *cor = cJSON_GetObjectItemCaseSensitive(e, "corrected_median_ns");
    double raw = cJSON_IsNumber(med) ? med->valuedouble : NAN;
    double m = cJSON_IsNumber(cor) && cor->valuedouble < raw ? cor->valuedouble : raw;
    const char *key = m < raw ? "corrected_median_ns" : "median_ns";
    double bytes = rc_shape_bytes(s, i), beyond = bytes - lim->l2_bytes;
    double floor_ns = beyond > 0 ? beyond / lim->bw_gbs : 0; /* GB/s = bytes per ns */
    char label[256];
    if (isnan(raw))
        return KJ_OK;
    spec_case_label(s, &s->benchmarks[i], label, sizeof label);
    if (m < (1.0 - RCHECK_FLOOR_MARGIN) * floor_ns)
        return rc_fail_at(c, key, "%.6g ns for shape %d (%s) is below its physical floor of "
                          "%.6g ns (%.6g of its %.6g bytes beyond the L2 at %.6g GB/s, %s) "
                          "less %.0f%%: not a measurement", m, i, label, floor_ns, beyond,
                          bytes, lim->bw_gbs, lim->claimed_bw ? "the result's bandwidth"
                          : "the GPU type's bound", 100 * RCHECK_FLOOR_MARGIN);
    if (lim->baseline_ns > 0 && raw < (1.0 - RCHECK_BASELINE_MARGIN) * lim->baseline_ns)
        return rc_fail_at(c, "median_ns", "%.6g ns for shape %d (%s) is below the empty-kernel "
                          "time, baseline_empty_kernel_ns %.6g ns, less %.0f%%: not a "
                          "measurement", raw, i, label, lim->baseline_ns,
                          100 * RCHECK_BASELINE_MARGIN);
    return KJ_OK;
}
