/*
 * rbox.h - the run box's sandbox: what a process that runs submitted GPU
 * code may see and do.
 *
 * box.c calls rbox_prepare() in the freshly forked box before it touches
 * CUDA, and rbox_lock() after its context, stream and the judge's own
 * kernels exist and before the submission's module is loaded:
 *
 *   prepare: the box's pipes moved to RBOX_FD_IN/OUT/INFO, stdin and stdout
 *            on /dev/null (device printf goes nowhere), every other fd but
 *            stderr closed; the environment rebuilt from an allow-list;
 *            rlimits (core 0, open files, file size); new network, IPC, UTS
 *            and mount namespaces (and a user namespace when not root); a
 *            cgroup with memory and pid limits where the host delegates
 *            cgroup v2 to root.
 *   lock:    the root replaced by an empty read-only tmpfs (the GPU's device
 *            files stay open, nothing else can be opened); uid and gid
 *            SANDBOX_UID with no capabilities and no_new_privs; a seccomp
 *            filter that refuses (EPERM) exec, ptrace, other processes'
 *            memory, new namespaces, mounts, kernel modules, bpf, perf,
 *            keyrings, io_uring, userfaultfd, fork (clone without
 *            CLONE_THREAD), signals to any process but itself, and every
 *            socket but AF_UNIX (cuInit needs one).
 *
 * The order matters: CUDA opens its device files and libraries while the
 * file system is still there, and submitted code runs only after lock.
 * KJUDGE_RBOX_SKIP (comma list of ns, fs, creds, seccomp, cgroup, env)
 * turns protections off for diagnosis; the box reports what it applied.
 * "env" keeps the runner's environment in the box, so that a profiler that
 * injects itself through environment variables (ncu) can follow the box;
 * bench/bench_timing_fidelity.py needs it and every other step off.
 */
#ifndef KJ_RBOX_H
#define KJ_RBOX_H

#include <stddef.h>
#include "kj_err.h"

#define RBOX_FD_IN 3
#define RBOX_FD_OUT 4
#define RBOX_FD_INFO 5

enum {
    RBOX_NS = 1u << 0,
    RBOX_FS = 1u << 1,
    RBOX_CREDS = 1u << 2,
    RBOX_SECCOMP = 1u << 3,
    RBOX_CGROUP = 1u << 4,
    RBOX_ENV = 1u << 5,       /* the environment rebuilt (off only for a profiler's injection) */
};

struct rbox {
    unsigned skip;            /* RBOX_* bits not to apply */
    int tool;                 /* 1: the box runs under a profiler or sanitizer that the
                               * runner started (tool.h): the network, IPC and UTS
                               * namespaces, the cgroup and the environment are the
                               * launcher's; the box keeps the tool's descriptors and its
                               * root holds what the tool loads late (rbox_tool_fs) */
    unsigned applied;         /* RBOX_* bits in force */
    char cgroup[128];         /* the box's cgroup folder, "" if none */
    char pci[32];             /* tool mode: the GPU's PCI bus id (box.c sets it before lock) */
    int python;               /* a Python box (pybox.h, started like a tool): its root also
                               * holds /usr (the interpreter, the C compiler Triton runs)
                               * and python_site read-only, and its filter lets it fork
                               * and exec (Triton runs ptxas and the C compiler) */
    const char *python_site;  /* the pinned environment's site-packages, or NULL */
};

/* Parse KJUDGE_RBOX_SKIP's value (NULL = skip nothing); unknown words are
 * an error naming them. */
int rbox_parse_skip(const char *v, unsigned *out, struct kj_err *err);

/* Steps before CUDA (see above). fds[3] are the box's request, reply and
 * info pipes; they end as RBOX_FD_IN/OUT/INFO. */
int rbox_prepare(struct rbox *r, const int fds[3], struct kj_err *err);

/* Steps after CUDA's set-up (see above). */
int rbox_lock(struct rbox *r, struct kj_err *err);

/* "ns,fs,creds,seccomp,cgroup,env" for the bits in mask. */
void rbox_describe(unsigned mask, char *buf, size_t bufsz);

struct sandbox_probe;

/* What the boxes need and the host (probe) does not offer, as a list of
 * names into buf ("" when nothing is missing); returns how many. Both boxes
 * need mount, network, IPC and UTS namespaces (and a user namespace when not
 * root), no_new_privs and seccomp; the compile box also a PID namespace.
 * (KJUDGE_RBOX_SKIP does not lower this: the compile box needs them all.)
 * A cgroup is used where offered, never required. */
int rbox_missing(const struct sandbox_probe *p, char *buf, size_t bufsz);

/* Tool mode's root (rbox_tool.c): an empty read-only tmpfs holding binds
 * of the launcher's private /tmp and /dev/shm (read-write), the GPU's
 * device files, the tool's own library folder and the driver's PTX JIT
 * library (read-only), which the tool's injected code opens after the box
 * is locked. */
int rbox_tool_fs(const char *pci, const struct rbox *r, struct kj_err *err);

/* The launcher's cgroup (tool.c): as the box's own, for the calling
 * process, named after its pid. 1 when made, 0 when the host offers none. */
int rbox_cgroup_self(char *dir, size_t dirsz);

/* Parent side: remove the cgroup of a reaped box (pid), if it made one,
 * killing first (cgroup.kill) any process the box forked that outlived it. */
void rbox_cleanup(int pid);

#endif
