/*
 * gputime.h - the GPU time of one timed call from activity records
 * (docs/timing.md, "GPU time"): which records belong to the call, whether
 * they are consistent with the call's event time, and the span from the
 * first start to the last end of the call's kernels, copies and sets.
 *
 * gtrace.c collects the records in the run box (CUPTI's kernel, memcpy and
 * memset activity, copied out of CUPTI's buffers); box_time.c marks each
 * timed call's window with the correlation ids of the harness's own driver
 * calls around it and asks gputime_span() for the call's GPU time. Pure
 * functions: tests/unit/test_gputime.c checks them without a GPU.
 *
 * A call's window, in the order its driver calls were made on the box's
 * thread (correlation ids grow with every driver call of the process):
 *   c_block  the blocking kernel's launch (0: the sample ran unblocked)
 *   c_lo     the start event's record
 *   ...      the submission's launches (every kernel they cause, on any stream)
 *   c_hi     the stop event's record
 * The call's records are those with c_lo < correlation id < c_hi.
 * The harness's own kernels and sets (L2 flush and discard, the blocking
 * kernel, the fill, poison, check and fingerprint kernels, the memsets)
 * are launched outside that range, so no name or stream decides what
 * counts. Copies and sets are in the span as kernels are: a copy engine's
 * copy is work of the call that no kernel record shows, and a call that
 * reads its inputs back to the host and writes its outputs later has the
 * host's work between the two inside its span (the inputs are on the GPU,
 * so no work that depends on them can come before the call's first record).
 */
#ifndef KJ_GPUTIME_H
#define KJ_GPUTIME_H

#include <stddef.h>
#include <stdint.h>

/* What a record is of. */
enum gputime_what {
    GPUTIME_KERNEL = 0,
    GPUTIME_COPY,       /* a memcpy (any direction, peer to peer included) */
    GPUTIME_SET         /* a memset */
};

/* One activity record, as gtrace.c copies it out: GPU timestamps in ns
 * (CUPTI's clock), the correlation id of the driver call that queued it. */
struct gputime_rec {
    uint64_t start, end;
    uint32_t corr;
    uint32_t stream;
    uint32_t what;           /* enum gputime_what */
    uint32_t pad;
};

struct gputime_window {
    uint32_t c_block;        /* the blocking kernel's launch, 0 = none */
    uint32_t c_lo, c_hi;     /* the call's kernels lie strictly between */
    int min_kernels;         /* kernels: at least this many (a CUDA entry: its launch lines) */
    int max_kernels;         /* at most (0 = no limit); copies and sets are not counted */
    double event_ns;         /* the call's event time */
    double gap_max_ns;       /* event_ns - span may be at most this (0 = unchecked) */
};

/* Why a call's records were refused (GPUTIME_OK: they were not). */
enum gputime_check {
    GPUTIME_OK = 0,
    GPUTIME_NONE,       /* no record (kernel, copy or set) in the window */
    GPUTIME_COUNT,      /* fewer or more kernels than the call launches */
    GPUTIME_BAD_TIME,   /* a start of 0, an end before its start, a duplicate record */
    GPUTIME_NO_BLOCK,   /* blocked sample, but the blocking kernel's record is missing */
    GPUTIME_EARLY,      /* a kernel started before the blocking kernel ended */
    GPUTIME_LONGER,     /* the span is longer than the events around it allow */
    GPUTIME_SHORTER,    /* the span is shorter than the events less the launch path allow */
    GPUTIME_BAD_WINDOW  /* the harness's marks are out of order (ours) */
};

/* Span of the call's records among r[0..n) (any order; records outside the
 * window are ignored) in *span_ns, after these checks, in this order:
 * window marks ordered (c_block < c_lo < c_hi); at least one record, and
 * min_kernels..max_kernels kernels; each with start > 0 and end >= start,
 * no two identical; when c_block is set its record present and no
 * record starting more than GPUTIME_SLACK_NS before its end; span <= event_ns + GPUTIME_SLACK_NS
 * + GPUTIME_SLACK_REL x event_ns; and with gap_max_ns > 0, event_ns - span
 * <= gap_max_ns. Returns GPUTIME_OK or the first check that failed, and
 * then *span_ns is 0; why (may be NULL) gets a sentence either way. */
enum gputime_check gputime_span(const struct gputime_rec *r, size_t n,
                                const struct gputime_window *w, double *span_ns, char *why,
                                size_t whysz);

/* Whether a shape's n calls may keep their GPU times g[] beside their event
 * times ev[]: the median of ev[i] - g[i] is at most bound (the launch path,
 * judge_time.c). Work the GPU does outside the call's records in every
 * call moves the median; a call delayed now and then past its blocking
 * kernel does not (measured on the H200: one call of a run of 56.8 us
 * kernels, 6.6 us late). *median_gap gets the median (0 when n is 0). */
int gputime_gaps_ok(const double *ev, const double *g, size_t n, double bound,
                    double *median_gap);

/* The spans of nw calls whose records are all among r[0..n) (a request's
 * calls, collected once): out[i] for window w[i], or -1 when refused. lost
 * records (CUPTI's, or the store's) refuse every call (GPUTIME_COUNT).
 * Returns GPUTIME_OK or the first refusal, with its sentence in why. */
enum gputime_check gputime_spans(const struct gputime_rec *r, size_t n, long lost,
                                 const struct gputime_window *w, int nw, double *out, char *why,
                                 size_t whysz);

#define GPUTIME_SLACK_NS 128.0   /* the event clock's quantum (32 ns) several times over */
#define GPUTIME_SLACK_REL 0.005

/* A record's kind in words ("kernel", "copy", "set"). */
const char *gputime_what_name(uint32_t what);

/* The check's name for the result ("count", "early", ...). */
const char *gputime_check_name(enum gputime_check c);

#endif
