/*
 * test_result_forge.c - unit tests for server/result_check.c: forged results.
 *
 * One change at a time to an accepted leaderboard result, each refused
 * with the field named: forged scores, wrong mode or board, missing, extra
 * or changed shapes, impossible statistics, timing protocol v2's corrected
 * medians that are not the medians less the job's offset; then text-level
 * attacks: bad UTF-8, NUL, depth, size, duplicate keys. Runs from the
 * repository root.
 */
#define KT_MAIN
#include "kt.h"

#include "rcheck_fixture.h"
#include "kj_utf8.h"

#define CASE(what) for (int once_ = (r = cJSON_Duplicate(base, 1)) != NULL; once_; \
                        once_ = 0, cJSON_Delete(r))

/* Every timing of benchmark entry b of r set to x (one sample's worth:
 * all equal, stdev 0); returns x. */
static double set_time(cJSON *r, int b, double x)
{
    static const char *const k[] = {"median_ns", "mean_ns", "min_ns", "max_ns", "q1_ns",
                                    "q3_ns", "ci_lo_ns", "ci_hi_ns", NULL};
    for (int i = 0; k[i] != NULL; i++)
        set_num(bench(r, b), k[i], x);
    set_num(bench(r, b), "stdev_ns", 0);
    return x;
}

/* The three medians of r set to m[], and its score to their geometric mean. */
static void set_times(cJSON *r, const double *m)
{
    double sum = 0;
    for (int b = 0; b < 3; b++)
        sum += log(set_time(r, b, m[b]));
    set_num(r, "score_ns", m[0] == m[1] && m[1] == m[2] ? m[0] : exp(sum / 3));
}

/* Made-up medians, consistent with each other and the score, right GPU:
 * refused when below a shape's physical floor (its bytes beyond the L2 at
 * the GPU's bandwidth, less 10%) or the empty-kernel time (less 25%), the
 * shape, median and floor named; the result's own bandwidth and L2 size
 * are not taken beyond the GPU type's bounds. The recorded-like fixtures
 * (tests/fuzz/corpus/result_check/accepted_*.json, medians 4.2, 7.9 and
 * 61.2 us) pass, as does a median just above the margin. */
static void test_floor(void)
{
    cJSON *base = load("accepted_leaderboard.json"), *r;
    if (base == NULL)
        return;
    /* shape 2: 235,798,528 bytes, 62,914,560 of them may stay in the L2, 4915.5 GB/s */
    const double floor2 = (235798528.0 - 62914560.0) / 4915.5;
    const double one[3] = {1, 1, 1};
    CASE("every median 1 ns") {
        set_times(r, one);
        must_refuse(r, "leaderboard", "bad_result",
                    "benchmarks[0].median_ns: 1 ns for shape 0 (T=256 H=4096 GS=128) is below the "
                    "empty-kernel time, baseline_empty_kernel_ns 2016 ns", "1 ns medians");
    }
    CASE("every median 1 ns, no baseline") {
        set_times(r, one);
        cJSON_DeleteItemFromObject(r, "baseline_empty_kernel_ns");
        must_refuse(r, "leaderboard", "bad_result",
                    "benchmarks[2].median_ns: 1 ns for shape 2 (T=4096 H=7168 GS=128) is below "
                    "its physical floor of 35171.2 ns", "1 ns medians without a baseline");
    }
    CASE("every median 1 ns, a huge bandwidth and L2 claimed") {
        set_times(r, one);
        cJSON_DeleteItemFromObject(r, "baseline_empty_kernel_ns");
        cJSON *sys = cJSON_GetObjectItem(r, "system");
        set_num(sys, "peak_bandwidth_gbs", 1e8);
        set_num(sys, "measured_copy_bandwidth_gbs", 1e8);
        set_num(sys, "l2_bytes", 1e15);
        /* (235798528 - 64 MiB) / 6000 GB/s, H200's bounds */
        must_refuse(r, "leaderboard", "bad_result", "is below its physical floor of 28114.9 ns "
                    "(1.6869e+08 of its 2.35799e+08 bytes beyond the L2 at 6000 GB/s, the GPU "
                    "type's bound) less 10%", "an implausible bandwidth");
    }
    CASE("shape 2 just above the margin") {
        double m[3] = {4210.5, 7923.25, 0.901 * floor2};
        set_times(r, m);
        must_pass(r, "leaderboard", "a median 9.9% below the floor");
    }
    CASE("shape 2 just below it") {
        double m[3] = {4210.5, 7923.25, 0.899 * floor2};
        set_times(r, m);
        must_refuse(r, "leaderboard", "bad_result", "benchmarks[2].median_ns", "10.1% below");
    }
    CASE("shape 0 at 80% of the empty-kernel time") {
        double m[3] = {0.8 * 2016, 7923.25, 61234.75};
        set_times(r, m);
        must_pass(r, "leaderboard", "a median 20% below the baseline");
    }
    CASE("a forged floor_ns does not lower it") {
        double m[3] = {4210.5, 7923.25, 1000};
        set_times(r, m);
        set_num(bench(r, 2), "floor_ns", 1);
        must_refuse(r, "leaderboard", "bad_result", "below its physical floor of 35171.2 ns",
                    "the result's floor_ns is not used");
    }
    cJSON_Delete(base);
    /* the v2 fixture: its corrected medians are held to the floor too */
    base = load("accepted_leaderboard_v2.json");
    CASE("v2 as written") {
        must_pass(r, "leaderboard", "the v2 fixture");
    }
    cJSON_Delete(base);
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
    CASE("negative step") {
        cJSON *steps = cJSON_AddObjectToObject(r, "steps_s");
        cJSON_AddNumberToObject(steps, "load", -1);
        must_refuse(r, "leaderboard", "bad_result", "steps_s.load", "steps_s.load -1");
    }
    CASE("nested message") {
        cJSON_ReplaceItemInObject(r, "message", cJSON_CreateObject());
        must_refuse(r, "leaderboard", "bad_result", "message: must be a string", "message {}");
    }
    CASE("unknown keys") {
        cJSON_AddStringToObject(r, "evil", "<script>");
        cJSON_AddNumberToObject(bench(r, 1), "secret_seed", 7);
        cJSON_AddItemToObject(cJSON_GetObjectItem(r, "system"), "x\xff", cJSON_CreateTrue());
        cJSON_AddStringToObject(cJSON_GetObjectItem(r, "system"), "python", "python 3.12.3, torch 2.11.0");
        cJSON *steps = cJSON_AddObjectToObject(r, "steps_s");
        cJSON_AddNumberToObject(steps, "boxes", 4.25);
        cJSON_AddNumberToObject(steps, "total", 12.5);
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
        KT_CHECK(out.json != NULL && strstr(out.json, "\"python\":\"python 3.12.3, torch 2.11.0\""),
                 "a Python entry's versions (system.python) are kept");
        KT_CHECK(out.json != NULL && strstr(out.json, "\"steps_s\":{\"boxes\":4.25,\"total\":12.5}"),
                 "where the job's time went (steps_s) is kept");
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
    /* A message of bad bytes within the limit grows by the repair (3 bytes
     * for 1): it is cut at a character boundary to the limit, so the stored
     * text passes the same check again. */
    {
        char *big = malloc(RCHECK_MAX_TEXT + 256), *again_txt;
        size_t n = 0;
        struct rcheck_out out, again;
        struct kj_err err;
        n += (size_t)sprintf(big, "{\"verdict\":\"internal_error\",\"message\":\"");
        for (int k = 0; k < RCHECK_MAX_TEXT - 8; k++)
            big[n++] = k % 3 == 0 ? '\xff' : 'a';
        n += (size_t)sprintf(big + n, "\",\"score_ns\":null}");
        int rc = check_text(big, n, "test", "H200", &out, &err);
        KT_CHECK(rc == KJ_OK, "a long message of bad bytes is taken: %s", err.msg);
        if (rc == KJ_OK) {
            cJSON *j = cJSON_Parse(out.json);
            const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "message");
            KT_CHECK(cJSON_IsString(m) && strlen(m->valuestring) <= RCHECK_MAX_TEXT &&
                         kj_utf8_valid(m->valuestring, strlen(m->valuestring), NULL),
                     "repaired, it stays within %d bytes of UTF-8", RCHECK_MAX_TEXT);
            again_txt = out.json;
            KT_CHECK(check_text(again_txt, out.json_len, "test", "H200", &again, &err) == KJ_OK,
                     "and the stored text passes again: %s", err.msg);
            rcheck_out_clear(&again);
            cJSON_Delete(j);
            rcheck_out_clear(&out);
        }
        free(big);
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

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    struct kj_err err;
    KT_CHECK(spec_load("leaderboards/fp8_quant", &spec, &err) == KJ_OK, "spec: %s", err.msg);
    if (spec == NULL)
        return kt_done("test_result_forge");
    KT_RUN(test_forgeries());
    KT_RUN(test_floor());
    KT_RUN(test_timing_v2());
    KT_RUN(test_text());
    spec_free(spec);
    return kt_done("test_result_forge");
}
