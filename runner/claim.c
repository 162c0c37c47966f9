/*
 * claim.c - a claimed job's fields and heartbeat period (see claim.h).
 */
#include "claim.h"
#include "sub_lang.h"

int claim_fields(const cJSON *job, long *id, long *attempt, const char **lb, const char **mode,
                 const char **src)
{
    const cJSON *i = cJSON_GetObjectItem(job, "id"), *l = cJSON_GetObjectItem(job, "leaderboard"),
                *m = cJSON_GetObjectItem(job, "mode"), *s = cJSON_GetObjectItem(job, "source"),
                *a = cJSON_GetObjectItem(job, "attempt");
    if (!cJSON_IsNumber(i) || !cJSON_IsString(l) || !cJSON_IsString(m) || !cJSON_IsString(s))
        return 0;
    *id = (long)i->valuedouble;
    *attempt = cJSON_IsNumber(a) ? (long)a->valuedouble : 1;
    *lb = l->valuestring;
    *mode = m->valuestring;
    *src = s->valuestring;
    return 1;
}

int claim_lang(const cJSON *job)
{
    const cJSON *l = cJSON_GetObjectItem(job, "lang");
    int lang = SUB_LANG_CUDA;
    if (!cJSON_IsString(l) || sub_lang_parse(l->valuestring, &lang) != 0)
        return SUB_LANG_CUDA;
    return lang;
}

double claim_beat_s(const cJSON *job)
{
    const cJSON *lease = cJSON_GetObjectItem(job, "lease_seconds");
    double s = CLAIM_BEAT_MAX_S;
    if (cJSON_IsNumber(lease) && lease->valuedouble / 3 < s)
        s = lease->valuedouble / 3 < 1 ? 1 : lease->valuedouble / 3;
    return s;
}
