/*
 * result_int.h - what result_check.c (the rules of a runner's result) and
 * result_walk.c (the walk over its JSON) share: the schema tables' types,
 * the state of one check, and the two passes that need no job.
 * Not for other modules.
 *
 * A check keeps the path it is at ("benchmarks[1].median_ns"); every
 * refusal names it, and its first part picks the error code the caller
 * answers with (bad_verdict, bad_score, bad_result).
 */
#ifndef KJ_RESULT_INT_H
#define KJ_RESULT_INT_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include "result_check.h"

/* The kinds of value a schema field holds. */
enum rc_kind { RK_STR, RK_NUM, RK_INT, RK_BOOL, RK_OBJ, RK_ARR, RK_SHAPE };

#define RF_NULL 1   /* null is allowed too */
#define RF_NANSTR 2 /* numbers: the strings "nan", "inf" and "-inf" are allowed too */
#define RF_TEXT 4   /* free text: bytes that are not UTF-8 become U+FFFD instead of a refusal
                       (a runner's messages quote truncated text); names must be valid */

/* One key of an object, or (key NULL) the items of an array. */
struct rc_field {
    const char *key;
    enum rc_kind kind;
    int flags;                  /* RF_* */
    double lo, hi;              /* numbers: range; strings: hi = bytes; arrays: item count */
    const struct rc_field *sub; /* objects: their keys (ended by a NULL key); arrays: the item */
};

/* result_tool.c: the keys of profile mode's "profile" and sanitize mode's
 * "sanitize" objects (docs/profile.md). */
extern const struct rc_field rc_profile_keys[];
extern const struct rc_field rc_sanitize_keys[];

/* result_floor.c: the limits a timed result's medians are held to. */
struct rc_limits {
    double bw_gbs;        /* the bandwidth of the floor: the result's, under the type's bound */
    int claimed_bw;       /* 1: bw_gbs is the result's; 0: the GPU type's bound */
    double l2_bytes;      /* what the L2 may still hold when a sample ends */
    double baseline_ns;   /* the result's empty-kernel time; 0 when it has none */
};

/* One check in progress. */
struct rc {
    char path[192];         /* where we are: "benchmarks[1].median_ns" */
    size_t plen;
    struct kj_err *err;
    struct rcheck_out *out;
    size_t dlen;            /* bytes used in out->dropped */
};

/* Refuse the result: "PATH: message" (or "message" at the top), with the
 * code that PATH implies (out->code). Return KJ_EINVAL. rc_fail_at names
 * key below the current path. */
int rc_fail(struct rc *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int rc_fail_at(struct rc *c, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Descend into key (or [index] when key is NULL); returns the length that
 * rc_pop restores. */
size_t rc_push(struct rc *c, const char *key, int index);
void rc_pop(struct rc *c, size_t saved);
/* Note an unknown key (at the current path + key) that is left out. */
void rc_dropped(struct rc *c, const char *key);

/* Pass 1: size, nesting and value count of the raw text, and no NUL.
 * KJ_OK or a refusal. */
int rc_scan(struct rc *c, const char *text, size_t len);
/* Pass 2: copy in as field f describes it into *out (which the caller
 * deletes, also on failure): types, ranges, lengths and UTF-8 checked,
 * unknown keys dropped. KJ_OK, a refusal, or KJ_ENOMEM. */
int rc_value(struct rc *c, const struct rc_field *f, const cJSON *in, cJSON **out);

/* The limits of the job's GPU type and the result res (result_floor.c). */
void rc_limits_of(const struct rcheck_job *job, const cJSON *res, struct rc_limits *out);
/* Benchmark entry e (board shape i, a passing timed one): its median not
 * below the shape's physical floor nor the empty-kernel time, each less
 * its margin (result_check.h). KJ_OK or a refusal naming shape, median
 * and floor. */
int rc_plausible(struct rc *c, const struct spec *s, const struct rc_limits *lim, const cJSON *e,
                 int i);

#endif
