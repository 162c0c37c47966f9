/*
 * test_result_check.c - unit tests for server/result_check.c and common/gputype.c.
 *
 * Every result in tests/fuzz/corpus/result_check/ (modelled on what
 * runner/judge.c writes) passes with its job, nothing dropped; the runner's
 * own code paths (a rejected result of judge_run, result_compile_json of a
 * real NVRTC compile, stats_summarize and stats_geomean of samples) pass;
 * then one change at a time to an accepted leaderboard result, each refused
 * with the field named: forged scores, wrong mode or board, missing, extra
 * or changed shapes, impossible statistics, bad UTF-8, NUL, depth, size,
 * duplicate keys, the wrong GPU. Runs from the repository root.
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

#define CORPUS "tests/fuzz/corpus/result_check/"

static struct spec *spec;

/* Check text for (mode, gpu) on fp8_quant; returns rcheck_result's rc, out filled. */
static int check_text(const char *text, size_t len, const char *mode, const char *gpu,
                      struct rcheck_out *out, struct kj_err *err)
{
    struct rcheck_job job = {spec, KJ_MODE_TEST, gpu};
    KJ_ASSERT(kj_mode_parse(mode, &job.mode) == 0);
    kj_err_clear(err);
    return rcheck_result(&job, text, len, out, err);
}

static cJSON *load(const char *name)
{
    char path[256];
    size_t len;
    snprintf(path, sizeof path, CORPUS "%s", name);
    char *t = kt_slurp(path, &len);
    cJSON *j = t != NULL ? cJSON_Parse(t) : NULL;
    KT_CHECK(j != NULL, "%s parses", path);
    free(t);
    return j;
}

/* rcheck of the JSON j for mode must pass; returns the server's score (NAN when none). */
static double must_pass(const cJSON *j, const char *mode, const char *what)
{
    struct rcheck_out out;
    struct kj_err err;
    char *t = cJSON_PrintUnformatted(j);
    int rc = check_text(t, strlen(t), mode, "H200", &out, &err);
    double score = out.has_score ? out.score_ns : NAN;
    KT_CHECK(rc == KJ_OK, "%s passes: %s", what, err.msg);
    KT_CHECK(rc != KJ_OK || out.ndropped == 0, "%s: nothing dropped (%s)", what, out.dropped);
    cJSON *back = rc == KJ_OK ? cJSON_Parse(out.json) : NULL;
    KT_CHECK(rc != KJ_OK || (back != NULL && out.json_len == strlen(out.json)),
             "%s: the stored text parses", what);
    cJSON_Delete(back);
    rcheck_out_clear(&out);
    cJSON_free(t);
    return score;
}

/* rcheck of j (or of text when j is NULL) must refuse with code, naming needle. */
static void must_refuse_text(const char *text, size_t len, const char *mode, const char *gpu,
                             const char *code, const char *needle, const char *what)
{
    struct rcheck_out out;
    struct kj_err err;
    int rc = check_text(text, len, mode, gpu, &out, &err);
    KT_CHECK(rc == KJ_EINVAL, "%s is refused (rc %d)", what, rc);
    KT_CHECK(rc != KJ_EINVAL || (out.code != NULL && strcmp(out.code, code) == 0),
             "%s: code %s, got %s", what, code, out.code ? out.code : "(none)");
    KT_CHECK(rc != KJ_EINVAL || strstr(err.msg, needle) != NULL, "%s: message names '%s': %s",
             what, needle, err.msg);
    KT_CHECK(out.json == NULL, "%s: nothing to store", what);
    rcheck_out_clear(&out);
}

static void must_refuse(const cJSON *j, const char *mode, const char *code, const char *needle,
                        const char *what)
{
    char *t = cJSON_PrintUnformatted(j);
    must_refuse_text(t, strlen(t), mode, "H200", code, needle, what);
    cJSON_free(t);
}

static cJSON *bench(cJSON *r, int i)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItem(r, "benchmarks"), i);
}

static void set_num(cJSON *o, const char *key, double v)
{
    cJSON_DeleteItemFromObject(o, key);
    cJSON_AddNumberToObject(o, key, v);
}

static void set_str(cJSON *o, const char *key, const char *v)
{
    cJSON_DeleteItemFromObject(o, key);
    cJSON_AddStringToObject(o, key, v);
}

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
        for (int i = 0; i < 257; i++) /* a skewed, noisy distribution around 1 us * (b + 1) */
            samples[i] = 1000.0 * (b + 1) + 3.7 * ((i * 37) % 101) + (i % 17 == 0 ? 900.0 : 0.0);
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
        double x = 2500.0;
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
        KT_CHECK(got == 2500.0, "equal medians give exactly that score: %.17g", got);
    }
    compile_result_free(&cr);
    cJSON_Delete(r);
    free(src);
}

/* One change to an accepted leaderboard result per case. */
static void test_forgeries(void)
{
    cJSON *base = load("accepted_leaderboard.json"), *r;
    if (base == NULL)
        return;
    double score = cJSON_GetObjectItem(base, "score_ns")->valuedouble;
#define CASE(what) for (int once_ = (r = cJSON_Duplicate(base, 1)) != NULL; once_; \
                        once_ = 0, cJSON_Delete(r))
    CASE("forged score") {
        set_num(r, "score_ns", 5e-324);
        must_refuse(r, "leaderboard", "bad_score", "score_ns", "score 5e-324");
    }
    CASE("score 1% off") {
        set_num(r, "score_ns", score * 0.99);
        must_refuse(r, "leaderboard", "bad_score", "geometric mean", "score 1%% off");
    }
    CASE("score within rounding") {
        set_num(r, "score_ns", score * (1 + 1e-13));
        double got = must_pass(r, "leaderboard", "score off by 1e-13");
        KT_CHECK(fabs(got - score) <= 1e-12 * score, "the server's score is stored: %.17g", got);
    }
    CASE("score null") {
        cJSON_ReplaceItemInObject(r, "score_ns", cJSON_CreateNull());
        must_refuse(r, "leaderboard", "bad_score", "score_ns: missing", "accepted without score");
    }
    CASE("mode test") {
        set_str(r, "mode", "test");
        must_refuse(r, "leaderboard", "bad_result", "mode", "mode test for a leaderboard job");
    }
    CASE("benchmark job") {
        must_refuse(r, "benchmark", "bad_result", "mode", "leaderboard result for a benchmark job");
    }
    CASE("mode missing") {
        cJSON_DeleteItemFromObject(r, "mode");
        must_refuse(r, "leaderboard", "bad_result", "mode: missing", "no mode");
    }
    CASE("board") {
        set_str(r, "leaderboard", "matmul");
        must_refuse(r, "leaderboard", "bad_result", "leaderboard", "another board");
    }
    CASE("missing shape") {
        cJSON_DeleteItemFromArray(cJSON_GetObjectItem(r, "benchmarks"), 2);
        must_refuse(r, "leaderboard", "bad_result", "benchmarks: 2 entries", "2 of 3 shapes");
    }
    CASE("extra shape") {
        cJSON_AddItemToArray(cJSON_GetObjectItem(r, "benchmarks"), cJSON_Duplicate(bench(r, 2), 1));
        must_refuse(r, "leaderboard", "bad_result", "benchmarks: 4 entries", "4 shapes");
    }
    CASE("no benchmarks") {
        cJSON_ReplaceItemInObject(r, "benchmarks", cJSON_CreateArray());
        must_refuse(r, "leaderboard", "bad_result", "benchmarks: missing", "no shapes");
    }
    CASE("swapped shapes") {
        cJSON *b = cJSON_GetObjectItem(r, "benchmarks");
        cJSON_AddItemToArray(b, cJSON_DetachItemFromArray(b, 0));
        must_refuse(r, "leaderboard", "bad_result", "benchmarks[0].index", "shapes out of order");
    }
    CASE("changed shape") {
        set_num(cJSON_GetObjectItem(bench(r, 1), "shape"), "T", 1);
        must_refuse(r, "leaderboard", "bad_result", "benchmarks[1].shape: T=1", "smaller shape");
    }
    CASE("extra var") {
        cJSON_AddNumberToObject(cJSON_GetObjectItem(bench(r, 1), "shape"), "K", 1);
        must_refuse(r, "leaderboard", "bad_result", "benchmarks[1].shape: 4 variables", "extra var");
    }
    CASE("missing var") {
        cJSON_DeleteItemFromObject(cJSON_GetObjectItem(bench(r, 0), "shape"), "GS");
        must_refuse(r, "leaderboard", "bad_result", "benchmarks[0].shape: 2 variables", "no GS");
    }
    CASE("fractional var") {
        set_num(cJSON_GetObjectItem(bench(r, 0), "shape"), "GS", 127.5);
        must_refuse(r, "leaderboard", "bad_result", "benchmarks[0].shape", "GS 127.5");
    }
    const double bad_medians[] = {-5, 0, 1e-300, 0.5, 1e14};
    for (size_t i = 0; i < sizeof bad_medians / sizeof bad_medians[0]; i++)
        CASE("bad median") {
            set_num(bench(r, 1), "median_ns", bad_medians[i]);
            must_refuse(r, "leaderboard", "bad_result", "benchmarks[1].median_ns", "median");
        }
    CASE("infinite median") { /* 1e999 parses to infinity */
        char *t = cJSON_PrintUnformatted(r), *p = strstr(t, "\"median_ns\":7923.25");
        KT_CHECK(p != NULL, "median in text");
        if (p != NULL) {
            memcpy(p + 12, "1e99999", 7);
            must_refuse_text(t, strlen(t), "leaderboard", "H200", "bad_result",
                             "benchmarks[1].median_ns: must be a finite number", "median 1e99999");
        }
        cJSON_free(t);
    }
    CASE("min above median") {
        set_num(bench(r, 0), "min_ns", 5000);
        must_refuse(r, "leaderboard", "bad_result", "benchmarks[0]: median_ns", "min > median");
    }
    CASE("q3 above max") {
        set_num(bench(r, 0), "q3_ns", 9e9);
        must_refuse(r, "leaderboard", "bad_result", "q3_ns", "q3 > max");
    }
    CASE("q1 above median") {
        set_num(bench(r, 0), "q1_ns", 4300);
        must_refuse(r, "leaderboard", "bad_result", "q1_ns", "q1 > median");
    }
    CASE("mean above max") {
        set_num(bench(r, 0), "mean_ns", 9e9);
        must_refuse(r, "leaderboard", "bad_result", "mean_ns", "mean > max");
    }
    CASE("ci outside") {
        set_num(bench(r, 2), "ci_hi_ns", 1e5);
        must_refuse(r, "leaderboard", "bad_result", "ci_hi_ns", "ci_hi > max");
    }
    CASE("stdev too big") {
        set_num(bench(r, 2), "stdev_ns", 1e7);
        must_refuse(r, "leaderboard", "bad_result", "stdev_ns", "stdev > range");
    }
    CASE("negative stdev") {
        set_num(bench(r, 2), "stdev_ns", -1);
        must_refuse(r, "leaderboard", "bad_result", "benchmarks[2].stdev_ns", "stdev < 0");
    }
    CASE("n 0") {
        set_num(bench(r, 2), "n", 0);
        must_refuse(r, "leaderboard", "bad_result", "benchmarks[2].n", "n = 0");
    }
    CASE("n 2.5") {
        set_num(bench(r, 2), "n", 2.5);
        must_refuse(r, "leaderboard", "bad_result", "benchmarks[2].n", "n = 2.5");
    }
    CASE("no median") {
        cJSON_DeleteItemFromObject(bench(r, 2), "median_ns");
        must_refuse(r, "leaderboard", "bad_result", "median_ns: missing", "no median");
    }
    CASE("median as a string") {
        set_str(bench(r, 2), "median_ns", "1");
        must_refuse(r, "leaderboard", "bad_result", "benchmarks[2].median_ns: must be a number",
                    "median \"1\"");
    }
    CASE("failed shape") {
        set_str(bench(r, 2), "status", "fail");
        must_refuse(r, "leaderboard", "bad_result", "benchmarks[2].status", "accepted with a fail");
    }
    CASE("stop reason") {
        set_str(bench(r, 2), "stop_reason", "trust_me");
        must_refuse(r, "leaderboard", "bad_result", "stop_reason", "unknown stop reason");
    }
    CASE("tests missing") {
        cJSON_DeleteItemFromArray(cJSON_GetObjectItem(r, "tests"), 4);
        must_refuse(r, "leaderboard", "bad_result", "tests: 4 entries", "4 of 5 tests");
    }
    CASE("tests none") {
        cJSON_DeleteItemFromObject(r, "tests");
        must_refuse(r, "leaderboard", "bad_result", "tests: 0 entries", "no tests");
    }
    CASE("failed test") {
        set_str(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "tests"), 2), "status", "fail");
        must_refuse(r, "leaderboard", "bad_result", "tests[2].status", "accepted with a failed test");
    }
    CASE("test seed") {
        set_num(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "tests"), 0), "seed", 1);
        must_refuse(r, "leaderboard", "bad_result", "tests[0].seed", "another seed");
    }
    CASE("test shape") {
        set_num(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "tests"), 3), "shape"),
                "H", 8);
        must_refuse(r, "leaderboard", "bad_result", "tests[3].shape: H=8", "another test shape");
    }
    CASE("other GPU") {
        set_str(cJSON_GetObjectItem(r, "system"), "gpu", "NVIDIA B200");
        must_refuse(r, "leaderboard", "bad_result", "system.gpu: 'NVIDIA B200' is not of the job's GPU type, H200",
                    "a B200 result for an H200 job");
    }
    CASE("no system") {
        cJSON_DeleteItemFromObject(r, "system");
        must_refuse(r, "leaderboard", "bad_result", "system.gpu: missing", "no system");
    }
    CASE("not compiled") {
        cJSON_ReplaceItemInObject(cJSON_GetObjectItem(r, "compile"), "ok", cJSON_CreateFalse());
        must_refuse(r, "leaderboard", "bad_result", "compile.ok", "accepted without a compile");
    }
    CASE("unknown verdict") {
        set_str(r, "verdict", "maybe");
        must_refuse(r, "leaderboard", "bad_verdict", "verdict", "verdict maybe");
    }
    CASE("no verdict") {
        cJSON_DeleteItemFromObject(r, "verdict");
        must_refuse(r, "leaderboard", "bad_verdict", "verdict", "no verdict");
    }
    CASE("long message") {
        char *m = malloc(RCHECK_MAX_TEXT + 2);
        memset(m, 'a', RCHECK_MAX_TEXT + 1);
        m[RCHECK_MAX_TEXT + 1] = '\0';
        set_str(r, "message", m);
        free(m);
        must_refuse(r, "leaderboard", "bad_result", "message: 4097 bytes", "a 4097-byte message");
    }
    CASE("nested message") {
        cJSON_ReplaceItemInObject(r, "message", cJSON_CreateObject());
        must_refuse(r, "leaderboard", "bad_result", "message: must be a string", "message {}");
    }
    CASE("unknown keys") {
        cJSON_AddStringToObject(r, "evil", "<script>");
        cJSON_AddNumberToObject(bench(r, 1), "secret_seed", 7);
        cJSON_AddItemToObject(cJSON_GetObjectItem(r, "system"), "x\xff", cJSON_CreateTrue());
        char *t = cJSON_PrintUnformatted(r);
        struct rcheck_out out;
        struct kj_err err;
        KT_CHECK(check_text(t, strlen(t), "leaderboard", "H200", &out, &err) == KJ_OK,
                 "unknown keys are dropped, not refused: %s", err.msg);
        KT_CHECK(out.ndropped == 3 && strstr(out.dropped, "evil") &&
                 strstr(out.dropped, "benchmarks[1].secret_seed") && strstr(out.dropped, "system.x."),
                 "the dropped keys are listed: %d %s", out.ndropped, out.dropped);
        KT_CHECK(out.json != NULL && !strstr(out.json, "evil") && !strstr(out.json, "secret_seed") &&
                 !strstr(out.json, "\xff"), "and not stored");
        rcheck_out_clear(&out);
        cJSON_free(t);
    }
    cJSON_Delete(base);
#undef CASE
}

/* Protocol v2's corrected medians (docs/timing.md): the server ranks them,
 * and refuses any that are not the medians less the job's one offset. */
static void test_timing_v2(void)
{
    cJSON *base = load("accepted_leaderboard_v2.json"), *r;
    if (base == NULL)
        return;
    double score = cJSON_GetObjectItem(base, "score_ns")->valuedouble;
#define CASE(what) for (int once_ = (r = cJSON_Duplicate(base, 1)) != NULL; once_; \
                        once_ = 0, cJSON_Delete(r))
    CASE("as written") {
        double got = must_pass(r, "leaderboard", "a v2 result");
        KT_CHECK(fabs(got - score) <= 1e-12 * score, "the corrected score: %.17g", got);
    }
    CASE("the raw score as the score") {
        set_num(r, "score_ns", cJSON_GetObjectItem(cJSON_GetObjectItem(r, "timing"),
                                                   "raw_score_ns")->valuedouble);
        must_refuse(r, "leaderboard", "bad_score", "ranked medians", "the raw geomean");
    }
    CASE("one corrected median forged") {
        set_num(bench(r, 1), "corrected_median_ns", 5000.0);
        must_refuse(r, "leaderboard", "bad_result", "benchmarks[1].corrected_median_ns",
                    "a corrected median that is not median - offset");
    }
    CASE("one corrected median missing") {
        cJSON_DeleteItemFromObject(bench(r, 2), "corrected_median_ns");
        must_refuse(r, "leaderboard", "bad_result", "benchmarks[2].corrected_median_ns: missing",
                    "corrected, but not every shape");
    }
    CASE("an offset beyond the range") {
        cJSON *t = cJSON_GetObjectItem(r, "timing");
        set_num(t, "offset_ns", 800.0);
        must_refuse(r, "leaderboard", "bad_result", "timing.offset_ns", "offset 800 ns");
    }
    CASE("no constant") {
        cJSON *t = cJSON_GetObjectItem(r, "timing");
        cJSON_ReplaceItemInObject(t, "empty_kernel_gpu_ns", cJSON_CreateNull());
        must_refuse(r, "leaderboard", "bad_result", "timing.empty_kernel_gpu_ns",
                    "corrected without a constant");
    }
    CASE("corrected medians but the flag off") {
        cJSON *t = cJSON_GetObjectItem(r, "timing");
        cJSON_ReplaceItemInObject(t, "corrected", cJSON_CreateFalse());
        must_refuse(r, "leaderboard", "bad_result", "benchmarks[0].corrected_median_ns: present",
                    "corrected medians without timing.corrected");
    }
    CASE("the flag under v1") {
        set_str(cJSON_GetObjectItem(r, "timing"), "protocol", "v1");
        must_refuse(r, "leaderboard", "bad_result", "timing.corrected", "v1 never corrects");
    }
    CASE("an unknown protocol") {
        set_str(cJSON_GetObjectItem(r, "timing"), "protocol", "v9");
        must_refuse(r, "leaderboard", "bad_result", "timing.protocol", "protocol v9");
    }
    CASE("a forged raw score") {
        set_num(cJSON_GetObjectItem(r, "timing"), "raw_score_ns", score);
        must_refuse(r, "leaderboard", "bad_result", "timing.raw_score_ns", "raw score");
    }
    CASE("uncorrected v2: the raw medians are ranked") {
        cJSON *t = cJSON_GetObjectItem(r, "timing");
        cJSON_ReplaceItemInObject(t, "corrected", cJSON_CreateFalse());
        cJSON_ReplaceItemInObject(t, "offset_ns", cJSON_CreateNull());
        for (int i = 0; i < 3; i++)
            cJSON_DeleteItemFromObject(bench(r, i), "corrected_median_ns");
        set_num(r, "score_ns", cJSON_GetObjectItem(t, "raw_score_ns")->valuedouble);
        double got = must_pass(r, "leaderboard", "v2 without a constant");
        KT_CHECK(fabs(got - cJSON_GetObjectItem(t, "raw_score_ns")->valuedouble) <= 1e-9 * got,
                 "the raw score is ranked: %.17g", got);
    }
    CASE("a failed v2 run keeps its timing") {
        set_str(r, "verdict", "wrong_answer");
        cJSON_ReplaceItemInObject(r, "score_ns", cJSON_CreateNull());
        must_pass(r, "leaderboard", "wrong_answer with a timing object");
    }
#undef CASE
    cJSON_Delete(base);
}

/* Text-level attacks on the accepted test-mode result. */
static void test_text(void)
{
    size_t len;
    char *t = kt_slurp(CORPUS "accepted_test.json", &len), *buf;
    if (t == NULL)
        return;
    const char *msg = "\"5 tests passed\"";
    char *at = strstr(t, msg);
    KT_CHECK(at != NULL, "message in the text");
    if (at == NULL) {
        free(t);
        return;
    }
    size_t pre = (size_t)(at - t) + 1, cap = len + 64;
    buf = malloc(cap);
    /* Replace the message's text (between its quotes) with raw bytes. */
    const struct { const char *bytes; size_t n; const char *needle; } swaps[] = {
        {"a\\u0000b", 8, "\\u0000"}, {"a\0b", 3, "NUL byte"}, {"\\ud800", 6, "not valid JSON"}};
    for (size_t i = 0; i < sizeof swaps / sizeof swaps[0]; i++) {
        size_t rest = len - (pre + strlen(msg) - 2);
        memcpy(buf, t, pre);
        memcpy(buf + pre, swaps[i].bytes, swaps[i].n);
        memcpy(buf + pre + swaps[i].n, t + pre + strlen(msg) - 2, rest);
        must_refuse_text(buf, pre + swaps[i].n + rest, "test", "H200", "bad_result", swaps[i].needle,
                         swaps[i].needle);
    }
    /* Bytes that are not UTF-8 in free text become U+FFFD (a runner's
     * truncated message must not cost the user a verdict). */
    const struct { const char *bytes, *stored; } repairs[] = {
        {"a\xff\xfe", "a\xef\xbf\xbd\xef\xbf\xbd"}, {"\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"},
        {"\xed\xa0\x80z", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdz"},
        {"\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
        {"cut \xc3", "cut \xef\xbf\xbd"}};
    for (size_t i = 0; i < sizeof repairs / sizeof repairs[0]; i++) {
        size_t rest = len - (pre + strlen(msg) - 2), n = strlen(repairs[i].bytes);
        struct rcheck_out out;
        struct kj_err err;
        char want[64];
        memcpy(buf, t, pre);
        memcpy(buf + pre, repairs[i].bytes, n);
        memcpy(buf + pre + n, t + pre + strlen(msg) - 2, rest);
        snprintf(want, sizeof want, "\"message\":\"%s\"", repairs[i].stored);
        KT_CHECK(check_text(buf, pre + n + rest, "test", "H200", &out, &err) == KJ_OK &&
                 strstr(out.json, want) != NULL, "bad UTF-8 %zu in a message is repaired: %s", i,
                 err.msg);
        rcheck_out_clear(&out);
    }
    /* Names are not free text: refused. */
    {
        char *g = strstr(t, "\"NVIDIA H200\"");
        KT_CHECK(g != NULL, "GPU name in the text");
        if (g != NULL) {
            g[8] = '\xff';
            must_refuse_text(t, len, "test", "H200", "bad_result", "system.gpu: not valid UTF-8",
                             "a GPU name that is not UTF-8");
            g[8] = 'H';
        }
    }
    /* Good UTF-8 and escapes pass and are stored as sent. */
    {
        const char *ok = "caf\xc3\xa9 \\u00e9 \\ud83d\\ude00 \\\" \\n";
        size_t rest = len - (pre + strlen(msg) - 2);
        struct rcheck_out out;
        struct kj_err err;
        memcpy(buf, t, pre);
        memcpy(buf + pre, ok, strlen(ok));
        memcpy(buf + pre + strlen(ok), t + pre + strlen(msg) - 2, rest);
        KT_CHECK(check_text(buf, pre + strlen(ok) + rest, "test", "H200", &out, &err) == KJ_OK,
                 "valid UTF-8 and escapes pass: %s", err.msg);
        KT_CHECK(out.json && strstr(out.json, "caf\xc3\xa9 \xc3\xa9 \xf0\x9f\x98\x80 \\\" \\n"),
                 "stored as text: %s", out.json ? out.json : "");
        rcheck_out_clear(&out);
    }
    free(buf);
    must_refuse_text(t, len - 1, "test", "H200", "bad_result", "not valid JSON", "cut short");
    buf = malloc(len + 8);
    memcpy(buf, t, len);
    memcpy(buf + len, " {}", 3);
    must_refuse_text(buf, len + 3, "test", "H200", "bad_result", "text after", "two objects");
    memcpy(buf + len, "\n\t ", 3);
    {
        struct rcheck_out out;
        struct kj_err err;
        KT_CHECK(check_text(buf, len + 3, "test", "H200", &out, &err) == KJ_OK,
                 "trailing white space is fine: %s", err.msg);
        rcheck_out_clear(&out);
    }
    free(buf);
    /* Duplicate keys: cJSON keeps both, other parsers take the last. */
    at = strstr(t, "\"verdict\":\"accepted\"");
    buf = malloc(len + 64);
    size_t k = (size_t)(at - t);
    memcpy(buf, t, k);
    memcpy(buf + k, "\"verdict\":\"wrong_answer\",", 25);
    memcpy(buf + k + 25, t + k, len - k);
    must_refuse_text(buf, len + 25, "test", "H200", "bad_verdict", "appears twice", "verdict twice");
    free(buf);
    must_refuse_text("", 0, "test", "H200", "bad_result", "empty", "empty");
    must_refuse_text("[]", 2, "test", "H200", "bad_result", "not a JSON object", "a list");
    must_refuse_text("null", 4, "test", "H200", "bad_result", "not a JSON object", "null");
    /* Depth and size. */
    {
        size_t d = 40, n = 0;
        buf = malloc(256);
        n += (size_t)sprintf(buf, "{\"verdict\":\"internal_error\",\"x\":");
        for (size_t i = 0; i < d; i++)
            buf[n++] = '[';
        for (size_t i = 0; i < d; i++)
            buf[n++] = ']';
        buf[n++] = '}';
        must_refuse_text(buf, n, "test", "H200", "bad_result", "nested deeper", "depth 41");
        free(buf);
        size_t big = 3 * (RCHECK_MAX_NODES + 10) + 64;
        buf = malloc(big);
        n = (size_t)sprintf(buf, "{\"verdict\":\"internal_error\",\"x\":[");
        for (size_t i = 0; i < RCHECK_MAX_NODES + 5; i++)
            n += (size_t)sprintf(buf + n, "%s0", i ? "," : "");
        n += (size_t)sprintf(buf + n, "]}");
        must_refuse_text(buf, n, "test", "H200", "bad_result", "more than", "100005 values");
        free(buf);
    }
    free(t);
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
    struct rcheck_job nojob = {NULL, KJ_MODE_LEADERBOARD, "H200"};
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
    KT_RUN(test_forgeries());
    KT_RUN(test_timing_v2());
    KT_RUN(test_text());
    KT_RUN(test_jobs());
    KT_RUN(test_medians());
    spec_free(spec);
    return kt_done("test_result_check");
}
