/*
 * sandbox.h - the mechanics of a box: namespaces, a private read-only file
 * system, an unprivileged identity, resource limits, closed fds, a rebuilt
 * environment and a seccomp allow-list. The compile box (cbox.c) runs NVRTC
 * through sandbox_enter() and sandbox_filter(); sandbox_probe() says what
 * the host offers, for the runner's start-up report.
 */
#ifndef KJ_SANDBOX_H
#define KJ_SANDBOX_H

#include <stddef.h>
#include "kj_err.h"

#define SANDBOX_FD 3             /* the one fd kept open in the box (besides 0-2) */
#define SANDBOX_UID 65534        /* the box's user and group */
#define SANDBOX_TMP_BYTES (16u << 20) /* size of the box's private /tmp */
#define SANDBOX_MAX_RO 4         /* read-only trees bound into the box */

/* What this host allows, each 1 or 0 (landlock_abi: 0 when unavailable). */
struct sandbox_probe {
    int root;        /* running as uid 0 */
    int userns, mountns, netns, pidns, ipcns, utsns;
    int no_new_privs;
    int seccomp;     /* a seccomp filter can be installed */
    int landlock_abi;
    int cgroup2;     /* root over a cgroup v2 hierarchy offering the memory and pids controllers */
};

/* Try each protection in a throw-away child; fills out, never fails. */
void sandbox_probe(struct sandbox_probe *out);

/* What the box sees: ro[i] (absolute paths, borrowed) bound read-only at
 * the same path after symlinks are resolved, plus a symlink at ro[i] itself
 * when it differs, or at ro_at[i] when that is set (an absolute path
 * outside /tmp: a tree whose own path is under /tmp, where the box has its
 * private one, is still seen); a fresh /proc, /dev with null, zero and urandom, a
 * private /tmp of SANDBOX_TMP_BYTES; the rest of the root is empty and
 * read-only. env (NULL-terminated "K=V" strings, borrowed) is the whole
 * environment. */
struct sandbox_conf {
    const char *ro[SANDBOX_MAX_RO];
    const char *ro_at[SANDBOX_MAX_RO]; /* NULL: at ro[i]'s own path; else there (borrowed) */
    int nro;
    const char *const *env;
    unsigned long cpu_s;      /* RLIMIT_CPU */
    unsigned long long as;    /* RLIMIT_AS; 0: none */
};

/* Called in a fresh child whose fd `keep` is the result pipe. Moves it to
 * SANDBOX_FD, points 0 and 1 at /dev/null, closes every other fd but 2,
 * enters new user (when not root), mount, PID, net, IPC and UTS namespaces
 * and forks twice (an init for the PID namespace, then the worker). Only the
 * worker returns: 0 with the sandbox set up (the uid is SANDBOX_UID, no
 * capabilities, no_new_privs, limits set), or <0 with err filled and as much
 * done as was possible; the caller reports it over SANDBOX_FD and exits. The
 * two forks exit as the worker does (same code, or same signal). */
int sandbox_enter(int keep, const struct sandbox_conf *c, struct kj_err *err);

/* Install the seccomp allow-list (last step before untrusted work). A call
 * outside it raises SIGSYS (the caller's handler may report si_syscall; a
 * process without one is killed); sockets get EPERM. */
int sandbox_filter(struct kj_err *err);

/* Pieces the run box (rbox.c) shares with the compile box. */

/* Write s to an existing file (a /proc or cgroup control file); 0 or -1. */
int sandbox_write_file(const char *path, const char *s);

/* unshare(flags), plus a user namespace when not root whose SANDBOX_UID/GID
 * map to the caller's uid and gid outside (setgroups denied first). */
int sandbox_unshare(int flags, struct kj_err *err);

/* SANDBOX_UID (when root), no supplementary groups, no capabilities in any
 * set (the bounding set too), no_new_privs. */
int sandbox_drop_creds(int root, struct kj_err *err);

/* Load filter f unless rc (the result of building it) is already an
 * error, release it, and turn a failure into KJ_EINTERNAL. */
int sandbox_load_filter(void *f, int rc, struct kj_err *err);

/* The name of syscall nr on this architecture into buf ("?" if unknown). */
void sandbox_syscall_name(int nr, char *buf, size_t bufsz);

#endif
