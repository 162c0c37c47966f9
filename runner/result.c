/*
 * result.c - the judge's result (see result.h): its life cycle and the
 * serializers that turn it into the result object and the progress events
 * of docs/protocol.md.
 *
 * The keys, their types and the cases in which each is written are the
 * protocol's; the server checks them (server/result_check.c), so a change
 * here is a change of the wire format. Every key is written from a field
 * or flag of the structs: nothing is looked up in JSON.
 */
#include "result.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Any cJSON call that can run out of memory goes through PUT: a NULL
 * leaves the function through its fail label. */
#define PUT(call)                  \
    do {                           \
        if ((call) == NULL)        \
            goto fail;             \
    } while (0)

/* ------------------------------------------------------------- life cycle */

struct judge_result *result_new(const struct spec *s, enum kj_mode m)
{
    struct judge_result *r = calloc(1, sizeof *r);
    if (r == NULL || s == NULL)
        return r;
    r->has_job = 1;
    r->mode = m;
    snprintf(r->leaderboard, sizeof r->leaderboard, "%s", s->name);
    r->nvars = s->nvars;
    memcpy(r->vars, s->vars, sizeof r->vars);
    return r;
}

struct judge_result *result_internal(const char *msg)
{
    struct judge_result *r = result_new(NULL, KJ_MODE_TEST);
    if (r != NULL)
        result_set_verdict(r, KJ_V_INTERNAL, msg);
    return r;
}

void result_free(struct judge_result *r)
{
    if (r == NULL)
        return;
    compile_result_free(&r->compile);
    cJSON_Delete(r->tool);
    free(r);
}

int result_set_verdict(struct judge_result *r, enum kj_verdict v, const char *msg)
{
    if (r->has_verdict)
        return 0;
    r->has_verdict = 1;
    r->verdict = v;
    snprintf(r->message, sizeof r->message, "%s", msg);
    return 1;
}

/* ------------------------------------------------------------ serializers */

static const char *status_name(enum result_status s)
{
    return s == RESULT_PASS ? "pass" : s == RESULT_FAIL ? "fail" : "error";
}

static cJSON *kernel_json(const struct compile_kernel *k)
{
    cJSON *o = cJSON_CreateObject();

    if (o == NULL || !cJSON_AddStringToObject(o, "name", k->name) ||
        !cJSON_AddStringToObject(o, "lowered", k->lowered) ||
        !cJSON_AddNumberToObject(o, "registers", k->registers) ||
        !cJSON_AddNumberToObject(o, "smem_static", k->smem_static) ||
        !cJSON_AddNumberToObject(o, "stack_frame", k->stack_frame) ||
        !cJSON_AddNumberToObject(o, "spill_stores", k->spill_stores) ||
        !cJSON_AddNumberToObject(o, "spill_loads", k->spill_loads) ||
        !cJSON_AddNumberToObject(o, "barriers", k->barriers) ||
        !cJSON_AddNumberToObject(o, "max_threads_per_block", k->max_threads_per_block) ||
        !(k->tensor_cores[0] ? cJSON_AddStringToObject(o, "tensor_cores", k->tensor_cores)
                             : cJSON_AddNullToObject(o, "tensor_cores")) ||
        !cJSON_AddBoolToObject(o, "tma", k->uses_tma) ||
        !cJSON_AddBoolToObject(o, "bulk_copy", k->uses_bulk_copy) ||
        !cJSON_AddBoolToObject(o, "cp_async", k->uses_cp_async) ||
        !cJSON_AddStringToObject(o, "classes_from", k->sass ? "sass" : "ptx") ||
        !(k->sass ? cJSON_AddNumberToObject(o, "sass_instructions", k->sass_instructions)
                  : cJSON_AddNullToObject(o, "sass_instructions"))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *result_compile_json(const struct compile_result *r)
{
    cJSON *o = cJSON_CreateObject(), *ks;
    int k;

    if (o == NULL || !cJSON_AddBoolToObject(o, "ok", r->ok) ||
        !cJSON_AddStringToObject(o, "arch", r->arch) ||
        !cJSON_AddStringToObject(o, "log", r->log ? r->log : "") ||
        !cJSON_AddNumberToObject(o, "seconds", r->seconds) ||
        (ks = cJSON_AddArrayToObject(o, "kernels")) == NULL)
        goto fail;
    for (k = 0; k < r->nkernels && k < DIR_MAX_LAUNCHES; k++) {
        cJSON *kj = kernel_json(&r->kernels[k]);
        if (kj == NULL || !cJSON_AddItemToArray(ks, kj)) {
            cJSON_Delete(kj);
            goto fail;
        }
    }
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

/* Add item to o under key, or free it; NULL when either failed. */
static cJSON *add_item(cJSON *o, const char *key, cJSON *item)
{
    if (item == NULL || !cJSON_AddItemToObject(o, key, item)) {
        cJSON_Delete(item);
        return NULL;
    }
    return item;
}

/* {"T": 1, "H": 256, ...}: the board's variables with the case's values. */
static cJSON *shape_vars_json(const struct judge_result *r, const int64_t *val)
{
    cJSON *o = cJSON_CreateObject();
    for (int v = 0; o != NULL && v < r->nvars; v++)
        PUT(cJSON_AddNumberToObject(o, r->vars[v], (double)val[v]));
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

static cJSON *launches_json(const struct result_shape *e)
{
    cJSON *arr = cJSON_CreateArray();
    for (int l = 0; arr != NULL && l < e->nlaunch; l++) {
        const struct dir_dims *dd = &e->launch[l].dims;
        int g[3] = {(int)dd->grid[0], (int)dd->grid[1], (int)dd->grid[2]};
        int bl[3] = {(int)dd->block[0], (int)dd->block[1], (int)dd->block[2]};
        cJSON *o = cJSON_CreateObject();
        if (o == NULL || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            goto fail;
        }
        PUT(cJSON_AddStringToObject(o, "kernel", e->launch[l].kernel));
        PUT(add_item(o, "grid", cJSON_CreateIntArray(g, 3)));
        PUT(add_item(o, "block", cJSON_CreateIntArray(bl, 3)));
        PUT(cJSON_AddNumberToObject(o, "smem", dd->smem));
    }
    return arr;
fail:
    cJSON_Delete(arr);
    return NULL;
}

static int timing_json(cJSON *o, const struct shape_timing *t)
{
    const struct stats_summary *st = &t->st;
    PUT(cJSON_AddNumberToObject(o, "median_ns", st->median));
    PUT(cJSON_AddNumberToObject(o, "mean_ns", st->mean));
    PUT(cJSON_AddNumberToObject(o, "stdev_ns", st->stdev));
    PUT(cJSON_AddNumberToObject(o, "min_ns", st->min));
    PUT(cJSON_AddNumberToObject(o, "max_ns", st->max));
    PUT(cJSON_AddNumberToObject(o, "q1_ns", st->q1));
    PUT(cJSON_AddNumberToObject(o, "q3_ns", st->q3));
    PUT(cJSON_AddNumberToObject(o, "ci_lo_ns", st->ci_lo));
    PUT(cJSON_AddNumberToObject(o, "ci_hi_ns", st->ci_hi));
    PUT(cJSON_AddNumberToObject(o, "n", (double)st->n));
    PUT(cJSON_AddStringToObject(o, "stop_reason", stats_stop_name(t->stop)));
    PUT(cJSON_AddNumberToObject(o, "floor_ns", t->floor_ns));
    PUT(cJSON_AddBoolToObject(o, "below_floor", stats_below_floor(st->median, t->floor_ns)));
    PUT(cJSON_AddNumberToObject(o, "wall_s", t->wall_s));
    PUT(cJSON_AddNumberToObject(o, "wall_ms_per_call", t->wall_ms_per_call));
    PUT(cJSON_AddBoolToObject(o, "verified_on_gpu", t->verified_on_gpu));
    if (t->sets > 0) {
        PUT(cJSON_AddNumberToObject(o, "sets", t->sets));
        PUT(cJSON_AddNumberToObject(o, "visits", t->visits));
    }
    return 0;
fail:
    return -1;
}

static int graph_json(cJSON *o, const struct result_graph *gr)
{
    cJSON *g;
    if (gr->state == RESULT_GRAPH_NONE)
        return 0;
    PUT(g = cJSON_AddObjectToObject(o, "graph"));
    if (gr->state == RESULT_GRAPH_REFUSED) {
        PUT(cJSON_AddNullToObject(g, "ns"));
    } else {
        PUT(cJSON_AddNumberToObject(g, "ns", gr->ns));
        PUT(cJSON_AddNumberToObject(g, "launches", (double)gr->launches));
        PUT(cJSON_AddNumberToObject(g, "ratio_to_median", gr->ratio_to_median));
        PUT(cJSON_AddBoolToObject(g, "disagrees", gr->disagrees));
    }
    PUT(cJSON_AddStringToObject(g, "message", gr->message));
    return 0;
fail:
    return -1;
}

cJSON *result_shape_json(const struct judge_result *r, const struct result_shape *e)
{
    const struct result_check *c = &e->check;
    cJSON *o = cJSON_CreateObject();
    if (o == NULL || !e->reached)
        return o;
    PUT(cJSON_AddNumberToObject(o, "index", e->index));
    PUT(add_item(o, "shape", shape_vars_json(r, e->val)));
    if (e->has_seed)
        PUT(cJSON_AddNumberToObject(o, "seed", (double)e->seed));
    if (e->has_launches)
        PUT(add_item(o, "launches", launches_json(e)));
    if (c->status != RESULT_NONE)
        PUT(cJSON_AddStringToObject(o, "status", status_name(c->status)));
    if (c->status == RESULT_FAIL || c->status == RESULT_ERROR)
        PUT(cJSON_AddStringToObject(o, "message", c->message));
    if (e->failed_call >= 0)
        PUT(cJSON_AddNumberToObject(o, "failed_call", (double)e->failed_call));
    if (c->has_mismatch)
        PUT(add_item(o, "mismatch", compare_report_json(&c->mismatch, c->mismatch_buffer)));
    if (e->timed && timing_json(o, &e->t) != 0)
        goto fail;
    if (e->has_corrected)
        PUT(cJSON_AddNumberToObject(o, "corrected_median_ns", e->corrected_median_ns));
    if (e->has_gpu) {
        PUT(cJSON_AddNumberToObject(o, "gpu_median_ns", e->gpu.median));
        PUT(cJSON_AddNumberToObject(o, "gpu_mean_ns", e->gpu.mean));
        PUT(cJSON_AddNumberToObject(o, "gpu_stdev_ns", e->gpu.stdev));
        PUT(cJSON_AddNumberToObject(o, "gpu_min_ns", e->gpu.min));
        PUT(cJSON_AddNumberToObject(o, "gpu_q1_ns", e->gpu.q1));
        PUT(cJSON_AddNumberToObject(o, "gpu_q3_ns", e->gpu.q3));
        PUT(cJSON_AddNumberToObject(o, "gpu_n", (double)e->gpu.n));
    }
    if (e->has_adjusted)
        PUT(cJSON_AddNumberToObject(o, "adjusted_median_ns", e->adjusted_median_ns));
    if (graph_json(o, &e->graph) != 0)
        goto fail;
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

static cJSON *nvml_json(const struct gpumon *m)
{
    cJSON *o = cJSON_CreateObject();
    PUT(o);
    PUT(cJSON_AddNumberToObject(o, "sm_clock_mhz", m->sm_mhz));
    PUT(cJSON_AddNumberToObject(o, "mem_clock_mhz", m->mem_mhz));
    PUT(cJSON_AddNumberToObject(o, "temperature_c", m->temp_c));
    PUT(cJSON_AddNumberToObject(o, "power_w", m->power_w));
    PUT(cJSON_AddNumberToObject(o, "clock_event_reasons", (double)m->reasons));
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

static cJSON *system_json(const struct result_system *y)
{
    cJSON *o = cJSON_CreateObject();
    PUT(o);
    PUT(cJSON_AddStringToObject(o, "gpu", y->gpu));
    PUT(cJSON_AddStringToObject(o, "arch", y->arch));
    PUT(cJSON_AddStringToObject(o, "pci", y->pci));
    PUT(cJSON_AddNumberToObject(o, "sm_count", y->sm_count));
    PUT(cJSON_AddStringToObject(o, "cuda_driver_api", y->cuda_driver_api));
    PUT(cJSON_AddStringToObject(o, "nvrtc", y->nvrtc));
    PUT(cJSON_AddStringToObject(o, "sandbox", y->sandbox));
    if (y->python[0] != '\0')
        PUT(cJSON_AddStringToObject(o, "python", y->python));
    PUT(cJSON_AddNumberToObject(o, "sm_clock_max_mhz", y->sm_clock_max_mhz));
    PUT(cJSON_AddNumberToObject(o, "mem_clock_max_mhz", y->mem_clock_max_mhz));
    PUT(cJSON_AddNumberToObject(o, "l2_bytes", y->l2_bytes));
    PUT(cJSON_AddNumberToObject(o, "l2_flush_bytes", y->l2_flush_bytes));
    PUT(cJSON_AddNumberToObject(o, "peak_bandwidth_gbs", y->peak_bandwidth_gbs));
    if (y->has_copy_bw)
        PUT(cJSON_AddNumberToObject(o, "measured_copy_bandwidth_gbs",
                                    y->measured_copy_bandwidth_gbs));
    if (y->has_clock_before)
        PUT(cJSON_AddNumberToObject(o, "sm_clock_mhz_before", y->sm_clock_mhz_before));
    if (y->driver[0] != '\0')
        PUT(cJSON_AddStringToObject(o, "driver", y->driver));
    if (y->has_nvml_before)
        PUT(add_item(o, "nvml_before", nvml_json(&y->nvml_before)));
    if (y->has_clock_after)
        PUT(cJSON_AddNumberToObject(o, "sm_clock_mhz_after", y->sm_clock_mhz_after));
    if (y->has_nvml_after)
        PUT(add_item(o, "nvml_after", nvml_json(&y->nvml_after)));
    if (y->has_verify)
        PUT(cJSON_AddStringToObject(o, "verify", y->verify_gpu ? "gpu" : "host"));
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

/* Add key: v, or null when has is 0. */
static cJSON *num_or_null(cJSON *o, const char *key, int has, double v)
{
    return has ? cJSON_AddNumberToObject(o, key, v) : cJSON_AddNullToObject(o, key);
}

static cJSON *timing_top_json(const struct result_timing *t)
{
    cJSON *o = cJSON_CreateObject();
    PUT(o);
    PUT(cJSON_AddStringToObject(o, "protocol", t->protocol == 1 ? "v1" : "v2"));
    PUT(cJSON_AddNumberToObject(o, "version", t->version > 0 ? t->version :
                                t->ranked_gpu ? KJ_TIMING_VERSION_GPU_TIME : KJ_TIMING_VERSION));
    if (t->protocol == 2) {
        PUT(cJSON_AddNumberToObject(o, "rounds", t->rounds));
        PUT(cJSON_AddNumberToObject(o, "processes", t->processes));
        PUT(cJSON_AddNumberToObject(o, "lanes", t->lanes));
        PUT(cJSON_AddNumberToObject(o, "empty_every", t->empty_every));
        PUT(cJSON_AddNumberToObject(o, "empty_kernel_samples", (double)t->empty_samples));
        PUT(num_or_null(o, "empty_kernel_run_ns", t->has_empty_run, t->empty_run_ns));
        PUT(num_or_null(o, "empty_kernel_gpu_ns", t->empty_gpu_ns > 0, t->empty_gpu_ns));
        PUT(cJSON_AddStringToObject(o, "empty_kernel_gpu_source", t->empty_gpu_source));
        PUT(cJSON_AddBoolToObject(o, "corrected", t->corrected));
        PUT(num_or_null(o, "offset_ns", t->corrected, t->offset_ns));
    }
    PUT(num_or_null(o, "raw_score_ns", t->has_raw_score, t->raw_score_ns));
    if (t->protocol == 2) { /* GPU time (docs/timing.md "GPU time") */
        PUT(cJSON_AddBoolToObject(o, "gpu_time", t->gpu_time));
        PUT(cJSON_AddStringToObject(o, "gpu_time_note", t->gpu_time_note));
        PUT(num_or_null(o, "gpu_score_ns", t->has_gpu_score, t->gpu_score_ns));
        PUT(cJSON_AddStringToObject(o, "ranked", t->ranked_gpu ? "gpu_time" : "events"));
    }
    PUT(cJSON_AddNumberToObject(o, "wall_s", t->wall_s));
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

static cJSON *shapes_json(const struct judge_result *r, const struct result_shape *e, int n)
{
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; arr != NULL && i < n; i++) {
        cJSON *o = result_shape_json(r, &e[i]);
        if (o == NULL || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            goto fail;
        }
    }
    return arr;
fail:
    cJSON_Delete(arr);
    return NULL;
}

static cJSON *steps_json(const struct result_steps *t)
{
    cJSON *o = cJSON_CreateObject();
    PUT(o);
    PUT(cJSON_AddNumberToObject(o, "boxes", t->boxes));
    PUT(cJSON_AddNumberToObject(o, "compile", t->compile));
    PUT(cJSON_AddNumberToObject(o, "load", t->load));
    PUT(cJSON_AddNumberToObject(o, "tests", t->tests));
    PUT(cJSON_AddNumberToObject(o, "benchmarks", t->benchmarks));
    PUT(cJSON_AddNumberToObject(o, "restarts", t->restarts));
    PUT(cJSON_AddNumberToObject(o, "nrestarts", t->nrestarts));
    PUT(cJSON_AddNumberToObject(o, "tools", t->tools));
    PUT(cJSON_AddNumberToObject(o, "gaps", t->gaps));
    PUT(cJSON_AddNumberToObject(o, "total", t->total));
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

cJSON *result_json(const struct judge_result *r)
{
    cJSON *o = cJSON_CreateObject();
    PUT(o);
    if (r->has_job) {
        PUT(cJSON_AddStringToObject(o, "leaderboard", r->leaderboard));
        PUT(cJSON_AddStringToObject(o, "mode", kj_mode_name(r->mode)));
        PUT(add_item(o, "tests", shapes_json(r, r->tests, r->ntests)));
        PUT(add_item(o, "benchmarks", shapes_json(r, r->benches, r->nbenches)));
    }
    if (r->has_system)
        PUT(add_item(o, "system", system_json(&r->sys)));
    if (r->has_compile)
        PUT(add_item(o, "compile", result_compile_json(&r->compile)));
    if (r->has_baseline) {
        PUT(cJSON_AddNumberToObject(o, "baseline_empty_kernel_ns", r->baseline_empty_kernel_ns));
        PUT(cJSON_AddNumberToObject(o, "baseline_event_pair_ns", r->baseline_event_pair_ns));
    }
    if (r->timing.protocol != 0)
        PUT(add_item(o, "timing", timing_top_json(&r->timing)));
    if (r->steps.has)
        PUT(add_item(o, "steps_s", steps_json(&r->steps)));
    if (r->tool != NULL)
        PUT(add_item(o, r->mode == KJ_MODE_PROFILE ? "profile" : "sanitize",
                     cJSON_Duplicate(r->tool, 1)));
    if (r->has_verdict) {
        PUT(cJSON_AddStringToObject(o, "verdict", kj_verdict_name(r->verdict)));
        PUT(cJSON_AddStringToObject(o, "message", r->message));
    }
    if (r->has_score)
        PUT(cJSON_AddNumberToObject(o, "score_ns", r->score_ns));
    else
        PUT(cJSON_AddNullToObject(o, "score_ns"));
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

cJSON *result_verdict_json(const struct judge_result *r)
{
    cJSON *o = cJSON_CreateObject();
    PUT(o);
    PUT(cJSON_AddStringToObject(o, "verdict", kj_verdict_name(r->verdict)));
    PUT(cJSON_AddStringToObject(o, "message", r->message));
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

cJSON *result_compiling_json(const char *arch)
{
    cJSON *o = cJSON_CreateObject();
    if (o != NULL && cJSON_AddStringToObject(o, "arch", arch) == NULL) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}
