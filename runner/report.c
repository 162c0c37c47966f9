/*
 * report.c - human-readable output of a judging result (see report.h):
 * compile summary, tests, benchmark statistics in microseconds, verdict.
 */
#include "report.h"

#include <math.h>
#include <string.h>

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static void shape_text(const cJSON *shape, char *buf, size_t n)
{
    size_t p = 0;
    const cJSON *v;
    buf[0] = '\0';
    cJSON_ArrayForEach(v, shape) {
        if (p < n)
            p += (size_t)snprintf(buf + p, n - p, "%s%s=%.0f", p ? " " : "", v->string,
                                  v->valuedouble);
    }
}

static void report_compile(FILE *f, const cJSON *c)
{
    const cJSON *k;
    if (c == NULL)
        return;
    fprintf(f, "compile: %s for %s in %.2f s\n", cJSON_IsTrue(cJSON_GetObjectItem(c, "ok")) ?
            "ok" : "FAILED", str(c, "arch"), num(c, "seconds"));
    cJSON_ArrayForEach(k, cJSON_GetObjectItem(c, "kernels")) {
        fprintf(f, "  kernel %s: %.0f registers, %.0f B static smem, %.0f B stack, "
                "%.0f B spill stores, %.0f B spill loads\n", str(k, "name"), num(k, "registers"),
                num(k, "smem_static"), num(k, "stack_frame"), num(k, "spill_stores"),
                num(k, "spill_loads"));
    }
    if (!cJSON_IsTrue(cJSON_GetObjectItem(c, "ok")))
        fprintf(f, "%s\n", str(c, "log"));
}

static void report_benchmarks(FILE *f, const cJSON *benches)
{
    const cJSON *b;
    char shape[160];
    if (cJSON_GetArraySize(benches) == 0)
        return;
    fprintf(f, "benchmarks (us):\n  %-2s %-24s %10s %10s %7s %10s %10s %10s %6s %-13s %9s\n",
            "#", "shape", "median", "mean", "noise%", "min", "q3", "max", "n", "stop",
            "floor");
    cJSON_ArrayForEach(b, benches) {
        shape_text(cJSON_GetObjectItem(b, "shape"), shape, sizeof shape);
        if (strcmp(str(b, "status"), "pass") != 0) {
            fprintf(f, "  %-2.0f %-24s %s: %s\n", num(b, "index"), shape, str(b, "status"),
                    str(b, "message"));
            continue;
        }
        double med = num(b, "median_ns");
        fprintf(f, "  %-2.0f %-24s %10.3f %10.3f %7.2f %10.3f %10.3f %10.3f %6.0f %-13s %9.3f%s\n",
                num(b, "index"), shape, med / 1e3, num(b, "mean_ns") / 1e3,
                100.0 * num(b, "stdev_ns") / num(b, "mean_ns"), num(b, "min_ns") / 1e3,
                num(b, "q3_ns") / 1e3, num(b, "max_ns") / 1e3, num(b, "n"),
                str(b, "stop_reason"), num(b, "floor_ns") / 1e3,
                cJSON_IsTrue(cJSON_GetObjectItem(b, "below_floor")) ? "  BELOW FLOOR" : "");
    }
}

void report_table(FILE *f, const cJSON *r, const char *file_name)
{
    const cJSON *sys = cJSON_GetObjectItem(r, "system"), *t;
    char shape[160];
    fprintf(f, "%s on %s (%s mode)", file_name, str(r, "leaderboard"), str(r, "mode"));
    if (sys != NULL)
        fprintf(f, ", %s %s, CUDA driver API %s, NVRTC %s", str(sys, "gpu"), str(sys, "arch"),
                str(sys, "cuda_driver_api"), str(sys, "nvrtc"));
    fputc('\n', f);
    report_compile(f, cJSON_GetObjectItem(r, "compile"));
    if (cJSON_GetArraySize(cJSON_GetObjectItem(r, "tests")) > 0)
        fprintf(f, "tests:\n");
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(r, "tests")) {
        shape_text(cJSON_GetObjectItem(t, "shape"), shape, sizeof shape);
        fprintf(f, "  %-2.0f %-28s %s%s%s\n", num(t, "index"), shape, str(t, "status"),
                *str(t, "message") ? ": " : "", str(t, "message"));
    }
    report_benchmarks(f, cJSON_GetObjectItem(r, "benchmarks"));
    if (!isnan(num(r, "baseline_empty_kernel_ns")))
        fprintf(f, "empty-kernel baseline: %.3f us (not subtracted); copy bandwidth %.0f GB/s; "
                "SM clock %.0f -> %.0f MHz\n", num(r, "baseline_empty_kernel_ns") / 1e3,
                num(sys, "measured_copy_bandwidth_gbs"), num(sys, "sm_clock_mhz_before"),
                num(sys, "sm_clock_mhz_after"));
    fprintf(f, "verdict: %s", str(r, "verdict"));
    if (!isnan(num(r, "score_ns")))
        fprintf(f, "   score: %.3f us (geometric mean of medians)", num(r, "score_ns") / 1e3);
    fprintf(f, "\n  %s\n", str(r, "message"));
}

void report_progress(void *ctx, enum kj_event event, const cJSON *d)
{
    FILE *f = ctx;
    char shape[160];
    if (event == KJ_EV_TEST || event == KJ_EV_BENCHMARK) {
        shape_text(cJSON_GetObjectItem(d, "shape"), shape, sizeof shape);
        if (event == KJ_EV_BENCHMARK && strcmp(str(d, "status"), "pass") == 0)
            fprintf(f, "[kjudge] benchmark %.0f (%s): median %.3f us over %.0f samples (%s)\n",
                    num(d, "index"), shape, num(d, "median_ns") / 1e3, num(d, "n"),
                    str(d, "stop_reason"));
        else
            fprintf(f, "[kjudge] %s %.0f (%s): %s %s\n", kj_event_name(event), num(d, "index"), shape,
                    str(d, "status"), str(d, "message"));
    } else if (event == KJ_EV_COMPILED) {
        fprintf(f, "[kjudge] compiled: %s\n", cJSON_IsTrue(cJSON_GetObjectItem(d, "ok")) ?
                "ok" : "compile error");
    } else if (event == KJ_EV_VERDICT) {
        fprintf(f, "[kjudge] verdict: %s\n", str(d, "verdict"));
    } else {
        fprintf(f, "[kjudge] %s\n", kj_event_name(event));
    }
    fflush(f);
}
