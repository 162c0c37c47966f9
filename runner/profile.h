/*
 * profile.h - an Nsight Compute report read into profile mode's result
 * object (docs/profile.md "profile").
 *
 * judge_tool.c has `ncu --import REPORT --csv --page raw --print-units
 * base` print every collected metric of every profiled launch
 * (profile_import), and profile_summary() turns that CSV (a row of metric
 * names, a row of units, a row per launch) into
 *   {"tool":"ncu", "launches":N,
 *    "shapes":[{"benchmark":i, "shape":"T=.., H=..", "launches":[L...]}]}
 * where each L has the kernel, grid and block, duration, SM and memory
 * throughput (% of peak), DRAM bytes, the achieved bandwidth and its share
 * of the board's memory bound, achieved and theoretical occupancy,
 * registers, shared memory, L1 and L2 hit rates, the top warp stall
 * reasons and the roofline position. A metric the report lacks is absent.
 */
#ifndef KJ_PROFILE_H
#define KJ_PROFILE_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "kj_err.h"
#include "spec.h"

struct profile_ctx {
    const struct spec *spec;  /* for the shapes' labels; may be NULL */
    int nlaunch;              /* launches per call (the submission's launch lines) */
    int only;                 /* >= 0: every launch belongs to this benchmark shape */
    double peak_gbs;          /* the board's memory bound (result.system), 0 = unknown */
};

/* Run `tool --import report --csv --page raw --print-units base`; its
 * stdout into *out (malloc'd, NUL-terminated, *len bytes). KJ_ETIMEOUT
 * past deadline (CLOCK_MONOTONIC seconds). */
int profile_import(const char *tool, const char *report, double deadline, char **out,
                   size_t *len, struct kj_err *err);

/* The summary of csv (len bytes); NULL with err when it is not ncu's raw
 * page (no header with "Kernel Name"). */
cJSON *profile_summary(const char *csv, size_t len, const struct profile_ctx *c,
                       struct kj_err *err);

#endif
