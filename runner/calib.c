/*
 * calib.c - calibrate's arithmetic (see calib.h): E_gpu, the copy
 * bandwidth's share of the peak, the spread and the published resolution
 * it suggests, and tplan.c's row. Pure.
 */
#include "calib.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void calib_cv(const double *x, int n, double *mean, double *cv)
{
    double s = 0, ss = 0;
    *mean = *cv = NAN;
    if (n < 1)
        return;
    for (int i = 0; i < n; i++)
        s += x[i];
    *mean = s / n;
    if (n < 2)
        return;
    for (int i = 0; i < n; i++)
        ss += (x[i] - *mean) * (x[i] - *mean);
    *cv = *mean != 0 ? 100.0 * sqrt(ss / (n - 1)) / *mean : NAN;
}

int calib_summarize(const struct calib_proc *p, int n, const struct calib_spread *s, int ns,
                    double peak_gbs, struct calib_report *r)
{
    double e[CALIB_MAX_PROCS], cv;
    double ev = 0, g = 0;
    int ng = 0;
    memset(r, 0, sizeof *r);
    if (n < 1 || n > CALIB_MAX_PROCS)
        return -1;
    for (int i = 0; i < n; i++) {
        if (!(isfinite(p[i].empty_ns) && p[i].empty_ns > 0))
            return -1;
        e[i] = p[i].empty_ns;
        ev += p[i].event_ns;
        if (p[i].empty_gpu_ns >= 0 && isfinite(p[i].empty_gpu_ns)) {
            g += p[i].empty_gpu_ns;
            ng++;
        }
        if (p[i].copy_gbs > r->copy_best_gbs)
            r->copy_best_gbs = p[i].copy_gbs;
    }
    r->nproc = n;
    calib_cv(e, n, &r->empty_mean, &cv);
    r->empty_sd = n > 1 ? cv * r->empty_mean / 100.0 : 0;
    r->event_mean = ev / n;
    r->empty_gpu_mean = ng == n ? g / n : NAN;
    r->peak_gbs = peak_gbs > 0 ? peak_gbs : 0;
    r->copy_share = peak_gbs > 0 ? r->copy_best_gbs / peak_gbs : NAN;
    r->resolution_pct = NAN;
    for (int i = 0; i < ns; i++)
        if (isfinite(s[i].cv_pct) &&
            (isnan(r->resolution_pct) || CALIB_RES_FACTOR * s[i].cv_pct > r->resolution_pct))
            r->resolution_pct = CALIB_RES_FACTOR * s[i].cv_pct;
    /* GPU time: only when every kernel has its CV (a missing one could be the widest). */
    r->gpu_resolution_pct = ns > 0 ? 0 : NAN;
    for (int i = 0; i < ns; i++) {
        if (!isfinite(s[i].gpu_cv_pct)) {
            r->gpu_resolution_pct = NAN;
            break;
        }
        r->gpu_resolution_pct = fmax(r->gpu_resolution_pct, CALIB_RES_FACTOR * s[i].gpu_cv_pct);
    }
    return 0;
}

int calib_row(const struct calib_report *r, const char *device, const char *driver,
              const char *date, char *buf, size_t n)
{
    const char *model = strncmp(device, "NVIDIA ", 7) == 0 ? device + 7 : device;
    return snprintf(buf, n, "{\"%s\", %.1f, \"%s, driver %s, %s: calibrate, mean empty-kernel "
                    "median of %d fresh processes\"},", device, round(r->empty_mean * 10) / 10,
                    model, driver[0] ? driver : "unknown", date, r->nproc);
}
