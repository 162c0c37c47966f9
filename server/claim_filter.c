/*
 * claim_filter.c - a claim body's "modes" and "skip" checked and read into
 * a struct db_claim_filter (see claim_filter.h). api_runner.c calls it for
 * every claim, the first and each one after a parked claim wakes;
 * db_queue.c applies the filter to the jobs the queue rule may pick.
 */
#include "claim_filter.h"

#include <stdio.h>
#include <string.h>

/* "test, benchmark, ..." into buf: the names the message lists. */
static void mode_list(char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int m = 0; m < KJ_MODE_COUNT && len < size; m++) {
        int k = snprintf(buf + len, size - len, "%s%s", m ? ", " : "", kj_mode_name(m));
        if (k < 0)
            break;
        len += (size_t)k;
    }
}

static int modes_fail(struct kj_err *err, const char *why)
{
    char names[96];
    mode_list(names, sizeof names);
    return KJ_FAIL(err, KJ_EINVAL, "%smodes must be a non-empty array of at most %d mode names (%s)",
                   why, KJ_MODE_COUNT, names);
}

static int skip_fail(struct kj_err *err, const char *why)
{
    return KJ_FAIL(err, KJ_EINVAL, "%sskip must be an array of at most %d submission ids (whole "
                   "numbers from 1 to %.0f)", why, KJ_CLAIM_MAX_SKIP, CLAIM_FILTER_MAX_ID);
}

/* The bit set of a "modes" value. */
static int parse_modes(const cJSON *v, unsigned *modes, struct kj_err *err)
{
    const cJSON *it;
    int n = cJSON_GetArraySize(v), i = 0;
    char why[48];
    enum kj_mode m;
    if (!cJSON_IsArray(v) || n == 0)
        return modes_fail(err, "");
    if (n > KJ_MODE_COUNT) {
        snprintf(why, sizeof why, "modes has %d entries: ", n);
        return modes_fail(err, why);
    }
    cJSON_ArrayForEach(it, v) {
        if (!cJSON_IsString(it) || kj_mode_parse(it->valuestring, &m) != 0) {
            snprintf(why, sizeof why, "modes[%d] is not a mode name: ", i);
            return modes_fail(err, why);
        }
        *modes |= 1u << m;
        i++;
    }
    return 0;
}

/* The ids of a "skip" value into ids; *n of them. */
static int parse_skip(const cJSON *v, int64_t *ids, int *n, struct kj_err *err)
{
    const cJSON *it;
    int count = cJSON_GetArraySize(v);
    char why[48];
    if (!cJSON_IsArray(v))
        return skip_fail(err, "");
    if (count > KJ_CLAIM_MAX_SKIP) {
        snprintf(why, sizeof why, "skip has %d entries: ", count);
        return skip_fail(err, why);
    }
    cJSON_ArrayForEach(it, v) {
        /* NaN fails both comparisons; a whole number in range converts exactly. */
        double d = cJSON_IsNumber(it) ? it->valuedouble : 0;
        if (!(d >= 1 && d <= CLAIM_FILTER_MAX_ID) || d != (double)(int64_t)d) {
            snprintf(why, sizeof why, "skip[%d] is not a submission id: ", *n);
            return skip_fail(err, why);
        }
        ids[(*n)++] = (int64_t)d;
    }
    return 0;
}

int claim_filter_parse(const cJSON *body, struct db_claim_filter *out,
                       int64_t ids[KJ_CLAIM_MAX_SKIP], struct kj_err *err)
{
    const cJSON *modes = cJSON_GetObjectItemCaseSensitive(body, "modes");
    const cJSON *skip = cJSON_GetObjectItemCaseSensitive(body, "skip");
    int rc = 0;
    memset(out, 0, sizeof *out);
    out->skip = ids;
    if (modes != NULL)
        rc = parse_modes(modes, &out->modes, err);
    if (rc == 0 && skip != NULL)
        rc = parse_skip(skip, ids, &out->nskip, err);
    if (rc != 0) {
        out->modes = 0;
        out->nskip = 0;
    }
    return rc;
}
