/*
 * box_launch.c - a run box's case (see box_int.h): buffers sized from the
 * case's plan, launch lines checked against the device and the kernels,
 * fresh inputs (fill kernel, then generate.cu) and poisoned outputs, the
 * launch set, and the copy of the results to the shared region. The CASE
 * and COPY requests are here; the timed ones (box_time.c) build on it.
 */
#include "box_int.h"

#include <string.h>

/* ------------------------------------------------------------------ cases */

static void box_free_set(struct box *b, int k)
{
    for (int i = 0; i < SPEC_MAX_BUFFERS; i++) {
        if (b->buf[k][i] != 0)
            b->d.cuMemFree(b->buf[k][i]);
        b->buf[k][i] = 0;
    }
    if (b->ws[k] != 0)
        b->d.cuMemFree(b->ws[k]);
    b->ws[k] = 0;
}

static void box_free_buffers(struct box *b)
{
    for (int k = 0; k < BOX_MAX_SETS; k++)
        box_free_set(b, k);
    b->nsets = b->nsets_asked = 0;
    b->cur_bench = b->cur_case = -1;
    b->cp = NULL;
}

/* Buffer sets 1 .. want-1 of the current case, each with its workspace, as
 * many as memory allows (set 0 exists already); b->nsets says how many
 * there are. */
static void box_alloc_sets(struct box *b, int want)
{
    for (b->nsets = 1; b->nsets < want; b->nsets++) {
        int k = b->nsets, ok = 1;
        for (int i = 0; i < b->spec->nbuffers && ok; i++)
            ok = b->d.cuMemAlloc(&b->buf[k][i], b->size[i]) == CUDA_SUCCESS;
        if (ok && b->ws_size > 0)
            ok = b->d.cuMemAlloc(&b->ws[k], b->ws_size) == CUDA_SUCCESS;
        if (!ok) {
            box_free_set(b, k);
            return; /* fewer sets: the reply's count says so */
        }
    }
}

/* Check one launch's evaluated dimensions against the device and the kernel
 * f. A failure is the submission's (rejected); status says otherwise for
 * generate.cu. */
static int box_check_dims(struct box *b, const struct dir_launch *dl, CUfunction f,
                          const struct dir_dims *dd, int status, struct box_rep *rep)
{
    const struct box_device *i = &b->info;
    int fmax = 0, fstatic = 0;
    BOX_CU(b, rep, cuFuncGetAttribute(&fmax, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f),
           "reading the kernel's largest block");
    BOX_CU(b, rep, cuFuncGetAttribute(&fstatic, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f),
           "reading the kernel's static shared memory");
    static const char axis[3] = {'x', 'y', 'z'};
    for (int k = 0; k < 3; k++) {
        if (dd->grid[k] > (uint32_t)i->max_grid[k])
            return box_rep_fail(rep, status, dl->line, "line %d: grid.%c = %u exceeds the "
                            "device limit %d", dl->line, axis[k], dd->grid[k], i->max_grid[k]);
        if (dd->block[k] > (uint32_t)i->max_block[k])
            return box_rep_fail(rep, status, dl->line, "line %d: block.%c = %u exceeds the "
                            "device limit %d", dl->line, axis[k], dd->block[k], i->max_block[k]);
        if (dd->has_cluster && dd->grid[k] % dd->cluster[k] != 0)
            return box_rep_fail(rep, status, dl->line, "line %d: grid.%c = %u is not a "
                            "multiple of cluster.%c = %u", dl->line, axis[k], dd->grid[k],
                            axis[k], dd->cluster[k]);
    }
    uint64_t threads = (uint64_t)dd->block[0] * dd->block[1] * dd->block[2];
    if (threads > (uint64_t)fmax)
        return box_rep_fail(rep, status, dl->line, "line %d: block of %llu threads; kernel "
                        "'%s' can run at most %d per block on this device (registers)",
                        dl->line, (unsigned long long)threads, dl->kernel, fmax);
    if ((uint64_t)dd->smem + (uint64_t)fstatic > (uint64_t)i->max_smem_optin)
        return box_rep_fail(rep, status, dl->line, "line %d: smem = %u bytes plus %d static "
                        "exceeds the device's %d bytes per block", dl->line, dd->smem, fstatic,
                        i->max_smem_optin);
    if (dd->smem > 48 * 1024) {
        CUresult r = b->d.cuFuncSetAttribute(f,
                     CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)dd->smem);
        if (r != CUDA_SUCCESS)
            return box_rep_cuda(b, rep, status, r, "raising the dynamic shared memory limit");
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
        return box_rep_fail(rep, BOX_INTERNAL, 0, "variable %s does not fit in int",
                        s->vars[cp->bad_var]);
    memcpy(b->ivals, cp->ivals, sizeof b->ivals);
    for (int l = 0; b->gmod != 0 && l < b->cfg->gendirs->nlaunch; l++) {
        const struct dir_launch *dl = &b->cfg->gendirs->launch[l];
        if (l == g->bad || l >= g->nlaunch)
            return box_rep_fail(rep, BOX_INTERNAL, g->err.line, "generate.cu: %s", g->err.msg);
        b->gdims[l] = g->dims[l];
        if (box_check_dims(b, dl, b->gfn[l], &b->gdims[l], BOX_INTERNAL, rep) != 0)
            return -1;
    }
    for (int l = 0; l < b->cfg->dirs->nlaunch; l++) {
        const struct dir_launch *dl = &b->cfg->dirs->launch[l];
        if (l == u->bad || l >= u->nlaunch)
            return box_rep_fail(rep, BOX_REJECTED, u->err.line, "%s", u->err.msg);
        b->dims[l] = u->dims[l];
        if (box_check_dims(b, dl, b->fn[l], &b->dims[l], BOX_REJECTED, rep) != 0)
            return -1;
    }
    if (u->bad >= 0)
        return box_rep_fail(rep, BOX_REJECTED, u->err.line, "%s", u->err.msg);
    b->ws_size = u->ws_bytes;
    return 0;
}

/* Size nsets buffer sets (0 = 1) for case (bench, idx), reusing them when
 * neither changed. */
int box_setup_case(struct box *b, int bench, int idx, int nsets, struct box_rep *rep)
{
    const struct case_plan *cp = plan_case(b->cfg->plan, bench, idx);
    if (cp == NULL)
        return box_rep_fail(rep, BOX_INTERNAL, 0, "no case %d", idx);
    if (nsets < 1 || nsets > BOX_MAX_SETS)
        nsets = nsets < 1 ? 1 : BOX_MAX_SETS;
    if (b->cur_bench == bench && b->cur_case == idx && b->nsets_asked == nsets)
        return 0;
    box_free_buffers(b);
    if (cp->total > b->cfg->region_size)
        return box_rep_fail(rep, BOX_INTERNAL, 0, "region too small for the case");
    memcpy(b->off, cp->off, sizeof b->off);
    memcpy(b->size, cp->size, sizeof b->size);
    memcpy(b->nelem, cp->nelem, sizeof b->nelem);
    for (int i = 0; i < b->spec->nbuffers; i++)
        BOX_CU(b, rep, cuMemAlloc(&b->buf[0][i], b->size[i]), "allocating a buffer");
    if (box_case_launches(b, cp, rep) != 0)
        return -1;
    if (b->ws_size > 0)
        BOX_CU(b, rep, cuMemAlloc(&b->ws[0], b->ws_size), "allocating the workspace");
    box_alloc_sets(b, nsets);
    b->nsets_asked = nsets;
    b->cur_bench = bench;
    b->cur_case = idx;
    b->cp = cp;
    b->gen++;
    b->has_ipc = 1;
    for (int k = 0; k < b->nsets; k++)
        for (int i = 0; i < b->spec->nbuffers && b->has_ipc; i++) {
            CUipcMemHandle h;
            if (b->d.cuIpcGetMemHandle(&h, b->buf[k][i]) != CUDA_SUCCESS)
                b->has_ipc = 0;
            else
                memcpy(b->ipc[k][i], &h, sizeof b->ipc[k][i]);
        }
    return 0;
}

/* Tell the judge where this box's buffers are, for the reference box, and
 * how many sets the case holds. */
void box_share(const struct box *b, struct box_rep *rep)
{
    rep->has_ipc = b->has_ipc;
    rep->gen = b->gen;
    rep->nsets = b->nsets;
    memcpy(rep->ipc, b->ipc, sizeof rep->ipc);
}

unsigned box_grid_for(const struct box *b, int64_t n)
{
    int64_t blocks = (n + 255) / 256, cap = (int64_t)b->info.sm_count * 16;
    if (cap <= 0)
        cap = 1024;
    return (unsigned)(blocks < 1 ? 1 : blocks > cap ? cap : blocks);
}

/* The leading kernel arguments over buffer set buf: the buffers, then the
 * vars as int. Returns how many; the caller appends the workspace (a
 * submission) or the seed (generate.cu). */
int box_args(struct box *b, CUdeviceptr *buf, void **args)
{
    int n = 0;
    for (int i = 0; i < b->spec->nbuffers; i++)
        args[n++] = &buf[i];
    for (int v = 0; v < b->spec->nvars; v++)
        args[n++] = &b->ivals[v];
    return n;
}

/* Queue: fresh inputs for seed (the fill kernel, then the board's
 * generate.cu, which may rewrite any input), poisoned outputs, and the
 * workspace ws zeroed (0: none to zero). */
int box_prepare_set(struct box *b, CUdeviceptr *buf, CUdeviceptr ws, uint64_t seed,
                    uint64_t poison, struct box_rep *rep)
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
    if (ws != 0)
        BOX_CU(b, rep, cuMemsetD8Async(ws, 0, b->ws_size, b->stream), "zeroing the workspace");
    return 0;
}

int box_prepare(struct box *b, int set, uint64_t seed, uint64_t poison, struct box_rep *rep)
{
    return box_prepare_set(b, b->buf[set], b->ws[set], seed, poison, rep);
}

/* 1 for the errors of a kernel that ran (a fault), not of a launch refused. */
static int box_exec_error(CUresult r)
{
    return r == CUDA_ERROR_LAUNCH_FAILED || r == CUDA_ERROR_ILLEGAL_ADDRESS ||
           r == CUDA_ERROR_MISALIGNED_ADDRESS || r == CUDA_ERROR_HARDWARE_STACK_ERROR ||
           r == CUDA_ERROR_ILLEGAL_INSTRUCTION || r == CUDA_ERROR_INVALID_ADDRESS_SPACE ||
           r == CUDA_ERROR_INVALID_PC || r == CUDA_ERROR_LAUNCH_TIMEOUT || r == CUDA_ERROR_ASSERT;
}

/* Queue the launches of d (kernels fn, dimensions dims) in directive order
 * with args. A launch the driver refuses is reported with status and its
 * line (the submission's: rejected). */
int box_launch_set(struct box *b, const struct directives *d, const CUfunction *fn,
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
        if (r != CUDA_SUCCESS && box_exec_error(r)) {
            /* A fault of an earlier launch that a blocking launch (sanitize
             * mode) reports here: the kernel's, not its configuration's. */
            box_rep_cuda(b, rep, BOX_RUNTIME, r, "the kernel failed");
            rep->line = d->launch[l].line;
            return -1;
        }
        if (r != CUDA_SUCCESS) {
            int line = d->launch[l].line;
            char what[64];
            snprintf(what, sizeof what, "%sline %d: launch refused",
                     status == BOX_REJECTED ? "" : "generate.cu ", line);
            box_rep_cuda(b, rep, status, r, what);
            rep->line = line;
            return -1;
        }
    }
    return 0;
}

/* A Python box's call record for buffer set `set` of the case set up: the
 * board's Python interface (spec.h's python block) over the set's buffers. */
static void box_py_fill(struct box *b, int set)
{
    const struct spec *s = b->spec;
    const struct spec_python *py = &s->python;
    struct pybox_io *io = &b->pio;
    io->stream = (uint64_t)(uintptr_t)b->stream;
    io->nargs = py->nargs;
    io->nret = py->nreturns;
    for (int k = 0; k < py->nargs + py->nreturns; k++) {
        int is_ret = k >= py->nargs;
        struct pybox_arg *a = is_ret ? &io->rets[k - py->nargs] : &io->args[k];
        int kind = is_ret ? SPEC_PYARG_BUFFER : py->args[k].kind;
        int idx = is_ret ? py->returns[k - py->nargs] : py->args[k].index;
        memset(a, 0, sizeof *a);
        if (kind == SPEC_PYARG_VAR) {
            a->kind = 1;
            a->ival = b->cp->val[idx];
            snprintf(a->name, sizeof a->name, "%s", s->vars[idx]);
            continue;
        }
        a->dtype = (int32_t)s->buffers[idx].dtype;
        a->ndim = b->cp->ndim[idx];
        for (int d = 0; d < a->ndim && d < 8; d++)
            a->dims[d] = b->cp->dims[idx][d];
        a->ptr = (uint64_t)b->buf[set][idx];
        snprintf(a->name, sizeof a->name, "%s", s->buffers[idx].name);
    }
}

/* A Python operation's failure: the submission's (runtime_error, with the
 * traceback's tail) or the harness's (ours). */
static int box_py_fail(struct box *b, int rc, const char *what, struct box_rep *rep)
{
    return box_rep_fail(rep, rc == 1 ? BOX_RUNTIME : BOX_INTERNAL, 0, "%s: %s", what, b->pio.msg);
}

/* One operation of the Python harness, then the box's own context made
 * current again: the submission's code may have set another on this
 * thread (through ctypes and the driver), and the box's next driver call
 * must not fail for it as if the judge had. */
int box_py_op(struct box *b, int op)
{
    int rc = pybox_op(op, &b->pio);
    CUresult r = b->d.cuCtxSetCurrent(b->ctx);
    if (r != CUDA_SUCCESS && rc >= 0) { /* the submission destroyed or reset it */
        const char *name = NULL;
        b->d.cuGetErrorName(r, &name);
        snprintf(b->pio.msg, sizeof b->pio.msg, "the box's CUDA context is gone after the "
                 "submission's code ran (%s): it reset or destroyed it", name ? name : "?");
        rc = 1;
    }
    return rc;
}

/* After box_launch_all: a Python box's returned tensors moved into the
 * output buffers of the call's set on the stream (nothing for a CUDA box),
 * through the record box_launch_all filled. Outside the timed span. */
int box_collect(struct box *b, struct box_rep *rep)
{
    if (!b->python)
        return 0;
    int rc = box_py_op(b, PYBOX_COLLECT);
    return rc == 0 ? 0 : box_py_fail(b, rc, "custom_kernel's result", rep);
}

/* Queue the submission's launches on buffer set `set`: buffers, vars, then
 * the set's workspace. A Python box calls custom_kernel instead, which
 * queues its work on the box's stream; box_collect follows. */
int box_launch_all(struct box *b, int set, struct box_rep *rep)
{
    if (b->python) {
        box_py_fill(b, set);
        int rc = box_py_op(b, PYBOX_CALL);
        return rc == 0 ? 0 : box_py_fail(b, rc, "custom_kernel raised", rep);
    }
    void *args[SPEC_MAX_BUFFERS + SPEC_MAX_VARS + 1];
    int n = box_args(b, b->buf[set], args);
    if (b->cfg->dirs->workspace[0] != '\0')
        args[n++] = &b->ws[set];
    return box_launch_set(b, b->cfg->dirs, b->fn, b->dims, args, BOX_REJECTED, rep);
}

/* One untimed call of the submission on buffer set 0, not behind the
 * blocking kernel, before the first blocked sample of a case in this
 * process. The first launch of a kernel in a fresh context does work that
 * waits for the device: a kernel with a large local-memory frame makes the
 * driver grow the context's local-memory reservation, which it cannot do
 * while the blocking kernel holds the stream (the sample then timed out).
 * Whatever a first call sets up is set up here. The outputs it leaves are
 * poisoned again by the next sample's box_prepare. */
int box_prime(struct box *b, struct box_rep *rep)
{
    if (b->primed_gen == b->gen)
        return 0;
    if (box_prepare(b, 0, 0x9e3779b97f4a7c15ull ^ b->gen, 0x5bd1e995ull + b->gen, rep) != 0 ||
        box_launch_all(b, 0, rep) != 0 || box_collect(b, rep) != 0 ||
        box_sync_user(b, rep) != 0) {
        b->d.cuCtxSynchronize();
        return -1;
    }
    /* A Python call may wait for the GPU (a .item(), a synchronize): behind
     * the blocking kernel it would wait until that gives up. One call held
     * for at most 1 s finds out; such a box samples without the blocking
     * kernel from then on (the host's dispatch then counts in its times). */
    if (b->python && b->blocker && !b->py_sync) {
        double ns;
        if (box_prepare(b, 0, 0x7f4a7c159e3779b9ull ^ b->gen, 0x5bd1e995ull + b->gen, rep) != 0 ||
            box_timed_for(b, 0, 0, 1000000000ull, &ns, rep) != 0) {
            if (b->flag[1] == 0) /* failed, but not because the blocking kernel gave up */
                return -1;
            memset(rep, 0, sizeof *rep);
            b->py_sync = 1;
            b->blocker = 0;
        }
    }
    b->primed_gen = b->gen;
    return 0;
}

/* Wait for everything queued; a failure now is the submission's (it ran last). */
int box_sync_user(struct box *b, struct box_rep *rep)
{
    CUresult r = b->d.cuCtxSynchronize();
    if (r != CUDA_SUCCESS)
        return box_rep_cuda(b, rep, BOX_RUNTIME, r, "the kernel failed");
    return 0;
}

/* Copy buffer set `set` to the region (inputs only with req->copy_inputs). */
/* The fingerprint of the outputs of buffer set `set` (common/kjhash.h):
 * the sum over the output buffers of their fingerprints under salt + the
 * buffer's index. Waits for it; a failure is ours. */
int box_fingerprint(struct box *b, const CUdeviceptr *set, uint64_t salt, uint64_t *fp,
                    struct box_rep *rep)
{
    CUdeviceptr acc = b->bad + 256; /* a slot of the box's own 4 KiB counter buffer */
    unsigned long long h = 0;
    BOX_CU(b, rep, cuMemsetD8Async(acc, 0, sizeof h, b->stream), "zeroing the fingerprint");
    for (int i = 0; i < b->spec->nbuffers; i++) {
        uint64_t nbytes = b->size[i], s = salt + (uint64_t)i;
        CUdeviceptr p = set[i];
        void *args[] = {&p, &nbytes, &s, &acc};
        if (b->spec->buffers[i].role != SPEC_OUTPUT)
            continue;
        BOX_CU(b, rep, cuLaunchKernel(b->f_hash, box_grid_for(b, b->nelem[i]), 1, 1, 256, 1, 1, 0,
                                      b->stream, args, NULL), "launching the fingerprint");
    }
    BOX_CU(b, rep, cuStreamSynchronize(b->stream), "fingerprinting the outputs");
    BOX_CU(b, rep, cuMemcpyDtoH(&h, acc, sizeof h), "reading the fingerprint");
    *fp = h;
    return 0;
}

int box_copy_out(struct box *b, int set, const struct box_req *req, struct box_rep *rep)
{
    if (set < 0 || set >= b->nsets)
        return box_rep_fail(rep, BOX_INTERNAL, 0, "no buffer set %d", set);
    for (int i = 0; i < b->spec->nbuffers; i++) {
        if (b->spec->buffers[i].role == SPEC_INPUT && !req->copy_inputs)
            continue;
        BOX_CU(b, rep, cuMemcpyDtoH(b->cfg->region + b->off[i], b->buf[set][i], b->size[i]),
               "copying results to the host");
    }
    return 0;
}

int box_once(struct box *b, const struct box_req *req, struct box_rep *rep)
{
    if (box_setup_case(b, req->bench, req->case_index, 0, rep) != 0 ||
        box_prepare(b, 0, req->seed, req->poison_seed, rep) != 0)
        return -1;
    /* Profile mode: only the submission's launches between the marks, not
     * the judge's fill and poison kernels before them. */
    int marks = req->profile && b->d.cuProfilerStart != NULL && b->d.cuProfilerStop != NULL;
    if (marks) {
        BOX_CU(b, rep, cuCtxSynchronize(), "waiting for the inputs");
        b->d.cuProfilerStart();
    }
    if (box_launch_all(b, 0, rep) != 0 || box_collect(b, rep) != 0) {
        b->d.cuCtxSynchronize();
        if (marks)
            b->d.cuProfilerStop();
        return -1;
    }
    int sync = box_sync_user(b, rep);
    if (marks)
        b->d.cuProfilerStop();
    if (sync != 0)
        return -1;
    box_share(b, rep);
    return req->no_copy ? 0 : box_copy_out(b, 0, req, rep);
}

int box_copy(struct box *b, const struct box_req *req, struct box_rep *rep)
{
    if (b->cur_bench != req->bench || b->cur_case != req->case_index)
        return box_rep_fail(rep, BOX_INTERNAL, 0, "COPY for a case this box did not run");
    return box_copy_out(b, req->set, req, rep);
}

