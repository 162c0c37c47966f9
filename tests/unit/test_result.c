/*
 * test_result.c - unit tests for runner/result.c, the judge's typed result
 * and its one serializer, and for report.c's table, which reads the struct.
 *
 * Results are built by hand the way judge.c fills them (every verdict path
 * a CPU can describe: accepted in each mode, a wrong benchmark call with a
 * mismatch and an unreached shape, a modified input, a kernel error, a bare
 * internal_error). Checks: the JSON has exactly the keys of docs/protocol.md
 * with the struct's values; the server's own check (server/result_check.c)
 * accepts every one with nothing dropped; judge_run's rejected results are
 * the JSON the judge wrote when it built the result as a cJSON tree, and
 * the eval table is the text the report printed when it read that JSON,
 * for the same results (tests/unit/golden/, recorded from that code: a
 * change of either is a change of behaviour). Runs from the repository root.
 */
#define KT_MAIN
#include "kt.h"

#include <math.h>
#include <string.h>

#include "judge.h"
#include "report.h"
#include "result.h"
#include "result_check.h"
#include "stats.h"

#define GOLDEN "tests/unit/golden/"

static struct spec *spec;

/* ------------------------------------------------------------ builders */

static void fill_entry(struct result_shape *e, const struct spec_case *c, int idx)
{
    memset(e, 0, sizeof *e);
    e->reached = 1;
    e->index = idx;
    e->failed_call = -1;
    memcpy(e->val, c->val, sizeof e->val);
}

static void fill_system(struct judge_result *r)
{
    struct result_system *y = &r->sys;
    r->has_system = 1;
    snprintf(y->gpu, sizeof y->gpu, "NVIDIA H200");
    snprintf(y->arch, sizeof y->arch, "sm_90a");
    snprintf(y->pci, sizeof y->pci, "00000000:19:00.0");
    y->sm_count = 132;
    snprintf(y->cuda_driver_api, sizeof y->cuda_driver_api, "13.0");
    snprintf(y->nvrtc, sizeof y->nvrtc, "13.0");
    snprintf(y->sandbox, sizeof y->sandbox, "ns,fs,creds,seccomp");
    y->sm_clock_max_mhz = 1980;
    y->mem_clock_max_mhz = 3201;
    y->l2_bytes = 62914560;
    y->l2_flush_bytes = 2.0 * 62914560;
    y->peak_bandwidth_gbs = 4916.7;
    y->has_verify = 1;
    y->verify_gpu = 1;
}

/* Clocks, NVML and the copy bandwidth, as a benchmark run records them. */
static void fill_bench_system(struct judge_result *r)
{
    struct result_system *y = &r->sys;
    struct gpumon m = {1, "580.159.04", 1980, 2619, 41, 121.5, 0};
    y->has_copy_bw = 1;
    y->measured_copy_bandwidth_gbs = 4187.25;
    y->has_clock_before = y->has_clock_after = 1;
    y->sm_clock_mhz_before = 1980;
    y->sm_clock_mhz_after = 1965;
    snprintf(y->driver, sizeof y->driver, "%s", m.driver);
    y->has_nvml_before = y->has_nvml_after = 1;
    y->nvml_before = m;
    m.temp_c = 47;
    m.reasons = 0x4;
    y->nvml_after = m;
    r->has_baseline = 1;
    r->baseline_empty_kernel_ns = 2150.5;
    r->baseline_event_pair_ns = 1500.25;
}

static void fill_compile(struct judge_result *r, int ok)
{
    struct compile_result *c = &r->compile;
    struct compile_kernel *k = &c->kernels[0];
    r->has_compile = 1;
    c->ok = ok;
    snprintf(c->arch, sizeof c->arch, "sm_90a");
    c->log = strdup(ok ? "" : "line 3: error: expected a \";\"\n");
    c->seconds = 0.41;
    c->nkernels = 1;
    snprintf(k->name, sizeof k->name, "quant");
    snprintf(k->lowered, sizeof k->lowered, "quant");
    k->registers = 16;
    k->max_threads_per_block = 1024;
    k->sass = ok;
    k->sass_instructions = ok ? 212 : 0;
}

static void fill_tests(struct judge_result *r)
{
    for (int i = 0; i < spec->ntests; i++) {
        struct result_shape *e = &r->tests[r->ntests++];
        fill_entry(e, &spec->tests[i], i);
        e->has_seed = 1;
        e->seed = spec->tests[i].seed;
        e->check.status = RESULT_PASS;
    }
}

/* Benchmark b timed from n synthetic samples around base ns. */
static double fill_timed(struct result_shape *e, int b, double base, long n)
{
    double *s = malloc((size_t)n * sizeof *s);
    for (long k = 0; k < n; k++)
        s[k] = base * (1.0 + 0.001 * (double)((k * 37) % 23) / 23.0) + (k == 3 ? base * 0.05 : 0);
    fill_entry(e, &spec->benchmarks[b], b);
    e->has_launches = 1;
    e->nlaunch = 1;
    snprintf(e->launch[0].kernel, sizeof e->launch[0].kernel, "quant");
    e->launch[0].dims = (struct dir_dims){{(uint32_t)(b + 1) * 1024, 1, 1}, {32, 8, 1},
                                          {1, 1, 1}, 0, 0};
    e->check.status = RESULT_PASS;
    e->timed = 1;
    stats_summarize(s, (size_t)n, &e->t.st);
    e->t.stop = STATS_STOP_CI;
    e->t.floor_ns = base * 0.45;
    e->t.wall_s = 0.61;
    e->t.wall_ms_per_call = 1.95;
    e->t.verified_on_gpu = 1;
    e->has_adjusted = 1;
    e->adjusted_median_ns = e->t.st.median - 1500.25;
    free(s);
    return e->t.st.median;
}

/* An accepted result in mode m, with everything a GPU run records. */
static struct judge_result *accepted(enum kj_mode m)
{
    /* shape 2 (T=4096 H=7168 GS=128) above its physical floor, 35 us on
     * an H200 (server/result_floor.c) */
    static const double bases[3] = {4000.0, 8000.0, 61200.0};
    struct judge_result *r = result_new(spec, m);
    double med[SPEC_MAX_CASES];
    fill_tests(r);
    fill_system(r);
    fill_compile(r, 1);
    if (m != KJ_MODE_TEST) {
        fill_bench_system(r);
        r->nbenches = spec->nbenchmarks;
        for (int b = 0; b < spec->nbenchmarks; b++)
            med[b] = fill_timed(&r->benches[b], b, bases[b], 120 + 7 * b);
        struct result_graph *g = &r->benches[0].graph;
        g->state = RESULT_GRAPH_MEASURED;
        g->ns = med[0] * 0.97;
        g->launches = 100;
        g->ratio_to_median = 0.97;
        snprintf(g->message, sizeof g->message, "100 launches per replay over 8 buffer sets");
        g = &r->benches[1].graph;
        g->state = RESULT_GRAPH_REFUSED;
        snprintf(g->message, sizeof g->message, "no graph: no memory for its workspaces");
        r->has_score = 1;
        r->score_ns = stats_geomean(med, (size_t)spec->nbenchmarks);
    }
    result_set_verdict(r, KJ_V_ACCEPTED, m == KJ_MODE_TEST ? "5 tests passed" :
                       "5 tests passed; benchmark shapes timed");
    return r;
}

/* Benchmark 1 fails at timed call 7 with a mismatch; benchmark 2 is never reached. */
static struct judge_result *wrong_benchmark(void)
{
    struct judge_result *r = result_new(spec, KJ_MODE_LEADERBOARD);
    struct result_shape *e;
    fill_tests(r);
    fill_system(r);
    fill_compile(r, 1);
    fill_bench_system(r);
    r->nbenches = spec->nbenchmarks;
    fill_timed(&r->benches[0], 0, 5000, 100);
    e = &r->benches[1];
    fill_entry(e, &spec->benchmarks[1], 1);
    e->has_launches = 1;
    e->check.status = RESULT_FAIL;
    e->failed_call = 7;
    e->check.has_mismatch = 1;
    snprintf(e->check.mismatch_buffer, sizeof e->check.mismatch_buffer, "x_q");
    e->check.mismatch = (struct compare_report){12, 1024, 0.5, 0.1, 1,
                                                {{{0, 17}, 2, 1.5, 2.0}}};
    compare_report_text(&e->check.mismatch, "x_q", e->check.message, sizeof e->check.message);
    result_set_verdict(r, KJ_V_WRONG_ANSWER, "benchmark 1 (T=256 H=8192 GS=128), timed call 7: "
                       "x_q: 12 of 1024 elements differ");
    return r;
}

/* Test 1 modified an input; test 2 never finished (time_limit). */
static struct judge_result *bad_tests(void)
{
    struct judge_result *r = result_new(spec, KJ_MODE_TEST);
    fill_system(r);
    fill_compile(r, 1);
    for (int i = 0; i < 3; i++) {
        struct result_shape *e = &r->tests[r->ntests++];
        fill_entry(e, &spec->tests[i], i);
        e->has_seed = 1;
        e->seed = spec->tests[i].seed;
        e->check.status = i == 0 ? RESULT_PASS : i == 1 ? RESULT_FAIL : RESULT_ERROR;
    }
    snprintf(r->tests[1].check.message, sizeof r->tests[1].check.message, "input 'x' was "
             "modified by the submission (first changed element at flat index 3); inputs are "
             "read-only");
    snprintf(r->tests[2].check.message, sizeof r->tests[2].check.message,
             "the kernel did not finish");
    result_set_verdict(r, KJ_V_TIME_LIMIT, "test: no answer within 60.0 s");
    return r;
}

static struct judge_result *compile_error(void)
{
    struct judge_result *r = result_new(spec, KJ_MODE_BENCHMARK);
    fill_system(r);
    fill_compile(r, 0);
    r->compile.kernels[0].lowered[0] = '\0';
    result_set_verdict(r, KJ_V_COMPILE_ERROR, "line 3: error: expected a \";\"");
    return r;
}

/* `eval --dump`: every shape once, untimed; benchmark 1 differs. */
static struct judge_result *dumped(void)
{
    struct judge_result *r = result_new(spec, KJ_MODE_TEST);
    fill_system(r);
    r->sys.verify_gpu = 0;
    fill_compile(r, 1);
    for (int i = 0; i < spec->ntests; i++) {
        fill_entry(&r->tests[r->ntests], &spec->tests[i], i);
        r->tests[r->ntests++].check.status = RESULT_PASS;
    }
    for (int b = 0; b < spec->nbenchmarks; b++) {
        struct result_shape *e = &r->benches[r->nbenches++];
        fill_entry(e, &spec->benchmarks[b], b);
        e->check.status = b == 1 ? RESULT_FAIL : RESULT_PASS;
    }
    snprintf(r->benches[1].check.message, sizeof r->benches[1].check.message, "x_s: 1 of 2 "
             "elements differ");
    result_set_verdict(r, KJ_V_WRONG_ANSWER, "1 of 8 shapes differ from the reference (dumped "
                       "anyway)");
    return r;
}

/* ------------------------------------------------------------- helpers */

static cJSON *json_of(const struct judge_result *r)
{
    cJSON *j = result_json(r);
    KT_CHECK(j != NULL, "result_json");
    return j;
}

/* The server's check of r for mode, nothing dropped. */
static void server_accepts(const struct judge_result *r, const char *what)
{
    cJSON *j = json_of(r);
    char *t = cJSON_PrintUnformatted(j);
    struct rcheck_job job = {spec, r->has_job ? r->mode : KJ_MODE_TEST, "H200", 0};
    struct rcheck_out out;
    struct kj_err err;
    memset(&out, 0, sizeof out);
    kj_err_clear(&err);
    int rc = rcheck_result(&job, t, strlen(t), &out, &err);
    KT_CHECK(rc == KJ_OK && out.ndropped == 0, "%s: the server takes it: %s %s", what,
             rc == KJ_OK ? "" : err.msg, rc == KJ_OK ? out.dropped : "");
    if (rc == KJ_OK && r->has_score)
        KT_CHECK(out.has_score && fabs(out.score_ns - r->score_ns) <= 1e-9 * r->score_ns,
                 "%s: the server's score %g is ours %g", what, out.score_ns, r->score_ns);
    rcheck_out_clear(&out);
    free(t);
    cJSON_Delete(j);
}

/* 1 when o's keys are exactly the comma-separated list keys, in any order. */
static int keys_are(const cJSON *o, const char *keys)
{
    char buf[1024], *save = NULL;
    int n = 0;
    const cJSON *c;
    snprintf(buf, sizeof buf, "%s", keys);
    for (char *k = strtok_r(buf, ",", &save); k != NULL; k = strtok_r(NULL, ",", &save), n++)
        if (!cJSON_HasObjectItem(o, k)) {
            fprintf(stderr, "missing key %s\n", k);
            return 0;
        }
    cJSON_ArrayForEach(c, o) n--;
    if (n != 0)
        fprintf(stderr, "%d keys more than %s\n", -n, keys);
    return n == 0;
}

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

/* The eval table of r, compared with the golden text in file. */
static void table_is(const struct judge_result *r, const char *file)
{
    char path[256], *got = NULL;
    size_t n = 0, glen = 0;
    FILE *f = open_memstream(&got, &n);
    report_table(f, r, "sub.cu");
    fclose(f);
    snprintf(path, sizeof path, GOLDEN "%s", file);
    char *want = kt_slurp(path, &glen);
    KT_CHECK(want != NULL && strcmp(got, want) == 0, "the table of %s:\n%s--- want:\n%s", file,
             got, want ? want : "(no file)\n");
    free(want);
    free(got);
}

/* --------------------------------------------------------------- tests */

static void test_accepted_leaderboard(void)
{
    struct judge_result *r = accepted(KJ_MODE_LEADERBOARD);
    cJSON *j = json_of(r);
    KT_CHECK(keys_are(j, "leaderboard,mode,tests,benchmarks,system,compile,"
                         "baseline_empty_kernel_ns,baseline_event_pair_ns,verdict,message,score_ns"),
             "top-level keys");
    KT_CHECK(strcmp(str(j, "verdict"), "accepted") == 0 && strcmp(str(j, "mode"), "leaderboard") == 0 &&
             strcmp(str(j, "leaderboard"), "fp8_quant") == 0, "verdict, mode, board");
    KT_CHECK(num(j, "score_ns") == r->score_ns, "score_ns %g", num(j, "score_ns"));
    const cJSON *t0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "tests"), 0);
    KT_CHECK(keys_are(t0, "index,shape,seed,status") && strcmp(str(t0, "status"), "pass") == 0 &&
             num(t0, "seed") == (double)spec->tests[0].seed, "a passing test");
    const cJSON *sh = cJSON_GetObjectItem(t0, "shape");
    KT_CHECK(cJSON_GetArraySize(sh) == spec->nvars && num(sh, "T") == (double)spec->tests[0].val[0] &&
             num(sh, "GS") == (double)spec->tests[0].val[2], "its shape");
    const cJSON *b0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "benchmarks"), 0);
    KT_CHECK(keys_are(b0, "index,shape,launches,status,median_ns,mean_ns,stdev_ns,min_ns,max_ns,"
                          "q1_ns,q3_ns,ci_lo_ns,ci_hi_ns,n,stop_reason,floor_ns,below_floor,wall_s,"
                          "wall_ms_per_call,verified_on_gpu,adjusted_median_ns,graph"),
             "a timed benchmark's keys");
    const struct shape_timing *t = &r->benches[0].t;
    KT_CHECK(num(b0, "median_ns") == t->st.median && num(b0, "ci_hi_ns") == t->st.ci_hi &&
             num(b0, "n") == (double)t->st.n && num(b0, "floor_ns") == t->floor_ns &&
             strcmp(str(b0, "stop_reason"), "ci_converged") == 0 &&
             cJSON_IsFalse(cJSON_GetObjectItem(b0, "below_floor")) &&
             cJSON_IsTrue(cJSON_GetObjectItem(b0, "verified_on_gpu")), "its statistics");
    const cJSON *l0 = cJSON_GetArrayItem(cJSON_GetObjectItem(b0, "launches"), 0);
    KT_CHECK(keys_are(l0, "kernel,grid,block,smem") &&
             cJSON_GetArrayItem(cJSON_GetObjectItem(l0, "grid"), 0)->valueint == 1024 &&
             cJSON_GetArrayItem(cJSON_GetObjectItem(l0, "block"), 1)->valueint == 8, "its launch");
    const cJSON *g = cJSON_GetObjectItem(b0, "graph");
    KT_CHECK(keys_are(g, "ns,launches,ratio_to_median,disagrees,message") &&
             num(g, "launches") == 100, "a measured graph");
    g = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "benchmarks"), 1), "graph");
    KT_CHECK(keys_are(g, "ns,message") && cJSON_IsNull(cJSON_GetObjectItem(g, "ns")),
             "a refused graph: ns null");
    const cJSON *y = cJSON_GetObjectItem(j, "system");
    KT_CHECK(keys_are(y, "gpu,arch,pci,sm_count,cuda_driver_api,nvrtc,sandbox,sm_clock_max_mhz,"
                         "mem_clock_max_mhz,l2_bytes,l2_flush_bytes,peak_bandwidth_gbs,"
                         "measured_copy_bandwidth_gbs,sm_clock_mhz_before,driver,nvml_before,"
                         "sm_clock_mhz_after,nvml_after,verify") &&
             strcmp(str(y, "verify"), "gpu") == 0 && num(y, "sm_clock_mhz_after") == 1965,
             "the system");
    KT_CHECK(keys_are(cJSON_GetObjectItem(y, "nvml_after"), "sm_clock_mhz,mem_clock_mhz,"
                      "temperature_c,power_w,clock_event_reasons") &&
             num(cJSON_GetObjectItem(y, "nvml_after"), "clock_event_reasons") == 4, "NVML");
    const cJSON *c = cJSON_GetObjectItem(j, "compile");
    KT_CHECK(keys_are(c, "ok,arch,log,seconds,kernels") &&
             keys_are(cJSON_GetArrayItem(cJSON_GetObjectItem(c, "kernels"), 0),
                      "name,lowered,registers,smem_static,stack_frame,spill_stores,spill_loads,"
                      "barriers,max_threads_per_block,tensor_cores,tma,bulk_copy,cp_async,"
                      "classes_from,sass_instructions"), "the compile report");
    cJSON_Delete(j);
    server_accepts(r, "accepted leaderboard");
    table_is(r, "table_accepted_leaderboard.txt");

    /* The "benchmark" event is sent before the secondary figures. */
    struct result_shape e = r->benches[0];
    e.has_adjusted = 0;
    e.graph.state = RESULT_GRAPH_NONE;
    cJSON *ev = result_shape_json(r, &e);
    KT_CHECK(ev && !cJSON_HasObjectItem(ev, "graph") && cJSON_HasObjectItem(ev, "median_ns"),
             "the event before the graph has none");
    cJSON_Delete(ev);
    result_free(r);
}

/* Protocol v2 (docs/timing.md): the raw statistics as before, the corrected
 * medians beside them, the "timing" object; the server ranks the
 * corrected medians. */
static void test_accepted_v2(void)
{
    struct judge_result *r = accepted(KJ_MODE_LEADERBOARD);
    struct result_timing *t = &r->timing;
    double raw[SPEC_MAX_CASES], cor[SPEC_MAX_CASES];
    t->protocol = 2;
    t->rounds = 4;
    t->processes = 4;
    t->lanes = 4;
    t->empty_every = 8;
    t->empty_samples = 692;
    t->has_empty_run = 1;
    t->empty_run_ns = 2897.0 + 41.25;
    t->empty_gpu_ns = 2897.0;
    snprintf(t->empty_gpu_source, sizeof t->empty_gpu_source, "the table");
    for (int b = 0; b < spec->nbenchmarks; b++) {
        raw[b] = r->benches[b].t.st.median;
        r->benches[b].t.sets = 8;
        r->benches[b].t.visits = 4;
    }
    t->corrected = stats_correct_offset(raw, (size_t)spec->nbenchmarks, t->empty_run_ns,
                                        t->empty_gpu_ns, 1.0, cor, &t->offset_ns);
    for (int b = 0; b < spec->nbenchmarks; b++) {
        r->benches[b].has_corrected = 1;
        r->benches[b].corrected_median_ns = cor[b];
    }
    t->has_raw_score = 1;
    t->raw_score_ns = r->score_ns;
    t->wall_s = 1.93;
    r->score_ns = stats_geomean(cor, (size_t)spec->nbenchmarks);
    KT_CHECK(t->corrected && t->offset_ns == 41.25, "corrected by 41.25 ns");
    cJSON *j = json_of(r);
    KT_CHECK(keys_are(j, "leaderboard,mode,tests,benchmarks,system,compile,timing,"
                         "baseline_empty_kernel_ns,baseline_event_pair_ns,verdict,message,score_ns"),
             "top-level keys");
    KT_CHECK(keys_are(cJSON_GetObjectItem(j, "timing"), "protocol,version,rounds,processes,lanes,"
                      "empty_every,empty_kernel_samples,empty_kernel_run_ns,empty_kernel_gpu_ns,"
                      "empty_kernel_gpu_source,corrected,offset_ns,raw_score_ns,gpu_time,"
                      "gpu_time_note,gpu_score_ns,ranked,wall_s") &&
             cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "timing"), "gpu_time")) &&
             cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "timing"), "gpu_score_ns")) &&
             strcmp(str(cJSON_GetObjectItem(j, "timing"), "ranked"), "events") == 0 &&
             strcmp(str(cJSON_GetObjectItem(j, "timing"), "protocol"), "v2") == 0 &&
             num(cJSON_GetObjectItem(j, "timing"), "version") == KJ_TIMING_VERSION &&
             num(cJSON_GetObjectItem(j, "timing"), "offset_ns") == 41.25, "the timing object");
    const cJSON *b0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "benchmarks"), 0);
    KT_CHECK(keys_are(b0, "index,shape,launches,status,median_ns,mean_ns,stdev_ns,min_ns,max_ns,"
                          "q1_ns,q3_ns,ci_lo_ns,ci_hi_ns,n,stop_reason,floor_ns,below_floor,wall_s,"
                          "wall_ms_per_call,verified_on_gpu,sets,visits,corrected_median_ns,"
                          "adjusted_median_ns,graph") &&
             num(b0, "corrected_median_ns") == num(b0, "median_ns") - 41.25, "a v2 shape");
    cJSON_Delete(j);
    server_accepts(r, "accepted v2");
    table_is(r, "table_accepted_v2.txt");

    /* GPU time beside the events (docs/timing.md 8): each shape's summary,
     * the job's GPU-time score; the server takes the fields, and ranks
     * them when timing.ranked says so. */
    double g[SPEC_MAX_CASES], event_score = r->score_ns;
    for (int b = 0; b < spec->nbenchmarks; b++) {
        double x[3] = {raw[b] - 1800.0, raw[b] - 1790.0, raw[b] - 1810.0};
        r->benches[b].has_gpu = 1;
        KT_CHECK(stats_summarize(x, 3, &r->benches[b].gpu) == KJ_OK, "a GPU-time summary");
        g[b] = r->benches[b].gpu.median;
    }
    t->gpu_time = 1;
    snprintf(t->gpu_time_note, sizeof t->gpu_time_note, "CUPTI API 130001 (libcupti.so.13)");
    t->has_gpu_score = 1;
    t->gpu_score_ns = stats_geomean(g, (size_t)spec->nbenchmarks);
    j = json_of(r);
    b0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "benchmarks"), 0);
    KT_CHECK(keys_are(b0, "index,shape,launches,status,median_ns,mean_ns,stdev_ns,min_ns,max_ns,"
                          "q1_ns,q3_ns,ci_lo_ns,ci_hi_ns,n,stop_reason,floor_ns,below_floor,wall_s,"
                          "wall_ms_per_call,verified_on_gpu,sets,visits,corrected_median_ns,"
                          "gpu_median_ns,gpu_mean_ns,gpu_stdev_ns,gpu_min_ns,gpu_q1_ns,gpu_q3_ns,gpu_n,"
                          "adjusted_median_ns,graph") &&
             num(b0, "gpu_median_ns") == num(b0, "median_ns") - 1800.0 && num(b0, "gpu_n") == 3 &&
             cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "timing"), "gpu_time")) &&
             num(cJSON_GetObjectItem(j, "timing"), "gpu_score_ns") == t->gpu_score_ns,
             "a v2 shape with its GPU time");
    cJSON_Delete(j);
    server_accepts(r, "v2 with GPU time, events ranked");
    t->ranked_gpu = 1;
    r->score_ns = t->gpu_score_ns;
    j = json_of(r);
    KT_CHECK(strcmp(str(cJSON_GetObjectItem(j, "timing"), "ranked"), "gpu_time") == 0,
             "timing.ranked names GPU time");
    cJSON_Delete(j);
    server_accepts(r, "v2 ranked on GPU time");
    for (int b = 0; b < spec->nbenchmarks; b++)
        r->benches[b].has_gpu = 0;
    memset(t->gpu_time_note, 0, sizeof t->gpu_time_note);
    t->gpu_time = t->has_gpu_score = t->ranked_gpu = 0;
    r->score_ns = event_score;

    /* Without a constant for the GPU: raw medians ranked, said so. */
    t->corrected = stats_correct_offset(raw, (size_t)spec->nbenchmarks, t->empty_run_ns, 0, 1.0,
                                        cor, &t->offset_ns);
    snprintf(t->empty_gpu_source, sizeof t->empty_gpu_source,
             "no constant for this GPU");
    t->empty_gpu_ns = 0;
    for (int b = 0; b < spec->nbenchmarks; b++)
        r->benches[b].has_corrected = 0;
    r->score_ns = t->raw_score_ns;
    j = json_of(r);
    const cJSON *tj = cJSON_GetObjectItem(j, "timing");
    KT_CHECK(!t->corrected && cJSON_IsFalse(cJSON_GetObjectItem(tj, "corrected")) &&
             cJSON_IsNull(cJSON_GetObjectItem(tj, "offset_ns")) &&
             cJSON_IsNull(cJSON_GetObjectItem(tj, "empty_kernel_gpu_ns")) &&
             !cJSON_HasObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "benchmarks"), 0),
                                  "corrected_median_ns"), "not corrected");
    cJSON_Delete(j);
    server_accepts(r, "v2 without a constant");
    table_is(r, "table_v2_uncorrected.txt");

    /* v1: the protocol is named, nothing else changes. */
    memset(t, 0, sizeof *t);
    t->protocol = 1;
    t->has_raw_score = 1;
    t->raw_score_ns = r->score_ns;
    t->wall_s = 2.5;
    j = json_of(r);
    KT_CHECK(keys_are(cJSON_GetObjectItem(j, "timing"), "protocol,version,raw_score_ns,wall_s") &&
             strcmp(str(cJSON_GetObjectItem(j, "timing"), "protocol"), "v1") == 0, "v1");
    t->version = 7; /* a version the judge set is the one reported */
    cJSON_Delete(j);
    j = json_of(r);
    KT_CHECK(num(cJSON_GetObjectItem(j, "timing"), "version") == 7, "the judge's timing version");
    cJSON_Delete(j);
    server_accepts(r, "accepted v1");
    result_free(r);
}

static void test_accepted_modes(void)
{
    for (int m = KJ_MODE_TEST; m <= KJ_MODE_BENCHMARK; m++) {
        struct judge_result *r = accepted((enum kj_mode)m);
        cJSON *j = json_of(r);
        if (m == KJ_MODE_TEST)
            KT_CHECK(cJSON_IsNull(cJSON_GetObjectItem(j, "score_ns")) &&
                     cJSON_GetArraySize(cJSON_GetObjectItem(j, "benchmarks")) == 0 &&
                     !cJSON_HasObjectItem(j, "baseline_empty_kernel_ns"),
                     "test mode: no benchmarks, score null");
        cJSON_Delete(j);
        server_accepts(r, kj_mode_name((enum kj_mode)m));
        table_is(r, m == KJ_MODE_TEST ? "table_accepted_test.txt" : "table_accepted_benchmark.txt");
        result_free(r);
    }
}

static void test_wrong_benchmark(void)
{
    struct judge_result *r = wrong_benchmark();
    cJSON *j = json_of(r);
    const cJSON *bs = cJSON_GetObjectItem(j, "benchmarks");
    const cJSON *b1 = cJSON_GetArrayItem(bs, 1), *b2 = cJSON_GetArrayItem(bs, 2);
    KT_CHECK(cJSON_GetArraySize(bs) == spec->nbenchmarks, "every shape has an entry");
    KT_CHECK(keys_are(b1, "index,shape,launches,status,message,failed_call,mismatch") &&
             strcmp(str(b1, "status"), "fail") == 0 && num(b1, "failed_call") == 7 &&
             cJSON_GetArraySize(cJSON_GetObjectItem(b1, "launches")) == 0,
             "the failed shape: status, message, failed call, mismatch");
    const cJSON *mm = cJSON_GetObjectItem(b1, "mismatch");
    KT_CHECK(keys_are(mm, "buffer,count,total,max_abs_err,max_rel_err,first") &&
             strcmp(str(mm, "buffer"), "x_q") == 0 && num(mm, "count") == 12, "the mismatch");
    KT_CHECK(cJSON_IsObject(b2) && cJSON_GetArraySize(b2) == 0, "an unreached shape is {}");
    KT_CHECK(cJSON_IsNull(cJSON_GetObjectItem(j, "score_ns")), "no score");
    cJSON_Delete(j);
    server_accepts(r, "wrong benchmark");
    table_is(r, "table_wrong_benchmark.txt");
    result_free(r);
}

static void test_bad_tests(void)
{
    struct judge_result *r = bad_tests();
    cJSON *j = json_of(r);
    const cJSON *ts = cJSON_GetObjectItem(j, "tests");
    KT_CHECK(keys_are(cJSON_GetArrayItem(ts, 0), "index,shape,seed,status"), "a pass has no message");
    KT_CHECK(keys_are(cJSON_GetArrayItem(ts, 1), "index,shape,seed,status,message") &&
             strstr(str(cJSON_GetArrayItem(ts, 1), "message"), "read-only"), "a modified input");
    KT_CHECK(keys_are(cJSON_GetArrayItem(ts, 2), "index,shape,seed,status,message") &&
             strcmp(str(cJSON_GetArrayItem(ts, 2), "status"), "error") == 0, "a kernel error");
    KT_CHECK(!cJSON_HasObjectItem(j, "baseline_empty_kernel_ns") &&
             strcmp(str(cJSON_GetObjectItem(j, "system"), "verify"), "gpu") == 0, "no baseline");
    cJSON_Delete(j);
    server_accepts(r, "bad tests");
    table_is(r, "table_bad_tests.txt");
    result_free(r);

    r = compile_error();
    j = json_of(r);
    KT_CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "compile"), "ok")) &&
             cJSON_GetArraySize(cJSON_GetObjectItem(j, "tests")) == 0, "a compile error");
    cJSON_Delete(j);
    server_accepts(r, "compile error");
    table_is(r, "table_compile_error.txt");
    result_free(r);
}

static void test_dumped(void)
{
    struct judge_result *r = dumped();
    cJSON *j = json_of(r);
    const cJSON *b0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "benchmarks"), 0);
    KT_CHECK(keys_are(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "tests"), 0), "index,shape,status") &&
             keys_are(b0, "index,shape,status"), "dumped shapes: no seed, no launches, no timing");
    KT_CHECK(strcmp(str(cJSON_GetObjectItem(j, "system"), "verify"), "host") == 0, "verify host");
    cJSON_Delete(j);
    table_is(r, "table_dumped.txt");
    result_free(r);
}

static void test_internal(void)
{
    struct judge_result *r = result_internal("runner box-7: its GPU failed a health check");
    cJSON *j = json_of(r);
    KT_CHECK(keys_are(j, "verdict,message,score_ns") &&
             strcmp(str(j, "verdict"), "internal_error") == 0 &&
             strcmp(str(j, "message"), "runner box-7: its GPU failed a health check") == 0 &&
             cJSON_IsNull(cJSON_GetObjectItem(j, "score_ns")),
             "a bare internal_error: verdict, message, score_ns null");
    cJSON_Delete(j);
    server_accepts(r, "internal_error");
    KT_CHECK(result_set_verdict(r, KJ_V_ACCEPTED, "later") == 0 && r->verdict == KJ_V_INTERNAL,
             "the first verdict wins");
    result_free(r);
    result_free(NULL);

    cJSON *ev = result_compiling_json("sm_90a");
    KT_CHECK(keys_are(ev, "arch") && strcmp(str(ev, "arch"), "sm_90a") == 0, "event compiling");
    cJSON_Delete(ev);
    r = bad_tests();
    ev = result_verdict_json(r);
    KT_CHECK(keys_are(ev, "verdict,message") && strcmp(str(ev, "verdict"), "time_limit") == 0,
             "event verdict");
    cJSON_Delete(ev);
    ev = result_shape_json(r, &r->tests[1]);
    KT_CHECK(keys_are(ev, "index,shape,seed,status,message"), "event test");
    cJSON_Delete(ev);
    result_free(r);
}

/* judge_run's rejected results (no GPU needed) are what the JSON-building
 * judge wrote, and the table is what the JSON-reading report printed. */
static void test_rejected_golden(void)
{
    static const char *const src[] = {
        "// x\n//!kjudge launch quant grid=(T/(GS-GS)) block=(32) bogus=1\n",
        "//!kjudge launch quant grid=(Q) block=(32)\n",
        "//!kjudge leaderboard other_board\n//!kjudge launch quant grid=(1) block=(32)\n",
        "extern \"C\" __global__ void quant() {}\n",
    };
    for (int i = 0; i < 4; i++)
        for (int m = KJ_MODE_TEST; m <= KJ_MODE_LEADERBOARD; m++) {
            struct judge_job jj;
            struct judge_result *r = NULL;
            struct kj_err err;
            char path[256], name[64];
            size_t len = 0;
            memset(&jj, 0, sizeof jj);
            jj.spec = spec;
            jj.source = src[i];
            jj.source_len = strlen(src[i]);
            jj.mode = (enum kj_mode)m;
            KT_CHECK(judge_run(&jj, &r, &err) == KJ_OK && r != NULL, "judge_run: %s", err.msg);
            if (r == NULL)
                continue;
            snprintf(name, sizeof name, "rejected_%d_%s", i, kj_mode_name(jj.mode));
            snprintf(path, sizeof path, GOLDEN "%s.json", name);
            char *text = kt_slurp(path, &len);
            cJSON *want = text ? cJSON_Parse(text) : NULL, *got = result_json(r);
            /* where the time went varies run to run: checked here, not in the file */
            cJSON *steps = cJSON_DetachItemFromObjectCaseSensitive(got, "steps_s");
            cJSON *total = cJSON_GetObjectItemCaseSensitive(steps, "total");
            cJSON *boxes = cJSON_GetObjectItemCaseSensitive(steps, "boxes");
            KT_CHECK(cJSON_IsNumber(total) && total->valuedouble >= 0 && total->valuedouble < 5 &&
                     cJSON_IsNumber(boxes) && boxes->valuedouble == 0,
                     "%s: steps_s says how long the judge took, and that no box started", name);
            cJSON_Delete(steps);
            char *g = cJSON_PrintUnformatted(got);
            KT_CHECK(want != NULL && cJSON_Compare(want, got, 1), "%s: %s\nwant %s", name, g,
                     text ? text : "(no file)");
            free(g);
            free(text);
            cJSON_Delete(want);
            cJSON_Delete(got);
            snprintf(path, sizeof path, "%s.txt", name);
            table_is(r, path);
            result_free(r);
        }
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    struct kj_err err;
    KT_CHECK(spec_load("leaderboards/fp8_quant", &spec, &err) == KJ_OK, "spec: %s", err.msg);
    if (spec == NULL)
        return kt_done("test_result");
    KT_RUN(test_accepted_leaderboard());
    KT_RUN(test_accepted_v2());
    KT_RUN(test_accepted_modes());
    KT_RUN(test_wrong_benchmark());
    KT_RUN(test_bad_tests());
    KT_RUN(test_dumped());
    KT_RUN(test_internal());
    KT_RUN(test_rejected_golden());
    spec_free(spec);
    return kt_done("test_result");
}
