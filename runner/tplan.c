/*
 * tplan.c - the plan of timing protocol v2 (see tplan.h): sets, visits,
 * batches, lanes, and the table of empty-kernel constants per GPU model.
 */
#include "tplan.h"

#include <string.h>

/* E_gpu per GPU model. A new row comes from bench/bench_score_stability.py on that
 * model: its "E_run" column (the mean of the jobs' empty-kernel estimates)
 * over at least ten fresh processes. */
static const struct {
    const char *device;
    double empty_ns;
    const char *where;
} tplan_gpus[] = {
    {"NVIDIA H200", 2931.0, "H200, driver 580.159.04, 2026-12-01: mean E_run of 60 four-process v2 runs"},
};

int tplan_sets(uint64_t case_bytes, long long total_mem, int max_sets)
{
    uint64_t budget = TPLAN_SET_BYTES, k;
    if (max_sets < 1)
        return 1;
    if (total_mem > 0 && (uint64_t)total_mem / 8 < budget)
        budget = (uint64_t)total_mem / 8;
    if (case_bytes == 0)
        return max_sets;
    k = budget / case_bytes;
    return k < 1 ? 1 : k > (uint64_t)max_sets ? max_sets : (int)k;
}

long tplan_visit_samples(long planned, int rounds)
{
    if (rounds < 1)
        rounds = 1;
    if (planned < 1)
        return 1;
    return (planned + rounds - 1) / rounds;
}

long tplan_fit_visit(long per_visit, int left, long n, double wall_s, double max_wall_s)
{
    if (left < 1 || n < 1 || !(wall_s > 0))
        return per_visit < 1 ? 1 : per_visit;
    double per_sample = wall_s / (double)n;
    double budget = TPLAN_WALL_SHARE * max_wall_s - wall_s;
    double fit = budget / ((double)left * per_sample);
    long k = fit >= (double)per_visit ? per_visit : (long)fit;
    return k < 1 ? 1 : k;
}

int tplan_next_batch(int sets, long per_visit, long done_in_visit, long done, long max_samples)
{
    long left = per_visit - done_in_visit, cap = max_samples - done;
    if (cap < left)
        left = cap;
    if (left <= 0 || sets < 1)
        return 0;
    return left < sets ? (int)left : sets;
}

int tplan_processes(int asked, int python, int rank_gpu)
{
    if (asked >= 1 && asked <= TPLAN_ROUNDS)
        return asked;
    if (python)
        return TPLAN_PY_PROCESSES;
    return rank_gpu ? TPLAN_GPU_PROCESSES : TPLAN_PROCESSES;
}

int tplan_lane(long batch, int lanes)
{
    if (lanes < 1 || batch < 0)
        return 0;
    return (int)(batch % lanes);
}

double tplan_gpu_empty_ns(const char *device_name, const char **where)
{
    if (where != NULL)
        *where = "";
    for (size_t i = 0; device_name != NULL && i < sizeof tplan_gpus / sizeof tplan_gpus[0]; i++)
        if (strcmp(device_name, tplan_gpus[i].device) == 0) {
            if (where != NULL)
                *where = tplan_gpus[i].where;
            return tplan_gpus[i].empty_ns;
        }
    return 0.0;
}
