/*
 * box.c - the run box (see box.h): one child process, one CUDA context, one
 * cubin. The judge forks it, reads its device description, sends it the cubin
 * and then one request per call; the box answers each with a struct box_rep
 * and leaves outputs in the shared region. Everything the submission can
 * reach lives here, so nothing here is trusted by the judge: it re-checks
 * every byte it reads from the region.
 *
 * Sample protocol (TIMING.md items 4-6): fill inputs, poison outputs, reset
 * the persisting L2 lines, write 2x L2 then discard it, launch the blocking
 * kernel, queue start event + launches + stop event, release the blocker,
 * wait, read the events.
 */
#include "box.h"
#include "cudrv.h"
#include "fdio.h"
#include "mono.h"
#include "rbox.h"
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern const unsigned char kj_kernels_fatbin[];

#define BOX_BLOCK_TIMEOUT_NS 5000000000ull /* the blocking kernel gives up after 5 s */
#define BOX_BASELINE_SAMPLES 200

struct box {
    const struct box_cfg *cfg;
    const struct spec *spec;
    struct cudrv d;
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    CUmodule kmod, umod;        /* trusted kernels; the cubin under test */
    CUfunction f_fill, f_poison, f_flush, f_discard, f_block, f_empty, f_check, f_same, f_clock,
        f_health;
    CUfunction fn[DIR_MAX_LAUNCHES];
    CUmodule gmod;              /* the board's generate.cu (trusted), 0 if none */
    CUfunction gfn[DIR_MAX_LAUNCHES];
    struct dir_dims gdims[DIR_MAX_LAUNCHES];
    int loaded;
    int blocker;                /* hold the stream while a sample is queued (off under profilers) */
    struct box_device info;
    int cur_bench, cur_case;    /* case the buffers are sized for, -1 = none */
    const struct case_plan *cp; /* its plan (cfg->plan), NULL = none */
    CUdeviceptr buf[SPEC_MAX_BUFFERS];
    int64_t nelem[SPEC_MAX_BUFFERS];             /* the following are copied from cp */
    size_t off[SPEC_MAX_BUFFERS], size[SPEC_MAX_BUFFERS];
    CUdeviceptr ws;
    uint64_t ws_size;
    int32_t ivals[SPEC_MAX_VARS];
    struct dir_dims dims[DIR_MAX_LAUNCHES];
    CUdeviceptr flush;
    size_t flush_bytes;
    uint64_t gen;               /* bumped at every reallocation of buf[] */
    int has_ipc;
    unsigned char ipc[SPEC_MAX_BUFFERS][64];
    uint64_t peer_gen;          /* reference box: the submission's buffers mapped in peer[] */
    CUdeviceptr peer[SPEC_MAX_BUFFERS];
    CUdeviceptr bad;            /* reference box: mismatch counter */
    volatile int *flag;         /* host-mapped: [0] release flag, [1] timed-out flag */
    CUdeviceptr flag_d;
    CUevent ev0, ev1;
};

/* ---------------------------------------------------------------- helpers */

static int rep_fail(struct box_rep *rep, int status, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int rep_fail(struct box_rep *rep, int status, int line, const char *fmt, ...)
{
    va_list ap;
    rep->status = status;
    rep->line = line;
    va_start(ap, fmt);
    vsnprintf(rep->msg, sizeof rep->msg, fmt, ap);
    va_end(ap);
    return -1;
}

/* A driver failure inside the box: ours (internal) unless the caller says it
 * belongs to the submission. */
static int rep_cuda(struct box *b, struct box_rep *rep, int status, CUresult r, const char *what)
{
    const char *name = NULL, *text = NULL;
    b->d.cuGetErrorName(r, &name);
    b->d.cuGetErrorString(r, &text);
    return rep_fail(rep, status, 0, "%s: %s: %s", what, name ? name : "CUDA_ERROR_UNKNOWN",
                    text ? text : "");
}

#define BOX_CU(b, rep, call, what)                                                   \
    do {                                                                             \
        CUresult box_r_ = (b)->d.call;                                               \
        if (box_r_ != CUDA_SUCCESS)                                                  \
            return rep_cuda((b), (rep), BOX_INTERNAL, box_r_, (what));               \
    } while (0)

/* ------------------------------------------------------------ device setup */

static void box_describe(struct box *b)
{
    struct box_device *i = &b->info;
    struct { CUdevice_attribute a; int *v; } attrs[] = {
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &i->cc_major},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &i->cc_minor},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &i->sm_count},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &i->max_threads_block},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &i->max_smem_optin},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, &i->max_block[0]},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, &i->max_block[1]},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, &i->max_block[2]},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, &i->max_grid[0]},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, &i->max_grid[1]},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, &i->max_grid[2]},
        {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, &i->clock_khz},
        {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, &i->mem_clock_khz},
        {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, &i->mem_bus_bits},
    };
    int l2 = 0;
    size_t total = 0;
    for (size_t k = 0; k < sizeof attrs / sizeof attrs[0]; k++)
        if (b->d.cuDeviceGetAttribute(attrs[k].v, attrs[k].a, b->dev) != CUDA_SUCCESS)
            *attrs[k].v = 0;
    b->d.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, b->dev);
    if (b->d.cuDeviceGetCount(&i->gpu_count) != CUDA_SUCCESS)
        i->gpu_count = 0;
    i->l2_bytes = l2;
    b->d.cuDeviceTotalMem(&total, b->dev);
    i->total_mem = (long long)total;
    b->d.cuDeviceGetName(i->name, sizeof i->name, b->dev);
    b->d.cuDriverGetVersion(&i->driver_version);
    b->d.cuDeviceGetPCIBusId(i->pci, sizeof i->pci, b->dev);
    /* Arch-specific targets (sm_90a, sm_100a) exist from compute capability 9. */
    snprintf(i->arch, sizeof i->arch, "sm_%d%d%s", i->cc_major, i->cc_minor,
             i->cc_major >= 9 ? "a" : "");
}

static int box_get_kernels(struct box *b, struct box_rep *rep)
{
    struct { CUfunction *f; const char *name; } k[] = {
        {&b->f_fill, "kj_fill"}, {&b->f_poison, "kj_poison"}, {&b->f_flush, "kj_flush"},
        {&b->f_discard, "kj_discard"}, {&b->f_block, "kj_block"}, {&b->f_empty, "kj_empty"},
        {&b->f_check, "kj_check"}, {&b->f_same, "kj_same"}, {&b->f_clock, "kj_clock"},
        {&b->f_health, "kj_health"},
    };
    BOX_CU(b, rep, cuModuleLoadData(&b->kmod, kj_kernels_fatbin), "loading the judge's kernels");
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        BOX_CU(b, rep, cuModuleGetFunction(k[i].f, b->kmod, k[i].name), k[i].name);
    return 0;
}

/* Context, stream, events, limits, the flush buffer and the blocking flag. */
static int box_init(struct box *b, struct box_rep *rep)
{
    struct kj_err err;
    void *host = NULL;
    if (cudrv_load(&b->d, &err) != KJ_OK)
        return rep_fail(rep, BOX_INTERNAL, 0, "%s", err.msg);
    BOX_CU(b, rep, cuInit(0), "cuInit");
    BOX_CU(b, rep, cuDeviceGet(&b->dev, b->cfg->gpu), "cuDeviceGet");
    BOX_CU(b, rep, cuDevicePrimaryCtxRetain(&b->ctx, b->dev), "cuDevicePrimaryCtxRetain");
    BOX_CU(b, rep, cuCtxSetCurrent(b->ctx), "cuCtxSetCurrent");
    box_describe(b);
    /* Device-side limits owned by the judge, not the submission. */
    BOX_CU(b, rep, cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0), "persisting L2 limit");
    BOX_CU(b, rep, cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 8u << 20), "malloc heap limit");
    BOX_CU(b, rep, cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 1u << 20), "printf FIFO limit");
    BOX_CU(b, rep, cuStreamCreate(&b->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    BOX_CU(b, rep, cuEventCreate(&b->ev0, CU_EVENT_DEFAULT), "cuEventCreate");
    BOX_CU(b, rep, cuEventCreate(&b->ev1, CU_EVENT_DEFAULT), "cuEventCreate");
    BOX_CU(b, rep, cuMemHostAlloc(&host, 4096, CU_MEMHOSTALLOC_DEVICEMAP), "cuMemHostAlloc");
    b->flag = host;
    BOX_CU(b, rep, cuMemHostGetDevicePointer(&b->flag_d, host, 0), "cuMemHostGetDevicePointer");
    b->flush_bytes = (size_t)(b->info.l2_bytes > 0 ? b->info.l2_bytes : (64 << 20)) * 2;
    b->flush_bytes = (b->flush_bytes + 4095) / 4096 * 4096;
    BOX_CU(b, rep, cuMemAlloc(&b->flush, b->flush_bytes), "allocating the L2 flush buffer");
    BOX_CU(b, rep, cuMemAlloc(&b->bad, 4096), "allocating the mismatch counter");
    if (b->cfg->region_size > 0 &&
        b->d.cuMemHostRegister(b->cfg->region, b->cfg->region_size, 0) != CUDA_SUCCESS)
        kj_log(KJ_LOG_WARN, "box", "could not pin the shared region; copies will be slower");
    b->cur_bench = b->cur_case = -1;
    return box_get_kernels(b, rep);
}

/* ------------------------------------------------------------------- load */

/* Check a kernel's parameter layout against the leaderboard's signature:
 * the buffers, the vars as int, then the workspace pointer (a submission
 * with a workspace line) or the seed (generate.cu, gen = 1). A mismatch is
 * the submission's (rejected) or, for generate.cu, the board's (internal). */
static int box_check_params(struct box *b, const struct directives *d, CUfunction f, int l,
                            int gen, struct box_rep *rep)
{
    const struct spec *s = b->spec;
    const struct dir_launch *dl = &d->launch[l];
    size_t want[SPEC_MAX_BUFFERS + SPEC_MAX_VARS + 1], nwant = 0, got[64], ngot = 0;
    for (int i = 0; i < s->nbuffers; i++)
        want[nwant++] = sizeof(void *);
    for (int i = 0; i < s->nvars; i++)
        want[nwant++] = sizeof(int32_t);
    if (gen)
        want[nwant++] = sizeof(uint64_t);
    else if (d->workspace[0] != '\0')
        want[nwant++] = sizeof(void *);
    for (ngot = 0; ngot < 64; ngot++) {
        size_t off, sz;
        if (b->d.cuFuncGetParamInfo(f, ngot, &off, &sz) != CUDA_SUCCESS)
            break;
        got[ngot] = sz;
    }
    int same = ngot == nwant;
    for (size_t i = 0; same && i < nwant; i++)
        same = got[i] == want[i];
    if (same)
        return 0;
    char sig[512] = "", have[256] = "";
    size_t p = 0;
    for (int i = 0; i < s->nbuffers; i++)
        p += snprintf(sig + p, sizeof sig - p, "%s%s%s* %s", i ? ", " : "",
                      s->buffers[i].role == SPEC_INPUT && !gen ? "const " : "",
                      spec_dtype_name(s->buffers[i].dtype), s->buffers[i].name);
    for (int i = 0; i < s->nvars && p < sizeof sig; i++)
        p += snprintf(sig + p, sizeof sig - p, ", int %s", s->vars[i]);
    if (gen && p < sizeof sig)
        snprintf(sig + p, sizeof sig - p, ", unsigned long long seed");
    else if (d->workspace[0] != '\0' && p < sizeof sig)
        snprintf(sig + p, sizeof sig - p, ", void* workspace");
    p = 0;
    for (size_t i = 0; i < ngot && p < sizeof have; i++)
        p += snprintf(have + p, sizeof have - p, "%s%zu", i ? "," : "", got[i]);
    return rep_fail(rep, gen ? BOX_INTERNAL : BOX_REJECTED, dl->line,
                    "%sline %d: kernel '%s' takes %zu parameters of sizes (%s) bytes; the "
                    "leaderboard's signature is (%s): %zu parameters", gen ? "generate.cu " : "",
                    dl->line, dl->kernel, ngot, have, sig, nwant);
}

/* Look up and check the kernel of every launch line of d in mod. */
static int box_bind(struct box *b, const struct directives *d, CUmodule mod,
                    char (*lowered)[256], int nlaunch, CUfunction *fn, int gen,
                    struct box_rep *rep)
{
    if (nlaunch != d->nlaunch)
        return rep_fail(rep, BOX_INTERNAL, 0, "inconsistent LOAD request");
    for (int l = 0; l < nlaunch; l++) {
        const struct dir_launch *dl = &d->launch[l];
        lowered[l][255] = '\0';
        if (b->d.cuModuleGetFunction(&fn[l], mod, lowered[l]) != CUDA_SUCCESS)
            return rep_fail(rep, gen ? BOX_INTERNAL : BOX_REJECTED, dl->line,
                            "%sline %d: no kernel named '%s' in the module",
                            gen ? "generate.cu " : "", dl->line, dl->kernel);
        if (box_check_params(b, d, fn[l], l, gen, rep) != 0)
            return -1;
    }
    return 0;
}

static int box_load(struct box *b, const struct box_req *req, struct box_rep *rep)
{
    struct box_load ld;
    unsigned char *cubin = NULL;
    int rc = -1;
    if (req->payload < sizeof ld || fdio_read_full(b->cfg->fd_in, &ld, sizeof ld) != 0)
        return rep_fail(rep, BOX_INTERNAL, 0, "short LOAD request");
    if (req->payload - sizeof ld != (uint64_t)ld.cubin_size + ld.gen_size ||
        ld.cubin_size == 0 || (ld.gen_size > 0) != (b->cfg->gendirs != NULL))
        return rep_fail(rep, BOX_INTERNAL, 0, "inconsistent LOAD request");
    cubin = malloc((size_t)ld.cubin_size + ld.gen_size);
    if (cubin == NULL ||
        fdio_read_full(b->cfg->fd_in, cubin, (size_t)ld.cubin_size + ld.gen_size) != 0) {
        rep_fail(rep, BOX_INTERNAL, 0, "cannot read the cubin");
        goto out;
    }
    /* The trusted generator first: its failures are the board's, never the
     * submission's. */
    if (ld.gen_size > 0) {
        CUresult r = b->d.cuModuleLoadData(&b->gmod, cubin + ld.cubin_size);
        if (r != CUDA_SUCCESS) {
            rep_cuda(b, rep, BOX_INTERNAL, r, "loading generate.cu");
            goto out;
        }
        if (box_bind(b, b->cfg->gendirs, b->gmod, ld.gen_lowered, ld.gen_nlaunch, b->gfn, 1,
                     rep) != 0)
            goto out;
    }
    CUresult r = b->d.cuModuleLoadData(&b->umod, cubin);
    if (r != CUDA_SUCCESS) {
        rep_cuda(b, rep, BOX_REJECTED, r, "loading the compiled module");
        goto out;
    }
    if (box_bind(b, b->cfg->dirs, b->umod, ld.lowered, ld.nlaunch, b->fn, 0, rep) != 0)
        goto out;
    b->loaded = 1;
    rc = 0;
out:
    free(cubin);
    return rc;
}

/* ------------------------------------------------------------------ cases */

static void box_free_buffers(struct box *b)
{
    for (int i = 0; i < SPEC_MAX_BUFFERS; i++) {
        if (b->buf[i] != 0)
            b->d.cuMemFree(b->buf[i]);
        b->buf[i] = 0;
    }
    if (b->ws != 0)
        b->d.cuMemFree(b->ws);
    b->ws = 0;
    b->cur_bench = b->cur_case = -1;
    b->cp = NULL;
}

/* Check one launch's evaluated dimensions against the device and the kernel
 * f. A failure is the submission's (rejected); status says otherwise for
 * generate.cu. */
static int box_check_dims(struct box *b, const struct dir_launch *dl, CUfunction f,
                          const struct dir_dims *dd, int status, struct box_rep *rep)
{
    const struct box_device *i = &b->info;
    int fmax = 0, fstatic = 0;
    b->d.cuFuncGetAttribute(&fmax, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f);
    b->d.cuFuncGetAttribute(&fstatic, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f);
    static const char axis[3] = {'x', 'y', 'z'};
    for (int k = 0; k < 3; k++) {
        if (dd->grid[k] > (uint32_t)i->max_grid[k])
            return rep_fail(rep, status, dl->line, "line %d: grid.%c = %u exceeds the "
                            "device limit %d", dl->line, axis[k], dd->grid[k], i->max_grid[k]);
        if (dd->block[k] > (uint32_t)i->max_block[k])
            return rep_fail(rep, status, dl->line, "line %d: block.%c = %u exceeds the "
                            "device limit %d", dl->line, axis[k], dd->block[k], i->max_block[k]);
        if (dd->has_cluster && dd->grid[k] % dd->cluster[k] != 0)
            return rep_fail(rep, status, dl->line, "line %d: grid.%c = %u is not a "
                            "multiple of cluster.%c = %u", dl->line, axis[k], dd->grid[k],
                            axis[k], dd->cluster[k]);
    }
    uint64_t threads = (uint64_t)dd->block[0] * dd->block[1] * dd->block[2];
    if (threads > (uint64_t)fmax)
        return rep_fail(rep, status, dl->line, "line %d: block of %llu threads; kernel "
                        "'%s' can run at most %d per block on this device (registers)",
                        dl->line, (unsigned long long)threads, dl->kernel, fmax);
    if ((uint64_t)dd->smem + (uint64_t)fstatic > (uint64_t)i->max_smem_optin)
        return rep_fail(rep, status, dl->line, "line %d: smem = %u bytes plus %d static "
                        "exceeds the device's %d bytes per block", dl->line, dd->smem, fstatic,
                        i->max_smem_optin);
    if (dd->smem > 48 * 1024) {
        CUresult r = b->d.cuFuncSetAttribute(f,
                     CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)dd->smem);
        if (r != CUDA_SUCCESS)
            return rep_cuda(b, rep, status, r, "raising the dynamic shared memory limit");
    }
    return 0;
}

/* The launch lines and workspace of the case's plan, checked against the
 * device and the kernels in the order they were evaluated: generate.cu's,
 * then this box's directives (the submission's or the reference's), then
 * the workspace. A line the plan could not evaluate fails here. */
static int box_case_launches(struct box *b, const struct case_plan *cp, struct box_rep *rep)
{
    const struct spec *s = b->spec;
    const struct plan_launches *g = &cp->set[PLAN_GEN];
    const struct plan_launches *u = &cp->set[b->cfg->role_reference ? PLAN_REF : PLAN_SUB];
    if (cp->bad_var >= 0)
        return rep_fail(rep, BOX_INTERNAL, 0, "variable %s does not fit in int",
                        s->vars[cp->bad_var]);
    memcpy(b->ivals, cp->ivals, sizeof b->ivals);
    for (int l = 0; b->gmod != 0 && l < b->cfg->gendirs->nlaunch; l++) {
        const struct dir_launch *dl = &b->cfg->gendirs->launch[l];
        if (l == g->bad || l >= g->nlaunch)
            return rep_fail(rep, BOX_INTERNAL, g->err.line, "generate.cu: %s", g->err.msg);
        b->gdims[l] = g->dims[l];
        if (box_check_dims(b, dl, b->gfn[l], &b->gdims[l], BOX_INTERNAL, rep) != 0)
            return -1;
    }
    for (int l = 0; l < b->cfg->dirs->nlaunch; l++) {
        const struct dir_launch *dl = &b->cfg->dirs->launch[l];
        if (l == u->bad || l >= u->nlaunch)
            return rep_fail(rep, BOX_REJECTED, u->err.line, "%s", u->err.msg);
        b->dims[l] = u->dims[l];
        if (box_check_dims(b, dl, b->fn[l], &b->dims[l], BOX_REJECTED, rep) != 0)
            return -1;
    }
    if (u->bad >= 0)
        return rep_fail(rep, BOX_REJECTED, u->err.line, "%s", u->err.msg);
    b->ws_size = u->ws_bytes;
    return 0;
}

/* Size the buffers for case (bench, idx), reusing them when it is unchanged. */
static int box_setup_case(struct box *b, int bench, int idx, struct box_rep *rep)
{
    const struct case_plan *cp = plan_case(b->cfg->plan, bench, idx);
    if (cp == NULL)
        return rep_fail(rep, BOX_INTERNAL, 0, "no case %d", idx);
    if (b->cur_bench == bench && b->cur_case == idx)
        return 0;
    box_free_buffers(b);
    if (cp->total > b->cfg->region_size)
        return rep_fail(rep, BOX_INTERNAL, 0, "region too small for the case");
    b->cp = cp;
    memcpy(b->off, cp->off, sizeof b->off);
    memcpy(b->size, cp->size, sizeof b->size);
    memcpy(b->nelem, cp->nelem, sizeof b->nelem);
    for (int i = 0; i < b->spec->nbuffers; i++)
        BOX_CU(b, rep, cuMemAlloc(&b->buf[i], b->size[i]), "allocating a buffer");
    if (box_case_launches(b, cp, rep) != 0)
        return -1;
    if (b->ws_size > 0)
        BOX_CU(b, rep, cuMemAlloc(&b->ws, b->ws_size), "allocating the workspace");
    b->cur_bench = bench;
    b->cur_case = idx;
    b->gen++;
    b->has_ipc = 1;
    for (int i = 0; i < b->spec->nbuffers && b->has_ipc; i++) {
        CUipcMemHandle h;
        if (b->d.cuIpcGetMemHandle(&h, b->buf[i]) != CUDA_SUCCESS)
            b->has_ipc = 0;
        else
            memcpy(b->ipc[i], &h, sizeof b->ipc[i]);
    }
    return 0;
}

/* Tell the judge where this box's buffers are, for the reference box. */
static void box_share(const struct box *b, struct box_rep *rep)
{
    rep->has_ipc = b->has_ipc;
    rep->gen = b->gen;
    memcpy(rep->ipc, b->ipc, sizeof rep->ipc);
}

static unsigned box_grid_for(const struct box *b, int64_t n)
{
    int64_t blocks = (n + 255) / 256, cap = (int64_t)b->info.sm_count * 16;
    if (cap <= 0)
        cap = 1024;
    return (unsigned)(blocks < 1 ? 1 : blocks > cap ? cap : blocks);
}

static int box_launch_set(struct box *b, const struct directives *d, const CUfunction *fn,
                          const struct dir_dims *dims, void **args, int status,
                          struct box_rep *rep);

/* The leading kernel arguments over buffer set buf: the buffers, then the
 * vars as int. Returns how many; the caller appends the workspace (a
 * submission) or the seed (generate.cu). */
static int box_args(struct box *b, CUdeviceptr *buf, void **args)
{
    int n = 0;
    for (int i = 0; i < b->spec->nbuffers; i++)
        args[n++] = &buf[i];
    for (int v = 0; v < b->spec->nvars; v++)
        args[n++] = &b->ivals[v];
    return n;
}

/* Queue: fresh inputs for seed (the fill kernel, then the board's
 * generate.cu, which may rewrite any input), poisoned outputs, zeroed
 * workspace. */
static int box_prepare_set(struct box *b, CUdeviceptr *buf, uint64_t seed, uint64_t poison,
                           struct box_rep *rep)
{
    for (int i = 0; i < b->spec->nbuffers; i++) {
        const struct spec_buffer *sb = &b->spec->buffers[i];
        int dtype = (int)sb->dtype, dist = (int)sb->dist;
        uint64_t n = (uint64_t)b->nelem[i], ps = poison + (uint64_t)i;
        uint32_t bi = (uint32_t)i;
        double p0 = sb->p0, p1 = sb->p1;
        void *fill_args[] = {&buf[i], &dtype, &n, &seed, &bi, &dist, &p0, &p1};
        void *poison_args[] = {&buf[i], &dtype, &n, &ps};
        unsigned g = box_grid_for(b, b->nelem[i]);
        if (sb->role == SPEC_INPUT && sb->dist == SPEC_DIST_GENERATED)
            BOX_CU(b, rep, cuMemsetD8Async(buf[i], 0, b->size[i], b->stream),
                   "zeroing a generated input");
        else if (sb->role == SPEC_INPUT)
            BOX_CU(b, rep, cuLaunchKernel(b->f_fill, g, 1, 1, 256, 1, 1, 0, b->stream,
                                          fill_args, NULL), "filling inputs");
        else
            BOX_CU(b, rep, cuLaunchKernel(b->f_poison, g, 1, 1, 256, 1, 1, 0, b->stream,
                                          poison_args, NULL), "poisoning outputs");
    }
    if (b->gmod != 0) {
        void *gargs[SPEC_MAX_BUFFERS + SPEC_MAX_VARS + 1];
        int ng = box_args(b, buf, gargs);
        gargs[ng++] = &seed;
        if (box_launch_set(b, b->cfg->gendirs, b->gfn, b->gdims, gargs, BOX_INTERNAL, rep) != 0)
            return -1;
    }
    if (b->ws != 0)
        BOX_CU(b, rep, cuMemsetD8Async(b->ws, 0, b->ws_size, b->stream), "zeroing the workspace");
    return 0;
}

static int box_prepare(struct box *b, uint64_t seed, uint64_t poison, struct box_rep *rep)
{
    return box_prepare_set(b, b->buf, seed, poison, rep);
}

/* Queue the launches of d (kernels fn, dimensions dims) in directive order
 * with args. A launch the driver refuses is reported with status and its
 * line (the submission's: rejected). */
static int box_launch_set(struct box *b, const struct directives *d, const CUfunction *fn,
                          const struct dir_dims *dims, void **args, int status,
                          struct box_rep *rep)
{
    for (int l = 0; l < d->nlaunch; l++) {
        const struct dir_dims *dd = &dims[l];
        CUlaunchConfig lc;
        CUlaunchAttribute attr;
        memset(&lc, 0, sizeof lc);
        lc.gridDimX = dd->grid[0]; lc.gridDimY = dd->grid[1]; lc.gridDimZ = dd->grid[2];
        lc.blockDimX = dd->block[0]; lc.blockDimY = dd->block[1]; lc.blockDimZ = dd->block[2];
        lc.sharedMemBytes = dd->smem;
        lc.hStream = b->stream;
        if (dd->has_cluster) {
            memset(&attr, 0, sizeof attr);
            attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
            attr.value.clusterDim.x = dd->cluster[0];
            attr.value.clusterDim.y = dd->cluster[1];
            attr.value.clusterDim.z = dd->cluster[2];
            lc.attrs = &attr;
            lc.numAttrs = 1;
        }
        CUresult r = b->d.cuLaunchKernelEx(&lc, fn[l], args, NULL);
        if (r != CUDA_SUCCESS) {
            int line = d->launch[l].line;
            char what[64];
            snprintf(what, sizeof what, "%sline %d: launch refused",
                     status == BOX_REJECTED ? "" : "generate.cu ", line);
            rep_cuda(b, rep, status, r, what);
            rep->line = line;
            return -1;
        }
    }
    return 0;
}

/* Queue the submission's launches: buffers, vars, then the workspace. */
static int box_launch_all(struct box *b, struct box_rep *rep)
{
    void *args[SPEC_MAX_BUFFERS + SPEC_MAX_VARS + 1];
    int n = box_args(b, b->buf, args);
    if (b->cfg->dirs->workspace[0] != '\0')
        args[n++] = &b->ws;
    return box_launch_set(b, b->cfg->dirs, b->fn, b->dims, args, BOX_REJECTED, rep);
}

/* Wait for everything queued; a failure now is the submission's (it ran last). */
static int box_sync_user(struct box *b, struct box_rep *rep)
{
    CUresult r = b->d.cuCtxSynchronize();
    if (r != CUDA_SUCCESS)
        return rep_cuda(b, rep, BOX_RUNTIME, r, "the kernel failed");
    return 0;
}

static int box_copy_out(struct box *b, const struct box_req *req, struct box_rep *rep)
{
    for (int i = 0; i < b->spec->nbuffers; i++) {
        if (b->spec->buffers[i].role == SPEC_INPUT && !req->copy_inputs)
            continue;
        BOX_CU(b, rep, cuMemcpyDtoH(b->cfg->region + b->off[i], b->buf[i], b->size[i]),
               "copying results to the host");
    }
    return 0;
}

/* ---------------------------------------------------------------- timing */

/* Queue a cold L2 for what follows: persisting lines reset, then the flush
 * buffer (at least 2x L2) written with fresh values and discarded. */
static int box_flush_l2(struct box *b, struct box_rep *rep)
{
    uint64_t n16 = b->flush_bytes / 16, nlines = b->flush_bytes / 128;
    uint32_t salt = (uint32_t)rand();
    void *fa[] = {&b->flush, &n16, &salt}, *da[] = {&b->flush, &nlines};
    BOX_CU(b, rep, cuCtxResetPersistingL2Cache(), "cuCtxResetPersistingL2Cache");
    BOX_CU(b, rep, cuLaunchKernel(b->f_flush, box_grid_for(b, (int64_t)n16), 1, 1, 256, 1, 1, 0,
                                  b->stream, fa, NULL), "flushing L2");
    BOX_CU(b, rep, cuLaunchKernel(b->f_discard, box_grid_for(b, (int64_t)nlines), 1, 1, 256, 1,
                                  1, 0, b->stream, da, NULL), "discarding L2");
    return 0;
}

/* One sample: L2 reset and flush, then [start, launches, stop] queued behind
 * the blocking kernel and released together. *ns is the event time. empty:
 * 0 the submission's launches, 1 the empty kernel, 2 nothing at all. */
static int box_timed(struct box *b, int empty, double *ns, struct box_rep *rep)
{
    uint64_t tmo = BOX_BLOCK_TIMEOUT_NS;
    CUdeviceptr tflag = b->flag_d + sizeof(int);
    void *ba[] = {&b->flag_d, &tflag, &tmo};
    float ms = 0;
    if (box_flush_l2(b, rep) != 0)
        return -1;
    b->flag[0] = 0;
    b->flag[1] = 0;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (b->blocker)
        BOX_CU(b, rep, cuLaunchKernel(b->f_block, 1, 1, 1, 1, 1, 1, 0, b->stream, ba, NULL),
               "launching the blocking kernel");
    BOX_CU(b, rep, cuEventRecord(b->ev0, b->stream), "cuEventRecord");
    int lrc = 0;
    if (empty == 2) {
        /* an empty event pair: the events' own overhead */
    } else if (empty) {
        CUresult r = b->d.cuLaunchKernel(b->f_empty, 1, 1, 1, 1, 1, 1, 0, b->stream, NULL, NULL);
        if (r != CUDA_SUCCESS)
            lrc = rep_cuda(b, rep, BOX_INTERNAL, r, "launching the empty kernel");
    } else {
        lrc = box_launch_all(b, rep);
    }
    if (lrc == 0 && b->d.cuEventRecord(b->ev1, b->stream) != CUDA_SUCCESS)
        lrc = rep_fail(rep, BOX_INTERNAL, 0, "cuEventRecord failed");
    __atomic_store_n(&b->flag[0], 1, __ATOMIC_SEQ_CST);
    if (box_sync_user(b, rep) != 0 || lrc != 0)
        return -1;
    if (b->flag[1] != 0)
        return rep_fail(rep, BOX_INTERNAL, 0, "the blocking kernel timed out while the sample "
                        "was being queued (host too slow?)");
    BOX_CU(b, rep, cuEventElapsedTime(&ms, b->ev0, b->ev1), "cuEventElapsedTime");
    *ns = (double)ms * 1e6;
    return 0;
}

static int box_sample(struct box *b, const struct box_req *req, struct box_rep *rep)
{
    if (box_setup_case(b, req->bench, req->case_index, rep) != 0 ||
        box_prepare(b, req->seed, req->poison_seed, rep) != 0 ||
        box_timed(b, 0, &rep->ns, rep) != 0)
        return -1;
    box_share(b, rep);
    return req->no_copy ? 0 : box_copy_out(b, req, rep);
}

/* Untimed samples with the full protocol until req->seconds have passed and
 * at least 10 ran: clocks and caches settle before anything is recorded. */
static int box_warmup(struct box *b, const struct box_req *req, struct box_rep *rep)
{
    double t0 = mono_now(), ns;
    if (box_setup_case(b, req->bench, req->case_index, rep) != 0)
        return -1;
    for (rep->count = 0; rep->count < 100000; rep->count++) {
        if (rep->count >= 10 && mono_now() - t0 >= req->seconds)
            break;
        if (box_prepare(b, req->seed + (uint64_t)rep->count, req->poison_seed, rep) != 0 ||
            box_timed(b, 0, &ns, rep) != 0)
            return -1;
    }
    return 0;
}

/* The median of n finite samples, as stats.h computes every shape's. */
static double box_median(const double *s, size_t n)
{
    struct stats_summary st;
    return stats_summarize(s, n, &st) == KJ_OK ? st.median : 0;
}

#define BOX_COPY_BYTES (512u << 20)

/* Best of five 512 MiB device-to-device copies: the measured peak bandwidth
 * that the physical floor divides by (bytes read plus bytes written). */
static int box_copy_bandwidth(struct box *b, struct box_rep *rep)
{
    CUdeviceptr buf = 0;
    float best = 0, ms;
    int rc = 0;
    if (b->d.cuMemAlloc(&buf, 2 * (size_t)BOX_COPY_BYTES) != CUDA_SUCCESS)
        return 0; /* no room: the floor falls back to the theoretical peak */
    for (int i = 0; i < 6 && rc == 0; i++) {
        if (b->d.cuEventRecord(b->ev0, b->stream) != CUDA_SUCCESS ||
            b->d.cuMemcpyDtoDAsync(buf + BOX_COPY_BYTES, buf, BOX_COPY_BYTES, b->stream) != CUDA_SUCCESS ||
            b->d.cuEventRecord(b->ev1, b->stream) != CUDA_SUCCESS ||
            b->d.cuEventSynchronize(b->ev1) != CUDA_SUCCESS ||
            b->d.cuEventElapsedTime(&ms, b->ev0, b->ev1) != CUDA_SUCCESS)
            rc = rep_fail(rep, BOX_INTERNAL, 0, "measuring the copy bandwidth failed");
        else if (i > 0 && (best == 0 || ms < best))
            best = ms;
    }
    b->d.cuMemFree(buf);
    if (rc == 0 && best > 0)
        rep->copy_gbs = 2.0 * BOX_COPY_BYTES / (best * 1e-3) / 1e9;
    return rc;
}

/* Median of the empty kernel measured with the same protocol, and the
 * measured copy bandwidth. */
static int box_baseline(struct box *b, struct box_rep *rep)
{
    double s[BOX_BASELINE_SAMPLES];
    for (int i = 0; i < 20; i++)
        if (box_timed(b, 1, &s[0], rep) != 0)
            return -1;
    for (int i = 0; i < BOX_BASELINE_SAMPLES; i++)
        if (box_timed(b, 1, &s[i], rep) != 0)
            return -1;
    rep->ns = box_median(s, BOX_BASELINE_SAMPLES);
    rep->count = BOX_BASELINE_SAMPLES;
    for (int i = 0; i < BOX_BASELINE_SAMPLES; i++)
        if (box_timed(b, 2, &s[i], rep) != 0)
            return -1;
    rep->event_ns = box_median(s, BOX_BASELINE_SAMPLES);
    return box_copy_bandwidth(b, rep);
}

static int box_once(struct box *b, const struct box_req *req, struct box_rep *rep)
{
    if (box_setup_case(b, req->bench, req->case_index, rep) != 0 ||
        box_prepare(b, req->seed, req->poison_seed, rep) != 0)
        return -1;
    if (box_launch_all(b, rep) != 0) {
        b->d.cuCtxSynchronize();
        return -1;
    }
    if (box_sync_user(b, rep) != 0)
        return -1;
    box_share(b, rep);
    return req->no_copy ? 0 : box_copy_out(b, req, rep);
}

/* ------------------------------------------------------------ verification */

/* Reference box: map the submission box's buffers, once per generation. */
static int box_map_peer(struct box *b, const struct box_verify *v, struct box_rep *rep)
{
    if (v->gen == b->peer_gen && b->peer[0] != 0)
        return 0;
    for (int i = 0; i < SPEC_MAX_BUFFERS; i++) {
        if (b->peer[i] != 0)
            b->d.cuIpcCloseMemHandle(b->peer[i]);
        b->peer[i] = 0;
    }
    for (int i = 0; i < b->spec->nbuffers; i++) {
        CUipcMemHandle h;
        memcpy(&h, v->ipc[i], sizeof h);
        CUresult r = b->d.cuIpcOpenMemHandle(&b->peer[i], h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
        if (r != CUDA_SUCCESS)
            return rep_cuda(b, rep, BOX_INTERNAL, r, "mapping the submission's buffers");
    }
    b->peer_gen = v->gen;
    return 0;
}

/* Reference box: count the submission's output elements that miss the
 * tolerance and (with copy_inputs) its input words that changed, on the GPU,
 * against this box's own buffers for the same case and seed. */
static int box_verify(struct box *b, const struct box_req *req, struct box_rep *rep)
{
    struct box_verify v;
    unsigned long long bad = 0;
    if (req->payload != sizeof v || fdio_read_full(b->cfg->fd_in, &v, sizeof v) != 0)
        return rep_fail(rep, BOX_INTERNAL, 0, "short VERIFY request");
    if (b->cur_bench != req->bench || b->cur_case != req->case_index)
        return rep_fail(rep, BOX_INTERNAL, 0, "VERIFY for a case this box did not run");
    if (box_map_peer(b, &v, rep) != 0)
        return -1;
    BOX_CU(b, rep, cuMemsetD8Async(b->bad, 0, sizeof bad, b->stream), "zeroing the counter");
    for (int i = 0; i < b->spec->nbuffers; i++) {
        const struct spec_buffer *sb = &b->spec->buffers[i];
        int dtype = (int)sb->dtype;
        uint64_t n = (uint64_t)b->nelem[i], nbytes = b->size[i];
        double atol = b->cp->atol[i], rtol = b->cp->rtol[i]; /* 0 for inputs */
        void *ca[] = {&b->buf[i], &b->peer[i], &dtype, &n, &atol, &rtol, &b->bad};
        void *sa[] = {&b->buf[i], &b->peer[i], &nbytes, &b->bad};
        unsigned g = box_grid_for(b, b->nelem[i]);
        if (sb->role == SPEC_OUTPUT)
            BOX_CU(b, rep, cuLaunchKernel(b->f_check, g, 1, 1, 256, 1, 1, 0, b->stream, ca, NULL),
                   "launching the check");
        else if (req->copy_inputs)
            BOX_CU(b, rep, cuLaunchKernel(b->f_same, g, 1, 1, 256, 1, 1, 0, b->stream, sa, NULL),
                   "launching the input check");
    }
    BOX_CU(b, rep, cuStreamSynchronize(b->stream), "verifying");
    BOX_CU(b, rep, cuMemcpyDtoH(&bad, b->bad, sizeof bad), "reading the mismatch count");
    rep->count = (long)bad;
    return 0;
}

/* SM clock in MHz from one 200 us spin (clock64 cycles / globaltimer ns). */
static int box_clock(struct box *b, struct box_rep *rep)
{
    unsigned long long v[2] = {0, 0};
    void *args[] = {&b->bad};
    BOX_CU(b, rep, cuLaunchKernel(b->f_clock, 1, 1, 1, 1, 1, 1, 0, b->stream, args, NULL),
           "launching the clock probe");
    BOX_CU(b, rep, cuStreamSynchronize(b->stream), "clock probe");
    BOX_CU(b, rep, cuMemcpyDtoH(v, b->bad, sizeof v), "reading the clock probe");
    rep->ns = v[1] > 0 ? (double)v[0] / (double)v[1] * 1e3 : 0;
    return 0; /* NVML is read by the judge: the box cannot open its device files */
}

static int box_copy(struct box *b, const struct box_req *req, struct box_rep *rep)
{
    if (b->cur_bench != req->bench || b->cur_case != req->case_index)
        return rep_fail(rep, BOX_INTERNAL, 0, "COPY for a case this box did not run");
    return box_copy_out(b, req, rep);
}

/* -------------------------------------------------------------- main loop */

#define BOX_GRAPH_MAX_SETS 64
#define BOX_GRAPH_MAX_LAUNCHES 100
#define BOX_GRAPH_REPLAY_NS 5e6   /* one replay stays under 5 ms */
#define BOX_GRAPH_REPLAYS 15
#define BOX_GRAPH_MAX_WS (1ull << 30) /* all launches' workspaces together */

/* TIMING.md item 7: N launches of the current case captured in one graph,
 * rotating through K buffer sets whose footprint is at least 2x L2, each
 * replay after the same L2 flush as a sample; rep->ns is the median replay
 * time over N. Not verified and never ranked: a cross-check of the event
 * median for short shapes. A capture the driver refuses gives count 0. */
static int box_graph(struct box *b, const struct box_req *req, struct box_rep *rep)
{
    CUdeviceptr sets[BOX_GRAPH_MAX_SETS][SPEC_MAX_BUFFERS], ws[BOX_GRAPH_MAX_LAUNCHES];
    double t[BOX_GRAPH_REPLAYS];
    int nws = 0;
    size_t case_bytes = 0;
    int K, N, nalloc = 1, rc = -1;
    CUgraph g = NULL;
    CUgraphExec ge = NULL;
    CUresult r;

    if (box_setup_case(b, req->bench, req->case_index, rep) != 0)
        return -1;
    for (int i = 0; i < b->spec->nbuffers; i++)
        case_bytes += b->size[i];
    K = (int)((b->flush_bytes + case_bytes - 1) / (case_bytes ? case_bytes : 1));
    K = K < 1 ? 1 : K > BOX_GRAPH_MAX_SETS ? BOX_GRAPH_MAX_SETS : K;
    N = req->seconds > 0 ? (int)(BOX_GRAPH_REPLAY_NS / (req->seconds * 1e9)) : 10;
    N = N < 10 ? 10 : N > BOX_GRAPH_MAX_LAUNCHES ? BOX_GRAPH_MAX_LAUNCHES : N;
    memcpy(sets[0], b->buf, sizeof sets[0]);
    for (; nalloc < K; nalloc++) {
        for (int i = 0; i < b->spec->nbuffers; i++)
            if (b->d.cuMemAlloc(&sets[nalloc][i], b->size[i]) != CUDA_SUCCESS) {
                for (int k = 0; k < i; k++)
                    b->d.cuMemFree(sets[nalloc][k]);
                goto sized; /* no room for more sets: fewer, said in count */
            }
    }
sized:
    K = nalloc;
    /* The contract zeroes the workspace before every run: each launch of the
     * graph gets its own, zeroed before each replay. */
    if (b->ws != 0) {
        if ((uint64_t)N * b->ws_size > BOX_GRAPH_MAX_WS) {
            snprintf(rep->msg, sizeof rep->msg, "no graph: %d workspaces of %llu bytes are too many",
                     N, (unsigned long long)b->ws_size);
            rc = 0;
            goto out;
        }
        for (; nws < N; nws++)
            if (b->d.cuMemAlloc(&ws[nws], b->ws_size) != CUDA_SUCCESS) {
                snprintf(rep->msg, sizeof rep->msg, "no graph: no memory for its workspaces");
                rc = 0;
                goto out;
            }
    }
    for (int k = 0; k < K; k++)
        if (box_prepare_set(b, sets[k], req->seed + (uint64_t)k, req->poison_seed, rep) != 0)
            goto out;
    if (box_sync_user(b, rep) != 0)
        goto out;
    if ((r = b->d.cuStreamBeginCapture(b->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)) !=
        CUDA_SUCCESS) {
        rep_cuda(b, rep, BOX_OK, r, "graph capture");
        rc = 0;
        goto out;
    }
    int lrc = 0;
    for (int n = 0; n < N && lrc == 0; n++) {
        void *args[SPEC_MAX_BUFFERS + SPEC_MAX_VARS + 1];
        int na = box_args(b, sets[n % K], args);
        if (b->cfg->dirs->workspace[0] != '\0')
            args[na++] = b->ws != 0 ? &ws[n] : &b->ws;
        lrc = box_launch_set(b, b->cfg->dirs, b->fn, b->dims, args, BOX_OK, rep);
    }
    r = b->d.cuStreamEndCapture(b->stream, &g);
    if (lrc != 0 || r != CUDA_SUCCESS ||
        (r = b->d.cuGraphInstantiateWithFlags(&ge, g, 0)) != CUDA_SUCCESS ||
        (r = b->d.cuGraphUpload(ge, b->stream)) != CUDA_SUCCESS) {
        if (lrc == 0)
            rep_cuda(b, rep, BOX_OK, r, "graph instantiation");
        rep->status = BOX_OK;
        rc = 0;
        goto out;
    }
    /* One untimed replay, then the timed ones. */
    for (int k = -1; k < BOX_GRAPH_REPLAYS; k++) {
        float ms = 0;
        for (int w = 0; w < nws; w++)
            BOX_CU(b, rep, cuMemsetD8Async(ws[w], 0, b->ws_size, b->stream), "zeroing a workspace");
        if (box_flush_l2(b, rep) != 0)
            goto out;
        BOX_CU(b, rep, cuEventRecord(b->ev0, b->stream), "cuEventRecord");
        BOX_CU(b, rep, cuGraphLaunch(ge, b->stream), "cuGraphLaunch");
        BOX_CU(b, rep, cuEventRecord(b->ev1, b->stream), "cuEventRecord");
        if (box_sync_user(b, rep) != 0)
            goto out;
        BOX_CU(b, rep, cuEventElapsedTime(&ms, b->ev0, b->ev1), "cuEventElapsedTime");
        if (k >= 0)
            t[k] = (double)ms * 1e6 / N;
    }
    rep->ns = box_median(t, BOX_GRAPH_REPLAYS);
    rep->count = N;
    snprintf(rep->msg, sizeof rep->msg, "%d launches per replay over %d buffer sets", N, K);
    rc = 0;
out:
    if (ge != NULL)
        b->d.cuGraphExecDestroy(ge);
    if (g != NULL)
        b->d.cuGraphDestroy(g);
    for (int k = 1; k < nalloc; k++)
        for (int i = 0; i < b->spec->nbuffers; i++)
            b->d.cuMemFree(sets[k][i]);
    for (int w = 0; w < nws; w++)
        b->d.cuMemFree(ws[w]);
    /* The shape's own buffers and workspace go back to the state a call
     * expects (the next SAMPLE prepares them again anyway). */
    if (b->ws != 0)
        b->d.cuMemsetD8Async(b->ws, 0, b->ws_size, b->stream);
    return rc;
}

#define BOX_HEALTH_N (16u << 20)

/* out[i] = 3 i + 1 over BOX_HEALTH_N words, every one checked on the host. */
static int box_health_op(struct box *b, struct box_rep *rep)
{
    uint32_t n = BOX_HEALTH_N, *host = malloc((size_t)n * 4);
    CUdeviceptr d = 0;
    void *args[] = {&d, &n};
    int rc = -1;
    CUresult r;
    if (host == NULL)
        return rep_fail(rep, BOX_INTERNAL, 0, "out of host memory");
    if ((r = b->d.cuMemAlloc(&d, (size_t)n * 4)) != CUDA_SUCCESS ||
        (r = b->d.cuMemsetD8Async(d, 0xff, (size_t)n * 4, b->stream)) != CUDA_SUCCESS ||
        (r = b->d.cuLaunchKernel(b->f_health, (n + 255) / 256, 1, 1, 256, 1, 1, 0, b->stream,
                                 args, NULL)) != CUDA_SUCCESS ||
        (r = b->d.cuStreamSynchronize(b->stream)) != CUDA_SUCCESS ||
        (r = b->d.cuMemcpyDtoH(host, d, (size_t)n * 4)) != CUDA_SUCCESS) {
        rep_cuda(b, rep, BOX_INTERNAL, r, "health check");
        goto out;
    }
    for (uint32_t i = 0; i < n; i++)
        if (host[i] != i * 3u + 1u) {
            rep_fail(rep, BOX_INTERNAL, 0, "health check: element %u is %u, expected %u", i,
                     host[i], i * 3u + 1u);
            goto out;
        }
    rc = 0;
out:
    if (d != 0)
        b->d.cuMemFree(d);
    free(host);
    return rc;
}

static int box_dispatch(struct box *b, const struct box_req *req, struct box_rep *rep)
{
    if (req->op == BOX_OP_LOAD)
        return box_load(b, req, rep);
    if (req->op == BOX_OP_BASELINE)
        return box_baseline(b, rep);
    if (req->op == BOX_OP_CLOCK)
        return box_clock(b, rep);
    if (req->op == BOX_OP_HEALTH) /* the judge's own kernel: a fresh box loads nothing */
        return box_health_op(b, rep);
    if (!b->loaded)
        return rep_fail(rep, BOX_INTERNAL, 0, "request before LOAD");
    switch (req->op) {
    case BOX_OP_CASE: return box_once(b, req, rep);
    case BOX_OP_SAMPLE: return box_sample(b, req, rep);
    case BOX_OP_WARMUP: return box_warmup(b, req, rep);
    case BOX_OP_VERIFY: return box_verify(b, req, rep);
    case BOX_OP_COPY: return box_copy(b, req, rep);
    case BOX_OP_GRAPH: return box_graph(b, req, rep);
    }
    return rep_fail(rep, BOX_INTERNAL, 0, "unknown request %d", req->op);
}

void box_main(const struct box_cfg *cfg0)
{
    static struct box b; /* one per process: this process exists only to hold it */
    static struct box_cfg cfgv;
    const struct box_cfg *cfg = &cfgv;
    struct box_rep rep;
    struct box_req req;
    struct rbox rb;
    struct kj_err err;
    int fds[3] = {cfg0->fd_in, cfg0->fd_out, cfg0->fd_info};

    memset(&b, 0, sizeof b);
    memset(&rep, 0, sizeof rep);
    memset(&rb, 0, sizeof rb);
    kj_err_clear(&err);
    cfgv = *cfg0;
    /* The sandbox's first half, before CUDA; a failure is reported like a
     * failed context (the judge's error, the job goes back). */
    rb.skip = cfg0->rbox_skip;
    if (rbox_prepare(&rb, fds, &err) != KJ_OK) {
        kj_printable(b.info.error, sizeof b.info.error, err.msg, sizeof err.msg);
        /* The info pipe is at its old number or, if the fds moved, at its new one. */
        if (fdio_write_full(fds[2], &b.info, sizeof b.info) != 0)
            (void)!fdio_write_full(RBOX_FD_INFO, &b.info, sizeof b.info);
        _exit(3);
    }
    cfgv.fd_in = RBOX_FD_IN;
    cfgv.fd_out = RBOX_FD_OUT;
    cfgv.fd_info = RBOX_FD_INFO;
    b.cfg = cfg;
    b.spec = cfg->spec;
    /* A profiler that serialises launches would wait on the blocking kernel
     * forever: KJUDGE_NO_BLOCKER=1 turns it off (host launch latency then
     * lands in the samples; for profiling only). */
    b.blocker = getenv("KJUDGE_NO_BLOCKER") == NULL;
    srand((unsigned)getpid());
    if (box_init(&b, &rep) != 0)
        kj_printable(b.info.error, sizeof b.info.error, rep.msg, sizeof rep.msg);
    /* The second half: from here on the submission's code may run. */
    else if (rbox_lock(&rb, &err) != KJ_OK)
        kj_printable(b.info.error, sizeof b.info.error, err.msg, sizeof err.msg);
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* a change of uid cleared it */
    if (getppid() == 1)
        _exit(0); /* the judge died before that */
    rbox_describe(rb.applied, b.info.sandbox, sizeof b.info.sandbox);
    if (fdio_write_full(cfg->fd_info, &b.info, sizeof b.info) != 0 || b.info.error[0] != '\0')
        _exit(3);
    for (;;) {
        if (fdio_read_full(cfg->fd_in, &req, sizeof req) != 0)
            _exit(0); /* the judge went away */
        if (req.op == BOX_OP_QUIT)
            _exit(0);
        memset(&rep, 0, sizeof rep);
        box_dispatch(&b, &req, &rep);
        if (fdio_write_full(cfg->fd_out, &rep, sizeof rep) != 0)
            _exit(3);
        /* After a fault the context is gone; the judge kills us or sends QUIT. */
    }
}

/* ------------------------------------------------------------ parent side */

int box_start(const struct box_cfg *cfg, struct box_proc *out, struct kj_err *err)
{
    int req[2] = {-1, -1}, rep[2] = {-1, -1}, info[2] = {-1, -1};
    unsigned skip = 0;
    memset(out, 0, sizeof *out);
    out->pid = -1;
    int rc = rbox_parse_skip(getenv("KJUDGE_RBOX_SKIP"), &skip, err);
    if (rc != KJ_OK)
        return rc;
    if (pipe2(req, O_CLOEXEC) != 0 || pipe2(rep, O_CLOEXEC) != 0 || pipe2(info, O_CLOEXEC) != 0)
        goto fail;
    pid_t pid = fork();
    if (pid < 0)
        goto fail;
    if (pid == 0) {
        struct box_cfg c = *cfg;
        c.rbox_skip = skip;
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(req[1]);
        close(rep[0]);
        close(info[0]);
        c.fd_in = req[0];
        c.fd_out = rep[1];
        c.fd_info = info[1];
        if (c.unmap != NULL)
            munmap(c.unmap, c.unmap_size);
        box_main(&c);
    }
    close(req[0]);
    close(rep[1]);
    close(info[1]);
    out->pid = pid;
    out->fd_req = req[1];
    out->fd_rep = rep[0];
    out->fd_info = info[0];
    return KJ_OK;
fail:
    for (int i = 0; i < 2; i++) {
        if (req[i] >= 0) close(req[i]);
        if (rep[i] >= 0) close(rep[i]);
        if (info[i] >= 0) close(info[i]);
    }
    return KJ_FAIL(err, KJ_EIO, "cannot start a box: %s", strerror(errno));
}

int box_read_info(struct box_proc *p, struct box_device *dev, int timeout_ms, struct kj_err *err)
{
    int r = fdio_wait(p->fd_info, mono_now() + timeout_ms / 1000.0);
    if (r == 0)
        return KJ_FAIL(err, KJ_ETIMEOUT, "the GPU box did not start within %d ms", timeout_ms);
    if (r < 0 || fdio_read_full(p->fd_info, dev, sizeof *dev) != 0)
        return KJ_FAIL(err, KJ_EIO, "the GPU box died while starting");
    dev->error[sizeof dev->error - 1] = '\0';
    dev->name[sizeof dev->name - 1] = '\0';
    dev->arch[sizeof dev->arch - 1] = '\0';
    if (dev->error[0] != '\0')
        return KJ_FAIL(err, KJ_ECUDA, "%s", dev->error);
    return KJ_OK;
}

int box_send(struct box_proc *p, const struct box_req *req, const void *payload,
             struct kj_err *err)
{
    if (fdio_write_full(p->fd_req, req, sizeof *req) != 0 ||
        (req->payload > 0 && fdio_write_full(p->fd_req, payload, req->payload) != 0))
        return KJ_FAIL(err, KJ_EIO, "the GPU box is gone");
    return KJ_OK;
}

int box_call(struct box_proc *p, const struct box_req *req, const void *payload,
             struct box_rep *rep, int timeout_ms, struct kj_err *err)
{
    int rc = box_send(p, req, payload, err);
    return rc != KJ_OK ? rc : box_recv(p, rep, timeout_ms, err);
}

int box_recv(struct box_proc *p, struct box_rep *rep, int timeout_ms, struct kj_err *err)
{
    int r = fdio_wait(p->fd_rep, mono_now() + timeout_ms / 1000.0);
    if (r == 0)
        return KJ_FAIL(err, KJ_ETIMEOUT, "no answer within %.1f s", timeout_ms / 1000.0);
    if (r < 0 || fdio_read_full(p->fd_rep, rep, sizeof *rep) != 0)
        return KJ_FAIL(err, KJ_EIO, "the GPU box died");
    rep->msg[sizeof rep->msg - 1] = '\0';
    return KJ_OK;
}

void box_kill(struct box_proc *p)
{
    if (p->pid > 0) {
        kill(p->pid, SIGKILL);
        while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
            ;
        rbox_cleanup(p->pid);
        p->pid = -1;
    }
    if (p->fd_req > 0) close(p->fd_req);
    if (p->fd_rep > 0) close(p->fd_rep);
    if (p->fd_info > 0) close(p->fd_info);
    p->fd_req = p->fd_rep = p->fd_info = -1;
}

int box_probe(int gpu, struct box_device *dev, struct kj_err *err)
{
    struct box_cfg c;
    struct box_proc p;
    memset(&c, 0, sizeof c);
    c.gpu = gpu;
    int rc = box_start(&c, &p, err);
    if (rc != KJ_OK)
        return rc;
    rc = box_read_info(&p, dev, 120000, err);
    box_kill(&p);
    return rc;
}

int box_health(int gpu, struct kj_err *err)
{
    struct box_cfg c;
    struct box_proc p;
    struct box_device dev;
    struct box_req req;
    struct box_rep rep;
    memset(&c, 0, sizeof c);
    memset(&req, 0, sizeof req);
    c.gpu = gpu;
    req.op = BOX_OP_HEALTH;
    int rc = box_start(&c, &p, err);
    if (rc != KJ_OK)
        return rc;
    rc = box_read_info(&p, &dev, 120000, err);
    if (rc == KJ_OK)
        rc = box_call(&p, &req, NULL, &rep, 60000, err);
    if (rc == KJ_OK && rep.status != BOX_OK)
        rc = KJ_FAIL(err, KJ_ECUDA, "%s", rep.msg);
    box_kill(&p);
    return rc;
}
