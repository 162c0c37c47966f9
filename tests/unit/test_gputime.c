/*
 * test_gputime.c - unit tests for runner/gputime.c: which activity records
 * (kernels, copies, sets) make a timed call's GPU time (the correlation
 * window of the harness's marks), the span they give, and every check that
 * refuses records a call cannot have made (a kernel hidden, a duplicate,
 * work before the blocking kernel ended, a span the events contradict).
 * Needs no GPU.
 */
#define KT_MAIN
#include "kt.h"

#include <string.h>

#include "gputime.h"
#include "gtrace.h"

#include <stdlib.h>

/* A kernel's record. */
#define K(start, end, corr, stream) {start, end, corr, stream, GPUTIME_KERNEL, 0}

/* A blocked CUDA call with two launch lines: the harness's flush, discard
 * and blocking kernel (corr 10, 11, 12), the start event (13), the call's
 * kernels (14, 15), the stop event (16), a fingerprint kernel (17). */
static const struct gputime_rec call2[] = {
    K(1000, 2000, 10, 7), K(2000, 2500, 11, 7), K(2500, 90000, 12, 7),
    K(91000, 95000, 14, 7), K(95100, 99000, 15, 7), K(100000, 100500, 17, 7),
};

static struct gputime_window window2(void)
{
    struct gputime_window w = {.c_block = 12, .c_lo = 13, .c_hi = 16, .min_kernels = 2,
                               .event_ns = 10000, .gap_max_ns = 6000};
    return w;
}

static void test_span(void)
{
    struct gputime_window w = window2();
    double span = -1;
    char why[160];
    enum gputime_check c = gputime_span(call2, 6, &w, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_OK && span == 8000.0, "two kernels: first start to last end: %s %.0f (%s)",
             gputime_check_name(c), span, why);
    /* The records' order does not matter. */
    struct gputime_rec rev[6];
    for (int i = 0; i < 6; i++)
        rev[i] = call2[5 - i];
    c = gputime_span(rev, 6, &w, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_OK && span == 8000.0, "reversed: %s %.0f", gputime_check_name(c), span);
    /* Kernels on another stream in the window count (a Python call's). */
    struct gputime_rec other[7];
    memcpy(other, call2, sizeof call2);
    other[6] = (struct gputime_rec)K(92000, 101000, 15, 9);
    other[6].corr = 14;
    other[6].start = 92000;
    w.min_kernels = 1;
    w.event_ns = 12000;
    c = gputime_span(other, 7, &w, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_OK && span == 10000.0, "a kernel on another stream: %s %.0f (%s)",
             gputime_check_name(c), span, why);
}

static void test_refused(void)
{
    struct gputime_window w = window2();
    struct gputime_rec r[7];
    double span = -1;
    char why[160];
    enum gputime_check c;

    /* A launch line's kernel missing (its record dropped or hidden). */
    c = gputime_span(call2, 4, &w, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_COUNT && span == 0, "one kernel of two: %s (%s)", gputime_check_name(c), why);
    /* No kernel at all. */
    struct gputime_rec none[3];
    memcpy(none, call2, sizeof none);
    c = gputime_span(none, 3, &w, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_NONE, "no kernel: %s", gputime_check_name(c));
    /* More than the most allowed (the empty kernel is one). */
    w.max_kernels = 1;
    w.min_kernels = 1;
    c = gputime_span(call2, 6, &w, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_COUNT, "two kernels where one may run: %s", gputime_check_name(c));
    w = window2();
    /* A record copied twice. */
    memcpy(r, call2, sizeof call2);
    r[6] = r[3];
    w.min_kernels = 2;
    c = gputime_span(r, 7, &w, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_BAD_TIME, "a duplicate record: %s (%s)", gputime_check_name(c), why);
    /* An end before its start, a zero start. */
    memcpy(r, call2, sizeof call2);
    r[4].end = r[4].start - 1;
    c = gputime_span(r, 6, &w, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_BAD_TIME, "end before start: %s", gputime_check_name(c));
    memcpy(r, call2, sizeof call2);
    r[3].start = 0;
    c = gputime_span(r, 6, &w, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_BAD_TIME, "zero start: %s", gputime_check_name(c));
    /* The blocking kernel's record missing, or the call's kernel starting
     * before it ended (work queued elsewhere, outside the events). */
    memcpy(r, call2, sizeof call2);
    r[2].corr = 5;
    c = gputime_span(r, 6, &w, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_NO_BLOCK, "no blocking kernel: %s", gputime_check_name(c));
    memcpy(r, call2, sizeof call2);
    r[3].start = 89000;
    w.event_ns = 11000;
    c = gputime_span(r, 6, &w, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_EARLY, "a kernel before the blocker ended: %s (%s)",
             gputime_check_name(c), why);
    r[3].start = 90000 - (uint64_t)GPUTIME_SLACK_NS; /* the timestamps' granularity */
    c = gputime_span(r, 6, &w, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_OK, "a start within the slack of the blocker's end: %s (%s)",
             gputime_check_name(c), why);
    w = window2();
    /* Longer than the events around it (beyond the slack), or so much
     * shorter that more than the launch path is missing. */
    w.event_ns = 7000;
    c = gputime_span(call2, 6, &w, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_LONGER, "8000 ns of kernels in 7000 ns of events: %s",
             gputime_check_name(c));
    w.event_ns = 8000 - GPUTIME_SLACK_NS;
    c = gputime_span(call2, 6, &w, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_OK, "within the slack: %s (%s)", gputime_check_name(c), why);
    w.event_ns = 20000;
    c = gputime_span(call2, 6, &w, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_SHORTER, "8000 ns of kernels in 20000 ns of events: %s (%s)",
             gputime_check_name(c), why);
    w.gap_max_ns = 0;
    c = gputime_span(call2, 6, &w, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_OK && span == 8000.0, "unchecked gap (an unblocked call): %s",
             gputime_check_name(c));
    /* The harness's marks out of order, or unknown (0). */
    w = window2();
    w.c_hi = 14;
    c = gputime_span(call2, 6, &w, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_BAD_WINDOW, "an empty window: %s", gputime_check_name(c));
    w = window2();
    w.c_lo = 0;
    w.c_hi = 0;
    c = gputime_span(call2, 6, &w, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_BAD_WINDOW, "no marks: %s", gputime_check_name(c));
}

/* A BATCH: the records of three calls, the harness's kernels between
 * them, collected once; each call gets its own span, and one refused call
 * leaves the others theirs; records lost refuse them all. */
static void test_batch(void)
{
    const struct gputime_rec r[] = {
        K(100, 200, 20, 7), K(200, 300, 21, 7), K(300, 1000, 22, 7), K(1100, 3000, 24, 7),   /* call 0 */
        K(3100, 3300, 26, 7),                                                            /* fingerprint */
        K(4000, 4100, 30, 7), K(4100, 4200, 31, 7), K(4200, 5000, 32, 7), K(5200, 6200, 34, 7), /* call 1 */
        K(7000, 7100, 40, 7), K(7100, 7200, 41, 7), K(7200, 8000, 42, 7),                   /* call 2: none */
    };
    struct gputime_window w[3] = {
        {.c_block = 22, .c_lo = 23, .c_hi = 25, .min_kernels = 1, .event_ns = 2500},
        {.c_block = 32, .c_lo = 33, .c_hi = 35, .min_kernels = 1, .event_ns = 1500},
        {.c_block = 42, .c_lo = 43, .c_hi = 45, .min_kernels = 1, .event_ns = 900},
    };
    double out[3];
    char why[160];
    enum gputime_check c = gputime_spans(r, 12, 0, w, 3, out, why, sizeof why);
    KT_CHECK(c == GPUTIME_NONE && out[0] == 1900.0 && out[1] == 1000.0 && out[2] == -1 &&
             strstr(why, "call 2") == why, "three calls, the last without its kernel: %s %.0f %.0f %.0f (%s)",
             gputime_check_name(c), out[0], out[1], out[2], why);
    c = gputime_spans(r, 12, 0, w, 2, out, why, sizeof why);
    KT_CHECK(c == GPUTIME_OK && out[0] == 1900.0 && out[1] == 1000.0, "two calls: %s",
             gputime_check_name(c));
    c = gputime_spans(r, 12, 3, w, 2, out, why, sizeof why);
    KT_CHECK(c == GPUTIME_COUNT && out[0] == -1 && out[1] == -1 && strstr(why, "3 activity records were lost"),
             "records lost: every call refused (%s)", why);
}

/* An unblocked call: no blocking kernel's record is needed. */
static void test_unblocked(void)
{
    struct gputime_window w = window2();
    double span = -1;
    w.c_block = 0;
    w.gap_max_ns = 0;
    enum gputime_check c = gputime_span(call2 + 3, 3, &w, &span, NULL, 0);
    KT_CHECK(c == GPUTIME_OK && span == 8000.0, "unblocked: %s %.0f", gputime_check_name(c), span);
}

/* Copies and sets are the call's work as kernels are: an unblocked Python
 * call that reads inputs back (a copy), works 1 ms on the host and then
 * writes its outputs with a kernel spans the millisecond, not the kernel's
 * 4 us; a call of copies alone has their span; a copy queued where the
 * blocking kernel does not hold it is refused like an early kernel. */
static void test_copies(void)
{
    const struct gputime_rec r[] = {
        {100000, 100400, 14, 7, GPUTIME_COPY, 0},    /* x[0, :8].cpu() */
        {1100000, 1100300, 15, 7, GPUTIME_SET, 0},   /* an output zeroed */
        K(1101000, 1105000, 15, 7), /* the work */
        {1106000, 1106500, 17, 7, GPUTIME_SET, 0},   /* the harness's, after the stop event */
    };
    struct gputime_window w = {.c_lo = 13, .c_hi = 16, .min_kernels = 0, .event_ns = 1010000};
    double span = -1;
    char why[160];
    enum gputime_check c = gputime_span(r, 4, &w, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_OK && span == 1005000.0 && strstr(why, "1 kernels and 2 copies or sets"),
             "a copy, the host's millisecond, a set and a kernel: %s %.0f (%s)",
             gputime_check_name(c), span, why);
    c = gputime_span(r, 1, &w, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_OK && span == 400.0, "a copy alone: %s %.0f (%s)", gputime_check_name(c),
             span, why);
    w.min_kernels = 1;
    c = gputime_span(r, 1, &w, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_COUNT, "a copy is no kernel where one is launched: %s (%s)",
             gputime_check_name(c), why);
    /* The same timestamps as a kernel's record are another record. */
    struct gputime_rec two[2] = {r[2], r[2]};
    two[1].what = GPUTIME_SET;
    c = gputime_span(two, 2, &w, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_OK, "a set with a kernel's times is not its duplicate: %s (%s)",
             gputime_check_name(c), why);
    two[1].what = GPUTIME_KERNEL;
    c = gputime_span(two, 2, &w, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_BAD_TIME, "two identical kernel records: %s", gputime_check_name(c));
    /* Blocked: the blocking kernel (corr 12) ends at 1000000, and the
     * call's copy ran before that. */
    const struct gputime_rec early[] = {
        K(2500, 1000000, 12, 7),
        {500000, 500400, 14, 9, GPUTIME_COPY, 0},
        K(1001000, 1005000, 15, 7),
    };
    struct gputime_window wb = {.c_block = 12, .c_lo = 13, .c_hi = 16, .min_kernels = 1,
                                .event_ns = 6000};
    c = gputime_span(early, 3, &wb, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_EARLY && strstr(why, "work of the call"),
             "a copy before the blocking kernel ended: %s (%s)", gputime_check_name(c), why);
    c = gputime_span(early + 2, 1, &wb, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_NO_BLOCK, "and without the blocker's record: %s", gputime_check_name(c));
    const struct gputime_rec nothing[] = {K(2500, 1000000, 12, 7)};
    c = gputime_span(nothing, 1, &wb, &span, why, sizeof why);
    KT_CHECK(c == GPUTIME_NONE && strstr(why, "no kernel, copy or set"), "nothing in the window: %s",
             why);
    KT_CHECK(strcmp(gputime_what_name(GPUTIME_COPY), "copy") == 0 &&
             strcmp(gputime_what_name(99), "record") == 0, "the kinds' names");
}

/* The shape's bound on events less GPU time is on the median: one call late
 * past its blocking kernel (as on the H200: 6.6 us of a 56.8 us kernel)
 * keeps the GPU time; work outside kernels in every call does not. */
static void test_gaps(void)
{
    double ev[101], g[101], med = -1;
    for (int i = 0; i < 101; i++) {
        g[i] = 56768.0 + i;
        ev[i] = g[i] + 2500.0;
    }
    ev[0] = g[0] + 6624.0;
    KT_CHECK(gputime_gaps_ok(ev, g, 101, 6400.0, &med) && med == 2500.0,
             "one late call of 101: kept (median gap %.0f ns)", med);
    for (int i = 0; i < 50; i++)
        ev[i] = g[i] + 9000.0;
    KT_CHECK(gputime_gaps_ok(ev, g, 101, 6400.0, &med) && med == 2500.0,
             "50 late calls of 101: still the median's (%.0f ns)", med);
    ev[50] = g[50] + 9000.0;
    KT_CHECK(!gputime_gaps_ok(ev, g, 101, 6400.0, &med) && med == 9000.0,
             "51 of 101 calls 9 us longer than their kernels: refused (median gap %.0f ns)", med);
    for (int i = 0; i < 101; i++)
        ev[i] = g[i] + 20000.0; /* a copy-engine copy in every call */
    KT_CHECK(!gputime_gaps_ok(ev, g, 101, 6400.0, &med), "work outside kernels in every call: refused");
    KT_CHECK(gputime_gaps_ok(ev, g, 0, 6400.0, &med) && med == 0, "no calls: nothing to refuse");
}

/* gtrace_start's refusals say why (the result's gpu_time_note), and leave
 * nothing recording: turned off, no such library, a library that is not
 * CUPTI. (Starting for real needs a GPU: make gpu-test.) */
static void test_start_refused(void)
{
    char why[160] = "";
    setenv("KJUDGE_GPU_TIME", "0", 1);
    KT_CHECK(gtrace_start(why, sizeof why) == -1 && strstr(why, "KJUDGE_GPU_TIME=0") != NULL &&
             !gtrace_on(), "turned off: %s", why);
    unsetenv("KJUDGE_GPU_TIME");
    setenv("KJUDGE_CUPTI_LIB", "/nonexistent/libcupti.so.13", 1);
    KT_CHECK(gtrace_start(why, sizeof why) == -1 && strstr(why, "cannot load CUPTI") != NULL &&
             strstr(why, "/nonexistent/libcupti.so.13") != NULL && !gtrace_on(),
             "no library: %s", why);
    setenv("KJUDGE_CUPTI_LIB", "libm.so.6", 1);
    KT_CHECK(gtrace_start(why, sizeof why) == -1 && strstr(why, "lacks cupti") != NULL &&
             !gtrace_on(), "not CUPTI: %s", why);
    unsetenv("KJUDGE_CUPTI_LIB");
    const struct gputime_rec *r = NULL;
    size_t n = 1;
    long lost = 1;
    KT_CHECK(gtrace_collect(&r, &n, &lost, why, sizeof why) == -1 && r == NULL && n == 0 &&
             lost == 0, "nothing to collect: %s", why);
    gtrace_mark_arm();
    KT_CHECK(gtrace_mark_take() == 0, "no marks while not recording");
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_span());
    KT_RUN(test_refused());
    KT_RUN(test_unblocked());
    KT_RUN(test_copies());
    KT_RUN(test_gaps());
    KT_RUN(test_batch());
    KT_RUN(test_start_refused());
    return kt_done("test_gputime");
}
