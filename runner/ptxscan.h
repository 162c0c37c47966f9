/*
 * ptxscan.h - what a compiled kernel uses, read from NVRTC's PTX: tensor-core
 * instructions (wgmma, mma, tcgen05), the tensor memory accelerator and other
 * asynchronous copies, and its .maxntid bound; and the largest block the
 * kernel can launch with for its register count. compile.c fills
 * struct compile_kernel with it so `kjudge-runner compile`, results and the
 * web page can show them. PTX-level: calls to non-inlined functions are
 * not followed.
 */
#ifndef KJ_PTXSCAN_H
#define KJ_PTXSCAN_H

#include <stddef.h>
#include "compile.h"

/* Fill k's feature fields from the body of ".entry <k->lowered>" in ptx
 * (len bytes). Leaves them zero when the entry is not found. */
void ptxscan_kernel(const char *ptx, size_t len, struct compile_kernel *k);

/* Largest threads per block for `registers` per thread (65536 registers per
 * block, allocated per warp in units of 256, at most 1024 threads), further
 * bounded by maxntid (0 = none). 0 when registers is not positive. Used by
 * ptxscan_kernel; public for its unit test (test_ptxscan.c). */
int ptxscan_max_threads(int registers, int maxntid);

#endif
