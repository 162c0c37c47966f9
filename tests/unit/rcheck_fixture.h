/*
 * rcheck_fixture.h - what the tests of server/result_check.c share: the
 * fp8_quant spec (loaded by main), the result corpus of
 * tests/fuzz/corpus/result_check/, and "must pass" / "must be refused with
 * this code, naming this field" around rcheck_result(). Included by
 * test_result_check.c and test_result_forge.c (after kt.h).
 */
#ifndef KJ_RCHECK_FIXTURE_H
#define KJ_RCHECK_FIXTURE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "protocol.h"
#include "result_check.h"
#include "spec.h"

#define CORPUS "tests/fuzz/corpus/result_check/"

static struct spec *spec;

/* Check text for (mode, gpu) on fp8_quant; returns rcheck_result's rc, out filled. */
static inline int check_text(const char *text, size_t len, const char *mode,
                             const char *gpu, struct rcheck_out *out, struct kj_err *err)
{
    struct rcheck_job job = {spec, KJ_MODE_TEST, gpu, 0};
    KJ_ASSERT(kj_mode_parse(mode, &job.mode) == 0);
    kj_err_clear(err);
    return rcheck_result(&job, text, len, out, err);
}

static inline cJSON *load(const char *name)
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
static inline double must_pass(const cJSON *j, const char *mode, const char *what)
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
static inline void must_refuse_text(const char *text, size_t len, const char *mode,
                                    const char *gpu, const char *code, const char *needle,
                                    const char *what)
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

static inline void must_refuse(const cJSON *j, const char *mode, const char *code,
                               const char *needle, const char *what)
{
    char *t = cJSON_PrintUnformatted(j);
    must_refuse_text(t, strlen(t), mode, "H200", code, needle, what);
    cJSON_free(t);
}

static inline cJSON *bench(cJSON *r, int i)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItem(r, "benchmarks"), i);
}

static inline void set_num(cJSON *o, const char *key, double v)
{
    cJSON_DeleteItemFromObject(o, key);
    cJSON_AddNumberToObject(o, key, v);
}

static inline void set_str(cJSON *o, const char *key, const char *v)
{
    cJSON_DeleteItemFromObject(o, key);
    cJSON_AddStringToObject(o, key, v);
}

#endif
