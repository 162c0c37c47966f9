/*
 * compare.c - element-wise comparison of output buffers, on the host.
 *
 * The judge calls compare_buffers() with the expected (reference) and the
 * submission's output of one call; the report it fills goes out as the
 * "mismatch" JSON object and the verdict's message. Large buffers are
 * split into contiguous ranges, one thread each; ranges are merged in
 * index order, so the shown mismatches are the globally first ones.
 */
#include "compare.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kj_err.h"

#define COMPARE_THREAD_MIN (1 << 16)    /* split only above this many elements */
#define COMPARE_MAX_THREADS 16

/* One contiguous range of the buffers and what was found in it. */
struct cmp_part {
    enum spec_dtype dtype;
    const unsigned char *exp, *got; /* borrowed from the caller for the call */
    int64_t begin, end;             /* element range [begin, end) */
    double atol, rtol;
    int64_t count;
    double max_abs, max_rel;
    int nfirst;
    int64_t first_at[COMPARE_MAX_SHOWN];
    double first_exp[COMPARE_MAX_SHOWN], first_got[COMPARE_MAX_SHOWN];
};

/* ---- element decoding --------------------------------------------------- */

static size_t dtype_size(enum spec_dtype t)
{
    switch (t) {
    case SPEC_F32: case SPEC_I32: case SPEC_U32: return 4;
    case SPEC_F16: case SPEC_BF16: return 2;
    case SPEC_F64: case SPEC_I64: return 8;
    case SPEC_I8: case SPEC_U8: return 1;
    }
    return 0;
}

static float float_from_bits(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* IEEE binary16 to float (exact): re-bias normal numbers, scale
 * subnormals, keep infinities and NaN payloads. */
static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    float v;

    if (exp == 0) {
        v = (float)mant * 0x1p-24f;
        return sign ? -v : v;
    }
    if (exp == 31)
        return float_from_bits(sign | 0x7f800000u | (mant << 13));
    return float_from_bits(sign | ((exp + 112) << 23) | (mant << 13));
}

/* bfloat16 is the upper half of a binary32. */
static float bf16_to_float(uint16_t b)
{
    return float_from_bits((uint32_t)b << 16);
}

static uint16_t load_u16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Element i of a float-type buffer as a double. Always inlined into loops
 * whose dtype is a constant, so each dtype gets its own tight loop. */
static inline __attribute__((always_inline)) double
float_at(enum spec_dtype t, const unsigned char *p, int64_t i)
{
    float f;
    double d;

    switch (t) {
    case SPEC_F32:
        memcpy(&f, p + 4 * i, 4);
        return f;
    case SPEC_F64:
        memcpy(&d, p + 8 * i, 8);
        return d;
    case SPEC_F16:
        return half_to_float(load_u16(p + 2 * i));
    default: /* SPEC_BF16 */
        return bf16_to_float(load_u16(p + 2 * i));
    }
}

/* Element i of an integer-type buffer, widened exactly to int64. */
static inline __attribute__((always_inline)) int64_t
int_at(enum spec_dtype t, const unsigned char *p, int64_t i)
{
    int32_t i32;
    uint32_t u32;
    int64_t i64;

    switch (t) {
    case SPEC_I8: return (int8_t)p[i];
    case SPEC_U8: return p[i];
    case SPEC_I32: memcpy(&i32, p + 4 * i, 4); return i32;
    case SPEC_U32: memcpy(&u32, p + 4 * i, 4); return u32;
    default: memcpy(&i64, p + 8 * i, 8); return i64; /* SPEC_I64 */
    }
}

/* ---- one range ------------------------------------------------------------ */

static void part_note(struct cmp_part *p, int64_t at, double e, double g)
{
    if (p->nfirst < COMPARE_MAX_SHOWN) {
        p->first_at[p->nfirst] = at;
        p->first_exp[p->nfirst] = e;
        p->first_got[p->nfirst] = g;
        p->nfirst++;
    }
    p->count++;
}

/* Track the error d = |got - e| of a pair of finite values. */
static void part_error(struct cmp_part *p, double e, double d)
{
    if (d > p->max_abs)
        p->max_abs = d;
    if (e != 0.0 && d / fabs(e) > p->max_rel)
        p->max_rel = d / fabs(e);
}

/* The rare case of scan_floats: a pair out of tolerance or not finite. */
static void float_slow(struct cmp_part *p, int64_t at, double e, double g)
{
    int ok;

    if (isfinite(e) && isfinite(g)) {
        double d = fabs(g - e);
        part_error(p, e, d);
        ok = d <= p->atol + p->rtol * fabs(e);
    } else {
        ok = (isnan(e) && isnan(g)) || e == g;
    }
    if (!ok)
        part_note(p, at, e, g);
}

/* Compare the part's range for float type t. The common case (both
 * finite, within tolerance) stays branch-light: a finite |e| with
 * d <= atol + rtol*|e| implies a finite got. The relative error is divided
 * out only when it may exceed the running maximum (rel_floor sits a little
 * below max_rel so that rounding of the product never hides a new maximum). */
static inline __attribute__((always_inline)) void
scan_floats(struct cmp_part *p, enum spec_dtype t)
{
    double max_abs = 0.0, max_rel = 0.0, rel_floor = 0.0;
    const double atol = p->atol, rtol = p->rtol;
    const unsigned char *ep = p->exp, *gp = p->got;
    const int64_t end = p->end;

    for (int64_t i = p->begin; i < end; i++) {
        double e = float_at(t, ep, i), g = float_at(t, gp, i);
        double ae = fabs(e), d = fabs(g - e);
        if ((ae <= DBL_MAX) & (d <= atol + rtol * ae)) {
            max_abs = d > max_abs ? d : max_abs;
            if (d > rel_floor * ae && ae > 0.0 && d / ae > max_rel) {
                max_rel = d / ae;
                rel_floor = max_rel * (1.0 - 0x1p-40);
            }
            continue;
        }
        p->max_abs = max_abs;
        p->max_rel = max_rel;
        float_slow(p, i, e, g);
        max_abs = p->max_abs;
        max_rel = p->max_rel;
        rel_floor = max_rel * (1.0 - 0x1p-40);
    }
    p->max_abs = max_abs;
    p->max_rel = max_rel;
}

static inline __attribute__((always_inline)) void
scan_ints(struct cmp_part *p, enum spec_dtype t)
{
    const unsigned char *ep = p->exp, *gp = p->got;
    const int64_t end = p->end;

    for (int64_t i = p->begin; i < end; i++) {
        int64_t e = int_at(t, ep, i), g = int_at(t, gp, i);
        if (e == g)
            continue;
        part_error(p, (double)e, fabs((double)g - (double)e));
        part_note(p, i, (double)e, (double)g);
    }
}

/* Thread body: one specialized loop per dtype. */
static void *part_run(void *arg)
{
    struct cmp_part *p = arg;

    switch (p->dtype) {
    case SPEC_F32: scan_floats(p, SPEC_F32); break;
    case SPEC_F64: scan_floats(p, SPEC_F64); break;
    case SPEC_F16: scan_floats(p, SPEC_F16); break;
    case SPEC_BF16: scan_floats(p, SPEC_BF16); break;
    case SPEC_I8: scan_ints(p, SPEC_I8); break;
    case SPEC_U8: scan_ints(p, SPEC_U8); break;
    case SPEC_I32: scan_ints(p, SPEC_I32); break;
    case SPEC_U32: scan_ints(p, SPEC_U32); break;
    case SPEC_I64: scan_ints(p, SPEC_I64); break;
    }
    return NULL;
}

/* ---- compare_buffers -------------------------------------------------------- */

static int check_args(enum spec_dtype dtype, const void *expected, const void *got,
                      int64_t nelem, const int64_t *dims, int ndim, double atol, double rtol)
{
    int64_t prod = 1;

    if (dtype_size(dtype) == 0 || nelem < 0 || ndim < 0 || ndim > SPEC_MAX_DIMS)
        return KJ_EINVAL;
    if (!(atol >= 0.0) || !(rtol >= 0.0))
        return KJ_EINVAL;
    if (nelem > 0 && (expected == NULL || got == NULL))
        return KJ_EINVAL;
    if (nelem > INT64_MAX / 8)
        return KJ_EINVAL;
    if (ndim == 0)
        return 0;
    if (dims == NULL)
        return KJ_EINVAL;
    for (int d = 0; d < ndim; d++)
        if (dims[d] < 0 || __builtin_mul_overflow(prod, dims[d], &prod))
            return KJ_EINVAL;
    return prod == nelem ? 0 : KJ_EINVAL;
}

static int thread_count(int64_t nelem)
{
    long cpus;

    if (nelem <= COMPARE_THREAD_MIN)
        return 1;
    cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1)
        return 1;
    return cpus < COMPARE_MAX_THREADS ? (int)cpus : COMPARE_MAX_THREADS;
}

/* Run parts[0..nparts) on threads; a part whose thread cannot be started
 * runs on the calling thread instead. */
static void run_parts(struct cmp_part *parts, int nparts)
{
    pthread_t tid[COMPARE_MAX_THREADS];
    int started[COMPARE_MAX_THREADS] = {0};

    for (int i = 1; i < nparts; i++)
        started[i] = pthread_create(&tid[i], NULL, part_run, &parts[i]) == 0;
    part_run(&parts[0]);
    for (int i = 1; i < nparts; i++) {
        if (started[i])
            pthread_join(tid[i], NULL);
        else
            part_run(&parts[i]);
    }
}

static void set_index(struct compare_mismatch *m, int64_t at, const int64_t *dims, int ndim)
{
    if (ndim == 0) {
        m->ndim = 1;
        m->index[0] = at;
        return;
    }
    m->ndim = ndim;
    for (int d = ndim - 1; d >= 0; d--) {
        m->index[d] = at % dims[d];
        at /= dims[d];
    }
}

/* Merge parts in range order into out. */
static void merge_parts(const struct cmp_part *parts, int nparts, const int64_t *dims,
                        int ndim, struct compare_report *out)
{
    for (int i = 0; i < nparts; i++) {
        const struct cmp_part *p = &parts[i];
        out->count += p->count;
        if (p->max_abs > out->max_abs_err)
            out->max_abs_err = p->max_abs;
        if (p->max_rel > out->max_rel_err)
            out->max_rel_err = p->max_rel;
        for (int j = 0; j < p->nfirst && out->nshown < COMPARE_MAX_SHOWN; j++) {
            struct compare_mismatch *m = &out->first[out->nshown++];
            set_index(m, p->first_at[j], dims, ndim);
            m->expected = p->first_exp[j];
            m->got = p->first_got[j];
        }
    }
}

int compare_buffers(enum spec_dtype dtype, const void *expected, const void *got,
                    int64_t nelem, const int64_t *dims, int ndim, double atol, double rtol,
                    struct compare_report *out)
{
    struct cmp_part parts[COMPARE_MAX_THREADS];
    int nparts, rc;

    if (out == NULL)
        return KJ_EINVAL;
    memset(out, 0, sizeof *out);
    rc = check_args(dtype, expected, got, nelem, dims, ndim, atol, rtol);
    if (rc != 0)
        return rc;
    out->total = nelem;
    if (nelem == 0)
        return 0;
    nparts = thread_count(nelem);
    memset(parts, 0, sizeof parts);
    for (int i = 0; i < nparts; i++) {
        parts[i].dtype = dtype;
        parts[i].exp = expected;
        parts[i].got = got;
        parts[i].atol = atol;
        parts[i].rtol = rtol;
        parts[i].begin = nelem / nparts * i;
        parts[i].end = i == nparts - 1 ? nelem : nelem / nparts * (i + 1);
    }
    run_parts(parts, nparts);
    merge_parts(parts, nparts, dims, ndim, out);
    return 0;
}

/* ---- compare_exact -------------------------------------------------------- */

int compare_exact(const void *a, const void *b, size_t nbytes, size_t elem_size,
                  int64_t *first_diff)
{
    const unsigned char *x = a, *y = b;
    const size_t block = 4096;
    size_t off = 0;

    if (first_diff != NULL)
        *first_diff = -1;
    if (elem_size == 0 || nbytes % elem_size != 0)
        return KJ_EINVAL;
    if (nbytes == 0)
        return 0;
    if (a == NULL || b == NULL)
        return KJ_EINVAL;
    if (memcmp(x, y, nbytes) == 0)
        return 0;
    while (off + block <= nbytes && memcmp(x + off, y + off, block) == 0)
        off += block;
    while (x[off] == y[off])
        off++;
    if (first_diff != NULL)
        *first_diff = (int64_t)(off / elem_size);
    return 1;
}

/* ---- reports ---------------------------------------------------------------- */

/* A number as JSON: non-finite values become "nan", "inf" or "-inf". */
static cJSON *json_value(double v)
{
    if (isnan(v))
        return cJSON_CreateString("nan");
    if (isinf(v))
        return cJSON_CreateString(v > 0 ? "inf" : "-inf");
    return cJSON_CreateNumber(v);
}

static int json_put(cJSON *obj, const char *key, cJSON *item)
{
    if (item == NULL)
        return -1;
    if (!cJSON_AddItemToObject(obj, key, item)) {
        cJSON_Delete(item);
        return -1;
    }
    return 0;
}

static int json_push(cJSON *arr, cJSON *item)
{
    if (item == NULL)
        return -1;
    if (!cJSON_AddItemToArray(arr, item)) {
        cJSON_Delete(item);
        return -1;
    }
    return 0;
}

static cJSON *mismatch_json(const struct compare_mismatch *m)
{
    cJSON *o = cJSON_CreateObject(), *idx = cJSON_CreateArray();
    int bad = o == NULL || idx == NULL;

    for (int d = 0; !bad && d < m->ndim; d++)
        bad = json_push(idx, cJSON_CreateNumber((double)m->index[d])) != 0;
    if (!bad) {
        bad = json_put(o, "index", idx) != 0;
        idx = NULL; /* owned by o now, or already freed by json_put */
    }
    bad = bad || json_put(o, "expected", json_value(m->expected)) != 0;
    bad = bad || json_put(o, "got", json_value(m->got)) != 0;
    if (bad) {
        cJSON_Delete(idx);
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *compare_report_json(const struct compare_report *r, const char *buffer_name)
{
    cJSON *o, *first;
    int bad;

    if (r == NULL)
        return NULL;
    o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    bad = json_put(o, "buffer", cJSON_CreateString(buffer_name ? buffer_name : "")) != 0;
    bad = bad || json_put(o, "count", cJSON_CreateNumber((double)r->count)) != 0;
    bad = bad || json_put(o, "total", cJSON_CreateNumber((double)r->total)) != 0;
    bad = bad || json_put(o, "max_abs_err", json_value(r->max_abs_err)) != 0;
    bad = bad || json_put(o, "max_rel_err", json_value(r->max_rel_err)) != 0;
    first = bad ? NULL : cJSON_CreateArray();
    bad = bad || json_put(o, "first", first) != 0;
    for (int i = 0; !bad && i < r->nshown && i < COMPARE_MAX_SHOWN; i++)
        bad = json_push(first, mismatch_json(&r->first[i])) != 0;
    if (bad) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* Append printf output to buf, which holds *len characters; stops at the end. */
__attribute__((format(printf, 4, 5)))
static void append(char *buf, size_t bufsz, size_t *len, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (*len + 1 >= bufsz)
        return;
    va_start(ap, fmt);
    n = vsnprintf(buf + *len, bufsz - *len, fmt, ap);
    va_end(ap);
    if (n > 0)
        *len += (size_t)n < bufsz - *len ? (size_t)n : bufsz - *len - 1;
}

static const char *fmt_value(double v, char *tmp, size_t tmpsz)
{
    if (isnan(v))
        return "nan";
    if (isinf(v))
        return v > 0 ? "inf" : "-inf";
    snprintf(tmp, tmpsz, "%.9g", v);
    return tmp;
}

void compare_report_text(const struct compare_report *r, const char *buffer_name,
                         char *buf, size_t bufsz)
{
    char a[32], b[32];
    size_t len = 0;
    const char *name = buffer_name ? buffer_name : "output";

    if (buf == NULL || bufsz == 0)
        return;
    buf[0] = '\0';
    if (r == NULL)
        return;
    if (r->count == 0)
        append(buf, bufsz, &len, "%s: all %lld elements match", name, (long long)r->total);
    else
        append(buf, bufsz, &len, "%s: %lld of %lld elements differ", name,
               (long long)r->count, (long long)r->total);
    append(buf, bufsz, &len, " (max abs err %s, max rel err %s)",
           fmt_value(r->max_abs_err, a, sizeof a), fmt_value(r->max_rel_err, b, sizeof b));
    if (r->nshown < 1)
        return;
    const struct compare_mismatch *m = &r->first[0];
    append(buf, bufsz, &len, "; first at [");
    for (int d = 0; d < m->ndim && d < SPEC_MAX_DIMS; d++)
        append(buf, bufsz, &len, "%s%lld", d ? ", " : "", (long long)m->index[d]);
    append(buf, bufsz, &len, "]: expected %s, got %s", fmt_value(m->expected, a, sizeof a),
           fmt_value(m->got, b, sizeof b));
}
