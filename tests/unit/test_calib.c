/*
 * test_calib.c - unit tests for runner/calib.c, calibrate's arithmetic:
 * E_gpu over fresh processes, the copy bandwidth's share of the peak, the
 * resolution from the practice kernels' spread, and the row printed for
 * runner/tplan.c (which must parse as one of its rows). Needs no GPU.
 */
#define KT_MAIN
#include "kt.h"

#include <math.h>
#include <string.h>

#include "calib.h"

static void test_summary(void)
{
    struct calib_proc p[4] = {
        {2900, 900, 1100, 4100}, {2960, 910, 1120, 4150}, {2880, 905, 1090, 4120},
        {2980, 915, 1110, 4000},
    };
    struct calib_spread s[2] = {{"fp8 fast", 5, 15000, 0.1, NAN, NAN, 6.0},
                                {"histogram fast", 5, 8500, 0.25, 8000, 0.05, 6.0}};
    struct calib_report r;
    KT_CHECK(calib_summarize(p, 4, s, 2, 4800, &r) == 0, "four processes");
    KT_CHECK(r.nproc == 4 && fabs(r.empty_mean - 2930.0) < 1e-9, "E_gpu: the mean, %.3f", r.empty_mean);
    KT_CHECK(fabs(r.empty_sd - 47.6095228569523) < 1e-6, "its sd: %.6f", r.empty_sd);
    KT_CHECK(fabs(r.empty_gpu_mean - 1105.0) < 1e-9, "the empty kernel's GPU time: %.1f",
             r.empty_gpu_mean);
    KT_CHECK(r.copy_best_gbs == 4150 && fabs(r.copy_share - 4150.0 / 4800) < 1e-12,
             "best copy and its share of the peak: %.0f %.4f", r.copy_best_gbs, r.copy_share);
    KT_CHECK(fabs(r.resolution_pct - CALIB_RES_FACTOR * 0.25) < 1e-12,
             "resolution from the largest CV: %.4f", r.resolution_pct);
    KT_CHECK(isnan(r.gpu_resolution_pct), "no GPU-time resolution while a kernel lacks its CV");
    s[0].gpu_cv_pct = 0.08;
    KT_CHECK(calib_summarize(p, 4, s, 2, 4800, &r) == 0 &&
             fabs(r.gpu_resolution_pct - CALIB_RES_FACTOR * 0.08) < 1e-12,
             "GPU-time resolution from the largest GPU-time CV: %.4f", r.gpu_resolution_pct);
    /* One process without GPU time: no GPU-time mean. */
    p[2].empty_gpu_ns = -1;
    KT_CHECK(calib_summarize(p, 4, s, 0, 0, &r) == 0 && isnan(r.empty_gpu_mean) &&
             isnan(r.copy_share) && isnan(r.resolution_pct) && isnan(r.gpu_resolution_pct),
             "partial GPU time, no peak, no spread");
    /* Nothing, or a process with no empty-kernel time: refused. */
    p[1].empty_ns = 0;
    KT_CHECK(calib_summarize(p, 4, s, 0, 0, &r) == -1, "an empty time of 0 refused");
    KT_CHECK(calib_summarize(p, 0, s, 0, 0, &r) == -1, "no process refused");
}

static void test_cv(void)
{
    double x[3] = {100, 101, 99}, m, cv;
    calib_cv(x, 3, &m, &cv);
    KT_CHECK(m == 100 && fabs(cv - 1.0) < 1e-12, "mean 100, CV 1 %%: %.3f %.6f", m, cv);
    calib_cv(x, 1, &m, &cv);
    KT_CHECK(m == 100 && isnan(cv), "one run: no CV");
}

static void test_row(void)
{
    struct calib_proc p[2] = {{2931.04, 900, -1, 0}, {2931.06, 900, -1, 0}};
    struct calib_report r;
    char row[512], dev[128], where[256];
    double v = 0;
    KT_CHECK(calib_summarize(p, 2, NULL, 0, 0, &r) == 0, "two processes");
    calib_row(&r, "NVIDIA H200", "580.159.04", "2026-12-02", row, sizeof row);
    KT_CHECK(strcmp(row, "{\"NVIDIA H200\", 2931.1, \"H200, driver 580.159.04, 2026-12-02: "
                    "calibrate, mean empty-kernel median of 2 fresh processes\"},") == 0,
             "the row: %s", row);
    /* It reads back as tplan.c's struct: name, constant, note. */
    KT_CHECK(sscanf(row, "{\"%127[^\"]\", %lf, \"%255[^\"]\"},", dev, &v, where) == 3 &&
             strcmp(dev, "NVIDIA H200") == 0 && v == 2931.1, "parses back: %s %.1f", dev, v);
    calib_row(&r, "B200", "", "2026-12-02", row, sizeof row);
    KT_CHECK(strstr(row, "{\"B200\", 2931.1, \"B200, driver unknown,") == row, "no driver: %s", row);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_summary());
    KT_RUN(test_cv());
    KT_RUN(test_row());
    return kt_done("test_calib");
}
