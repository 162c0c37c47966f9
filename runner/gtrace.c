/*
 * gtrace.c - kernel, copy and set activity recording with CUPTI in the run
 * box (see gtrace.h): libcupti opened at run time, one driver-API callback that
 * hands the harness the correlation ids of its own marks, and CUPTI's
 * buffers parsed into a read-only store as soon as CUPTI returns them.
 */
#include "gtrace.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__has_include)
#if __has_include(<cupti.h>)
#include <cupti.h>
#define GTRACE_HAVE_CUPTI 1
#endif
#endif

#ifndef GTRACE_HAVE_CUPTI

int gtrace_start(char *why, size_t whysz)
{
    snprintf(why, whysz, "the runner was built without CUPTI's headers");
    return -1;
}
int gtrace_on(void) { return 0; }
void gtrace_mark_arm(void) {}
uint32_t gtrace_mark_take(void) { return 0; }
int gtrace_collect(const struct gputime_rec **recs, size_t *n, long *lost, char *why, size_t whysz)
{
    *recs = NULL;
    *n = 0;
    *lost = 0;
    snprintf(why, whysz, "no CUPTI");
    return -1;
}
void gtrace_clear(void) {}

#else

#define GTRACE_BUF_BYTES (1u << 20)  /* one CUPTI activity buffer */
#define GTRACE_STORE_BYTES (((GTRACE_MAX_RECS * sizeof(struct gputime_rec)) + 4095) / 4096 * 4096)

#define GTRACE_FUNCS(X)                                                                  \
    X(cuptiGetVersion) X(cuptiGetResultString) X(cuptiActivityEnable)                    \
    X(cuptiActivityRegisterCallbacks) X(cuptiActivityFlushAll)                           \
    X(cuptiActivityGetNextRecord) X(cuptiActivityGetNumDroppedRecords) X(cuptiSubscribe) \
    X(cuptiEnableCallback)

/* The one recording of this process (gtrace.h says why it is static). */
static struct {
    void *lib;
#define GTRACE_PTR(name) __typeof__(name) *name;
    GTRACE_FUNCS(GTRACE_PTR)
#undef GTRACE_PTR
    CUpti_SubscriberHandle sub;
    int on;
    pthread_mutex_t lock;       /* store, n, lost, floor: CUPTI may call back from its own thread */
    struct gputime_rec *store;  /* GTRACE_STORE_BYTES, mapped read-only but while written */
    size_t n;
    long lost;
    uint32_t floor;             /* records of launches before this correlation id are old: */
    int floor_pending;          /* not kept; set by the first mark after gtrace_clear */
    volatile int armed;         /* the harness's thread waits for its next driver call's id */
    pthread_t armer;
    volatile uint32_t mark;
} gt = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void CUPTIAPI gtrace_on_api(void *user, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
                                   const void *data)
{
    const CUpti_CallbackData *cb = data;
    (void)user;
    (void)dom;
    (void)cbid;
    if (gt.armed && cb->callbackSite == CUPTI_API_ENTER && pthread_equal(pthread_self(), gt.armer)) {
        gt.mark = cb->correlationId;
        gt.armed = 0;
    }
}

static void CUPTIAPI gtrace_buf_request(uint8_t **buf, size_t *size, size_t *max_records)
{
    void *p = mmap(NULL, GTRACE_BUF_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    *buf = p == MAP_FAILED ? NULL : p;  /* NULL: CUPTI drops records (counted as lost) */
    *size = p == MAP_FAILED ? 0 : GTRACE_BUF_BYTES;
    *max_records = 0;
}

/* A kernel, copy or set record as the store keeps it; 0 for other kinds.
 * The four record types hold the same fields at their own offsets. */
static int gtrace_rec(const CUpti_Activity *rec, struct gputime_rec *g)
{
#define GTRACE_AS(type, what)                                                            \
    do {                                                                                 \
        const type *a_ = (const type *)rec;                                              \
        *g = (struct gputime_rec){a_->start, a_->end, a_->correlationId, a_->streamId,   \
                                  (what), 0};                                            \
    } while (0)
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        GTRACE_AS(CUpti_ActivityKernel10, GPUTIME_KERNEL);
        return 1;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
        GTRACE_AS(CUpti_ActivityMemcpy6, GPUTIME_COPY);
        return 1;
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
        GTRACE_AS(CUpti_ActivityMemcpyPtoP4, GPUTIME_COPY);
        return 1;
    case CUPTI_ACTIVITY_KIND_MEMSET:
        GTRACE_AS(CUpti_ActivityMemset4, GPUTIME_SET);
        return 1;
    default:
        return 0;
    }
#undef GTRACE_AS
}

/* A buffer CUPTI is done with: its kernel, copy and set records into the
 * store, then the buffer is gone. */
static void CUPTIAPI gtrace_buf_done(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                     size_t valid)
{
    CUpti_Activity *rec = NULL;
    size_t dropped = 0;
    (void)size;
    pthread_mutex_lock(&gt.lock);
    mprotect(gt.store, GTRACE_STORE_BYTES, PROT_READ | PROT_WRITE);
    while (buf != NULL && gt.cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
        struct gputime_rec g;
        if (!gtrace_rec(rec, &g))
            continue;
        if (gt.floor_pending || g.corr < gt.floor)
            continue; /* before the calls being measured: the warm-up's, a fill's */
        if (gt.n == GTRACE_MAX_RECS) {
            gt.lost++;
            continue;
        }
        gt.store[gt.n++] = g;
    }
    mprotect(gt.store, GTRACE_STORE_BYTES, PROT_READ);
    if (gt.cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS)
        gt.lost += (long)dropped;
    pthread_mutex_unlock(&gt.lock);
    if (buf != NULL)
        munmap(buf, GTRACE_BUF_BYTES);
}

static int gtrace_cupti_fail(CUptiResult r, const char *what, char *why, size_t whysz)
{
    const char *s = NULL;
    if (gt.cuptiGetResultString == NULL || gt.cuptiGetResultString(r, &s) != CUPTI_SUCCESS)
        s = NULL;
    snprintf(why, whysz, "CUPTI refused %s: %s", what, s != NULL ? s : "unknown error");
    return -1;
}

int gtrace_start(char *why, size_t whysz)
{
    const char *path = getenv("KJUDGE_CUPTI_LIB"), *off = getenv("KJUDGE_GPU_TIME");
    uint32_t version = 0;
    CUptiResult r;
    static const CUpti_CallbackId marks[] = {
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuEventRecord, CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags,
        CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz,
    };
    if (gt.on)
        return 0;
    if (off != NULL && strcmp(off, "0") == 0) {
        snprintf(why, whysz, "turned off on this runner (KJUDGE_GPU_TIME=0)");
        return -1;
    }
    if (path == NULL || path[0] == '\0')
        path = "libcupti.so.13";
    gt.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (gt.lib == NULL) {
        snprintf(why, whysz, "cannot load CUPTI (%s): %s", path, dlerror());
        return -1;
    }
#define GTRACE_SYM(name)                                                                 \
    if ((*(void **)&gt.name = dlsym(gt.lib, #name)) == NULL) {                          \
        snprintf(why, whysz, "%s lacks %s", path, #name);                                \
        return -1;                                                                       \
    }
    GTRACE_FUNCS(GTRACE_SYM)
#undef GTRACE_SYM
    if ((r = gt.cuptiGetVersion(&version)) != CUPTI_SUCCESS)
        return gtrace_cupti_fail(r, "its version", why, whysz);
    if (version / 10000 != CUPTI_API_VERSION / 10000) {
        snprintf(why, whysz, "%s is CUPTI API %u; this runner reads the records of API %u.x",
                 path, version, CUPTI_API_VERSION / 10000);
        return -1;
    }
    void *store = mmap(NULL, GTRACE_STORE_BYTES, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (store == MAP_FAILED) {
        snprintf(why, whysz, "no memory for the records");
        return -1;
    }
    gt.store = store;
    if ((r = gt.cuptiSubscribe(&gt.sub, gtrace_on_api, NULL)) != CUPTI_SUCCESS)
        return gtrace_cupti_fail(r, "a subscription (another tool holds it?)", why, whysz);
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        if ((r = gt.cuptiEnableCallback(1, gt.sub, CUPTI_CB_DOMAIN_DRIVER_API, marks[i])) !=
            CUPTI_SUCCESS)
            return gtrace_cupti_fail(r, "the driver callbacks", why, whysz);
    if ((r = gt.cuptiActivityRegisterCallbacks(gtrace_buf_request, gtrace_buf_done)) !=
        CUPTI_SUCCESS)
        return gtrace_cupti_fail(r, "the activity buffers", why, whysz);
    /* Copies and sets too: work of the call that no kernel record shows
     * (gputime.h). */
    if ((r = gt.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) != CUPTI_SUCCESS)
        return gtrace_cupti_fail(r, "kernel activity", why, whysz);
    if ((r = gt.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY)) != CUPTI_SUCCESS ||
        (r = gt.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY2)) != CUPTI_SUCCESS ||
        (r = gt.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET)) != CUPTI_SUCCESS)
        return gtrace_cupti_fail(r, "copy and set activity", why, whysz);
    gt.on = 1;
    snprintf(why, whysz, "CUPTI API %u (%s)", version, path);
    return 0;
}

int gtrace_on(void)
{
    return gt.on;
}

void gtrace_mark_arm(void)
{
    if (!gt.on)
        return;
    gt.mark = 0;
    gt.armer = pthread_self();
    __atomic_store_n(&gt.armed, 1, __ATOMIC_SEQ_CST);
}

uint32_t gtrace_mark_take(void)
{
    __atomic_store_n(&gt.armed, 0, __ATOMIC_SEQ_CST);
    if (!gt.on)
        return 0;
    uint32_t m = gt.mark;
    pthread_mutex_lock(&gt.lock);
    if (gt.floor_pending && m != 0) {
        gt.floor = m;
        gt.floor_pending = 0;
    }
    pthread_mutex_unlock(&gt.lock);
    return m;
}

int gtrace_collect(const struct gputime_rec **recs, size_t *n, long *lost, char *why, size_t whysz)
{
    CUptiResult r;
    *recs = NULL;
    *n = 0;
    *lost = 0;
    if (!gt.on) {
        snprintf(why, whysz, "not recording");
        return -1;
    }
    if ((r = gt.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)) != CUPTI_SUCCESS)
        return gtrace_cupti_fail(r, "a flush", why, whysz);
    pthread_mutex_lock(&gt.lock);
    *recs = gt.store;
    *n = gt.n;
    *lost = gt.lost;
    pthread_mutex_unlock(&gt.lock);
    return 0;
}

void gtrace_clear(void)
{
    if (!gt.on)
        return;
    pthread_mutex_lock(&gt.lock);
    gt.n = 0;
    gt.lost = 0;
    gt.floor_pending = 1;
    pthread_mutex_unlock(&gt.lock);
}

#endif
