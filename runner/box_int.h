/*
 * box_int.h - what the files of the run box share (box.h is the judge's
 * side of it): the child's state, struct box, the helpers that fill a
 * reply with a failure, the driver-call check, and the functions each file
 * offers the others. Files, from the bottom up:
 *
 *   box_launch.c  a case's buffers and launches: setup from the plan, fresh
 *                 inputs and poisoned outputs, the launch set, copy-out,
 *                 the CASE and COPY requests
 *   box_time.c    the timing protocol: L2 flush, timed samples (events and,
 *                 with gtrace.h, each call's GPU time), warm-up,
 *                 baseline, copy bandwidth, the graph cross-check, the clock
 *   box.c         the child: device setup, LOAD, VERIFY, HEALTH, the request
 *                 dispatcher and its state checks, box_main
 *   box_client.c  the judge's side: start, call, kill, probe, health
 *
 * Only the box files include it.
 */
#ifndef KJ_BOX_INT_H
#define KJ_BOX_INT_H

#include <stdarg.h>
#include <stdio.h>
#include "box.h"
#include "cudrv.h"
#include "gputime.h"
#include "pybox.h"

struct box {
    const struct box_cfg *cfg;  /* &cfgv */
    struct box_cfg cfgv;        /* the box's own copy of what box_start gave it; LOAD sets
                                 * plan and dirs of a box started before its job, pointing
                                 * at job_plan and job_dirs */
    struct plan *job_plan;      /* owned by the box process, NULL unless LOAD gave it */
    struct directives *job_dirs;
    const struct spec *spec;
    struct cudrv d;
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;            /* the stream in use: lanes[0], or a BATCH's lane */
    CUstream lanes[BOX_LANES];
    CUmodule kmod, umod;        /* trusted kernels; the cubin under test */
    CUfunction f_fill, f_poison, f_flush, f_discard, f_block, f_empty, f_check, f_same, f_clock,
        f_health, f_hash;
    CUfunction fn[DIR_MAX_LAUNCHES];
    CUmodule gmod;              /* the board's generate.cu (trusted), 0 if none */
    CUfunction gfn[DIR_MAX_LAUNCHES];
    struct dir_dims gdims[DIR_MAX_LAUNCHES];
    int loaded;
    int blocker;                /* hold the stream while a sample is queued (off under profilers) */
    struct box_device info;
    int cur_bench, cur_case;    /* case the buffers are sized for, -1 = none */
    const struct case_plan *cp; /* its plan (cfg->plan), NULL = none */
    int nsets;                  /* buffer sets of the case (box.h), 0 = none */
    int nsets_asked;            /* what the request that allocated them asked for */
    CUdeviceptr buf[BOX_MAX_SETS][SPEC_MAX_BUFFERS];
    int64_t nelem[SPEC_MAX_BUFFERS];             /* the following are copied from cp */
    size_t off[SPEC_MAX_BUFFERS], size[SPEC_MAX_BUFFERS];
    CUdeviceptr ws[BOX_MAX_SETS]; /* each set's own workspace (0 without a workspace line):
                                   * where it lands moves a kernel that counts into it
                                   * (docs/timing.md 3.8), so it varies with the set as the
                                   * buffers do */
    uint64_t ws_size;
    int32_t ivals[SPEC_MAX_VARS];
    struct dir_dims dims[DIR_MAX_LAUNCHES];
    CUdeviceptr flush;
    size_t flush_bytes;
    uint64_t gen;               /* bumped at every reallocation of buf[] */
    int has_ipc;
    unsigned char ipc[BOX_MAX_SETS][SPEC_MAX_BUFFERS][64];
    uint64_t peer_gen[BOX_MAX_SETS]; /* reference box: the submission's set k mapped in peer[k] */
    CUdeviceptr peer[BOX_MAX_SETS][SPEC_MAX_BUFFERS];
    long timed_count;           /* BATCH samples timed so far (when the empty kernel runs) */
    int python;                 /* a Python box (pybox.h): calls go to custom_kernel */
    int py_sync;                /* its custom_kernel waits for the GPU: samples unblocked */
    struct pybox_io pio;        /* the Python box's operation record */
    uint64_t primed_gen;        /* gen of the buffers the submission last ran on unblocked
                                 * (box_prime); 0 = never */
    CUdeviceptr bad;            /* reference box: mismatch counter */
    volatile int *flag;         /* host-mapped: [0] release flag, [1] timed-out flag */
    CUdeviceptr flag_d;
    CUevent ev0, ev1;
    int gtrace;                 /* activity is recorded (gtrace.h): GPU time per call */
    double gpu_gap_ns;          /* BATCH's bound on event time less GPU time (0 = unchecked) */
    struct gputime_window gwin; /* box_timed_for: the last call's window (gputime.h); its
                                 * GPU time comes from box_gpu_time after a collect */
};

/* Fill rep with a failure of the given status (enum box_status), directive
 * line and message; returns -1, so that a request handler can end with
 * `return box_rep_fail(...)`. */
static inline int box_rep_fail(struct box_rep *rep, int status, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline int box_rep_fail(struct box_rep *rep, int status, int line, const char *fmt, ...)
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
static inline int box_rep_cuda(struct box *b, struct box_rep *rep, int status, CUresult r,
                               const char *what)
{
    const char *name = NULL, *text = NULL;
    b->d.cuGetErrorName(r, &name);
    b->d.cuGetErrorString(r, &text);
    return box_rep_fail(rep, status, 0, "%s: %s: %s", what, name ? name : "CUDA_ERROR_UNKNOWN",
                        text ? text : "");
}

/* Every driver call of a request handler: a failure is ours (BOX_INTERNAL)
 * and ends the handler with -1. */
#define BOX_CU(b, rep, call, what)                                                   \
    do {                                                                             \
        CUresult box_r_ = (b)->d.call;                                               \
        if (box_r_ != CUDA_SUCCESS)                                                  \
            return box_rep_cuda((b), (rep), BOX_INTERNAL, box_r_, (what));           \
    } while (0)

/* box.c */
/* The child's main loop (box_start runs it in the fork); never returns:
 * exits 0 on QUIT or when the judge goes away, 3 on a fatal error. */
void box_main(const struct box_cfg *cfg) __attribute__((noreturn));

/* box_launch.c: each returns 0, or -1 with rep filled */
int box_setup_case(struct box *b, int bench, int idx, int nsets, struct box_rep *rep);
void box_share(const struct box *b, struct box_rep *rep);
unsigned box_grid_for(const struct box *b, int64_t n);
int box_args(struct box *b, CUdeviceptr *buf, void **args);
int box_prepare_set(struct box *b, CUdeviceptr *buf, CUdeviceptr ws, uint64_t seed,
                    uint64_t poison, struct box_rep *rep);
int box_prepare(struct box *b, int set, uint64_t seed, uint64_t poison, struct box_rep *rep);
int box_launch_set(struct box *b, const struct directives *d, const CUfunction *fn,
                   const struct dir_dims *dims, void **args, int status, struct box_rep *rep);
int box_launch_all(struct box *b, int set, struct box_rep *rep);
int box_collect(struct box *b, struct box_rep *rep);

/* One Python harness operation (pybox.h) of box b, after which the box's
 * context is current again on this thread whatever the submission did. */
int box_py_op(struct box *b, int op);
int box_prime(struct box *b, struct box_rep *rep);
int box_sync_user(struct box *b, struct box_rep *rep);
int box_fingerprint(struct box *b, const CUdeviceptr *set, uint64_t salt, uint64_t *fp,
                    struct box_rep *rep);
int box_copy_out(struct box *b, int set, const struct box_req *req, struct box_rep *rep);
int box_once(struct box *b, const struct box_req *req, struct box_rep *rep);   /* CASE */
int box_copy(struct box *b, const struct box_req *req, struct box_rep *rep);   /* COPY */

/* box_time.c: the timed requests; each returns 0, or -1 with rep filled */
int box_sample(struct box *b, const struct box_req *req, struct box_rep *rep);  /* SAMPLE */
int box_warmup(struct box *b, const struct box_req *req, struct box_rep *rep);  /* WARMUP */
int box_baseline(struct box *b, struct box_rep *rep);                           /* BASELINE */
int box_graph(struct box *b, const struct box_req *req, struct box_rep *rep);   /* GRAPH */
int box_clock(struct box *b, struct box_rep *rep);                              /* CLOCK */
int box_batch(struct box *b, const struct box_req *req, struct box_rep *rep);   /* BATCH */
/* One sample (empty: 0 the submission on set, 1 the empty kernel, 2
 * nothing) behind a blocking kernel that gives up after tmo ns; *ns is its
 * event time, b->gwin its window for box_gpu_time. 0, or -1 with rep
 * filled. */
int box_timed_for(struct box *b, int empty, int set, uint64_t tmo, double *ns, struct box_rep *rep);

#endif
