/*
 * test_claim_filter.c - unit tests for server/claim_filter.c: a claim
 * body's "modes" and "skip" read into a struct db_claim_filter.
 *
 * Absent fields mean no filter; every mode name, repeats, 16 ids and the
 * largest exact id are read; every malformed value (not an array, empty,
 * unknown or non-string names, too many entries, ids that are not whole
 * numbers from 1 to 2^53 - 1) is refused with a message that names the
 * field and what it must hold, and leaves the empty filter. Also
 * db_claim_filter_allows() (server/db_queue.c) on the filters read.
 */
#define KT_MAIN
#include "kt.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "claim_filter.h"
#include "db.h"

/* Parse text as the body; returns claim_filter_parse's code (-100 when text is not JSON). */
static int parse(const char *text, struct db_claim_filter *f, int64_t *ids, struct kj_err *err)
{
    cJSON *body = cJSON_Parse(text);
    int rc;
    kj_err_clear(err);
    if (body == NULL)
        return -100;
    rc = claim_filter_parse(body, f, ids, err);
    cJSON_Delete(body);
    return rc;
}

static void test_good(void)
{
    struct db_claim_filter f;
    int64_t ids[KJ_CLAIM_MAX_SKIP];
    struct kj_err err;
    unsigned all = 0;
    for (int m = 0; m < KJ_MODE_COUNT; m++)
        all |= 1u << m;
    KT_CHECK(parse("{\"gpu\": \"H200\"}", &f, ids, &err) == 0 && f.modes == 0 && f.nskip == 0,
             "no fields: no filter");
    KT_CHECK(db_claim_filter_allows(&f, 7, KJ_MODE_LEADERBOARD) && db_claim_filter_allows(NULL, 7, KJ_MODE_TEST),
             "the empty filter and NULL allow every job");
    KT_CHECK(parse("{\"modes\": [\"test\"]}", &f, ids, &err) == 0 && f.modes == 1u << KJ_MODE_TEST &&
             f.nskip == 0, "modes [test]: %s", err.msg);
    KT_CHECK(db_claim_filter_allows(&f, 3, KJ_MODE_TEST) && !db_claim_filter_allows(&f, 3, KJ_MODE_BENCHMARK) &&
             !db_claim_filter_allows(&f, 3, KJ_MODE_LEADERBOARD), "modes [test] allows test jobs only");
    KT_CHECK(parse("{\"modes\": [\"test\", \"benchmark\", \"leaderboard\", \"profile\", \"sanitize\"]}",
                   &f, ids, &err) == 0 && f.modes == all, "every mode named: %s", err.msg);
    KT_CHECK(parse("{\"modes\": [\"profile\", \"profile\"]}", &f, ids, &err) == 0 &&
             f.modes == 1u << KJ_MODE_PROFILE, "a repeated name is harmless");
    KT_CHECK(parse("{\"skip\": []}", &f, ids, &err) == 0 && f.nskip == 0 && f.modes == 0, "skip []");
    KT_CHECK(parse("{\"skip\": [1, 9007199254740991, 1, 2.0]}", &f, ids, &err) == 0 && f.nskip == 4 &&
             f.skip == ids && ids[0] == 1 && ids[1] == 9007199254740991LL && ids[2] == 1 && ids[3] == 2,
             "ids from 1 to 2^53 - 1, repeats and 2.0 read: %s", err.msg);
    KT_CHECK(!db_claim_filter_allows(&f, 1, KJ_MODE_TEST) && !db_claim_filter_allows(&f, 2, KJ_MODE_TEST) &&
             db_claim_filter_allows(&f, 3, KJ_MODE_TEST), "skipped ids are refused, others allowed");
    KT_CHECK(parse("{\"modes\": [\"test\"], \"skip\": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}", &f, ids,
                   &err) == 0 && f.nskip == KJ_CLAIM_MAX_SKIP && ids[15] == 16 && f.modes == 1u,
             "both fields, 16 ids: %s", err.msg);
    KT_CHECK(!db_claim_filter_allows(&f, 16, KJ_MODE_TEST) && db_claim_filter_allows(&f, 17, KJ_MODE_TEST) &&
             !db_claim_filter_allows(&f, 17, KJ_MODE_SANITIZE), "modes and skip together");
}

static void test_bad(void)
{
    static const struct {
        const char *body, *field;
    } bad[] = {
        {"{\"modes\": \"test\"}", "modes"},
        {"{\"modes\": null}", "modes"},
        {"{\"modes\": {\"test\": 1}}", "modes"},
        {"{\"modes\": []}", "modes"},
        {"{\"modes\": [\"fast\"]}", "modes[0]"},
        {"{\"modes\": [\"test\", \"Test\"]}", "modes[1]"},
        {"{\"modes\": [\"test\", 1]}", "modes[1]"},
        {"{\"modes\": [\"\"]}", "modes[0]"},
        {"{\"modes\": [\"test\",\"test\",\"test\",\"test\",\"test\",\"test\"]}", "modes has 6"},
        {"{\"skip\": 3}", "skip"},
        {"{\"skip\": null}", "skip"},
        {"{\"skip\": {\"a\": 3}}", "skip"},
        {"{\"skip\": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}", "skip has 17"},
        {"{\"skip\": [0]}", "skip[0]"},
        {"{\"skip\": [-1]}", "skip[0]"},
        {"{\"skip\": [1, 1.5]}", "skip[1]"},
        {"{\"skip\": [\"3\"]}", "skip[0]"},
        {"{\"skip\": [true]}", "skip[0]"},
        {"{\"skip\": [[1]]}", "skip[0]"},
        {"{\"skip\": [1e300]}", "skip[0]"},
        {"{\"skip\": [-1e300]}", "skip[0]"},
        {"{\"skip\": [9007199254740992]}", "skip[0]"},
        {"{\"skip\": [1e-300]}", "skip[0]"},
        {"{\"modes\": [\"test\"], \"skip\": [2, 0.5]}", "skip[1]"},
    };
    struct db_claim_filter f;
    int64_t ids[KJ_CLAIM_MAX_SKIP];
    struct kj_err err;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *what = strncmp(bad[i].field, "modes", 5) == 0 ? "modes must be" : "skip must be";
        int rc = parse(bad[i].body, &f, ids, &err);
        KT_CHECK(rc == KJ_EINVAL && strncmp(err.msg, bad[i].field, strlen(bad[i].field)) == 0 &&
                 strstr(err.msg, what) != NULL && f.modes == 0 && f.nskip == 0,
                 "%s: refused naming %s (rc %d: %s)", bad[i].body, bad[i].field, rc, err.msg);
    }
    parse("{\"modes\": [\"fast\"]}", &f, ids, &err);
    KT_CHECK(strstr(err.msg, "at most 5 mode names (test, benchmark, leaderboard, profile, sanitize)") != NULL,
             "the message lists the names: %s", err.msg);
    parse("{\"skip\": [0]}", &f, ids, &err);
    KT_CHECK(strstr(err.msg, "at most 16 submission ids (whole numbers from 1 to 9007199254740991)") != NULL,
             "the message says what an id is: %s", err.msg);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_good());
    KT_RUN(test_bad());
    return kt_done("test_claim_filter");
}
