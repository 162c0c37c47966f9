/*
 * result_check.h - the server's check of a runner's result before it is stored.
 *
 * A runner host runs untrusted code, and a runner token can be stolen, so
 * POST /runner/jobs/{id}/result (api_runner.c) passes the body through
 * rcheck_result() with the job's board, mode and GPU type: the text must be
 * one JSON object of bounded size and depth without NUL, every known key of
 * the right type and range (the result format of docs/protocol.md), every
 * name valid UTF-8 (in free text, messages and logs, whose runner-side
 * truncation can split a character, bytes that are not UTF-8 become
 * U+FFFD); unknown keys are dropped (reported in out->dropped so the caller
 * can log them). Then it must agree with the
 * job: mode, leaderboard, the test shapes, in profile mode the shape the
 * request named (benchmarks and profile.shapes name only it), and, for an accepted benchmark or
 * leaderboard result, exactly the board's benchmark shapes with sane
 * statistics (positive, finite, min <= q1 <= median <= q3 <= max, ...),
 * under timing protocol v2 corrected medians that are the medians less the
 * job's launch-path offset (docs/timing.md), medians that are not below
 * the shape's physical floor or the empty-kernel time (result_floor.c),
 * the score the server
 * recomputes as the geometric mean of the ranked medians (the corrected
 * ones when the result has them; a runner's score that disagrees beyond
 * rounding is refused), and a
 * device (system.gpu) of the job's GPU type (gputype.h).
 *
 * A pure function of its arguments: no database, no HTTP, no globals, so it
 * is unit-tested (tests/unit/test_result_check.c) and fuzzed
 * (tests/fuzz/fuzz_result_check.c).
 */
#ifndef KJ_RESULT_CHECK_H
#define KJ_RESULT_CHECK_H

#include <stddef.h>
#include "kj_err.h"
#include "protocol.h"
#include "spec.h"

#define RCHECK_MAX_DEPTH 16        /* nesting of arrays and objects (a real result: 6) */
#define RCHECK_MAX_NODES 100000    /* JSON values in one result (a real one: a few thousand) */
#define RCHECK_MAX_TEXT 4096       /* bytes of a message or any other free text */
#define RCHECK_MAX_LOG (64 * 1024) /* bytes of compile.log (COMPILE_MAX_LOG) */
#define RCHECK_MIN_NS 1.0          /* a timing below a nanosecond is not a measurement */
#define RCHECK_MAX_NS 8.64e13      /* nor one above a day (the longest job limit) */
#define RCHECK_SCORE_REL 1e-9      /* how far a runner's score may be from the server's */
#define RCHECK_MAX_OFFSET_FRAC 0.25 /* protocol v2: |offset_ns| at most this x the GPU's constant */
/* A timed median is a measurement (result_floor.c): not below the shape's
 * physical floor (its bytes beyond the L2 at the GPU's bandwidth) less
 * RCHECK_FLOOR_MARGIN, nor below the result's empty-kernel time less
 * RCHECK_BASELINE_MARGIN (the launch path's offset differs between the
 * process that measured it and the job's: 50-90 ns of about 3 us on an
 * H200). Bandwidth and L2 of a GPU type without a row in result_floor.c's
 * table are bounded by the two MAX values. */
#define RCHECK_FLOOR_MARGIN 0.10
#define RCHECK_BASELINE_MARGIN 0.25
#define RCHECK_MAX_BANDWIDTH_GBS 20000.0
#define RCHECK_MAX_L2_BYTES (256.0 * 1024 * 1024)

/* The job a result is for. */
struct rcheck_job {
    const struct spec *spec;  /* borrowed: the job's leaderboard; NULL when no longer loaded
                                 (then only an internal_error is taken) */
    enum kj_mode mode;
    const char *gpu;          /* borrowed: the job's GPU type, e.g. "H200" */
    int profile_shape;        /* profile mode: 1 + the one benchmark shape the request names
                                 (db_sub.profile_shape); 0 = every shape */
};

/* A timed shape of a checked result: a benchmark entry with a shape and a
 * median, as the rankings show it (stored as numbers by db_job_finish). */
struct rcheck_median {
    int idx;                  /* the entry's index in "benchmarks" */
    double median_ns;         /* the ranked one: corrected_median_ns when timing.corrected
                                 is true and the entry has it, else median_ns */
    double raw_median_ns;     /* the entry's median_ns */
    int corrected;            /* 1: median_ns is the entry's corrected_median_ns */
    char *shape;              /* owned: the shape's variables as JSON text, {"T":1024} */
};

/* What a checked result becomes. */
struct rcheck_out {
    char *json;               /* owned: the cleaned result, NUL-terminated; rcheck_out_clear() */
    size_t json_len;
    enum kj_verdict verdict;
    int has_score;            /* 1: score_ns holds the server's score */
    double score_ns;          /* geometric mean of the ranked benchmark medians */
    struct rcheck_median *medians; /* owned: nmedians timed shapes, in index order */
    int nmedians;
    int ndropped;             /* unknown keys left out */
    char dropped[160];        /* the first of their paths, comma separated, printable */
    const char *code;         /* on refusal (static): "bad_verdict", "bad_score" or "bad_result" */
};

/* Check the result text[0..len) (need not be NUL-terminated) for job.
 * 0: *out is filled (the caller frees with rcheck_out_clear). KJ_EINVAL:
 * refused; err's message names the field ("benchmarks[1].median_ns: ...")
 * and out->code the error code; out holds nothing to free. KJ_ENOMEM. */
int rcheck_result(const struct rcheck_job *job, const char *text, size_t len,
                  struct rcheck_out *out, struct kj_err *err);

/* Free what out owns and zero it; safe on a zeroed or cleared out. */
void rcheck_out_clear(struct rcheck_out *out);

#endif
