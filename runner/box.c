/*
 * box.c - the run box (see box.h): one child process, one CUDA context, one
 * cubin. The judge forks it, reads its device description, sends it the cubin
 * and then one request per call; the box answers each with a struct box_rep
 * and leaves outputs in the shared region. Everything the submission can
 * reach lives here, so nothing here is trusted by the judge: it re-checks
 * every byte it reads from the region.
 *
 * This file is the child's core: device setup, LOAD, VERIFY, the health
 * kernel, the request dispatcher and box_main. A case's buffers and
 * launches are in box_launch.c, the timing protocol in box_time.c, the
 * judge's side in box_client.c (box_int.h lists them).
 */
#include "box_int.h"
#include "fdio.h"
#include "gtrace.h"
#include "rbox.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

extern const unsigned char kj_kernels_fatbin[];

/* ------------------------------------------------------------ device setup */

/* The device's description for the judge (struct box_device). Every query
 * is checked: a zero limit would reject every launch with a wrong reason. */
static int box_describe(struct box *b, struct box_rep *rep)
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
        BOX_CU(b, rep, cuDeviceGetAttribute(attrs[k].v, attrs[k].a, b->dev),
               "describing the device: cuDeviceGetAttribute");
    BOX_CU(b, rep, cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, b->dev),
           "describing the device: L2 size");
    if (b->d.cuDeviceGetCount(&i->gpu_count) != CUDA_SUCCESS)
        i->gpu_count = 0; /* informational only */
    i->l2_bytes = l2;
    BOX_CU(b, rep, cuDeviceTotalMem(&total, b->dev), "describing the device: cuDeviceTotalMem");
    i->total_mem = (long long)total;
    BOX_CU(b, rep, cuDeviceGetName(i->name, sizeof i->name, b->dev),
           "describing the device: cuDeviceGetName");
    BOX_CU(b, rep, cuDriverGetVersion(&i->driver_version),
           "describing the device: cuDriverGetVersion");
    BOX_CU(b, rep, cuDeviceGetPCIBusId(i->pci, sizeof i->pci, b->dev),
           "describing the device: cuDeviceGetPCIBusId");
    /* Arch-specific targets (sm_90a, sm_100a) exist from compute capability 9. */
    snprintf(i->arch, sizeof i->arch, "sm_%d%d%s", i->cc_major, i->cc_minor,
             i->cc_major >= 9 ? "a" : "");
    return 0;
}

static int box_get_kernels(struct box *b, struct box_rep *rep)
{
    struct { CUfunction *f; const char *name; } k[] = {
        {&b->f_fill, "kj_fill"}, {&b->f_poison, "kj_poison"}, {&b->f_flush, "kj_flush"},
        {&b->f_discard, "kj_discard"}, {&b->f_block, "kj_block"}, {&b->f_empty, "kj_empty"},
        {&b->f_check, "kj_check"}, {&b->f_same, "kj_same"}, {&b->f_clock, "kj_clock"},
        {&b->f_health, "kj_health"}, {&b->f_hash, "kj_hash"},
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
        return box_rep_fail(rep, BOX_INTERNAL, 0, "%s", err.msg);
    /* GPU time (gtrace.h): a run box that times, CUDA or Python, records
     * kernel activity from before its context exists; not the reference box
     * (never timed), not under a profiler or sanitizer (they own CUPTI). */
    if (!b->cfg->role_reference && (!b->cfg->tool || b->cfg->python_lib != NULL))
        b->gtrace = gtrace_start(b->info.gpu_time_note, sizeof b->info.gpu_time_note) == 0;
    else
        snprintf(b->info.gpu_time_note, sizeof b->info.gpu_time_note,
                 b->cfg->role_reference ? "the reference box is not timed"
                                        : "a profiler or sanitizer owns CUPTI in this box");
    b->info.gpu_time = b->gtrace;
    BOX_CU(b, rep, cuInit(0), "cuInit");
    BOX_CU(b, rep, cuDeviceGet(&b->dev, b->cfg->gpu), "cuDeviceGet");
    BOX_CU(b, rep, cuDevicePrimaryCtxRetain(&b->ctx, b->dev), "cuDevicePrimaryCtxRetain");
    BOX_CU(b, rep, cuCtxSetCurrent(b->ctx), "cuCtxSetCurrent");
    if (box_describe(b, rep) != 0)
        return -1;
    /* Device-side limits owned by the judge, not the submission. */
    BOX_CU(b, rep, cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0), "persisting L2 limit");
    BOX_CU(b, rep, cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 8u << 20), "malloc heap limit");
    BOX_CU(b, rep, cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 1u << 20), "printf FIFO limit");
    for (int l = 0; l < BOX_LANES; l++)
        BOX_CU(b, rep, cuStreamCreate(&b->lanes[l], CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    b->stream = b->lanes[0];
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
    return box_rep_fail(rep, gen ? BOX_INTERNAL : BOX_REJECTED, dl->line,
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
        return box_rep_fail(rep, BOX_INTERNAL, 0, "inconsistent LOAD request");
    for (int l = 0; l < nlaunch; l++) {
        const struct dir_launch *dl = &d->launch[l];
        lowered[l][255] = '\0';
        if (b->d.cuModuleGetFunction(&fn[l], mod, lowered[l]) != CUDA_SUCCESS)
            return box_rep_fail(rep, gen ? BOX_INTERNAL : BOX_REJECTED, dl->line,
                            "%sline %d: no kernel named '%s' in the module",
                            gen ? "generate.cu " : "", dl->line, dl->kernel);
        if (box_check_params(b, d, fn[l], l, gen, rep) != 0)
            return -1;
    }
    return 0;
}

/* The plan and directives of a box started before its job, from the LOAD
 * payload (box.h): both or neither, the sizes of this build's structs, and
 * only for a box that has none yet. */
static int box_load_job(struct box *b, const struct box_load *ld, struct box_rep *rep)
{
    int given = ld->plan_size != 0 || ld->dirs_size != 0;
    if (!given && b->cfg->plan != NULL && b->cfg->dirs != NULL)
        return 0;
    if (!given)
        return box_rep_fail(rep, BOX_INTERNAL, 0, "a box started before its job got no plan");
    if (b->cfg->plan != NULL || b->cfg->dirs != NULL || ld->plan_size != sizeof *b->job_plan ||
        ld->dirs_size != sizeof *b->job_dirs)
        return box_rep_fail(rep, BOX_INTERNAL, 0, "inconsistent plan in the LOAD request");
    b->job_plan = malloc(sizeof *b->job_plan);
    b->job_dirs = malloc(sizeof *b->job_dirs);
    if (b->job_plan == NULL || b->job_dirs == NULL ||
        fdio_read_full(b->cfg->fd_in, b->job_plan, sizeof *b->job_plan) != 0 ||
        fdio_read_full(b->cfg->fd_in, b->job_dirs, sizeof *b->job_dirs) != 0)
        return box_rep_fail(rep, BOX_INTERNAL, 0, "cannot read the plan");
    b->cfgv.plan = b->job_plan;
    b->cfgv.dirs = b->job_dirs;
    return 0;
}

static int box_load(struct box *b, const struct box_req *req, struct box_rep *rep)
{
    struct box_load ld;
    unsigned char *cubin = NULL;
    int rc = -1;
    if (req->payload < sizeof ld || fdio_read_full(b->cfg->fd_in, &ld, sizeof ld) != 0)
        return box_rep_fail(rep, BOX_INTERNAL, 0, "short LOAD request");
    if (req->payload - sizeof ld != (uint64_t)ld.plan_size + ld.dirs_size + ld.cubin_size +
                                    ld.gen_size ||
        ld.cubin_size == 0 || (ld.gen_size > 0) != (b->cfg->gendirs != NULL))
        return box_rep_fail(rep, BOX_INTERNAL, 0, "inconsistent LOAD request");
    if (box_load_job(b, &ld, rep) != 0)
        return -1;
    cubin = malloc((size_t)ld.cubin_size + ld.gen_size);
    if (cubin == NULL ||
        fdio_read_full(b->cfg->fd_in, cubin, (size_t)ld.cubin_size + ld.gen_size) != 0) {
        box_rep_fail(rep, BOX_INTERNAL, 0, "cannot read the cubin");
        goto out;
    }
    /* The trusted generator first: its failures are the board's, never the
     * submission's. */
    if (ld.gen_size > 0) {
        CUresult r = b->d.cuModuleLoadData(&b->gmod, cubin + ld.cubin_size);
        if (r != CUDA_SUCCESS) {
            box_rep_cuda(b, rep, BOX_INTERNAL, r, "loading generate.cu");
            goto out;
        }
        if (box_bind(b, b->cfg->gendirs, b->gmod, ld.gen_lowered, ld.gen_nlaunch, b->gfn, 1,
                     rep) != 0)
            goto out;
    }
    if (b->python) { /* the "cubin" is the source: imported under the locked sandbox */
        b->pio.src = (uint64_t)(uintptr_t)cubin;
        b->pio.src_len = ld.cubin_size;
        int prc = box_py_op(b, PYBOX_LOAD);
        b->pio.src = 0;
        if (prc != 0) {
            box_rep_fail(rep, prc == 1 ? BOX_RUNTIME : BOX_INTERNAL, 0,
                         "importing the submission failed: %s", b->pio.msg);
            goto out;
        }
        b->loaded = 1;
        rc = 0;
        goto out;
    }
    CUresult r = b->d.cuModuleLoadData(&b->umod, cubin);
    if (r != CUDA_SUCCESS) {
        box_rep_cuda(b, rep, BOX_REJECTED, r, "loading the compiled module");
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

/* ------------------------------------------------------------ verification */

/* Reference box: map the submission box's buffer set k (handles ipc), once
 * per generation of its buffers. A new generation first closes every set
 * mapped from an older one: those buffers are gone, and a mapping would
 * keep their memory. */
static int box_map_peer(struct box *b, int k, uint64_t gen,
                        const unsigned char (*ipc)[64], struct box_rep *rep)
{
    if (gen == b->peer_gen[k] && b->peer[k][0] != 0)
        return 0;
    for (int m = 0; m < BOX_MAX_SETS; m++) {
        if (m != k && b->peer_gen[m] == gen)
            continue;
        for (int i = 0; i < SPEC_MAX_BUFFERS; i++) {
            if (b->peer[m][i] != 0)
                b->d.cuIpcCloseMemHandle(b->peer[m][i]);
            b->peer[m][i] = 0;
        }
        b->peer_gen[m] = 0;
    }
    for (int i = 0; i < b->spec->nbuffers; i++) {
        CUipcMemHandle h;
        memcpy(&h, ipc[i], sizeof h);
        CUresult r = b->d.cuIpcOpenMemHandle(&b->peer[k][i], h,
                                             CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
        if (r != CUDA_SUCCESS)
            return box_rep_cuda(b, rep, BOX_INTERNAL, r, "mapping the submission's buffers");
    }
    b->peer_gen[k] = gen;
    return 0;
}

/* Reference box: count the elements of the submission's set k (mapped in
 * peer[k]) that miss the tolerance in its outputs and (with inputs) the
 * input words that changed, on the GPU, against this box's own buffers for
 * the same case and seed. */
static int box_check_peer(struct box *b, int k, int inputs, long *count, struct box_rep *rep)
{
    unsigned long long bad = 0;
    BOX_CU(b, rep, cuMemsetD8Async(b->bad, 0, sizeof bad, b->stream), "zeroing the counter");
    for (int i = 0; i < b->spec->nbuffers; i++) {
        const struct spec_buffer *sb = &b->spec->buffers[i];
        int dtype = (int)sb->dtype;
        uint64_t n = (uint64_t)b->nelem[i], nbytes = b->size[i];
        double atol = b->cp->atol[i], rtol = b->cp->rtol[i]; /* 0 for inputs */
        void *ca[] = {&b->buf[0][i], &b->peer[k][i], &dtype, &n, &atol, &rtol, &b->bad};
        void *sa[] = {&b->buf[0][i], &b->peer[k][i], &nbytes, &b->bad};
        unsigned g = box_grid_for(b, b->nelem[i]);
        if (sb->role == SPEC_OUTPUT)
            BOX_CU(b, rep, cuLaunchKernel(b->f_check, g, 1, 1, 256, 1, 1, 0, b->stream, ca, NULL),
                   "launching the check");
        else if (inputs)
            BOX_CU(b, rep, cuLaunchKernel(b->f_same, g, 1, 1, 256, 1, 1, 0, b->stream, sa, NULL),
                   "launching the input check");
    }
    BOX_CU(b, rep, cuStreamSynchronize(b->stream), "verifying");
    BOX_CU(b, rep, cuMemcpyDtoH(&bad, b->bad, sizeof bad), "reading the mismatch count");
    *count = (long)bad;
    return 0;
}

/* VERIFY: the submission's set 0 against this box's buffers as they are. */
static int box_verify(struct box *b, const struct box_req *req, struct box_rep *rep)
{
    struct box_verify v;
    if (req->payload != sizeof v || fdio_read_full(b->cfg->fd_in, &v, sizeof v) != 0)
        return box_rep_fail(rep, BOX_INTERNAL, 0, "short VERIFY request");
    if (b->cur_bench != req->bench || b->cur_case != req->case_index)
        return box_rep_fail(rep, BOX_INTERNAL, 0, "VERIFY for a case this box did not run");
    if (box_map_peer(b, 0, v.gen, (const unsigned char (*)[64])v.ipc, rep) != 0)
        return -1;
    return box_check_peer(b, 0, req->copy_inputs, &rep->count, rep);
}

/* VERIFY_SETS (protocol v2): for each set of a BATCH, the reference on the
 * same inputs, then its check against the submission's set; set_bad[i]
 * gets set i's count. */
static int box_verify_sets(struct box *b, const struct box_req *req, struct box_rep *rep)
{
    static struct box_vsets v; /* 6 KiB of handles: off the stack */
    if (req->payload != sizeof v || fdio_read_full(b->cfg->fd_in, &v, sizeof v) != 0)
        return box_rep_fail(rep, BOX_INTERNAL, 0, "short VERIFY_SETS request");
    if (v.n < 1 || v.n > BOX_MAX_SETS)
        return box_rep_fail(rep, BOX_INTERNAL, 0, "VERIFY_SETS of %d sets", v.n);
    if (box_setup_case(b, req->bench, req->case_index, 1, rep) != 0)
        return -1;
    for (int k = 0; k < v.n; k++) {
        if (box_prepare(b, 0, v.seed[k], v.poison[k], rep) != 0)
            return -1;
        if (box_launch_all(b, 0, rep) != 0 || box_collect(b, rep) != 0) {
            b->d.cuCtxSynchronize();
            return -1;
        }
        if (box_sync_user(b, rep) != 0 ||
            box_map_peer(b, k, v.gen, (const unsigned char (*)[64])v.ipc[k], rep) != 0 ||
            box_check_peer(b, k, (int)(v.inputs >> k & 1u), &rep->set_bad[k], rep) != 0 ||
            box_fingerprint(b, b->peer[k], v.salt, &rep->fp[k], rep) != 0)
            return -1;
    }
    rep->count = v.n;
    return 0;
}

/* ----------------------------------------------------- health, main loop */

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
        return box_rep_fail(rep, BOX_INTERNAL, 0, "out of host memory");
    if ((r = b->d.cuMemAlloc(&d, (size_t)n * 4)) != CUDA_SUCCESS ||
        (r = b->d.cuMemsetD8Async(d, 0xff, (size_t)n * 4, b->stream)) != CUDA_SUCCESS ||
        (r = b->d.cuLaunchKernel(b->f_health, (n + 255) / 256, 1, 1, 256, 1, 1, 0, b->stream,
                                 args, NULL)) != CUDA_SUCCESS ||
        (r = b->d.cuStreamSynchronize(b->stream)) != CUDA_SUCCESS ||
        (r = b->d.cuMemcpyDtoH(host, d, (size_t)n * 4)) != CUDA_SUCCESS) {
        box_rep_cuda(b, rep, BOX_INTERNAL, r, "health check");
        goto out;
    }
    for (uint32_t i = 0; i < n; i++)
        if (host[i] != i * 3u + 1u) {
            box_rep_fail(rep, BOX_INTERNAL, 0, "health check: element %u is %u, expected %u", i,
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

/* ----------------------------------------------------- the protocol's states */

/* The states of box.h's diagram, from the box's fields. */
enum box_state { BOX_FRESH, BOX_LOADED, BOX_CASE };

static enum box_state box_state_of(const struct box *b)
{
    return !b->loaded ? BOX_FRESH : b->cur_case < 0 ? BOX_LOADED : BOX_CASE;
}

/* The states in which op may come (box.h's transition list), as bits. */
static unsigned box_op_states(int op)
{
    const unsigned any = 1u << BOX_FRESH | 1u << BOX_LOADED | 1u << BOX_CASE;
    switch (op) {
    case BOX_OP_LOAD: return 1u << BOX_FRESH;
    case BOX_OP_BASELINE: case BOX_OP_CLOCK: case BOX_OP_HEALTH: case BOX_OP_QUIT: return any;
    default: return 1u << BOX_LOADED | 1u << BOX_CASE; /* a case, or an unknown op */
    }
}

/* What holds in the box's state, and whether op may come in it (SQLite's
 * assert_pager_state idiom): 1 when all is well, else 0 with rep filled.
 * A broken invariant is the judge's or the box's own bug, never the
 * submission's: it answers BOX_INTERNAL (the job is tried again) instead of
 * aborting, which the judge would take for a crash of the submission. */
static int assert_box_state(const struct box *b, int op, struct box_rep *rep)
{
    enum box_state st = box_state_of(b);
    const char *broken = NULL;
    if (b->loaded && b->umod == 0 && !b->python)
        broken = "loaded without a module";
    else if (b->python && b->umod != 0)
        broken = "a Python box with a module";
    else if ((b->gmod != 0) && b->cfg->gendirs == NULL)
        broken = "generate.cu loaded for a board without one";
    else if (b->loaded && (b->cfg->plan == NULL || b->spec == NULL))
        broken = "loaded without a plan";
    else if ((b->cur_case >= 0) != (b->cp != NULL) ||
             (b->cp != NULL && b->cp != plan_case(b->cfg->plan, b->cur_bench, b->cur_case)))
        broken = "the current case and its plan disagree";
    else if (st == BOX_CASE && (b->nsets < 1 || b->nsets > BOX_MAX_SETS))
        broken = "the case has no buffer set";
    for (int k = 0; broken == NULL && k < BOX_MAX_SETS; k++)
        if (b->peer[k][0] != 0 && !b->cfg->role_reference)
            broken = "a submission box mapped another box's buffers";
    for (int k = 0; broken == NULL && st == BOX_CASE && k < b->nsets; k++) {
        for (int i = 0; broken == NULL && i < b->spec->nbuffers; i++)
            if (b->buf[k][i] == 0)
                broken = "a buffer of the current case is missing";
        if (broken == NULL && (b->ws[k] != 0) != (b->ws_size > 0))
            broken = "the workspace does not match the plan";
    }
    if (broken != NULL) {
        box_rep_fail(rep, BOX_INTERNAL, 0, "box state: %s", broken);
        return 0;
    }
    if (box_op_states(op) & (1u << st))
        return 1;
    if (st == BOX_FRESH)
        box_rep_fail(rep, BOX_INTERNAL, 0, "request before LOAD");
    else
        box_rep_fail(rep, BOX_INTERNAL, 0, "request %d after LOAD", op);
    return 0;
}

static int box_dispatch(struct box *b, const struct box_req *req, struct box_rep *rep)
{
    if (!assert_box_state(b, req->op, rep))
        return -1;
    if (req->op == BOX_OP_LOAD)
        return box_load(b, req, rep);
    if (req->op == BOX_OP_BASELINE)
        return box_baseline(b, rep);
    if (req->op == BOX_OP_CLOCK)
        return box_clock(b, rep);
    if (req->op == BOX_OP_HEALTH) /* the judge's own kernel: a fresh box loads nothing */
        return box_health_op(b, rep);
    switch (req->op) {
    case BOX_OP_CASE: return box_once(b, req, rep);
    case BOX_OP_SAMPLE: return box_sample(b, req, rep);
    case BOX_OP_WARMUP: return box_warmup(b, req, rep);
    case BOX_OP_VERIFY: return box_verify(b, req, rep);
    case BOX_OP_COPY: return box_copy(b, req, rep);
    case BOX_OP_GRAPH: return box_graph(b, req, rep);
    case BOX_OP_BATCH: return box_batch(b, req, rep);
    case BOX_OP_VERIFY_SETS: return box_verify_sets(b, req, rep);
    }
    return box_rep_fail(rep, BOX_INTERNAL, 0, "unknown request %d", req->op);
}

void box_main(const struct box_cfg *cfg0)
{
    static struct box b; /* one per process: this process exists only to hold it */
    const struct box_cfg *cfg = &b.cfgv;
    struct box_rep rep;
    struct box_req req;
    struct rbox rb;
    struct kj_err err;
    int fds[3] = {cfg0->fd_in, cfg0->fd_out, cfg0->fd_info};

    memset(&b, 0, sizeof b);
    memset(&rep, 0, sizeof rep);
    memset(&rb, 0, sizeof rb);
    kj_err_clear(&err);
    b.cfgv = *cfg0;
    /* The sandbox's first half, before CUDA; a failure is reported like a
     * failed context (the judge's error, the job goes back). */
    rb.skip = cfg0->rbox_skip;
    rb.tool = cfg0->tool;
    rb.python = cfg0->python_lib != NULL;
    rb.python_site = cfg0->python_site;
    if (rbox_prepare(&rb, fds, &err) != KJ_OK) {
        kj_printable(b.info.error, sizeof b.info.error, err.msg, sizeof err.msg);
        /* The info pipe is at its old number or, if the fds moved, at its new one. */
        if (fdio_write_full(fds[2], &b.info, sizeof b.info) != 0)
            (void)!fdio_write_full(RBOX_FD_INFO, &b.info, sizeof b.info);
        _exit(3);
    }
    b.python = cfg0->python_lib != NULL;
    if (b.python && pybox_start(cfg0->python_lib, cfg0->python_site, cfg0->python_helion,
                                &err) != KJ_OK) {
        kj_printable(b.info.error, sizeof b.info.error, err.msg, sizeof err.msg);
        (void)!fdio_write_full(RBOX_FD_INFO, &b.info, sizeof b.info);
        _exit(3);
    }
    /* Held: the imports are done while another box of the job is timed;
     * CUDA (a context on the GPU being timed) waits for its turn. */
    if (cfg0->hold && (fdio_read_full(RBOX_FD_IN, &req, sizeof req) != 0 || req.op != BOX_OP_START))
        _exit(0); /* not wanted after all: the judge closed the pipe or quit */
    b.cfgv.fd_in = RBOX_FD_IN;
    b.cfgv.fd_out = RBOX_FD_OUT;
    b.cfgv.fd_info = RBOX_FD_INFO;
    b.cfg = cfg;
    b.spec = cfg->spec;
    /* A profiler that serialises launches would wait on the blocking kernel
     * forever: KJUDGE_NO_BLOCKER=1 turns it off (host launch latency then
     * lands in the samples; for profiling only). */
    b.blocker = getenv("KJUDGE_NO_BLOCKER") == NULL;
    srand((unsigned)getpid());
    if (box_init(&b, &rep) != 0)
        kj_printable(b.info.error, sizeof b.info.error, rep.msg, sizeof rep.msg);
    else if (b.python && (b.pio.device = cfg->gpu, pybox_op(PYBOX_BIND, &b.pio)) != 0)
        snprintf(b.info.error, sizeof b.info.error, "python box: %.400s", b.pio.msg);
    /* The second half: from here on the submission's code may run. */
    else if ((snprintf(rb.pci, sizeof rb.pci, "%s", b.info.pci), rbox_lock(&rb, &err)) != KJ_OK)
        kj_printable(b.info.error, sizeof b.info.error, err.msg, sizeof err.msg);
    /* A change of uid cleared it. Under a tool the parent is the tool's
     * thread that started the box, which may end while the tool goes on
     * (Nsight Compute's does when profiling starts): the box ends instead
     * when the judge's end of its pipes closes, and the judge kills the
     * tool's process group. */
    if (!cfg->tool) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1)
            _exit(0); /* the judge died before that */
    }
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

