/*
 * pybox.h - the Python interpreter inside a Python run box.
 *
 * A Python submission (KernelBot's form: `custom_kernel(data)` over the
 * board's tensors) runs in a run box like any other: the same requests,
 * buffers, fill and poison kernels, timing protocol and checks (box.h).
 * The box differs in three places, all of them here and in the trusted
 * harness runner/pybox_harness.py that this file runs:
 *   - it is exec'd (tool.c's launcher, kind TOOL_PYTHON, then box_exec.c),
 *     and before CUDA starts it loads the deployment's libpython with
 *     dlopen, starts the interpreter and imports PyTorch and Triton;
 *   - LOAD imports the submission's source (import-time code runs under
 *     the box's sandbox, never before it is locked) instead of a cubin;
 *   - a call is custom_kernel(data) on the box's stream: PYBOX_CALL queues
 *     it (the tuple of tensors wraps the box's buffers without copies, and
 *     PyTorch's current stream is the box's), PYBOX_COLLECT then moves the
 *     returned tensors that are not the box's own output buffers into them,
 *     outside the timed span.
 * The harness answers through one callback that it registers at start;
 * every exception becomes a message in struct pybox_io, never a crash of
 * the box. The interpreter's lock is held by the box's one thread from
 * start to exit, so a thread the submission starts runs only while its
 * own code is called.
 */
#ifndef KJ_PYBOX_H
#define KJ_PYBOX_H

#include <stdint.h>
#include "kj_err.h"

#define PYBOX_MAX_ARGS 16
#define PYBOX_MSG 2048

/* One element of the tuple custom_kernel gets, or one it returns. The
 * layout is the harness's ctypes mirror (runner/pybox_harness.py): change
 * both together. */
struct pybox_arg {
    int32_t kind;             /* 0: a tensor over ptr, 1: the int ival */
    int32_t dtype;            /* enum spec_dtype */
    int32_t ndim;
    int32_t pad;
    int64_t dims[8];
    uint64_t ptr;
    int64_t ival;
    char name[32];            /* the board's buffer or variable name, for messages */
};

/* What one operation reads and writes (one per box, reused). */
struct pybox_io {
    uint64_t stream;          /* the CUstream calls are queued on */
    int32_t device;           /* the CUDA ordinal (PyTorch's device index) */
    int32_t nargs;
    struct pybox_arg args[PYBOX_MAX_ARGS];
    int32_t nret;
    int32_t pad;
    struct pybox_arg rets[PYBOX_MAX_ARGS]; /* where each returned tensor must land */
    uint64_t src;             /* LOAD: the source's address and length */
    uint64_t src_len;
    char versions[256];       /* out, after start: "python 3.12.3, torch 2.11.0, ..." */
    char msg[PYBOX_MSG];      /* out: why an operation failed (a traceback's tail) */
};

enum pybox_op { PYBOX_BIND = 1, PYBOX_LOAD, PYBOX_CALL, PYBOX_COLLECT };

/* Load libpython (path), start the interpreter with the deployment's
 * site-packages folder (site, may be NULL) and run the harness, which
 * imports PyTorch and Triton, and Helion when helion is 1 (its import takes
 * 12 s on the H200: the judge asks for it when the source names it, and for
 * a box started before its job). Before CUDA and the sandbox's lock: every
 * library is mapped before the root is replaced (a module imported later
 * comes from the site-packages folder, which stays bound read-only). */
int pybox_start(const char *libpython, const char *site, int helion, struct kj_err *err);

/* Run one operation (enum pybox_op) on io. 0 on success; 1 when the
 * submission failed (io->msg says how); -1 when the harness is broken
 * (ours; io->msg says how). */
int pybox_op(int op, struct pybox_io *io);

#endif
