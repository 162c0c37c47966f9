/*
 * compile.h - the compile step: a submission's CUDA C++ source to a cubin with NVRTC.
 *
 * Called by the judge (runner/judge.c) for the submission and for the
 * leaderboard's reference, and by `kjudge-runner compile`. Needs no GPU.
 * It builds the server-owned NVRTC option list (target arch, C++17, the
 * toolkit's include dirs and CUTLASS's, the directive's allow-listed options, -Xptxas=-v),
 * registers every launched kernel as a name expression, and reads the
 * per-kernel resource usage out of ptxas's report. The log given to users
 * is capped at COMPILE_MAX_LOG bytes and has host paths replaced.
 */
#ifndef KJ_COMPILE_H
#define KJ_COMPILE_H

#include <stddef.h>
#include "kj_err.h"
#include "directive.h"

#define COMPILE_MAX_LOG (64 * 1024)
#define COMPILE_MAX_SOURCE (1024 * 1024)
/* The environment variable naming CUTLASS's include dir (the one holding
 * cute/ and cutlass/); kjudge-runner sets it from .cutlass/include beside
 * its bin/ when unset (main.c), the compile box binds it read-only. */
#define COMPILE_CUTLASS_ENV "KJUDGE_CUTLASS_INCLUDE"
/* The CUTLASS release deploy/deps.sh installs (nvidia-cutlass on PyPI). */
#define KJ_CUTLASS_VERSION "4.2.0"

struct compile_kernel {
    char name[DIR_MAX_KERNEL]; /* as written in the launch line */
    char lowered[256];         /* mangled name to pass to cuModuleGetFunction */
    int registers;
    int smem_static;           /* bytes of static shared memory */
    int stack_frame;           /* bytes of local memory per thread */
    int spill_stores, spill_loads; /* bytes */
    int barriers;
    int max_threads_per_block; /* from registers (64K per block) and .maxntid; 0 = unknown */
    char tensor_cores[16];     /* "wgmma", "mma", "tcgen05" or "" (from the kernel's PTX) */
    int uses_tma;              /* cp.async.bulk.tensor (the tensor memory accelerator) */
    int uses_bulk_copy;        /* cp.async.bulk without a tensor map */
    int uses_cp_async;         /* cp.async (asynchronous global-to-shared copies) */
    int sass;                  /* 1: the four classes above come from the machine code
                                * (sass.c), 0: from the PTX */
    int sass_instructions;     /* instructions in the machine code, 0 = not scanned */
};

struct compile_result {
    int ok;                     /* 1: cubin produced; 0: compile error (the user's fault) */
    char arch[16];              /* e.g. "sm_90a" */
    char *log;                  /* owned, NUL-terminated, capped, host paths stripped; never NULL after success */
    void *cubin;                /* owned; NULL unless ok */
    size_t cubin_size;
    int nkernels;
    struct compile_kernel kernels[DIR_MAX_LAUNCHES]; /* one per distinct launched kernel */
    double seconds;             /* wall time of nvrtcCompileProgram */
};

/* Compile src (len bytes) for arch with the options from d. Returns 0 when
 * NVRTC ran, whatever the outcome (out->ok says whether the source compiled;
 * when it did not, out->log says why, and a launch line naming a kernel that
 * does not exist gives a log line "line N: launch: no kernel named 'foo'").
 * Returns <0 only for the judge's own faults (NVRTC missing, out of memory).
 * The caller frees out with compile_result_free() in both cases. */
int compile_source(const char *src, size_t len, const struct directives *d,
                   const char *arch, struct compile_result *out, struct kj_err *err);

/* Free what out owns; out may be zeroed or partially filled. */
void compile_result_free(struct compile_result *out);

/* NVRTC's version as "13.0" into buf. */
void compile_nvrtc_version(char *buf, size_t bufsz);

#endif
