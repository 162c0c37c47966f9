/*
 * compile_int.h - what the files of the compile step share (compile.h is
 * its public side): the state of one compile_source() call and the
 * functions each file offers the others.
 *
 *   compile_scan.c  the checks on the source before NVRTC sees it: size,
 *                   NUL bytes, and the #include pre-scan
 *   compile_log.c   NVRTC's log: unresolved name expressions, ptxas's
 *                   per-kernel report, the messages for bad launch lines,
 *                   and the log cleaned and capped for users
 *   compile_ptx.c   a PTX module: its checks and the PTX compiler (nvJitLink)
 *   compile.c       toolkit paths, kernel names and options, NVRTC itself
 *
 * Only the compile files include it.
 */
#ifndef KJ_COMPILE_INT_H
#define KJ_COMPILE_INT_H

#include <limits.h>
#include <nvrtc.h>
#include "compile.h"
#include "kj_buf.h"

/* What went wrong with one launched kernel, by the source's fault. */
enum cc_kstate { K_OK, K_MISSING, K_NOT_GLOBAL, K_BAD_NAME, K_LONG_NAME };

struct cc_paths {
    char inc[PATH_MAX];       /* <home>/include as configured */
    char inc_real[PATH_MAX];  /* the same, symlinks resolved */
    char cccl[PATH_MAX];      /* <home>/include/cccl; "" when absent */
    char cccl_real[PATH_MAX];
    char home[PATH_MAX];      /* <home> as configured */
    char home_real[PATH_MAX];
    char cutlass[PATH_MAX];   /* CUTLASS's include dir ($KJUDGE_CUTLASS_INCLUDE); "" when none */
    char cutlass_real[PATH_MAX];
};

/* Everything one compile_source() call works with. */
struct cc_job {
    const char *src;
    size_t len;
    const struct directives *d;  /* borrowed; NULL = no directives */
    struct compile_result *out;  /* borrowed from the caller */
    struct cc_paths paths;
    int kline[DIR_MAX_LAUNCHES];  /* directive line of each kernel */
    int kstate[DIR_MAX_LAUNCHES]; /* enum cc_kstate */
    int kentry[DIR_MAX_LAUNCHES]; /* 1 once ptxas compiled it as an entry */
    struct kj_buf pre;            /* our messages; go before NVRTC's log */
    char *text;                   /* owned: the source as NVRTC gets it */
    char *raw;                    /* NVRTC's log, owned */
    char *ptx;                    /* owned: NVRTC's PTX after a good compile, for ptxscan */
    size_t ptx_len;
    int user_fault;               /* 1: the source does not compile */
    int cutlass;                  /* 1: the source includes CUTLASS (cc_check_source) */
    nvrtcResult status;           /* of the last nvrtcCompileProgram */
};

/* A character of a C identifier (and '$', which NVRTC accepts). */
static inline int cc_is_ident(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '$';
}

/* compile_scan.c */
/* Reasons the source cannot go to NVRTC at all (message to j->pre); also
 * makes j->text, the NUL-terminated copy NVRTC compiles. Returns 1 when
 * the source is refused, 0 when it may go on, KJ_ENOMEM. */
int cc_check_source(struct cc_job *j);

/* compile_ptx.c */
/* Compile the PTX module j->text for arch with the toolkit's PTX compiler
 * (nvJitLink): the module's checks (message to j->pre, user_fault), the
 * cubin, ptxas's report in j->raw and the module in j->ptx, as the NVRTC
 * path leaves them. <0 only for the judge's faults. */
int cc_compile_ptx(struct cc_job *j, const char *arch, struct kj_err *err);

/* compile_log.c */
/* Decide which kernels failed, by NVRTC's log (its unresolved name
 * expressions after a failed compile, ptxas's entries after a good one),
 * write a message for each into j->pre; returns how many. *map_hits: how
 * many "__nv_name_map" errors named a kernel. */
int cc_judge_kernels(struct cc_job *j, int *map_hits);
/* Copy the raw log into dst without ptxas's info lines and, when drop_map,
 * without the "__nv_name_map" error blocks (replaced by our messages). */
void cc_filter_log(const char *raw, int drop_map, struct kj_buf *dst);
/* Copy s into dst cleaned for users: toolkit paths as "<cuda>", other
 * absolute paths as "<path>", control bytes and invalid UTF-8 as '?'. */
void cc_clean_log(const char *s, size_t n, const struct cc_paths *p, struct kj_buf *dst);
/* Cut b to COMPILE_MAX_LOG bytes, the truncation marker included. */
void cc_cap_log(struct kj_buf *b);

#endif
