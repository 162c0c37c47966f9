/*
 * calib_run.c - `kjudge-runner calibrate`: measures what runner/tplan.c
 * needs of a GPU model and prints the row to add (calib.h does the
 * arithmetic; docs/timing.md, "Calibrating a GPU model", says how to use
 * it).
 *
 *   kjudge-runner calibrate [--gpu N] [--processes N] [--runs N]
 *                           [--leaderboards DIR] [--json]
 *
 * 1. --processes fresh run boxes (default 10), each one BASELINE (box.h):
 *    the empty kernel's median under the sample protocol, the empty event
 *    pair's, the empty kernel's GPU time, the copy bandwidth. E_gpu is the
 *    mean of the empty-kernel medians over the boxes.
 * 2. The copy bandwidth against the memory's peak (clock x bus width): the
 *    boards' floors (judge_time.c) divide by the larger of the two.
 * 3. --runs leaderboard runs (default 3, 0 = none) of each practice kernel
 *    through `kjudge-runner eval` in fresh processes, as a runner judges a
 *    job: the CV of the ranked score and of the GPU-time score, and the
 *    resolution that suggests.
 * Prints a report and the row, or (--json) one object with both.
 */
#include "box.h"
#include "calib.h"
#include "fdio.h"
#include "gpumon.h"
#include "mono.h"
#include "tplan.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#define CALIB_BOX_MS 120000
#define CALIB_EVAL_S 180.0

/* The practice kernels: (label, board, file under the leaderboards folder). */
static const struct { const char *label, *board, *file; } calib_kernels[] = {
    {"fp8 template", "fp8_quant", "template.cu"},
    {"fp8 fast", "fp8_quant", "examples/fast.cu"},
    {"histogram fast", "histogram", "examples/fast.cu"},
};
#define CALIB_NKERNELS (int)(sizeof calib_kernels / sizeof calib_kernels[0])

struct calib_opts {
    int gpu, procs, runs, json;
    const char *boards;
};

static int calib_args(int argc, char **argv, struct calib_opts *o)
{
    o->gpu = 0;
    o->procs = 10;
    o->runs = 3;
    o->json = 0;
    o->boards = "leaderboards";
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        long x = v != NULL ? strtol(v, &end, 10) : -1;
        int num = v != NULL && end != v && *end == '\0';
        if (strcmp(a, "--json") == 0) {
            o->json = 1;
            continue;
        }
        if (strcmp(a, "--leaderboards") == 0 && v != NULL) {
            o->boards = v;
            i++;
            continue;
        }
        if (strcmp(a, "--gpu") == 0 && num && x >= 0 && x <= 1023)
            o->gpu = (int)x;
        else if (strcmp(a, "--processes") == 0 && num && x >= 1 && x <= CALIB_MAX_PROCS)
            o->procs = (int)x;
        else if (strcmp(a, "--runs") == 0 && num && x >= 0 && x <= 100)
            o->runs = (int)x;
        else {
            fprintf(stderr, "kjudge-runner calibrate: bad argument '%s'%s%s (--gpu 0-1023, "
                    "--processes 1-%d, --runs 0-100, --leaderboards DIR, --json)\n", a,
                    v ? " " : "", v ? v : "", CALIB_MAX_PROCS);
            return -1;
        }
        i++;
    }
    return 0;
}

/* One fresh run box's BASELINE into *p (and its device into *dev). */
static int calib_box(int gpu, struct box_device *dev, struct calib_proc *p, struct kj_err *err)
{
    struct box_rep rep;
    int rc = box_single(gpu, NULL, BOX_OP_BASELINE, CALIB_BOX_MS, CALIB_BOX_MS, dev, &rep, err);
    if (rc == KJ_OK && rep.status != BOX_OK)
        rc = KJ_FAIL(err, KJ_ECUDA, "BASELINE: %s", rep.msg);
    if (rc == KJ_OK)
        *p = (struct calib_proc){rep.ns, rep.event_ns, rep.gpu_ns, rep.copy_gbs};
    return rc;
}

/* The score and GPU-time score of one leaderboard run of kernel k in a
 * fresh `eval`; 0, or -1 after a message on stderr. */
static int calib_eval(const struct calib_opts *o, int k, double *score, double *gscore,
                      double *wall)
{
    char path[4096], gpu[16], *out = NULL;
    size_t len = 0;
    int status = 0, rc = -1;
    struct kj_err err;
    snprintf(path, sizeof path, "%s/%s/%s", o->boards, calib_kernels[k].board, calib_kernels[k].file);
    snprintf(gpu, sizeof gpu, "%d", o->gpu);
    char *argv[] = {"/proc/self/exe", "eval", path, "--leaderboard", (char *)calib_kernels[k].board,
                    "--leaderboards", (char *)o->boards, "--mode", "leaderboard", "--gpu", gpu,
                    "--json", NULL};
    double t0 = mono_now();
    kj_err_clear(&err);
    if (fdio_capture(argv, t0 + CALIB_EVAL_S, 64u << 20, &out, &len, &status, &err) != KJ_OK) {
        fprintf(stderr, "calibrate: %s: %s\n", calib_kernels[k].label, err.msg);
        return -1;
    }
    *wall = mono_now() - t0;
    cJSON *r = cJSON_Parse(out);
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(r, "score_ns");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "timing");
    const cJSON *gs = cJSON_GetObjectItemCaseSensitive(t, "gpu_score_ns");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "verdict");
    if (cJSON_IsNumber(sc) && cJSON_IsString(v) && strcmp(v->valuestring, "accepted") == 0) {
        *score = sc->valuedouble;
        *gscore = cJSON_IsNumber(gs) ? gs->valuedouble : NAN;
        rc = 0;
    } else {
        fprintf(stderr, "calibrate: %s: no score (exit %d): %.300s\n", calib_kernels[k].label,
                WIFEXITED(status) ? WEXITSTATUS(status) : -1, out);
    }
    cJSON_Delete(r);
    free(out);
    return rc;
}

static void calib_print(const struct calib_opts *o, const struct box_device *dev,
                        const char *driver, const struct calib_report *r,
                        const struct calib_spread *s, int ns, const char *row)
{
    const char *where = "";
    double table = tplan_gpu_empty_ns(dev->name, &where);
    if (o->json) {
        cJSON *j = cJSON_CreateObject(), *a;
        cJSON_AddStringToObject(j, "gpu", dev->name);
        cJSON_AddStringToObject(j, "driver", driver);
        cJSON_AddNumberToObject(j, "processes", r->nproc);
        cJSON_AddNumberToObject(j, "empty_kernel_ns", r->empty_mean);
        cJSON_AddNumberToObject(j, "empty_kernel_sd_ns", r->empty_sd);
        cJSON_AddNumberToObject(j, "event_pair_ns", r->event_mean);
        if (isfinite(r->empty_gpu_mean))
            cJSON_AddNumberToObject(j, "empty_kernel_gpu_time_ns", r->empty_gpu_mean);
        else
            cJSON_AddNullToObject(j, "empty_kernel_gpu_time_ns");
        if (table > 0)
            cJSON_AddNumberToObject(j, "table_empty_kernel_ns", table);
        else
            cJSON_AddNullToObject(j, "table_empty_kernel_ns");
        cJSON_AddNumberToObject(j, "copy_bandwidth_gbs", r->copy_best_gbs);
        cJSON_AddNumberToObject(j, "peak_bandwidth_gbs", r->peak_gbs);
        a = cJSON_AddArrayToObject(j, "spread");
        for (int i = 0; i < ns; i++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "kernel", s[i].label);
            cJSON_AddNumberToObject(e, "runs", s[i].runs);
            cJSON_AddNumberToObject(e, "score_ns", s[i].mean_ns);
            if (isfinite(s[i].cv_pct)) cJSON_AddNumberToObject(e, "cv_pct", s[i].cv_pct);
            else cJSON_AddNullToObject(e, "cv_pct");
            if (isfinite(s[i].gpu_mean_ns)) cJSON_AddNumberToObject(e, "gpu_score_ns", s[i].gpu_mean_ns);
            else cJSON_AddNullToObject(e, "gpu_score_ns");
            if (isfinite(s[i].gpu_cv_pct)) cJSON_AddNumberToObject(e, "gpu_cv_pct", s[i].gpu_cv_pct);
            else cJSON_AddNullToObject(e, "gpu_cv_pct");
            cJSON_AddNumberToObject(e, "wall_s", s[i].wall_s);
            cJSON_AddItemToArray(a, e);
        }
        if (isfinite(r->resolution_pct))
            cJSON_AddNumberToObject(j, "resolution_pct", r->resolution_pct);
        else
            cJSON_AddNullToObject(j, "resolution_pct");
        if (isfinite(r->gpu_resolution_pct))
            cJSON_AddNumberToObject(j, "gpu_time_resolution_pct", r->gpu_resolution_pct);
        else
            cJSON_AddNullToObject(j, "gpu_time_resolution_pct");
        cJSON_AddStringToObject(j, "row", row);
        char *t = cJSON_Print(j);
        if (t != NULL)
            printf("%s\n", t);
        free(t);
        cJSON_Delete(j);
        return;
    }
    printf("calibrate: %s (%s, PCI %s), driver %s\n", dev->name, dev->arch, dev->pci, driver);
    printf("empty kernel under the sample protocol: %.1f ns, mean of %d fresh processes' medians "
           "(sd %.1f ns); empty event pair %.1f ns", r->empty_mean, r->nproc, r->empty_sd,
           r->event_mean);
    if (isfinite(r->empty_gpu_mean))
        printf("; the empty kernel's own GPU time %.1f ns", r->empty_gpu_mean);
    printf("\n");
    if (table > 0)
        printf("  tplan.c has %.1f ns for this model (%s): calibrate differs by %+.2f %%\n", table,
               where, 100.0 * (r->empty_mean - table) / table);
    else
        printf("  tplan.c has no constant for this model: v2 ranks raw medians until the row "
               "below is added\n");
    printf("copy bandwidth: best %.0f GB/s (read + write)", r->copy_best_gbs);
    if (r->peak_gbs > 0)
        printf(" = %.1f %% of the memory's peak, %.0f GB/s; the boards' floors divide by the "
               "larger (%.0f GB/s)", 100.0 * r->copy_share, r->peak_gbs,
               r->copy_best_gbs > r->peak_gbs ? r->copy_best_gbs : r->peak_gbs);
    printf("\n");
    if (ns > 0) {
        printf("practice kernels, leaderboard runs in fresh processes:\n");
        printf("| kernel | runs | score us | CV %% | GPU-time score us | GPU-time CV %% | wall s |\n");
        printf("|---|---|---|---|---|---|---|\n");
        for (int i = 0; i < ns; i++)
            printf("| %s | %d | %.3f | %.3f | %.3f | %.3f | %.1f |\n", s[i].label, s[i].runs,
                   s[i].mean_ns / 1e3, s[i].cv_pct, s[i].gpu_mean_ns / 1e3, s[i].gpu_cv_pct,
                   s[i].wall_s);
        if (isfinite(r->resolution_pct))
            printf("resolution this suggests (1.96 x sqrt 2 x the largest CV): %.2f %%\n",
                   r->resolution_pct);
        if (isfinite(r->gpu_resolution_pct))
            printf("GPU-time resolution this suggests (the same of the GPU-time CVs; a board's "
                   "gpu_time_resolution_pct): %.2f %%\n", r->gpu_resolution_pct);
    }
    printf("row for runner/tplan.c (tplan_gpus[]):\n    %s\n", row);
}

int calib_main(int argc, char **argv)
{
    struct calib_opts o;
    struct calib_proc p[CALIB_MAX_PROCS];
    struct calib_spread s[CALIB_NKERNELS];
    struct calib_report r;
    struct box_device dev;
    struct gpumon mon;
    struct kj_err err;
    char row[512], date[32];
    int ns = 0;
    time_t now = time(NULL);
    struct tm tm;
    if (calib_args(argc, argv, &o) != 0)
        return 2;
    memset(&dev, 0, sizeof dev);
    for (int i = 0; i < o.procs; i++) {
        kj_err_clear(&err);
        if (calib_box(o.gpu, &dev, &p[i], &err) != KJ_OK) {
            fprintf(stderr, "kjudge-runner calibrate: GPU %d, box %d: %s\n", o.gpu, i + 1, err.msg);
            return 2;
        }
    }
    for (int k = 0; k < CALIB_NKERNELS && o.runs > 0; k++) {
        double sc[100], gs[100], wall = 0, w;
        int n = 0, ng = 0;
        for (int i = 0; i < o.runs; i++)
            if (calib_eval(&o, k, &sc[n], &gs[n], &w) == 0) {
                wall += w;
                ng += isfinite(gs[n]);
                n++;
            }
        struct calib_spread *e = &s[ns++];
        memset(e, 0, sizeof *e);
        snprintf(e->label, sizeof e->label, "%s", calib_kernels[k].label);
        e->runs = n;
        e->wall_s = n > 0 ? wall / n : NAN;
        calib_cv(sc, n, &e->mean_ns, &e->cv_pct);
        if (ng == n)
            calib_cv(gs, n, &e->gpu_mean_ns, &e->gpu_cv_pct);
        else
            e->gpu_mean_ns = e->gpu_cv_pct = NAN;
    }
    double peak = 2.0 * (double)dev.mem_clock_khz * 1e3 * (double)dev.mem_bus_bits / 8.0 / 1e9;
    if (calib_summarize(p, o.procs, s, ns, peak, &r) != 0) {
        fprintf(stderr, "kjudge-runner calibrate: the boxes measured no empty-kernel time\n");
        return 2;
    }
    memset(&mon, 0, sizeof mon);
    gpumon_read_isolated(dev.pci, &mon, 10000, NULL);
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%d", &tm);
    calib_row(&r, dev.name, mon.ok ? mon.driver : "", date, row, sizeof row);
    calib_print(&o, &dev, mon.ok ? mon.driver : "unknown", &r, s, ns, row);
    return 0;
}
