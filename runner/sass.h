/*
 * sass.h - the machine code's instruction classes per kernel, from the
 * toolkit's nvdisasm run on the cubin NVRTC produced.
 *
 * The runner calls it after a compile box returns (the box itself may not
 * exec): `kjudge-runner compile` (sass_scan), and the judge for the
 * submission in benchmark and leaderboard modes (sass_start right after the
 * compile, sass_finish at the end of the job). It replaces the PTX-level guess of compile.c/ptxscan.c with
 * what the GPU will execute: tensor-core instructions (HGMMA = wgmma, HMMA /
 * IMMA / DMMA = mma, UTC*MMA = tcgen05), TMA (UTMALDG, UTMASTG, UTMAPF,
 * UTMAREDG), bulk copies (UBLKCP, UBLKRED, UBLKPF) and cp.async (LDGSTS),
 * plus the instruction count. Without nvdisasm the PTX-level classes stay
 * and each kernel says so ("classes_from": "ptx").
 *
 * nvdisasm runs in a child with no privileges (uid 65534 when root,
 * no_new_privs), an empty environment, CPU, memory and output limits and a
 * wall deadline; the cubin reaches it through a memfd. The child execs
 * nvdisasm right after setting those up, which replaces the runner's memory
 * it inherited (the token, the secret seed) before the cubin is read, so it
 * has nothing to wipe (secret.h).
 */
#ifndef KJ_SASS_H
#define KJ_SASS_H

#include <stddef.h>
#include "compile.h"
#include "kj_err.h"

#define SASS_WALL_S 20
#define SASS_MAX_OUTPUT (64u << 20)

/* The two below are sass_start's parts, public for the unit test
 * (test_sass.c). Path of nvdisasm into buf: $KJUDGE_NVDISASM, else
 * $CUDA_HOME/bin, else /usr/local/cuda/bin. 0 when found (executable), -1
 * when not. */
int sass_tool(char *buf, size_t bufsz);

/* Fill the classes of r's kernels from nvdisasm's listing text (len
 * bytes). Kernels the listing does not name keep their PTX classes.
 * Returns the number of kernels updated. */
int sass_apply(const char *text, size_t len, struct compile_result *r);

/* The two halves of sass_scan, so that the judge can go on while nvdisasm
 * runs (it takes about a second even for a small cubin): sass_start forks
 * it on a copy of r's cubin; sass_finish collects and reaps it (always) and
 * applies the listing to r. */
struct sass_proc {
    int pid, fd;
    double deadline;  /* CLOCK_MONOTONIC seconds */
};
int sass_start(const struct compile_result *r, struct sass_proc *p, struct kj_err *err);
int sass_finish(struct sass_proc *p, struct compile_result *r, struct kj_err *err);

/* Run nvdisasm on r->cubin and sass_apply() its listing. KJ_ENOTFOUND when
 * there is no nvdisasm (r unchanged); another error when it failed (r
 * unchanged, err says why). Needs r->ok. */
int sass_scan(struct compile_result *r, struct kj_err *err);

#endif
