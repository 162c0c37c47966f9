/*
 * test_result_check.c - unit tests for server/result_check.c and common/gputype.c.
 *
 * Every result in tests/fuzz/corpus/result_check/ (modelled on what
 * runner/judge.c writes) passes with its job, nothing dropped; the runner's
 * own code paths (a rejected result of judge_run, result_compile_json of a
 * real NVRTC compile, stats_summarize and stats_geomean of samples) pass;
 * then mode and job combinations and the stored per-shape medians. The
 * forged results (one change at a time, each refused with the field named)
 * are in test_result_forge.c. Runs from the repository root.
 */
#define KT_MAIN
#include "kt.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "directive.h"
#include "gputype.h"
#include "judge.h"
#include "result.h"
#include "result_check.h"
#include "stats.h"
#include "rcheck_fixture.h"

/* ------------------------------------------------------------------ */

static void test_gputype(void)
{
    char t[GPUTYPE_MAX], list[GPUTYPE_LIST_BYTES];
    struct kj_err err;
    gputype_of_device("NVIDIA H200", t, sizeof t);
    KT_CHECK(strcmp(t, "H200") == 0, "NVIDIA H200 -> %s", t);
    gputype_of_device("NVIDIA H200 NVL", t, sizeof t);
    KT_CHECK(strcmp(t, "H200") == 0, "NVIDIA H200 NVL -> %s", t);
    gputype_of_device("B200", t, sizeof t);
    KT_CHECK(strcmp(t, "B200") == 0, "B200 -> %s", t);
    gputype_of_device("", t, sizeof t);
    KT_CHECK(t[0] == '\0', "empty name -> no type");
    KT_CHECK(gputype_matches("H200", "NVIDIA H200") && !gputype_matches("H200", "NVIDIA H2000") &&
             !gputype_matches("H200", "NVIDIA B200") && !gputype_matches("H20", "NVIDIA H200") &&
             !gputype_matches("", "NVIDIA ") && !gputype_matches("NVIDIA", "NVIDIA H200"),
             "matches only the device's own type");
    KT_CHECK(gputype_list_parse("H200,B200", list, sizeof list, &err) == KJ_OK &&
             strcmp(list, "H200,B200") == 0, "a list of two: %s", err.msg);
    KT_CHECK(gputype_list_has(list, "B200") && gputype_list_has(list, "H200") &&
             !gputype_list_has(list, "B20") && !gputype_list_has(list, "H200,B200") &&
             !gputype_list_has(list, ""), "membership is by whole entries");
    const char *bad[] = {"", ",", "H200,", ",H200", "H200,,B200", "H200 B200", "H200,H200",
                         "a,b,c,d,e,f,g,h,i", "H2\xc3\xa9" "00", NULL};
    for (int i = 0; bad[i] != NULL; i++)
        KT_CHECK(gputype_list_parse(bad[i], list, sizeof list, &err) == KJ_EINVAL,
                 "bad list '%s' refused", bad[i]);
}

/* Every file of the corpus: the good ones pass, the bad_ ones are refused. */
static void test_corpus(void)
{
    static const struct { const char *file, *mode; int good; } files[] = {
        {"accepted_leaderboard.json", "leaderboard", 1}, {"accepted_benchmark.json", "benchmark", 1},
        {"accepted_test.json", "test", 1}, {"wrong_answer_test.json", "test", 1},
        {"wrong_answer_leaderboard.json", "leaderboard", 1}, {"compile_error.json", "leaderboard", 1},
        {"time_limit.json", "benchmark", 1}, {"rejected.json", "test", 1},
        {"internal_error.json", "leaderboard", 1}, {"bad_forged_score.json", "leaderboard", 0},
        {"bad_negative_median.json", "leaderboard", 0}, {"bad_issue_example.json", "leaderboard", 0},
        {"text_not_utf8.json", "test", 1}, {"bad_utf8_shape_key.json", "leaderboard", 0},
        {"accepted_leaderboard_v2.json", "leaderboard", 1}};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[256];
        size_t len = 0;
        struct rcheck_out out;
        struct kj_err err;
        snprintf(path, sizeof path, CORPUS "%s", files[i].file);
        char *t = kt_slurp(path, &len);
        KT_CHECK(t != NULL, "read %s", path);
        if (t == NULL)
            continue;
        int rc = check_text(t, len, files[i].mode, "H200", &out, &err);
        if (files[i].good)
            KT_CHECK(rc == KJ_OK && out.ndropped == 0, "%s passes: %s %s", files[i].file, err.msg,
                     out.dropped);
        else
            KT_CHECK(rc == KJ_EINVAL, "%s is refused", files[i].file);
        if (rc == KJ_OK && strncmp(files[i].file, "accepted_", 9) == 0 &&
            strcmp(files[i].mode, "test") != 0) {
            /* The v2 result ranks its medians less its offset of 62.5 ns. */
            double off = strstr(files[i].file, "_v2") != NULL ? 62.5 : 0;
            double want = exp((log(4210.5 - off) + log(7923.25 - off) + log(61234.75 - off)) / 3);
            KT_CHECK(out.has_score && fabs(out.score_ns - want) <= 1e-9 * want,
                     "%s: score %.17g", files[i].file, out.score_ns);
        } else if (rc == KJ_OK) {
            KT_CHECK(!out.has_score && strstr(out.json, "\"score_ns\":null") != NULL,
                     "%s: no score", files[i].file);
        }
        rcheck_out_clear(&out);
        free(t);
    }
}

/* Results saved from real runs (kjudge-runner eval --json on a GPU host),
 * named real_*.json: each passes for its own mode and GPU, nothing dropped. */
static void test_real_files(void)
{
    DIR *d = opendir(CORPUS);
    struct dirent *e;
    int n = 0;
    KT_CHECK(d != NULL, "open " CORPUS);
    while (d != NULL && (e = readdir(d)) != NULL) {
        char path[512], gpu[GPUTYPE_MAX] = "H200";
        size_t len = 0;
        struct rcheck_out out;
        struct kj_err err;
        if (strncmp(e->d_name, "real_", 5) != 0)
            continue;
        snprintf(path, sizeof path, CORPUS "%s", e->d_name);
        char *t = kt_slurp(path, &len);
        cJSON *j = t != NULL ? cJSON_Parse(t) : NULL;
        const cJSON *mode = cJSON_GetObjectItem(j, "mode");
        const cJSON *dev = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "system"), "gpu");
        if (cJSON_IsString(dev))
            gputype_of_device(dev->valuestring, gpu, sizeof gpu);
        int rc = t != NULL ? check_text(t, len, cJSON_IsString(mode) ? mode->valuestring
                                                                     : "leaderboard", gpu, &out, &err)
                           : -1;
        KT_CHECK(rc == KJ_OK && out.ndropped == 0, "%s passes with nothing dropped: %s %s",
                 e->d_name, rc == KJ_OK ? "" : err.msg, rc == KJ_OK ? out.dropped : "");
        if (rc == KJ_OK)
            rcheck_out_clear(&out);
        cJSON_Delete(j);
        free(t);
        n++;
    }
    if (d != NULL)
        closedir(d);
    if (n == 0)
        KT_SKIP("no real_*.json results from a GPU host in " CORPUS);
}

/* A rejected result as judge_run writes it (no GPU needed to get one). */
static void test_real_rejected(void)
{
    struct judge_job jj;
    struct kj_err err;
    struct judge_result *res = NULL;
    const char *src = "//!kjudge launch quant grid=(Q) block=(32)\n";
    memset(&jj, 0, sizeof jj);
    jj.spec = spec;
    jj.source = src;
    jj.source_len = strlen(src);
    for (int m = KJ_MODE_TEST; m <= KJ_MODE_LEADERBOARD; m++) {
        jj.mode = (enum kj_mode)m;
        KT_CHECK(judge_run(&jj, &res, &err) == KJ_OK && res != NULL, "judge_run: %s", err.msg);
        cJSON *j = res != NULL ? result_json(res) : NULL;
        if (j != NULL)
            must_pass(j, kj_mode_name(jj.mode), "judge_run's rejected result");
        cJSON_Delete(j);
        result_free(res);
        res = NULL;
    }
}

/* An accepted leaderboard result whose compile report comes from a real
 * NVRTC compile and whose statistics and score come from runner/stats.c. */
static void test_real_parts(void)
{
    size_t len;
    char *src = kt_slurp("leaderboards/fp8_quant/template.cu", &len);
    struct directives d;
    struct compile_result cr;
    struct kj_err err;
    double medians[3];
    cJSON *r = load("accepted_leaderboard.json");
    memset(&cr, 0, sizeof cr);
    kj_err_clear(&err);
    KT_CHECK(src != NULL && dir_parse(src, len, &d, &err) == KJ_OK &&
             compile_source(src, len, &d, "sm_90a", &cr, &err) == KJ_OK && cr.ok,
             "the template compiles: %s", err.msg);
    if (cr.ok && r != NULL)
        cJSON_ReplaceItemInObject(r, "compile", result_compile_json(&cr));
    for (int b = 0; r != NULL && b < 3; b++) {
        double samples[257];
        struct stats_summary st;
        /* a skewed, noisy distribution around an H200's times of the three shapes (above
         * their physical floors: result_floor.c) */
        static const double at[3] = {4200.0, 7900.0, 61200.0};
        for (int i = 0; i < 257; i++)
            samples[i] = at[b] + 3.7 * ((i * 37) % 101) + (i % 17 == 0 ? 900.0 : 0.0);
        KT_CHECK(stats_summarize(samples, 257, &st) == KJ_OK, "summarize");
        cJSON *e = bench(r, b);
        set_num(e, "median_ns", st.median);
        set_num(e, "mean_ns", st.mean);
        set_num(e, "stdev_ns", st.stdev);
        set_num(e, "min_ns", st.min);
        set_num(e, "max_ns", st.max);
        set_num(e, "q1_ns", st.q1);
        set_num(e, "q3_ns", st.q3);
        set_num(e, "ci_lo_ns", st.ci_lo);
        set_num(e, "ci_hi_ns", st.ci_hi);
        set_num(e, "n", (double)st.n);
        medians[b] = st.median;
    }
    if (r != NULL) {
        set_num(r, "score_ns", stats_geomean(medians, 3));
        double got = must_pass(r, "leaderboard", "real compile report and statistics");
        KT_CHECK(fabs(got - stats_geomean(medians, 3)) <= 1e-12 * got, "server score %.17g", got);
    }
    /* One sample per shape: every statistic equal, stdev 0, score exactly that time. */
    for (int b = 0; r != NULL && b < 3; b++) {
        double x = 62500.0; /* above shape 2's physical floor */
        struct stats_summary st;
        stats_summarize(&x, 1, &st);
        cJSON *e = bench(r, b);
        const char *k[] = {"median_ns", "mean_ns", "min_ns", "max_ns", "q1_ns", "q3_ns", "ci_lo_ns",
                           "ci_hi_ns"};
        for (int i = 0; i < 8; i++)
            set_num(e, k[i], x);
        set_num(e, "stdev_ns", st.stdev);
        set_num(e, "n", 1);
        medians[b] = x;
    }
    if (r != NULL) {
        set_num(r, "score_ns", stats_geomean(medians, 3));
        double got = must_pass(r, "leaderboard", "one sample per shape");
        KT_CHECK(got == 62500.0, "equal medians give exactly that score: %.17g", got);
    }
    compile_result_free(&cr);
    cJSON_Delete(r);
    free(src);
}

/* Mode and job combinations beyond the accepted leaderboard result. */
static void test_jobs(void)
{
    cJSON *r = load("accepted_test.json");
    struct rcheck_out out;
    struct kj_err err;
    if (r == NULL)
        return;
    set_num(r, "score_ns", 1000);
    must_refuse(r, "test", "bad_score", "score_ns: a test-mode result has no score", "test score");
    cJSON_ReplaceItemInObject(r, "score_ns", cJSON_CreateNull());
    cJSON *lb = load("accepted_leaderboard.json");
    cJSON_ReplaceItemInObject(r, "benchmarks",
                              cJSON_Duplicate(cJSON_GetObjectItem(lb, "benchmarks"), 1));
    must_refuse(r, "test", "bad_result", "benchmarks: 3 entries; a test-mode", "test with timings");
    cJSON_Delete(r);
    /* A failing verdict's score is not stored. */
    r = cJSON_Duplicate(lb, 1);
    set_str(r, "verdict", "runtime_error");
    char *t = cJSON_PrintUnformatted(r);
    KT_CHECK(check_text(t, strlen(t), "leaderboard", "H200", &out, &err) == KJ_OK && !out.has_score &&
             strstr(out.json, "\"score_ns\":null"), "a runtime_error keeps no score: %s", err.msg);
    rcheck_out_clear(&out);
    cJSON_free(t);
    cJSON_Delete(r);
    /* The job's GPU type decides. */
    t = cJSON_PrintUnformatted(lb);
    must_refuse_text(t, strlen(t), "leaderboard", "B200", "bad_result", "system.gpu",
                     "H200 result, B200 job");
    /* A board no longer loaded: only an internal_error is taken. */
    struct rcheck_job nojob = {NULL, KJ_MODE_LEADERBOARD, "H200", 0};
    kj_err_clear(&err);
    KT_CHECK(rcheck_result(&nojob, t, strlen(t), &out, &err) == KJ_EINVAL &&
             strstr(err.msg, "no longer loaded"), "no board: accepted refused: %s", err.msg);
    rcheck_out_clear(&out);
    cJSON_free(t);
    size_t len;
    t = kt_slurp(CORPUS "internal_error.json", &len);
    KT_CHECK(t != NULL && rcheck_result(&nojob, t, len, &out, &err) == KJ_OK &&
             out.verdict == KJ_V_INTERNAL, "no board: internal_error taken: %s", err.msg);
    rcheck_out_clear(&out);
    free(t);
    cJSON_Delete(lb);
}

/* Check text for a profile job of fp8_quant on H200 that names shape
 * (1 + index, 0 = every shape); returns rcheck_result's rc. */
static int check_profile(const char *text, int profile_shape, struct rcheck_out *out,
                         struct kj_err *err)
{
    struct rcheck_job job = {spec, KJ_MODE_PROFILE, "H200", profile_shape};
    kj_err_clear(err);
    return rcheck_result(&job, text, strlen(text), out, err);
}

/* Profile mode: the result is for the shape the request named. The
 * recorded profile of benchmark shape 2 (tests/data/tool/) is taken for
 * a job of shape 2, and refused for a job of shape 0 (the benchmark entry
 * and profile.shapes name another shape); relabelled as shape 0 without
 * its entry changed, it is still refused. A job of every shape takes each
 * shape in the board's order only, and an accepted one has all of them. */
static void test_profile_shape(void)
{
    struct rcheck_out out;
    struct kj_err err;
    size_t len = 0;
    char *t = kt_slurp("tests/data/tool/profile_result.json", &len);
    cJSON *r = t != NULL ? cJSON_Parse(t) : NULL, *x;
    free(t);
    KT_CHECK(r != NULL, "the recorded profile result parses");
    if (r == NULL)
        return;
    set_str(r, "leaderboard", "fp8_quant");
    t = cJSON_PrintUnformatted(r);
    KT_CHECK(check_profile(t, 3, &out, &err) == KJ_OK, "shape 2's profile for a shape-2 job: %s",
             err.msg);
    rcheck_out_clear(&out);
    KT_CHECK(check_profile(t, 1, &out, &err) == KJ_EINVAL && out.json == NULL &&
             strcmp(out.code, "bad_result") == 0 &&
             strstr(err.msg, "benchmarks[0].index: must be 0 (the job profiles benchmark shape "
                    "0 only)") != NULL, "shape 2's profile for a shape-0 job is refused: %s",
             err.msg);
    rcheck_out_clear(&out);
    cJSON_free(t);
    /* The benchmark entry left as shape 2's, the profile relabelled: still refused. */
    x = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "profile"), "shapes"), 0);
    set_num(x, "benchmark", 0);
    t = cJSON_PrintUnformatted(r);
    KT_CHECK(check_profile(t, 3, &out, &err) == KJ_EINVAL &&
             strstr(err.msg, "profile.shapes[0].benchmark: 0 is not the job's shape") != NULL,
             "a profile of shape 0 in a shape-2 job is refused: %s", err.msg);
    rcheck_out_clear(&out);
    cJSON_free(t);
    /* Label and number of another shape. */
    set_num(x, "benchmark", 2);
    set_str(x, "shape", "T=256 H=4096 GS=128");
    t = cJSON_PrintUnformatted(r);
    KT_CHECK(check_profile(t, 3, &out, &err) == KJ_EINVAL &&
             strstr(err.msg, "profile.shapes[0].shape: not benchmark shape 2's") != NULL,
             "shape 0's label on shape 2's profile is refused: %s", err.msg);
    rcheck_out_clear(&out);
    cJSON_free(t);
    set_str(x, "shape", "T=4096 H=7168 GS=128");
    /* A job of every shape: one entry, at index 2, is not in the board's order. */
    t = cJSON_PrintUnformatted(r);
    KT_CHECK(check_profile(t, 0, &out, &err) == KJ_EINVAL && strstr(err.msg, "benchmarks"),
             "an every-shape job's single entry for shape 2 is refused: %s", err.msg);
    rcheck_out_clear(&out);
    cJSON_free(t);
    /* Two entries for a one-shape job. */
    cJSON *b = cJSON_GetObjectItem(r, "benchmarks");
    cJSON_AddItemToArray(b, cJSON_Duplicate(cJSON_GetArrayItem(b, 0), 1));
    t = cJSON_PrintUnformatted(r);
    KT_CHECK(check_profile(t, 3, &out, &err) == KJ_EINVAL &&
             strstr(err.msg, "benchmarks: 2 entries; the job profiles benchmark shape 2 only"),
             "two entries for a one-shape job are refused: %s", err.msg);
    rcheck_out_clear(&out);
    cJSON_free(t);
    cJSON_Delete(r);
}

/* The timed shapes a checked result hands to storage: every benchmark
 * entry with a shape and a median, with its index; none for a test. A
 * corrected timing protocol v2 result hands its corrected medians as the
 * ranked ones, the raw ones beside them; without the correction, the raw
 * ones. */
static void test_medians(void)
{
    struct rcheck_out out;
    struct kj_err err;
    size_t len = 0;
    char *t = kt_slurp(CORPUS "accepted_leaderboard.json", &len);
    int rc = t != NULL ? check_text(t, len, "leaderboard", "H200", &out, &err) : -1;
    KT_CHECK(rc == KJ_OK && out.nmedians == spec->nbenchmarks, "one median per shape: %d",
             rc == KJ_OK ? out.nmedians : -1);
    for (int i = 0; rc == KJ_OK && i < out.nmedians; i++) {
        cJSON *shape = cJSON_Parse(out.medians[i].shape);
        const cJSON *tv = cJSON_GetObjectItemCaseSensitive(shape, "T");
        KT_CHECK(out.medians[i].idx == i && out.medians[i].median_ns > 0 && cJSON_IsNumber(tv) &&
                 tv->valuedouble == (double)spec->benchmarks[i].val[0],
                 "median %d: index, value and the board's shape (%s)", i, out.medians[i].shape);
        cJSON_Delete(shape);
    }
    if (rc == KJ_OK)
        KT_CHECK(out.medians[0].median_ns == 4210.5, "the first median: %.17g",
                 out.medians[0].median_ns);
    rcheck_out_clear(&out);
    free(t);
    t = kt_slurp(CORPUS "accepted_test.json", &len);
    rc = t != NULL ? check_text(t, len, "test", "H200", &out, &err) : -1;
    KT_CHECK(rc == KJ_OK && out.nmedians == 0 && out.medians == NULL, "a test times nothing");
    rcheck_out_clear(&out);
    free(t);
    t = kt_slurp(CORPUS "accepted_leaderboard_v2.json", &len);
    rc = t != NULL ? check_text(t, len, "leaderboard", "H200", &out, &err) : -1;
    KT_CHECK(rc == KJ_OK && out.nmedians == spec->nbenchmarks, "v2: one median per shape: %d",
             rc == KJ_OK ? out.nmedians : -1);
    if (rc == KJ_OK)
        KT_CHECK(out.medians[0].median_ns == 4148.0 && out.medians[0].raw_median_ns == 4210.5 &&
                 out.medians[0].corrected && out.medians[2].median_ns == 61172.25 &&
                 out.medians[2].raw_median_ns == 61234.75 && out.medians[2].corrected,
                 "v2: the corrected medians ranked, the raw ones kept: %.17g %.17g",
                 out.medians[0].median_ns, out.medians[0].raw_median_ns);
    rcheck_out_clear(&out);
    cJSON *r = t != NULL ? cJSON_Parse(t) : NULL, *tm = cJSON_GetObjectItem(r, "timing");
    free(t);
    /* The same run, not corrected: its raw medians are the ranked ones. */
    cJSON_ReplaceItemInObject(tm, "corrected", cJSON_CreateFalse());
    cJSON_ReplaceItemInObject(tm, "offset_ns", cJSON_CreateNull());
    for (int i = 0; i < cJSON_GetArraySize(cJSON_GetObjectItem(r, "benchmarks")); i++)
        cJSON_DeleteItemFromObject(bench(r, i), "corrected_median_ns");
    set_num(r, "score_ns", cJSON_GetObjectItem(tm, "raw_score_ns")->valuedouble);
    t = cJSON_PrintUnformatted(r);
    rc = t != NULL ? check_text(t, strlen(t), "leaderboard", "H200", &out, &err) : -1;
    KT_CHECK(rc == KJ_OK && out.nmedians == spec->nbenchmarks && out.medians[0].median_ns ==
             4210.5 && out.medians[0].raw_median_ns == 4210.5 && !out.medians[0].corrected,
             "v2 uncorrected: the raw medians ranked (%s)", rc == KJ_OK ? "ok" : err.msg);
    rcheck_out_clear(&out);
    cJSON_free(t);
    cJSON_Delete(r);
}

/* timing.ranked "gpu_time" (docs/timing.md "GPU time"): the benchmarks'
 * gpu_median_ns rank, and the server's score is their geometric mean; a
 * result that claims it without every GPU-time median, without
 * timing.gpu_time, or with the event score, is refused. */
static void test_gpu_ranked(void)
{
    struct rcheck_out out;
    struct kj_err err;
    size_t len = 0;
    const double g[3] = {3000.0, 6500.0, 59000.0};
    double gs = cbrt(g[0] * g[1] * g[2]);
    char *t = kt_slurp(CORPUS "accepted_leaderboard_v2.json", &len);
    cJSON *r = t != NULL ? cJSON_Parse(t) : NULL, *tm = cJSON_GetObjectItem(r, "timing");
    free(t);
    KT_CHECK(r != NULL && tm != NULL && spec->nbenchmarks == 3, "the v2 corpus result");
    if (r == NULL || tm == NULL || spec->nbenchmarks != 3) {
        cJSON_Delete(r);
        return;
    }
    for (int i = 0; i < 3; i++)
        cJSON_AddNumberToObject(bench(r, i), "gpu_median_ns", g[i]);
    cJSON_AddBoolToObject(tm, "gpu_time", 1);
    cJSON_AddStringToObject(tm, "gpu_time_note", "CUPTI API 130001 (libcupti.so.13)");
    cJSON_AddNumberToObject(tm, "gpu_score_ns", gs);
    cJSON_AddStringToObject(tm, "ranked", "events");
    /* Beside the events: kept, the event score stands. */
    t = cJSON_PrintUnformatted(r);
    int rc = check_text(t, strlen(t), "leaderboard", "H200", &out, &err);
    KT_CHECK(rc == KJ_OK && fabs(out.score_ns - 12587.87424571805) < 1e-6 &&
             out.medians[0].median_ns == 4148.0, "events ranked, GPU time beside them (%s)",
             rc == KJ_OK ? "ok" : err.msg);
    cJSON *stored = rc == KJ_OK ? cJSON_Parse(out.json) : NULL;
    KT_CHECK(stored != NULL && cJSON_IsNumber(cJSON_GetObjectItem(bench(stored, 1), "gpu_median_ns")) &&
             cJSON_IsString(cJSON_GetObjectItem(cJSON_GetObjectItem(stored, "timing"), "ranked")),
             "the stored copy keeps the GPU-time fields");
    cJSON_Delete(stored);
    rcheck_out_clear(&out);
    cJSON_free(t);
    /* Ranked on GPU time: the score is theirs. */
    cJSON_ReplaceItemInObject(tm, "ranked", cJSON_CreateString("gpu_time"));
    set_num(r, "score_ns", gs);
    t = cJSON_PrintUnformatted(r);
    rc = check_text(t, strlen(t), "leaderboard", "H200", &out, &err);
    KT_CHECK(rc == KJ_OK && fabs(out.score_ns - gs) < 1e-6 && out.medians[2].median_ns == 59000.0 &&
             out.medians[2].raw_median_ns == 61234.75, "gpu_time ranked: score %.17g (%s)",
             rc == KJ_OK ? out.score_ns : -1.0, rc == KJ_OK ? "ok" : err.msg);
    rcheck_out_clear(&out);
    cJSON_free(t);
    /* ... and the event score is then refused. */
    set_num(r, "score_ns", 12587.87424571805);
    t = cJSON_PrintUnformatted(r);
    rc = check_text(t, strlen(t), "leaderboard", "H200", &out, &err);
    KT_CHECK(rc != KJ_OK && strstr(err.msg, "score_ns") != NULL, "the event score refused: %s",
             err.msg);
    rcheck_out_clear(&out);
    cJSON_free(t);
    /* Without timing.gpu_time, or a shape without its GPU time: refused. */
    set_num(r, "score_ns", gs);
    cJSON_ReplaceItemInObject(tm, "gpu_time", cJSON_CreateFalse());
    t = cJSON_PrintUnformatted(r);
    rc = check_text(t, strlen(t), "leaderboard", "H200", &out, &err);
    KT_CHECK(rc != KJ_OK && strstr(err.msg, "timing.gpu_time") != NULL, "gpu_time false: %s",
             err.msg);
    rcheck_out_clear(&out);
    cJSON_free(t);
    cJSON_ReplaceItemInObject(tm, "gpu_time", cJSON_CreateTrue());
    cJSON_DeleteItemFromObject(bench(r, 1), "gpu_median_ns");
    t = cJSON_PrintUnformatted(r);
    rc = check_text(t, strlen(t), "leaderboard", "H200", &out, &err);
    KT_CHECK(rc != KJ_OK && strstr(err.msg, "gpu_median_ns") != NULL, "a missing GPU median: %s",
             err.msg);
    rcheck_out_clear(&out);
    cJSON_free(t);
    cJSON_Delete(r);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    struct kj_err err;
    KT_CHECK(spec_load("leaderboards/fp8_quant", &spec, &err) == KJ_OK, "spec: %s", err.msg);
    if (spec == NULL)
        return kt_done("test_result_check");
    KT_RUN(test_gputype());
    KT_RUN(test_corpus());
    KT_RUN(test_real_files());
    KT_RUN(test_real_rejected());
    KT_RUN(test_real_parts());
    KT_RUN(test_jobs());
    KT_RUN(test_medians());
    KT_RUN(test_gpu_ranked());
    KT_RUN(test_profile_shape());
    spec_free(spec);
    return kt_done("test_result_check");
}
