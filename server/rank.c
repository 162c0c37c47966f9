/*
 * rank.c - rank numbers and per-shape medians for GET .../rankings.
 *
 * Pure functions over rows that db_rank_rows() already ordered; called by
 * api_leaderboards.c and tested in tests/unit/test_rank.c.
 */
#include "rank.h"

void rank_assign(const double *scores, int n, int *ranks)
{
    for (int i = 0; i < n; i++)
        ranks[i] = (i > 0 && scores[i] == scores[i - 1]) ? ranks[i - 1] : i + 1;
}

cJSON *rank_shapes(const char *result_json)
{
    cJSON *out = cJSON_CreateArray(), *res, *benches, *b;
    if (out == NULL || result_json == NULL)
        return out;
    if ((res = cJSON_Parse(result_json)) == NULL)
        return out;
    benches = cJSON_GetObjectItemCaseSensitive(res, "benchmarks");
    cJSON_ArrayForEach(b, benches) {
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(b, "shape");
        const cJSON *med = cJSON_GetObjectItemCaseSensitive(b, "median_ns");
        cJSON *row;
        if (!cJSON_IsObject(shape) || !cJSON_IsNumber(med))
            continue;
        if ((row = cJSON_CreateObject()) == NULL)
            break;
        cJSON_AddItemToObject(row, "shape", cJSON_Duplicate(shape, 1));
        cJSON_AddNumberToObject(row, "median_ns", med->valuedouble);
        cJSON_AddItemToArray(out, row);
    }
    cJSON_Delete(res);
    return out;
}
