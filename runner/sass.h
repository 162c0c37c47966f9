/*
 * sass.h - the machine code's instruction classes per kernel, from the
 * toolkit's nvdisasm run on the cubin NVRTC produced.
 *
 * The runner calls sass_scan() after a compile box returns (the box itself
 * may not exec): `kjudge-runner compile` and the judge, for the
 * submission. It replaces the PTX-level guess of compile.c/ptxscan.c with
 * what the GPU will execute: tensor-core instructions (HGMMA = wgmma, HMMA /
 * IMMA / DMMA = mma, UTC*MMA = tcgen05), TMA (UTMALDG, UTMASTG, UTMAPF,
 * UTMAREDG), bulk copies (UBLKCP, UBLKRED, UBLKPF) and cp.async (LDGSTS),
 * plus the instruction count. Without nvdisasm the PTX-level classes stay
 * and each kernel says so ("classes_from": "ptx").
 *
 * nvdisasm runs in a child with no privileges (uid 65534 when root,
 * no_new_privs), an empty environment, CPU, memory and output limits and a
 * wall deadline; the cubin reaches it through a memfd.
 */
#ifndef KJ_SASS_H
#define KJ_SASS_H

#include <stddef.h>
#include "compile.h"
#include "kj_err.h"

#define SASS_WALL_S 20
#define SASS_MAX_OUTPUT (64u << 20)

/* Path of nvdisasm into buf: $KJUDGE_NVDISASM, else $CUDA_HOME/bin, else
 * /usr/local/cuda/bin. 0 when found (executable), -1 when not. */
int sass_tool(char *buf, size_t bufsz);

/* Fill the classes of r's kernels from nvdisasm's listing text (len
 * bytes). Kernels the listing does not name keep their PTX classes.
 * Returns the number of kernels updated. */
int sass_apply(const char *text, size_t len, struct compile_result *r);

/* Run nvdisasm on r->cubin and sass_apply() its listing. KJ_ENOTFOUND when
 * there is no nvdisasm (r unchanged); another error when it failed (r
 * unchanged, err says why). Needs r->ok. */
int sass_scan(struct compile_result *r, struct kj_err *err);

#endif
