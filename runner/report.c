/*
 * report.c - human-readable output of a judging result (see report.h):
 * compile summary, tests, benchmark statistics in microseconds, verdict,
 * read from the struct judge_result; and one line per progress event,
 * read from the event's JSON.
 */
#include "report.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "stats.h"

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

/* "T=1 H=256 GS=64" from a shape object of an event. */
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

/* The same for a result entry (empty for an entry never reached). */
static void entry_text(const struct judge_result *r, const struct result_shape *e, char *buf,
                       size_t n)
{
    size_t p = 0;
    buf[0] = '\0';
    for (int v = 0; e->reached && v < r->nvars; v++) {
        if (p < n)
            p += (size_t)snprintf(buf + p, n - p, "%s%s=%.0f", p ? " " : "", r->vars[v],
                                  (double)e->val[v]);
    }
}

static const char *status_text(const struct result_check *c)
{
    return c->status == RESULT_PASS ? "pass" : c->status == RESULT_FAIL ? "fail" :
           c->status == RESULT_ERROR ? "error" : "";
}

static const char *message_text(const struct result_check *c)
{
    return c->status == RESULT_FAIL || c->status == RESULT_ERROR ? c->message : "";
}

static void report_compile(FILE *f, const struct compile_result *c)
{
    fprintf(f, "compile: %s for %s in %.2f s\n", c->ok ? "ok" : "FAILED", c->arch, c->seconds);
    for (int k = 0; k < c->nkernels && k < DIR_MAX_LAUNCHES; k++) {
        const struct compile_kernel *ck = &c->kernels[k];
        fprintf(f, "  kernel %s: %.0f registers, %.0f B static smem, %.0f B stack, "
                "%.0f B spill stores, %.0f B spill loads\n", ck->name, (double)ck->registers,
                (double)ck->smem_static, (double)ck->stack_frame, (double)ck->spill_stores,
                (double)ck->spill_loads);
    }
    if (!c->ok)
        fprintf(f, "%s\n", c->log ? c->log : "");
}

static void report_benchmarks(FILE *f, const struct judge_result *r)
{
    char shape[160];
    int ranked = r->timing.corrected; /* protocol v2: the corrected median is ranked */
    if (r->nbenches == 0)
        return;
    fprintf(f, "benchmarks (us):\n  %-2s %-24s %10s ", "#", "shape", "median");
    if (ranked)
        fprintf(f, "%10s ", "ranked");
    fprintf(f, "%10s %7s %10s %10s %10s %6s %-13s %9s\n", "mean", "noise%", "min", "q3", "max",
            "n", "stop", "floor");
    for (int i = 0; i < r->nbenches; i++) {
        const struct result_shape *b = &r->benches[i];
        double index = b->reached ? b->index : NAN;
        entry_text(r, b, shape, sizeof shape);
        if (b->check.status != RESULT_PASS) {
            fprintf(f, "  %-2.0f %-24s %s: %s\n", index, shape, status_text(&b->check),
                    message_text(&b->check));
            continue;
        }
        /* A shape that passed untimed (--dump) has no statistics: NaN. */
        const struct stats_summary *st = &b->t.st;
        double med = b->timed ? st->median : NAN, mean = b->timed ? st->mean : NAN;
        fprintf(f, "  %-2.0f %-24s %10.3f ", index, shape, med / 1e3);
        if (ranked)
            fprintf(f, "%10.3f ", (b->has_corrected ? b->corrected_median_ns : NAN) / 1e3);
        fprintf(f, "%10.3f %7.2f %10.3f %10.3f %10.3f %6.0f %-13s %9.3f%s\n", mean / 1e3,
                100.0 * (b->timed ? st->stdev : NAN) / mean, (b->timed ? st->min : NAN) / 1e3,
                (b->timed ? st->q3 : NAN) / 1e3, (b->timed ? st->max : NAN) / 1e3,
                b->timed ? (double)st->n : NAN, b->timed ? stats_stop_name(b->t.stop) : "",
                (b->timed ? b->t.floor_ns : NAN) / 1e3,
                b->timed && stats_below_floor(st->median, b->t.floor_ns) ? "  BELOW FLOOR" : "");
    }
}

/* The protocol line: how the shapes were timed and, under v2, the
 * launch-path correction (docs/timing.md). */
static void report_timing(FILE *f, const struct result_timing *t)
{
    if (t->protocol == 1)
        fprintf(f, "timing: protocol v1 (shape by shape, raw medians ranked), %.2f s\n", t->wall_s);
    if (t->protocol != 2)
        return;
    fprintf(f, "timing: protocol v2 (%d rounds, %d lanes, an empty kernel every %d samples), "
            "%.2f s; empty kernel %.3f us over %ld samples", t->rounds, t->lanes, t->empty_every,
            t->wall_s, t->has_empty_run ? t->empty_run_ns / 1e3 : NAN, t->empty_samples);
    if (t->corrected)
        fprintf(f, ", GPU constant %.3f us: offset %+.1f ns subtracted\n", t->empty_gpu_ns / 1e3,
                t->offset_ns);
    else
        fprintf(f, "; medians not corrected: %s\n", t->empty_gpu_source);
}

void report_table(FILE *f, const struct judge_result *r, const char *file_name)
{
    const struct result_system *sys = &r->sys;
    char shape[160];
    fprintf(f, "%s on %s (%s mode)", file_name, r->has_job ? r->leaderboard : "",
            r->has_job ? kj_mode_name(r->mode) : "");
    if (r->has_system)
        fprintf(f, ", %s %s, CUDA driver API %s, NVRTC %s", sys->gpu, sys->arch,
                sys->cuda_driver_api, sys->nvrtc);
    fputc('\n', f);
    if (r->has_compile)
        report_compile(f, &r->compile);
    if (r->ntests > 0)
        fprintf(f, "tests:\n");
    for (int i = 0; i < r->ntests; i++) {
        const struct result_shape *t = &r->tests[i];
        entry_text(r, t, shape, sizeof shape);
        fprintf(f, "  %-2.0f %-28s %s%s%s\n", t->reached ? (double)t->index : NAN, shape,
                status_text(&t->check), *message_text(&t->check) ? ": " : "",
                message_text(&t->check));
    }
    report_benchmarks(f, r);
    if (r->has_baseline && !isnan(r->baseline_empty_kernel_ns))
        fprintf(f, "empty-kernel baseline: %.3f us (not subtracted); copy bandwidth %.0f GB/s; "
                "SM clock %.0f -> %.0f MHz\n", r->baseline_empty_kernel_ns / 1e3,
                sys->has_copy_bw ? sys->measured_copy_bandwidth_gbs : NAN,
                sys->has_clock_before ? sys->sm_clock_mhz_before : NAN,
                sys->has_clock_after ? sys->sm_clock_mhz_after : NAN);
    report_timing(f, &r->timing);
    fprintf(f, "verdict: %s", r->has_verdict ? kj_verdict_name(r->verdict) : "");
    if (r->has_score && !isnan(r->score_ns) && r->timing.corrected)
        fprintf(f, "   score: %.3f us (geometric mean of the ranked medians; raw %.3f us)",
                r->score_ns / 1e3, r->timing.raw_score_ns / 1e3);
    else if (r->has_score && !isnan(r->score_ns))
        fprintf(f, "   score: %.3f us (geometric mean of medians)", r->score_ns / 1e3);
    fprintf(f, "\n  %s\n", r->has_verdict ? r->message : "");
}

void report_progress(void *ctx, enum kj_event event, const cJSON *d)
{
    FILE *f = ctx;
    char shape[160];
    if (event == KJ_EV_TEST || event == KJ_EV_BENCHMARK) {
        shape_text(cJSON_GetObjectItem(d, "shape"), shape, sizeof shape);
        if (event == KJ_EV_BENCHMARK && strcmp(str(d, "status"), "pass") == 0)
            fprintf(f, "[kjudge] benchmark %.0f (%s): median %.3f us%s over %.0f samples (%s)\n",
                    num(d, "index"), shape, (isnan(num(d, "corrected_median_ns")) ?
                    num(d, "median_ns") : num(d, "corrected_median_ns")) / 1e3,
                    isnan(num(d, "corrected_median_ns")) ? "" : " (corrected)", num(d, "n"),
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
