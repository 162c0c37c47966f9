/*
 * calib.h - what `kjudge-runner calibrate` (main.c) makes of its
 * measurements on a GPU model (docs/timing.md, "Calibrating a GPU model"):
 * the empty-kernel constant E_gpu from fresh processes, the copy bandwidth
 * against the memory's peak that the boards' floors divide by, the spread
 * of protocol v2's score on the practice kernels, and the row to add to
 * runner/tplan.c's table. Pure functions: tests/unit/test_calib.c checks
 * them without a GPU; main.c measures (run boxes, `eval` runs) and prints.
 */
#ifndef KJ_CALIB_H
#define KJ_CALIB_H

#include <stddef.h>

#define CALIB_MAX_PROCS 64
#define CALIB_RES_FACTOR 2.7718585822512662 /* 1.96 x sqrt(2): 95 % of two runs' difference */

/* One fresh run box's BASELINE (box.h): the empty kernel's event-time
 * median, the empty event pair's, the empty kernel's GPU time (-1: none),
 * the best copy bandwidth (GB/s, read + write; 0: not measured). */
struct calib_proc {
    double empty_ns, event_ns, empty_gpu_ns, copy_gbs;
};

/* Scores of repeated leaderboard runs of one practice kernel. */
struct calib_spread {
    char label[64];
    int runs;
    double mean_ns, cv_pct;          /* the ranked score */
    double gpu_mean_ns, gpu_cv_pct;  /* the GPU-time score; NaN without one in every run */
    double wall_s;                   /* mean wall time of a run */
};

struct calib_report {
    int nproc;
    double empty_mean, empty_sd;     /* E_gpu: mean of the processes' empty-kernel medians */
    double event_mean;
    double empty_gpu_mean;           /* NaN unless every process had GPU time */
    double copy_best_gbs, peak_gbs;  /* measured; clock x bus width (0: unknown) */
    double copy_share;               /* copy_best / peak, NaN without a peak */
    double resolution_pct;           /* CALIB_RES_FACTOR x the largest spread CV; NaN: none */
    double gpu_resolution_pct;       /* the same of the GPU-time CVs; NaN unless every kernel
                                      * has one (a board's gpu_time_resolution_pct) */
};

/* Summarise n processes (1 <= n <= CALIB_MAX_PROCS) and the spreads into
 * *r; peak_gbs from the device (0: unknown). 0, or -1 when n is out of
 * range or a process's empty-kernel time is not a positive number. */
int calib_summarize(const struct calib_proc *p, int n, const struct calib_spread *s, int ns,
                    double peak_gbs, struct calib_report *r);

/* The scores' mean and CV in percent (sample sd / mean) into *mean and
 * *cv; NaN for fewer than two. */
void calib_cv(const double *x, int n, double *mean, double *cv);

/* The row for tplan.c's table into buf:
 *   {"NVIDIA H200", 2931.0, "H200, driver 580.159.04, 2026-12-01: calibrate, mean empty-kernel median of 10 fresh processes"},
 * device as the driver names it; driver and date as given. Returns the
 * length snprintf would write. */
int calib_row(const struct calib_report *r, const char *device, const char *driver,
              const char *date, char *buf, size_t n);

/* calib_run.c: `kjudge-runner calibrate ...` (argv[1] is "calibrate");
 * returns the exit status: 0, or 2 after a message on stderr. */
int calib_main(int argc, char **argv);

#endif
