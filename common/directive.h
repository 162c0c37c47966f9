/*
 * directive.h - the "//!kjudge" lines of a submission (DESIGN.md, "The submission contract").
 *
 * The server parses them to learn the leaderboard, GPU type and mode when
 * the request does not name them and to reject a malformed submission early; the runner parses them
 * to know which kernels to launch, how, and with which NVRTC options.
 * Lines:
 *   //!kjudge leaderboard NAME
 *   //!kjudge gpu GPU_TYPE
 *   //!kjudge mode test|benchmark|leaderboard
 *   //!kjudge launch KERNEL grid=(E[,E[,E]]) block=(E[,E[,E]]) [smem=E] [cluster=(E[,E[,E]])]
 *   //!kjudge workspace E
 *   //!kjudge nvrtc OPTION...
 * E is an expression (expr.h) over the leaderboard's variables. KERNEL is an
 * identifier, or a template-id such as quant<128,8> (a NVRTC name expression).
 * Any other "//!kjudge" line is an error. Every error sets err->line.
 */
#ifndef KJ_DIRECTIVE_H
#define KJ_DIRECTIVE_H

#include <stdint.h>
#include "kj_err.h"
#include "expr.h"

#define DIR_MAX_LAUNCHES 8
#define DIR_MAX_KERNEL 128
#define DIR_MAX_NVRTC 16
#define DIR_MAX_OPT 64

struct dir_launch {
    int line;                         /* 1-based source line */
    char kernel[DIR_MAX_KERNEL];      /* as written, e.g. "quant" or "quant<128,8>" */
    int ngrid, nblock, ncluster;      /* 1..3 each; ncluster 0 = no cluster */
    char grid[3][EXPR_MAX_LEN];
    char block[3][EXPR_MAX_LEN];
    char smem[EXPR_MAX_LEN];          /* "" = 0 */
    char cluster[3][EXPR_MAX_LEN];
};

struct directives {
    char leaderboard[64];             /* "" when absent */
    int leaderboard_line;
    char gpu[64];                     /* "" when absent; [A-Za-z0-9_-]+ like a spec's GPU names */
    int gpu_line;
    char mode[16];                    /* "" when absent; "test", "benchmark" or "leaderboard" */
    int mode_line;
    int nlaunch;
    struct dir_launch launch[DIR_MAX_LAUNCHES];
    char workspace[EXPR_MAX_LEN];     /* "" when absent */
    int workspace_line;
    int nnvrtc;
    char nvrtc[DIR_MAX_NVRTC][DIR_MAX_OPT]; /* each from the allow-list */
    int nvrtc_line[DIR_MAX_NVRTC];
};

/* Launch dimensions after evaluation for one shape. */
struct dir_dims {
    uint32_t grid[3], block[3], cluster[3]; /* missing components are 1; cluster all 1 when none */
    uint32_t smem;                          /* dynamic shared memory bytes */
    int has_cluster;
};

/* Parse every directive of src (len bytes, need not be NUL-terminated).
 * Syntax only: expressions are checked for syntax, not names (the
 * leaderboard may not be known yet). Requires at least one launch line.
 * Errors name the line: "line 3: launch: missing block=(...)". */
int dir_parse(const char *src, size_t len, struct directives *out, struct kj_err *err);

/* Check every expression's names against vars (the leaderboard's variables). */
int dir_check_names(const struct directives *d, const struct expr_vars *vars, struct kj_err *err);

/* Evaluate launch l for one shape. Each grid/block/cluster component must be
 * in 1..2^31-1, smem in 0..2^32-1; the device limits are checked later by the
 * runner. Errors name the line and the component: "line 2: grid.x = 0, must be >= 1". */
int dir_eval_launch(const struct dir_launch *l, const struct expr_vars *vars,
                    struct dir_dims *out, struct kj_err *err);

/* Evaluate the workspace size in bytes (0 when absent); limit 1<<34. */
int dir_eval_workspace(const struct directives *d, const struct expr_vars *vars,
                       uint64_t *out, struct kj_err *err);

/* 1 if opt is on the NVRTC allow-list (see directive.c for the list). */
int dir_nvrtc_allowed(const char *opt);

#endif
