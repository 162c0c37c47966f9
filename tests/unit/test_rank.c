/*
 * test_rank.c - unit tests for server/rank.c.
 *
 * Shared ranks for equal scores ("1, 2, 2, 4"), the empty case, and the
 * per-shape medians pulled out of stored results, including results that
 * are missing, malformed or have incomplete benchmark entries.
 */
#define KT_MAIN
#include "kt.h"

#include <string.h>

#include "rank.h"

static void test_assign(void)
{
    double s[] = {1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 7.5};
    int r[7], want[] = {1, 2, 2, 4, 4, 4, 7};
    rank_assign(s, 7, r);
    for (int i = 0; i < 7; i++)
        KT_CHECK(r[i] == want[i], "rank[%d] = %d, want %d", i, r[i], want[i]);
    rank_assign(s, 0, r);
    KT_CHECK(1, "empty input");
    double one = 5.0;
    rank_assign(&one, 1, r);
    KT_CHECK(r[0] == 1, "single row");
}

static void test_shapes(void)
{
    cJSON *a = rank_shapes("{\"benchmarks\": [{\"shape\": {\"T\": 1}, \"median_ns\": 10.5, \"n\": 3},"
                           " {\"shape\": {\"T\": 2}}, {\"median_ns\": 4},"
                           " {\"shape\": {\"T\": 3}, \"median_ns\": 30}]}");
    KT_CHECK(cJSON_GetArraySize(a) == 2, "two complete entries, got %d", cJSON_GetArraySize(a));
    cJSON *first = cJSON_GetArrayItem(a, 0);
    KT_CHECK(cJSON_GetObjectItem(first, "median_ns")->valuedouble == 10.5 &&
             cJSON_GetObjectItem(cJSON_GetObjectItem(first, "shape"), "T")->valueint == 1 &&
             cJSON_GetObjectItem(first, "n") == NULL, "first entry has only shape and median");
    cJSON_Delete(a);
    a = rank_shapes(NULL);
    KT_CHECK(cJSON_IsArray(a) && cJSON_GetArraySize(a) == 0, "NULL result");
    cJSON_Delete(a);
    a = rank_shapes("{not json");
    KT_CHECK(cJSON_IsArray(a) && cJSON_GetArraySize(a) == 0, "malformed result");
    cJSON_Delete(a);
    a = rank_shapes("{\"benchmarks\": 5}");
    KT_CHECK(cJSON_IsArray(a) && cJSON_GetArraySize(a) == 0, "benchmarks not a list");
    cJSON_Delete(a);
}

int main(void)
{
    test_assign();
    test_shapes();
    return kt_done("test_rank");
}
