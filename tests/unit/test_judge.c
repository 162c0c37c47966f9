/*
 * test_judge.c - what the judge decides before any GPU is involved: bad
 * directive lines and a source naming another leaderboard are "rejected"
 * with the line, the result records the mode and board and nothing else
 * ran; a caller that asks for the teardown (judge_job.leftover) gets none,
 * since no box was started; a pair of boxes started before the job
 * (judge_job.prestart) is given up all the same, exactly once, and which
 * jobs such a pair may judge; with one compile slot on the host (cslot.h)
 * the submission and the reference still compile, in turns, and a
 * submission that does not compile is reported as such. (The layout of
 * the cases is test_plan's.)
 */
#define KT_MAIN
#include "kt.h"
#include "judge.h"
#include "sub_lang.h"
#include "result.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kj_file.h"

static struct judge_result *judge_src(const struct spec *s, const char *src)
{
    struct judge_job jj;
    struct kj_err err;
    struct judge_result *res = NULL;
    memset(&jj, 0, sizeof jj);
    jj.spec = s;
    jj.source = src;
    jj.source_len = strlen(src);
    jj.mode = KJ_MODE_TEST;
    if (judge_run(&jj, &res, &err) != KJ_OK)
        fprintf(stderr, "judge_run: %s\n", err.msg);
    return res;
}

/* A judge_prestart that counts its drops. */
struct counted_pre {
    struct judge_prestart base; /* first */
    int drops;
};

static struct judge_leftover *counted_drop(struct judge_prestart *self)
{
    ((struct counted_pre *)self)->drops++;
    return NULL;
}

static void test_prestart(const struct spec *s)
{
    struct spec other;
    struct counted_pre pre;
    memset(&pre, 0, sizeof pre);
    memset(&other, 0, sizeof other);
    pre.base.spec = s;
    pre.base.drop = counted_drop;
    KT_CHECK(judge_prestart_fits(&pre.base, s, KJ_MODE_TEST, SUB_LANG_CUDA, 0) &&
             judge_prestart_fits(&pre.base, s, KJ_MODE_BENCHMARK, SUB_LANG_CUDA, 0) &&
             judge_prestart_fits(&pre.base, s, KJ_MODE_LEADERBOARD, SUB_LANG_CUDA, 0),
             "a pair judges the test, benchmark and leaderboard jobs of its board");
    KT_CHECK(!judge_prestart_fits(&pre.base, s, KJ_MODE_PROFILE, SUB_LANG_CUDA, 0) &&
             !judge_prestart_fits(&pre.base, s, KJ_MODE_SANITIZE, SUB_LANG_CUDA, 0),
             "not a profile or sanitize job: the tool starts its own box");
    KT_CHECK(!judge_prestart_fits(&pre.base, &other, KJ_MODE_TEST, SUB_LANG_CUDA, 0) &&
             !judge_prestart_fits(NULL, s, KJ_MODE_TEST, SUB_LANG_CUDA, 0), "nor another board's job; NULL fits none");
    KT_CHECK(!judge_prestart_fits(&pre.base, s, KJ_MODE_TEST, SUB_LANG_PYTHON, 0),
             "a CUDA pair does not judge a Python file");
    pre.base.python = 1;
    KT_CHECK(judge_prestart_fits(&pre.base, s, KJ_MODE_LEADERBOARD, SUB_LANG_PYTHON, 0) &&
             !judge_prestart_fits(&pre.base, s, KJ_MODE_TEST, SUB_LANG_CUDA, 0) &&
             !judge_prestart_fits(&pre.base, s, KJ_MODE_TEST, SUB_LANG_PTX, 0),
             "a Python pair judges Python files only");
    KT_CHECK(!judge_prestart_fits(&pre.base, s, KJ_MODE_TEST, SUB_LANG_PYTHON, 1),
             "a Python pair without Helion does not judge a file that names it");
    pre.base.helion = 1;
    KT_CHECK(judge_prestart_fits(&pre.base, s, KJ_MODE_TEST, SUB_LANG_PYTHON, 1) &&
             judge_prestart_fits(&pre.base, s, KJ_MODE_TEST, SUB_LANG_PYTHON, 0),
             "one with Helion judges both");
    KT_CHECK(judge_names_helion("import helion\n", 14) && !judge_names_helion("import torch\n", 13) &&
             !judge_names_helion(NULL, 0) && !judge_names_helion("helio", 5),
             "a file names Helion when its source holds the word");
    pre.base.held = 1;
    KT_CHECK(!judge_prestart_fits(&pre.base, s, KJ_MODE_TEST, SUB_LANG_PYTHON, 0),
             "a held pair fits no job until its release");
    pre.base.python = pre.base.helion = pre.base.held = 0;

    struct spec board = *s;
    board.score_gpu_time = 0;
    KT_CHECK(!judge_score_gpu(&board, NULL) && judge_score_gpu(&board, "gpu_time") &&
             !judge_score_gpu(&board, "events") && !judge_score_gpu(&board, "bogus"),
             "a board with \"score\": \"events\" ranks events unless $KJUDGE_SCORE=gpu_time");
    board.score_gpu_time = 1;
    KT_CHECK(judge_score_gpu(&board, NULL) && judge_score_gpu(&board, "") &&
             !judge_score_gpu(&board, "events") && judge_score_gpu(&board, "gpu_time"),
             "a board's \"score\": \"gpu_time\" ranks GPU time; $KJUDGE_SCORE=events overrides it");

    struct judge_job jj;
    struct judge_result *r = NULL;
    struct kj_err err;
    memset(&jj, 0, sizeof jj);
    jj.spec = s;
    jj.source = "//!kjudge launch quant grid=(Q) block=(32)\n";
    jj.source_len = strlen(jj.source);
    jj.mode = KJ_MODE_TEST;
    jj.prestart = &pre.base;
    KT_CHECK(judge_run(&jj, &r, &err) == KJ_OK && r != NULL && r->verdict == KJ_V_REJECTED &&
             pre.drops == 1, "rejected before any box: the pair given is torn down once (%d)",
             pre.drops);
    result_free(r);

    /* fp8_quant's two regions are 472 MB: over a 100 MB limit nothing starts. */
    struct judge_prestart *got = &pre.base;
    setenv("KJUDGE_PRESTART_MAX_MB", "100", 1);
    KT_CHECK(judge_prestart_start(s, 0, NULL, NULL, 0, &got, &err) == KJ_ELIMIT && got == NULL &&
             strstr(err.msg, "KJUDGE_PRESTART_MAX_MB") != NULL,
             "regions over the limit: no pair, and why (%s)", err.msg);
    got = &pre.base;
    unsetenv("KJUDGE_PRESTART_MAX_MB");
    KT_CHECK(judge_prestart_start(s, 0, NULL, NULL, JUDGE_PRE_HELD, &got, &err) == KJ_EINVAL &&
             got == NULL && strstr(err.msg, "only a Python pair") != NULL,
             "a CUDA pair is never held: %s", err.msg);
    KT_CHECK(judge_prestart_release(&pre.base, &err) == KJ_OK, "releasing a pair not held: nothing to do");
    setenv("KJUDGE_PRESTART_MAX_MB", "0", 1);
    got = &pre.base;
    KT_CHECK(judge_prestart_start(s, 0, NULL, NULL, 0, &got, &err) == KJ_ELIMIT && got == NULL,
             "KJUDGE_PRESTART_MAX_MB=0: never a pair");
    unsetenv("KJUDGE_PRESTART_MAX_MB");
}

/* The "compiled" event's ok, -1 before it came. */
static void on_event(void *ctx, enum kj_event ev, const cJSON *data)
{
    if (ev == KJ_EV_COMPILED)
        *(int *)ctx = cJSON_IsTrue(cJSON_GetObjectItem(data, "ok"));
}

/* One slot: the compiles run in turns. The job itself ends at its boxes
 * (no GPU here), after the compile: only the event is looked at. */
static void test_compile_turns(const struct spec *s)
{
    static const char *files[] = {"leaderboards/fp8_quant/template.cu",
                                  "leaderboards/fp8_quant/examples/broken.cu"};
    char slots[] = "/tmp/kjudge-test-judge-slots-XXXXXX";
    KT_CHECK(mkdtemp(slots) != NULL, "a slot folder");
    if (access(slots, F_OK) != 0)
        return;
    setenv("KJUDGE_COMPILE_SLOTS", "1", 1);
    setenv("KJUDGE_COMPILE_SLOT_DIR", slots, 1);
    for (int f = 0; f < 2; f++) {
        char *src = NULL;
        size_t len = 0;
        struct kj_err err;
        struct judge_result *r = NULL;
        struct judge_job jj;
        int ok = -1;
        if (kj_read_file(files[f], 1 << 20, &src, &len, &err) != KJ_OK)
            continue;
        memset(&jj, 0, sizeof jj);
        jj.spec = s;
        jj.source = src;
        jj.source_len = len;
        jj.mode = KJ_MODE_TEST;
        jj.arch = "sm_90a"; /* compile while the boxes start, as serve does */
        jj.progress = on_event;
        jj.progress_ctx = &ok;
        judge_run(&jj, &r, &err);
        KT_CHECK(ok == (f == 0), "one compile slot: %s %s", files[f],
                 f == 0 ? "compiles" : "is a compile error");
        result_free(r);
        free(src);
    }
    unsetenv("KJUDGE_COMPILE_SLOTS");
    unsetenv("KJUDGE_COMPILE_SLOT_DIR");
    char slot0[64];
    snprintf(slot0, sizeof slot0, "%s/slot-0", slots);
    unlink(slot0);
    rmdir(slots);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    struct spec *s = NULL;
    struct kj_err err;
    KT_CHECK(spec_load("leaderboards/fp8_quant", &s, &err) == KJ_OK, "spec: %s", err.msg);
    if (s == NULL)
        return kt_done("test_judge");

    struct judge_result *r =
        judge_src(s, "// x\n//!kjudge launch quant grid=(T/(GS-GS)) block=(32) bogus=1\n");
    KT_CHECK(r && r->has_verdict && r->verdict == KJ_V_REJECTED, "bad key -> rejected");
    KT_CHECK(r && strstr(r->message, "line 2") != NULL, "names line 2: %s", r ? r->message : "");
    KT_CHECK(r && !r->has_score, "score_ns is null");
    KT_CHECK(r && r->has_job && r->mode == KJ_MODE_TEST && strcmp(r->leaderboard, "fp8_quant") == 0,
             "mode and leaderboard recorded");
    KT_CHECK(r && r->ntests == 0 && r->nbenches == 0 && !r->has_compile && !r->has_system,
             "nothing ran");
    result_free(r);

    r = judge_src(s, "//!kjudge launch quant grid=(Q) block=(32)\n");
    KT_CHECK(r && r->verdict == KJ_V_REJECTED && strstr(r->message, "'Q'"),
             "unknown variable -> rejected: %s", r ? r->message : "");
    result_free(r);

    r = judge_src(s, "//!kjudge leaderboard other_board\n//!kjudge launch quant grid=(1) block=(32)\n");
    KT_CHECK(r && r->verdict == KJ_V_REJECTED && strstr(r->message, "other_board"),
             "another leaderboard -> rejected: %s", r ? r->message : "");
    result_free(r);

    struct judge_job jj;
    struct judge_leftover stale = {NULL}, *left = &stale;
    memset(&jj, 0, sizeof jj);
    jj.spec = s;
    jj.source = "//!kjudge launch quant grid=(Q) block=(32)\n";
    jj.source_len = strlen(jj.source);
    jj.mode = KJ_MODE_TEST;
    jj.leftover = &left;
    r = NULL;
    KT_CHECK(judge_run(&jj, &r, &err) == KJ_OK && r != NULL && r->verdict == KJ_V_REJECTED &&
             left == NULL, "rejected before any box: no teardown left (%p)", (void *)left);
    judge_leftover_finish(left); /* NULL: nothing */
    result_free(r);

    r = judge_src(s, "extern \"C\" __global__ void quant() {}\n");
    KT_CHECK(r && r->verdict == KJ_V_REJECTED && strstr(r->message, "launch"),
             "no launch line -> rejected: %s", r ? r->message : "");
    result_free(r);

    KT_RUN(test_prestart(s));
    KT_RUN(test_compile_turns(s));
    spec_free(s);
    return kt_done("test_judge");
}
