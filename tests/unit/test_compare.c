/*
 * test_compare.c - unit tests for runner/compare.c.
 *
 * Tolerance rules for every float type (NaN, infinities, atol/rtol edges),
 * half and bfloat16 decoding of known bit patterns, integer exactness,
 * multi-dimensional indices, the multi-threaded path with late mismatches,
 * compare_exact, and the JSON and text reports. Needs no GPU.
 */
#define KT_MAIN
#include "kt.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "compare.h"
#include "kj_err.h"

static int run_f64(const double *e, const double *g, int64_t n, double atol, double rtol,
                   struct compare_report *r)
{
    return compare_buffers(SPEC_F64, e, g, n, NULL, 0, atol, rtol, r);
}

static void test_float_rules(void)
{
    struct compare_report r;
    double e[] = {2.0, 2.0, NAN, 1.0, NAN, INFINITY, INFINITY, -INFINITY, 1e30, 0.0, 5.0};
    double g[] = {3.0, nextafter(3.0, 4.0), NAN, NAN, 1.0, INFINITY, -INFINITY,
                  -INFINITY, INFINITY, 0.1, 5.0};
    /* atol + rtol*|e| = 0.5 + 0.25*2 = 1: g = 3 is on the edge and passes. */
    KT_CHECK(run_f64(e, g, 11, 0.5, 0.25, &r) == 0, "ran");
    KT_CHECK(r.total == 11, "total %lld", (long long)r.total);
    KT_CHECK(r.count == 5, "count %lld", (long long)r.count);
    KT_CHECK(r.nshown == 5, "nshown %d", r.nshown);
    int64_t want[] = {1, 3, 4, 6, 8};
    for (int i = 0; i < 5 && i < r.nshown; i++)
        KT_CHECK(r.first[i].ndim == 1 && r.first[i].index[0] == want[i], "mismatch %d at %lld",
                 i, (long long)r.first[i].index[0]);
    KT_CHECK(isnan(r.first[1].got) && r.first[1].expected == 1.0, "NaN got");
    KT_CHECK(isnan(r.first[2].expected) && r.first[2].got == 1.0, "NaN expected");
    KT_CHECK(r.first[3].got == -INFINITY, "opposite infinities");
    /* Finite pairs: |1| at 0, |1+ulp| at 1, 0.1 at 9 (rel skipped), 0 at 10. */
    KT_CHECK(r.max_abs_err == nextafter(3.0, 4.0) - 2.0, "max abs %.17g", r.max_abs_err);
    KT_CHECK(r.max_rel_err == (nextafter(3.0, 4.0) - 2.0) / 2.0, "max rel %.17g", r.max_rel_err);

    /* rtol alone scales with |expected|; the sign of expected does not matter. */
    double e2[] = {-100.0, 100.0}, g2[] = {-101.0, 101.5};
    KT_CHECK(run_f64(e2, g2, 2, 0.0, 0.01, &r) == 0 && r.count == 1 &&
             r.first[0].index[0] == 1, "rtol");
    KT_CHECK(r.max_rel_err == 0.015, "rel %.17g", r.max_rel_err);

    float ef[] = {1.0f, 2.0f, 3.0f}, gf[] = {1.0f, 2.0001f, 3.5f};
    KT_CHECK(compare_buffers(SPEC_F32, ef, gf, 3, NULL, 0, 1e-3, 0.0, &r) == 0 &&
             r.count == 1 && r.first[0].index[0] == 2 && r.first[0].got == 3.5, "f32");
}

/* Decode patterns by comparing them with an all-NaN "got": every finite
 * expected value mismatches and is reported as a double. */
static void decode16(enum spec_dtype t, const uint16_t *bits, int n, double *vals)
{
    uint16_t nan_bits = t == SPEC_F16 ? 0x7E00 : 0x7FC0;
    uint16_t got[COMPARE_MAX_SHOWN] = {0};
    struct compare_report r;
    for (int i = 0; i < n && i < COMPARE_MAX_SHOWN; i++)
        got[i] = nan_bits;
    compare_buffers(t, bits, got, n, NULL, 0, 0.0, 0.0, &r);
    for (int i = 0; i < n; i++)
        vals[i] = i < r.nshown ? r.first[i].expected : -12345.0;
}

static void test_half_bf16(void)
{
    uint16_t h[] = {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x03FF, 0x0400, 0x3555, 0x8000};
    double hv[] = {1.0, -2.0, 65504.0, 0x1p-24, 1023 * 0x1p-24, 0x1p-14, 0.333251953125, -0.0};
    uint16_t b[] = {0x3F80, 0xC040, 0x0001, 0x4049, 0x7F7F, 0x0080, 0xBF00, 0x4780};
    double bv[] = {1.0, -3.0, 0x1p-133, 3.140625, 0x1.FEp127, 0x1p-126, -0.5, 65536.0};
    double got[8];

    decode16(SPEC_F16, h, 8, got);
    for (int i = 0; i < 8; i++)
        KT_CHECK(got[i] == hv[i], "f16 %04x -> %.17g want %.17g", h[i], got[i], hv[i]);
    KT_CHECK(signbit(got[7]), "f16 -0 keeps its sign");
    decode16(SPEC_BF16, b, 8, got);
    for (int i = 0; i < 8; i++)
        KT_CHECK(got[i] == bv[i], "bf16 %04x -> %.17g want %.17g", b[i], got[i], bv[i]);

    /* Infinities and NaNs of both formats. */
    uint16_t hs[] = {0x7C00, 0xFC00, 0x7E00, 0x7C01}, hg[] = {0x7C00, 0x7C00, 0x7FFF, 0x3C00};
    struct compare_report r;
    KT_CHECK(compare_buffers(SPEC_F16, hs, hg, 4, NULL, 0, 0, 0, &r) == 0 && r.count == 2, "f16 specials %lld",
             (long long)r.count);
    KT_CHECK(r.first[0].index[0] == 1 && r.first[0].expected == -INFINITY &&
             r.first[0].got == INFINITY, "f16 -inf vs inf");
    KT_CHECK(r.first[1].index[0] == 3 && isnan(r.first[1].expected) && r.first[1].got == 1.0,
             "f16 signalling NaN payload stays NaN");
    uint16_t bs[] = {0x7F80, 0xFF80, 0x7FC1}, bg[] = {0x7F80, 0xFF80, 0xFFC0};
    KT_CHECK(compare_buffers(SPEC_BF16, bs, bg, 3, NULL, 0, 0, 0, &r) == 0 && r.count == 0,
             "bf16 specials match");
    /* Tolerance applies after decoding: 1.0 vs 1.0009765625 (next half). */
    uint16_t one[] = {0x3C00}, next[] = {0x3C01};
    KT_CHECK(compare_buffers(SPEC_F16, one, next, 1, NULL, 0, 1e-3, 0, &r) == 0 && r.count == 0 &&
             r.max_abs_err == 0x1p-10, "f16 atol %.17g", r.max_abs_err);
}

static void test_ints(void)
{
    struct compare_report r;
    int32_t e32[] = {1, 2, 3, -7}, g32[] = {1, 3, 3, -7};
    KT_CHECK(compare_buffers(SPEC_I32, e32, g32, 4, NULL, 0, 10.0, 10.0, &r) == 0 &&
             r.count == 1 && r.first[0].index[0] == 1, "i32 exact despite atol");
    KT_CHECK(r.max_abs_err == 1.0 && r.max_rel_err == 0.5, "i32 errors %g %g", r.max_abs_err,
             r.max_rel_err);
    int8_t e8[] = {-1, -128, 127}, g8[] = {-1, 127, -128};
    KT_CHECK(compare_buffers(SPEC_I8, e8, g8, 3, NULL, 0, 0, 0, &r) == 0 && r.count == 2 &&
             r.first[0].expected == -128 && r.first[0].got == 127, "i8 signed");
    uint8_t u8e[] = {0, 255}, u8g[] = {0, 254};
    KT_CHECK(compare_buffers(SPEC_U8, u8e, u8g, 2, NULL, 0, 0, 0, &r) == 0 && r.count == 1 &&
             r.first[0].expected == 255, "u8 unsigned");
    uint32_t ue[] = {0xFFFFFFFFu}, ug[] = {0};
    KT_CHECK(compare_buffers(SPEC_U32, ue, ug, 1, NULL, 0, 0, 0, &r) == 0 && r.count == 1 &&
             r.first[0].expected == 4294967295.0, "u32 unsigned");
    /* Differ by one beyond 2^53, where doubles cannot tell them apart. */
    int64_t e64[] = {(int64_t)1 << 60, 5}, g64[] = {((int64_t)1 << 60) + 1, 5};
    KT_CHECK(compare_buffers(SPEC_I64, e64, g64, 2, NULL, 0, 0, 0, &r) == 0 && r.count == 1 &&
             r.first[0].index[0] == 0, "i64 exact");
}

static void test_indices_and_args(void)
{
    enum { N = 60 };
    float e[N], g[N];
    int64_t dims[] = {3, 4, 5};
    struct compare_report r;
    for (int i = 0; i < N; i++)
        e[i] = g[i] = (float)i;
    g[37] = -1.0f; /* [1, 3, 2] */
    for (int i = 40; i < N; i++)
        g[i] += 100.0f;
    KT_CHECK(compare_buffers(SPEC_F32, e, g, N, dims, 3, 0, 0, &r) == 0, "3-d");
    KT_CHECK(r.count == 21 && r.nshown == COMPARE_MAX_SHOWN, "count %lld shown %d",
             (long long)r.count, r.nshown);
    KT_CHECK(r.first[0].ndim == 3 && r.first[0].index[0] == 1 && r.first[0].index[1] == 3 &&
             r.first[0].index[2] == 2, "index of 37");
    KT_CHECK(r.first[1].index[0] == 2 && r.first[1].index[1] == 0 && r.first[1].index[2] == 0,
             "index of 40");
    KT_CHECK(r.first[7].index[2] == 1 && r.first[7].index[1] == 1, "index of 46");

    int64_t bad_dims[] = {3, 4, 6};
    KT_CHECK(compare_buffers(SPEC_F32, e, g, N, bad_dims, 3, 0, 0, &r) == KJ_EINVAL &&
             r.count == 0 && r.total == 0, "dims product");
    KT_CHECK(compare_buffers(SPEC_F32, e, g, N, NULL, 2, 0, 0, &r) == KJ_EINVAL, "NULL dims");
    KT_CHECK(compare_buffers(SPEC_F32, e, g, N, dims, SPEC_MAX_DIMS + 1, 0, 0, &r) == KJ_EINVAL,
             "ndim");
    KT_CHECK(compare_buffers(SPEC_F32, e, g, -1, NULL, 0, 0, 0, &r) == KJ_EINVAL, "nelem < 0");
    KT_CHECK(compare_buffers(SPEC_F32, e, g, N, NULL, 0, -1e-3, 0, &r) == KJ_EINVAL, "atol < 0");
    KT_CHECK(compare_buffers(SPEC_F32, e, g, N, NULL, 0, 0, NAN, &r) == KJ_EINVAL, "rtol NaN");
    KT_CHECK(compare_buffers((enum spec_dtype)99, e, g, N, NULL, 0, 0, 0, &r) == KJ_EINVAL,
             "dtype");
    KT_CHECK(compare_buffers(SPEC_F32, NULL, g, N, NULL, 0, 0, 0, &r) == KJ_EINVAL, "NULL buf");
    KT_CHECK(compare_buffers(SPEC_F32, e, g, N, NULL, 0, 0, 0, NULL) == KJ_EINVAL, "NULL out");
    KT_CHECK(compare_buffers(SPEC_F32, NULL, NULL, 0, NULL, 0, 0, 0, &r) == 0 && r.total == 0 &&
             r.count == 0, "empty");
}

/* More than 1M elements takes the threaded path; the mismatches sit in the
 * last ranges, out of order of discovery, so the merge must sort them. */
static void test_threaded(void)
{
    const int64_t n = 30000000;
    float *e = malloc((size_t)n * sizeof *e), *g = malloc((size_t)n * sizeof *g);
    int64_t at[] = {n - 1, n - 2, n - 7, n - 1000, n / 16 * 15 + 3, n / 16 * 14 + 1,
                    n / 16 * 14, n / 2 + 11, n - 500000, n - 3};
    int64_t sorted[] = {n / 2 + 11, n / 16 * 14, n / 16 * 14 + 1, n / 16 * 15 + 3,
                        n - 500000, n - 1000, n - 7, n - 3};
    int64_t dims[] = {n / 1000, 1000};
    struct compare_report r;
    if (e == NULL || g == NULL) {
        KT_SKIP("no memory for the 30M-element buffers");
        free(e);
        free(g);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        e[i] = g[i] = (float)(i % 4099) * 0.25f;
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
        g[at[i]] += 1.0f;
    g[n / 3] += 1e-4f; /* within atol: counts for max_abs_err only */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = compare_buffers(SPEC_F32, e, g, n, dims, 2, 1e-3, 0.0, &r);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    printf("compare: 30M f32 in %.1f ms\n", ms);
    KT_CHECK(rc == 0 && r.count == 10 && r.total == n, "count %lld", (long long)r.count);
    KT_CHECK(r.nshown == 8, "nshown %d", r.nshown);
    for (int i = 0; i < 8 && i < r.nshown; i++)
        KT_CHECK(r.first[i].index[0] * 1000 + r.first[i].index[1] == sorted[i],
                 "first[%d] = [%lld, %lld]", i, (long long)r.first[i].index[0],
                 (long long)r.first[i].index[1]);
    KT_CHECK(r.max_abs_err >= 1.0 && r.max_abs_err < 1.001, "max abs %g", r.max_abs_err);
    KT_CHECK(ms < 5000.0, "took %.1f ms", ms);

    /* compare_exact on the same large buffers: first change is at n/3. */
    int64_t fd;
    KT_CHECK(compare_exact(e, g, (size_t)n * 4, 4, &fd) == 1 && fd == n / 3, "exact fd %lld",
             (long long)fd);
    free(e);
    free(g);
}

static void test_exact(void)
{
    unsigned char a[10000], b[10000];
    int64_t fd = 7;
    for (int i = 0; i < 10000; i++)
        a[i] = b[i] = (unsigned char)(i * 31);
    KT_CHECK(compare_exact(a, b, 10000, 4, &fd) == 0 && fd == -1, "equal");
    b[4937] ^= 1;
    KT_CHECK(compare_exact(a, b, 10000, 4, &fd) == 1 && fd == 1234, "element %lld", (long long)fd);
    KT_CHECK(compare_exact(a, b, 10000, 1, NULL) == 1, "NULL first_diff");
    b[4937] ^= 1;
    b[9999] ^= 0x80;
    KT_CHECK(compare_exact(a, b, 10000, 8, &fd) == 1 && fd == 1249, "last element %lld",
             (long long)fd);
    KT_CHECK(compare_exact(a, b, 10000, 0, &fd) == KJ_EINVAL, "elem_size 0");
    KT_CHECK(compare_exact(a, b, 10000, 3, &fd) == KJ_EINVAL, "not a multiple");
    KT_CHECK(compare_exact(NULL, b, 8, 4, &fd) == KJ_EINVAL, "NULL");
    KT_CHECK(compare_exact(NULL, NULL, 0, 4, &fd) == 0, "empty");
}

static void test_json(void)
{
    double e[] = {1.0, 2.0, 3.0, 4.0}, g[] = {1.0, NAN, 3.0, -INFINITY};
    int64_t dims[] = {2, 2};
    struct compare_report r;
    KT_CHECK(compare_buffers(SPEC_F64, e, g, 4, dims, 2, 0, 0, &r) == 0 && r.count == 2, "ran");
    cJSON *j = compare_report_json(&r, "x_q");
    KT_CHECK(j != NULL, "json");
    char *s = cJSON_PrintUnformatted(j);
    KT_CHECK(s != NULL && strcmp(s, "{\"buffer\":\"x_q\",\"count\":2,\"total\":4,"
                                    "\"max_abs_err\":0,\"max_rel_err\":0,\"first\":["
                                    "{\"index\":[0,1],\"expected\":2,\"got\":\"nan\"},"
                                    "{\"index\":[1,1],\"expected\":4,\"got\":\"-inf\"}]}") == 0,
             "json text %s", s ? s : "(null)");
    cJSON_free(s);
    cJSON_Delete(j);

    /* Non-finite summary errors also become strings. */
    r.max_abs_err = INFINITY;
    r.max_rel_err = NAN;
    j = compare_report_json(&r, "y");
    KT_CHECK(j && cJSON_IsString(cJSON_GetObjectItem(j, "max_abs_err")) &&
             strcmp(cJSON_GetObjectItem(j, "max_abs_err")->valuestring, "inf") == 0 &&
             strcmp(cJSON_GetObjectItem(j, "max_rel_err")->valuestring, "nan") == 0,
             "inf/nan summary");
    cJSON_Delete(j);
    KT_CHECK(compare_report_json(NULL, "z") == NULL, "NULL report");
}

static void test_text(void)
{
    struct compare_report r;
    char buf[256], small[12];
    memset(&r, 0, sizeof r);
    r.count = 12;
    r.total = 1024;
    r.max_abs_err = 0.5;
    r.max_rel_err = 0.1;
    r.nshown = 1;
    r.first[0].ndim = 2;
    r.first[0].index[1] = 17;
    r.first[0].expected = 1.5;
    r.first[0].got = 2.0;
    compare_report_text(&r, "x_q", buf, sizeof buf);
    KT_CHECK(strcmp(buf, "x_q: 12 of 1024 elements differ (max abs err 0.5, max rel err 0.1); "
                         "first at [0, 17]: expected 1.5, got 2") == 0, "text: %s", buf);
    r.first[0].got = NAN;
    compare_report_text(&r, "x_q", buf, sizeof buf);
    KT_CHECK(strstr(buf, "got nan") != NULL, "nan text: %s", buf);
    compare_report_text(&r, "x_q", small, sizeof small);
    KT_CHECK(strlen(small) == sizeof small - 1 && strncmp(small, "x_q: 12 of ", 11) == 0,
             "truncated: %s", small);
    memset(&r, 0, sizeof r);
    r.total = 64;
    compare_report_text(&r, "out", buf, sizeof buf);
    KT_CHECK(strcmp(buf, "out: all 64 elements match (max abs err 0, max rel err 0)") == 0,
             "pass text: %s", buf);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_float_rules());
    KT_RUN(test_half_bf16());
    KT_RUN(test_ints());
    KT_RUN(test_indices_and_args());
    KT_RUN(test_exact());
    KT_RUN(test_threaded());
    KT_RUN(test_json());
    KT_RUN(test_text());
    return kt_done("test_compare");
}
