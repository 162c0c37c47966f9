/*
 * box.h - the run box: a child process that owns one CUDA context and runs
 * one cubin (a submission's, or a leaderboard's reference) on request.
 *
 * The judge (runner/judge.c) forks two boxes per job, a reference box and a
 * submission box, and drives them over a pipe pair with the fixed-size
 * messages below. Inputs come from the trusted fill kernel; outputs (and on
 * request the inputs) are copied into a shared memory region that the judge
 * reads and compares, so expected outputs never exist in a context where
 * submitted code can run (DESIGN.md, threat model item 1).
 *
 * Process model. A box is a fork() of the runner that never execs (the
 * boxes share a mapped region with the judge and CUDA IPC between each
 * other; rbox.h says why). The runner is multi-threaded when it forks (the
 * supervisor's heartbeat ticker; compare.c's workers come and go), and a
 * child has only the thread that forked: a lock another thread held at the
 * fork stays held forever in the child. So code that runs in a box must not
 * take a lock another thread may hold: no pthread mutex of the runner's
 * objects, no stdio stream the other threads write. glibc makes malloc
 * safe across fork itself. The one exception today is box_init's kj_log
 * warning (stderr) when the region cannot be pinned: it could block only if
 * the heartbeat logged at the very instant of the fork. The child also
 * inherits the runner's memory, the runner token and the secret seed
 * included: box_start's child wipes what cfg->wipe lists (secret.h) before
 * anything else.
 *
 * The protocol's states (box.c checks them at every request with
 * assert_box_state(), SQLite's assert_pager_state idiom):
 *
 *            fork (box_start)
 *                 |
 *                 v
 *            [starting] --- sandbox or CUDA init failed: box_device.error, exit 3
 *                 |
 *                 | struct box_device written on fd_info
 *                 v
 *              FRESH --------- LOAD ---------> LOADED
 *                                                 |
 *                                                 | CASE, SAMPLE, WARMUP, GRAPH, BATCH,
 *                                                 | VERIFY_SETS
 *                                                 v
 *                                          CASE (bench, i) <--+
 *                                                 |           | the same requests
 *                                                 +-----------+ (another case: buffers resized)
 *
 *   In any state: BASELINE, CLOCK, HEALTH leave the state as it was;
 *   QUIT (or the judge closing the request pipe) ends the box: exit 0.
 *
 * Transitions, with the function that makes each:
 *   starting -> FRESH      box_main: box_init, then rbox_lock
 *   FRESH -> LOADED        LOAD: box_load (a failure leaves FRESH; the judge
 *                          gives the box up)
 *   LOADED, CASE -> CASE   CASE box_once, SAMPLE box_sample, WARMUP box_warmup,
 *                          GRAPH box_graph, BATCH box_batch, VERIFY_SETS
 *                          box_verify_sets, each through box_setup_case (a
 *                          failed setup leaves LOADED)
 *   CASE -> CASE           VERIFY box_verify (reference box), COPY box_copy:
 *                          only for the case set up
 *   any -> same            BASELINE box_baseline, CLOCK box_clock,
 *                          HEALTH box_health_op
 * What holds in each state:
 *   FRESH: loaded = 0, no case (cur_case = -1, cp = NULL).
 *   LOADED: the submission's (or reference's) module and, when the board
 *     has one, generate.cu's are loaded and every launch line is bound to
 *     its kernel; cfg->plan is set; no case.
 *   CASE: cp is the plan of (cur_bench, cur_case); every buffer of the case
 *     is allocated in each of its nsets buffer sets (1 <= nsets <=
 *     BOX_MAX_SETS; only BATCH and WARMUP ask for more than one), and
 *     each set has its own workspace when the plan has one (zeroed before
 *     every call on that set); launch dimensions are checked
 *     against the device and the kernels.
 *   Only a reference box maps another box's buffers (VERIFY).
 * A request in a state that does not take it, or a state whose invariants
 * do not hold, is answered BOX_INTERNAL: the judge's bug, never the
 * submission's.
 */
#ifndef KJ_BOX_H
#define KJ_BOX_H

#include <stdint.h>
#include <stddef.h>
#include "kj_err.h"
#include "spec.h"
#include "directive.h"
#include "gpumon.h"
#include "plan.h"
#include "secret.h"

enum box_op {
    BOX_OP_LOAD = 1,  /* payload: struct box_load then the cubin */
    BOX_OP_CASE,      /* run once, copy outputs (and inputs) to the region */
    BOX_OP_SAMPLE,    /* one timed sample with the cold protocol, then copy */
    BOX_OP_WARMUP,    /* untimed samples for req.seconds (and at least 10) */
    BOX_OP_BASELINE,  /* time the empty kernel with the same protocol */
    BOX_OP_VERIFY,    /* reference box: compare its buffers with the submission's (payload: struct box_verify) */
    BOX_OP_COPY,      /* copy the current buffers to the region (detailed report, or no IPC) */
    BOX_OP_CLOCK,     /* estimate the SM clock now: rep.ns holds MHz */
    BOX_OP_HEALTH,    /* known-answer kernel: BOX_OK when the GPU computes right */
    BOX_OP_GRAPH,     /* cross-check: a CUDA graph of many launches over rotating buffers (TIMING.md 7) */
    BOX_OP_BATCH,     /* protocol v2: timed samples over the case's buffer sets (payload: struct box_batch) */
    BOX_OP_VERIFY_SETS, /* reference box: run the reference per set and compare (payload: struct box_vsets) */
    BOX_OP_START,     /* a held box (box_cfg.hold): start CUDA now (no reply: its info follows) */
    BOX_OP_QUIT
};

#define BOX_MAX_SETS 8    /* buffer sets one case may hold (protocol v2, docs/timing.md) */
#define BOX_LANES 4       /* streams a box rotates its v2 samples over */

/* Outcome of a request. BOX_REJECTED and BOX_RUNTIME are the submission's
 * fault (verdicts rejected / runtime_error); BOX_INTERNAL is ours. */
enum box_status { BOX_OK = 0, BOX_REJECTED, BOX_RUNTIME, BOX_TIMEOUT, BOX_INTERNAL };

struct box_device {
    char name[128];
    char arch[16];            /* "sm_90a" */
    int cc_major, cc_minor, sm_count;
    int gpu_count;            /* devices the driver shows this process */
    long long l2_bytes, total_mem;
    int driver_version;       /* 13000 = 13.0 */
    int max_threads_block, max_smem_optin, max_block[3], max_grid[3];
    int clock_khz, mem_clock_khz, mem_bus_bits;
    char pci[32];
    char sandbox[64];         /* protections in force, "ns,fs,creds,seccomp,cgroup" (rbox.h) */
    int gpu_time;             /* 1: the box records each timed call's GPU time (gtrace.h) */
    char gpu_time_note[160];  /* CUPTI's version, or why there is no GPU time */
    char error[512];          /* non-empty: the box could not start (why) */
};

struct box_req {
    int op;
    int bench;                /* 0: tests[case_index], 1: benchmarks[case_index] */
    int case_index;
    int copy_inputs;          /* CASE/SAMPLE/COPY: also copy the inputs; VERIFY: also check them */
    int no_copy;              /* CASE/SAMPLE: leave the results on the GPU (verified there) */
    int nsets;                /* WARMUP/BATCH: buffer sets the case holds (0 = 1); the box may
                               * allocate fewer when memory is short (rep.count says how many) */
    int set;                  /* COPY: which buffer set to copy */
    int profile;              /* CASE: bracket the submission's launches with the profiler's
                               * start and stop marks (profile mode; see tool.h) */
    uint64_t seed;            /* input seed for this call */
    uint64_t poison_seed;
    double seconds;           /* WARMUP: how long; GRAPH: the shape's median, to size the graph */
    uint32_t payload;         /* bytes that follow the request */
};

struct box_rep {
    int status;               /* enum box_status */
    int line;                 /* directive line the failure belongs to, 0 if none */
    double ns;                /* SAMPLE / BASELINE / GRAPH (per launch): elapsed GPU time */
    double event_ns;          /* BASELINE: median of an empty event pair with the same protocol */
    long count;               /* WARMUP: samples run; VERIFY: mismatching elements;
                               * GRAPH: launches per replay (0: no graph was possible, msg says why);
                               * VERIFY_SETS: sets checked */
    int nsets;                /* CASE/SAMPLE/WARMUP/BATCH: buffer sets the case holds */
    char msg[1024];
    int has_ipc;              /* CASE/SAMPLE/BATCH: ipc[] holds the buffers' handles */
    uint64_t gen;             /* changes whenever the buffers are reallocated */
    unsigned char ipc[BOX_MAX_SETS][SPEC_MAX_BUFFERS][64]; /* CUipcMemHandle of each buffer, per set */
    /* BATCH: the timed samples (ns[i] of set i) and the empty-kernel samples
     * taken between them; nbatch also counts the samples done before a failure. */
    int nbatch, nempty;
    double batch_ns[BOX_MAX_SETS], empty_ns[BOX_MAX_SETS];
    long set_bad[BOX_MAX_SETS];  /* VERIFY_SETS: mismatching elements per set */
    uint64_t fp[BOX_MAX_SETS];   /* BATCH: fingerprint of set i's outputs right after its call;
                                  * VERIFY_SETS: of the submission's set i when checked */
    double copy_gbs;          /* BASELINE: best device-to-device copy bandwidth, GB/s (read + write) */
    /* GPU time (gtrace.h, docs/timing.md "GPU time"), -1 where not recorded:
     * SAMPLE's call in gpu_ns, BATCH's sample i in batch_gpu_ns[i],
     * BASELINE's empty-kernel median in gpu_ns. gpu_check: the first
     * gputime_check that refused a call's records in this request (0 none),
     * gpu_why its sentence. */
    double gpu_ns;
    double batch_gpu_ns[BOX_MAX_SETS];
    int gpu_check;
    char gpu_why[160];
    int gpu_unblocked;        /* BATCH: the calls ran without the blocking kernel (a Python
                               * custom_kernel that waits for the GPU): their events hold the
                               * host's dispatch, so no bound on events less GPU time */
    struct gpumon mon;        /* CLOCK: NVML's reading */
};

/* VERIFY payload: the submission box's buffers (set 0) for the reference box's current case. */
struct box_verify {
    uint64_t gen;
    unsigned char ipc[SPEC_MAX_BUFFERS][64];
};

/* BATCH payload (protocol v2, docs/timing.md): on stream lane `lane`, one
 * untimed lead-in sample (lead_in = 1; it absorbs the switch from the
 * reference box's context), then n timed samples (at most the sets the case
 * holds: rep.nbatch says how many ran), sample i on buffer set i
 * with inputs from seed[i] and outputs poisoned from poison[i]; after every
 * empty_every-th timed sample of the box (a running count, 0 = never) one
 * empty-kernel sample with the same protocol. Right after sample i, outside
 * its events, rep.fp[i] gets the fingerprint of set i's outputs. The sets
 * keep their results until the next BATCH, for the reference box to check. */
struct box_batch {
    int n, lane, lead_in, empty_every;
    double gpu_gap_ns;        /* a call's event time less its GPU time may be at most this
                               * (gputime.h; 0 = unchecked) */
    uint64_t lead_seed;
    uint64_t salt;            /* of the outputs' fingerprints (common/kjhash.h) */
    uint64_t seed[BOX_MAX_SETS], poison[BOX_MAX_SETS];
};

/* VERIFY_SETS payload: for i < n, run the reference on inputs from seed[i]
 * and compare its outputs (and, with bit i of inputs, its inputs) with the
 * submission box's set i, whose buffers ipc[i] names (generation gen). */
struct box_vsets {
    uint64_t gen;
    int n;
    uint32_t inputs;
    uint64_t salt;            /* fingerprint set i's outputs too (rep.fp[i]), as BATCH did */
    uint64_t seed[BOX_MAX_SETS], poison[BOX_MAX_SETS];
    unsigned char ipc[BOX_MAX_SETS][SPEC_MAX_BUFFERS][64];
};

/* LOAD payload: this struct, then (plan_size > 0) the job's struct plan
 * and this box's struct directives, then the cubin, then (gen_size > 0)
 * the cubin of the board's generate.cu. A box started before its job
 * (box_cfg.plan and .dirs NULL: judge.h's judge_prestart) gets its plan
 * and directives here, exactly once; a box given them at fork refuses
 * them here. */
struct box_load {
    uint32_t plan_size;                  /* 0, or sizeof(struct plan) */
    uint32_t dirs_size;                  /* 0, or sizeof(struct directives) */
    uint32_t cubin_size;
    int nlaunch;
    char lowered[DIR_MAX_LAUNCHES][256]; /* function name per launch line */
    uint32_t gen_size;                   /* 0: the board has no generate.cu */
    int gen_nlaunch;
    char gen_lowered[DIR_MAX_LAUNCHES][256];
};

/* What a box is given at fork time. Every pointer is borrowed from the
 * judge for the life of the box: the child reads its own copy of what they
 * point to, made by fork(), and nothing it does reaches the judge's. */
struct box_cfg {
    const struct spec *spec;
    const struct plan *plan;  /* every case resolved (plan.h); NULL for probe and health
                               * boxes, and for a box started before its job, which LOAD
                               * gives it (with dirs) */
    const struct directives *dirs;    /* this box's: the submission's or reference.cu's */
    const struct directives *gendirs; /* the board's generate.cu, NULL if none */
    int gpu;                  /* device ordinal */
    int role_reference;       /* 1 = reference box (untimed) */
    int fd_in, fd_out;        /* requests in, replies out */
    int fd_info;              /* struct box_device written once after init */
    unsigned char *region;    /* shared with the judge (MAP_SHARED: the one pointer not copied) */
    size_t region_size;
    void *unmap;              /* the other box's region, unmapped in the child */
    size_t unmap_size;
    unsigned rbox_skip;       /* protections not to apply (KJUDGE_RBOX_SKIP; box_start fills it) */
    int tool;                 /* 1: started by tool.c under a profiler or sanitizer (rbox.h),
                               * or as a Python box (python_lib set) */
    const char *python_lib;   /* a Python box (pybox.h): the libpython it loads; NULL = CUDA */
    const char *python_site;  /* its site-packages folder (the pinned environment), or NULL */
    int python_helion;        /* a Python box: import Helion at its start (pybox_start) */
    int hold;                 /* a Python box started ahead of its turn: it imports, then
                               * waits for BOX_OP_START before it starts CUDA (judge_time.c) */
    const struct secret_list *wipe; /* what the child wipes first (secret.h); NULL = nothing */
};

/* The child's main loop; never returns (exits 0 on QUIT, 3 on a fatal error). */
void box_main(const struct box_cfg *cfg) __attribute__((noreturn));

/* Parent side: a started box. */
struct box_proc {
    int pid;                  /* the box, or under a tool the tool's process (tool.h) */
    int pgid;                 /* > 0: kill this process group too (the tool and its box) */
    int fd_req, fd_rep, fd_info;
};

/* Send a request and its payload, without waiting for a reply (BOX_OP_START). */
int box_send(struct box_proc *p, const struct box_req *req, const void *payload,
             struct kj_err *err);

/* Send a request (and payload) and wait for the reply until timeout_ms.
 * KJ_ETIMEOUT when the box did not answer in time, KJ_EIO when it died. */
int box_call(struct box_proc *p, const struct box_req *req, const void *payload,
             struct box_rep *rep, int timeout_ms, struct kj_err *err);

/* Read the box_device the child writes after creating its context. */
int box_read_info(struct box_proc *p, struct box_device *dev, int timeout_ms, struct kj_err *err);

/* Kill (SIGKILL) and reap the box; safe to call twice. The same as
 * box_signal() then box_reap(). */
void box_kill(struct box_proc *p);

/* The first half of box_kill: SIGKILL to the box (and its process group)
 * and its pipes closed, at once. p->pid stays for box_reap(). */
void box_signal(struct box_proc *p);

/* The second half: wait until the killed box has ended (for a run box,
 * until the driver has destroyed its CUDA context: a few hundred ms) and
 * remove its cgroup. Blocks; safe to call twice, and from another thread
 * than the one that started the box (waitpid names the pid). */
void box_reap(struct box_proc *p);

/* Fork a box running box_main() with cfg (its fd fields are filled here). */
int box_start(const struct box_cfg *cfg, struct box_proc *out, struct kj_err *err);

/* Start a box only to describe device gpu, then stop it (no spec needed).
 * The child wipes wipe (may be NULL) first. */
int box_probe(int gpu, const struct secret_list *wipe, struct box_device *dev,
              struct kj_err *err);

/* A fresh box without a job (no spec) on device gpu, the child wiping wipe
 * first: its device in *dev (within info_ms), one request op without a
 * payload answered in *rep (within call_ms; its status is the caller's to
 * read), then the box is stopped. box_health's, and calibrate's BASELINE. */
int box_single(int gpu, const struct secret_list *wipe, enum box_op op, int info_ms, int call_ms,
               struct box_device *dev, struct box_rep *rep, struct kj_err *err);

/* In a fresh box: a known-answer kernel over 16 Mi elements, checked on the
 * host. KJ_OK when the GPU is usable; otherwise err says what failed. The
 * supervisor runs it after a time_limit or runtime_error, before the next
 * job. */
int box_health(int gpu, const struct secret_list *wipe, struct kj_err *err);

#endif

