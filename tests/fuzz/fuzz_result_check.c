/*
 * fuzz_result_check.c - libFuzzer harness for server/result_check.c.
 *
 * Each input is a runner's result body for one job of the fp8_quant board
 * (leaderboards/fp8_quant, loaded once; run from the repository root) on
 * GPU type H200, checked as a test, a benchmark and a leaderboard job.
 * Besides crashes and sanitizer reports it aborts when a property fails:
 * a refusal names a code and leaves nothing to store; a result taken is
 * valid JSON text of valid UTF-8 whose check again gives the same text,
 * verdict and score with nothing dropped. Seed corpus:
 * tests/fuzz/corpus/result_check/.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "result_check.h"

/* Loaded once for the whole run (libFuzzer calls the harness in a loop). */
static struct spec *fuzz_spec;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    struct kj_err err;
    (void)argc;
    (void)argv;
    if (spec_load("leaderboards/fp8_quant", &fuzz_spec, &err) != KJ_OK) {
        fprintf(stderr, "fuzz_result_check: %s (run from the repository root)\n", err.msg);
        abort();
    }
    return 0;
}

static void require(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "fuzz_result_check: property failed: %s\n", what);
        abort();
    }
}

/* 1 when s is valid UTF-8 (strict: no overlong forms, surrogates, > U+10FFFF). */
static int utf8_ok(const unsigned char *s)
{
    while (*s) {
        unsigned c = *s, n = c < 0x80 ? 0 : c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2
                           : c >= 0xF0 && c <= 0xF4 ? 3 : 9;
        if (n == 9)
            return 0;
        unsigned cp = n == 0 ? c : c & (0x3F >> n);
        for (unsigned i = 1; i <= n; i++) {
            if ((s[i] & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i] & 0x3F);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        s += n + 1;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int m = 0; m < KJ_MODE_COUNT; m++) {
        struct rcheck_job job = {fuzz_spec, (enum kj_mode)m, "H200", 0};
        struct rcheck_out out, again;
        struct kj_err err;
        kj_err_clear(&err);
        int rc = rcheck_result(&job, (const char *)data, size, &out, &err);
        if (rc != KJ_OK) {
            require(rc == KJ_EINVAL || rc == KJ_ENOMEM, "rc is EINVAL or ENOMEM");
            require(rc != KJ_EINVAL || (out.code != NULL && err.msg[0] != '\0'),
                    "a refusal has a code and a message");
            require(out.json == NULL, "a refusal stores nothing");
            continue;
        }
        require(out.json != NULL && strlen(out.json) == out.json_len, "the text is NUL-free");
        require(utf8_ok((const unsigned char *)out.json), "the stored text is valid UTF-8");
        cJSON *j = cJSON_Parse(out.json);
        require(cJSON_IsObject(j), "the stored text is a JSON object");
        cJSON_Delete(j);
        require(rcheck_result(&job, out.json, out.json_len, &again, &err) == KJ_OK,
                "the stored text passes again");
        require(again.ndropped == 0 && strcmp(again.json, out.json) == 0 &&
                again.verdict == out.verdict && again.has_score == out.has_score &&
                (!out.has_score || again.score_ns == out.score_ns),
                "checking the stored text again changes nothing");
        rcheck_out_clear(&again);
        rcheck_out_clear(&out);
    }
    return 0;
}
