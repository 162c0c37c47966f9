/*
 * tool.h - a run box under Nsight Compute (profile mode) or
 * compute-sanitizer (sanitize mode), without weakening the box.
 *
 * Both tools start their target themselves and inject code into it through
 * the environment, so a box cannot simply be forked as box_client.c does.
 * Instead the runner starts the tool as a launcher: a child of the runner
 * enters new network, IPC, UTS and mount namespaces (the tool and its one
 * target share them and nothing else: loopback only, a private tmpfs /tmp
 * and /dev/shm), gets the box's cgroup, a rebuilt environment and fds
 * 3,4,5 = the box's request, reply and info pipes, 6 = the source (memfd),
 * 7 = the result region (memfd); then it execs the tool, which execs
 * `kjudge-runner box-exec` (box_exec.c), which rebuilds the box's
 * configuration from the leaderboard folder and the source, and runs
 * box_main() in tool mode (rbox.h: its own mount namespace, uid 65534, no
 * capabilities, no_new_privs, the seccomp filter, a read-only root holding
 * only what the tool loads late). The judge talks to it as to any box.
 *
 * The tool's output (the .ncu-rep report, the sanitizer's log) goes to a
 * folder the runner made outside /tmp, which the box cannot reach.
 */
#ifndef KJ_TOOL_H
#define KJ_TOOL_H

#include <stddef.h>
#include "box.h"
#include "kj_err.h"
#include "protocol.h"
#include "secret.h"

enum tool_kind {
    TOOL_NCU = 0, TOOL_SANITIZER,
    TOOL_PYTHON   /* no tool: a Python run box (pybox.h), started through the same launcher */
};

struct tool_cfg {
    enum tool_kind kind;
    enum kj_sanitizer sanitizer;  /* TOOL_SANITIZER: which tool */
    const char *outdir;           /* the runner's folder for the tool's output (tool_outdir) */
    const char *spec_dir;         /* the leaderboard's folder */
    const char *source;           /* the submission, source_len bytes */
    size_t source_len;
    int region_fd;                /* memfd of region_size bytes, shared with the judge */
    size_t region_size;
    int gpu;
    int launch_count;             /* TOOL_NCU: at most this many launches profiled */
    const struct secret_list *wipe;
    const char *python_lib;       /* TOOL_PYTHON: the libpython, its home (sys.base_prefix) */
    const char *python_home;      /* and the pinned site-packages (struct pyenv, judge.h) */
    const char *python_site;
    int hold;                     /* TOOL_PYTHON: box_cfg.hold (box-exec --hold) */
    int no_helion;                /* TOOL_PYTHON: the box does not import Helion at its start
                                   * (box_cfg.python_helion 0: the source does not name it) */
};

/* The tool's program: $KJUDGE_NCU / $KJUDGE_COMPUTE_SANITIZER, else
 * $CUDA_HOME/bin, else /usr/local/cuda/bin, else PATH. KJ_ENOTFOUND when
 * none is executable. */
int tool_find(enum tool_kind kind, char *buf, size_t bufsz, struct kj_err *err);

/* A fresh folder for the tool's output: under $KJUDGE_TOOL_DIR or
 * /var/tmp (never /tmp, which the launcher replaces). */
int tool_outdir(char *buf, size_t bufsz, struct kj_err *err);

/* Remove the folder and the files in it. */
void tool_outdir_remove(const char *dir);

/* Start the tool with a box in it (see above); out is used as box_start's. */
int tool_start(const struct tool_cfg *c, struct box_proc *out, struct kj_err *err);

/* After BOX_OP_QUIT: wait until the tool has written its output and exited,
 * or until deadline (CLOCK_MONOTONIC seconds; then it is killed: KJ_ETIMEOUT). */
int tool_wait(struct box_proc *p, double deadline, struct kj_err *err);

#endif
