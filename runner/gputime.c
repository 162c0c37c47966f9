/*
 * gputime.c - the GPU time of one timed call from its activity records
 * (kernels, copies, sets), and the checks that refuse records a call
 * cannot have made (see gputime.h). Pure: no CUPTI, no I/O.
 */
#include "gputime.h"
#include "kj_err.h"
#include "stats.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static enum gputime_check gputime_fail(enum gputime_check c, char *why, size_t whysz,
                                       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static enum gputime_check gputime_fail(enum gputime_check c, char *why, size_t whysz,
                                       const char *fmt, ...)
{
    va_list ap;
    if (why != NULL && whysz > 0) {
        va_start(ap, fmt);
        vsnprintf(why, whysz, fmt, ap);
        va_end(ap);
    }
    return c;
}

static int gputime_in(const struct gputime_window *w, uint32_t corr)
{
    return corr > w->c_lo && corr < w->c_hi;
}

enum gputime_check gputime_span(const struct gputime_rec *r, size_t n,
                                const struct gputime_window *w, double *span_ns, char *why,
                                size_t whysz)
{
    uint64_t first = 0, last = 0, block_end = 0;
    int k = 0, m = 0, have_block = 0;
    *span_ns = 0;
    if (w->c_hi <= w->c_lo + 1 || (w->c_block != 0 && w->c_block >= w->c_lo))
        return gputime_fail(GPUTIME_BAD_WINDOW, why, whysz, "the call's marks are out of order "
                            "(%u, %u, %u)", w->c_block, w->c_lo, w->c_hi);
    for (size_t i = 0; i < n; i++) {
        if (w->c_block != 0 && r[i].corr == w->c_block) {
            if (have_block)
                return gputime_fail(GPUTIME_BAD_TIME, why, whysz, "two records of the blocking "
                                    "kernel");
            have_block = 1;
            block_end = r[i].end;
            continue;
        }
        if (!gputime_in(w, r[i].corr))
            continue;
        if (r[i].start == 0 || r[i].end < r[i].start)
            return gputime_fail(GPUTIME_BAD_TIME, why, whysz, "%s of correlation %u: start "
                                "%llu, end %llu", gputime_what_name(r[i].what), r[i].corr,
                                (unsigned long long)r[i].start, (unsigned long long)r[i].end);
        for (size_t p = 0; p < i; p++)
            if (r[p].corr == r[i].corr && r[p].start == r[i].start && r[p].end == r[i].end &&
                r[p].what == r[i].what)
                return gputime_fail(GPUTIME_BAD_TIME, why, whysz, "the record of correlation "
                                    "%u appears twice", r[i].corr);
        if (k + m == 0 || r[i].start < first)
            first = r[i].start;
        if (k + m == 0 || r[i].end > last)
            last = r[i].end;
        if (r[i].what == GPUTIME_KERNEL)
            k++;
        else
            m++;
    }
    if (k + m == 0)
        return gputime_fail(GPUTIME_NONE, why, whysz, "no kernel, copy or set record of the call");
    if (k < w->min_kernels || (w->max_kernels > 0 && k > w->max_kernels))
        return gputime_fail(GPUTIME_COUNT, why, whysz, "%d kernel records for a call that "
                            "launches %d%s", k, w->min_kernels,
                            w->max_kernels > 0 && w->max_kernels != w->min_kernels ? " or more" : "");
    if (w->c_block != 0 && !have_block)
        return gputime_fail(GPUTIME_NO_BLOCK, why, whysz, "no record of the blocking kernel");
    if (w->c_block != 0 && (double)first + GPUTIME_SLACK_NS < (double)block_end)
        return gputime_fail(GPUTIME_EARLY, why, whysz, "work of the call started %llu ns "
                            "before the blocking kernel ended",
                            (unsigned long long)(block_end - first));
    double span = (double)(last - first);
    double slack = GPUTIME_SLACK_NS + GPUTIME_SLACK_REL * w->event_ns;
    if (!(isfinite(w->event_ns) && w->event_ns >= 0) || span > w->event_ns + slack)
        return gputime_fail(GPUTIME_LONGER, why, whysz, "the call's records span %.0f ns, the "
                            "events around them %.0f ns", span, w->event_ns);
    if (w->gap_max_ns > 0 && w->event_ns - span > w->gap_max_ns)
        return gputime_fail(GPUTIME_SHORTER, why, whysz, "the call's records span %.0f ns, %.0f "
                            "ns less than the events around them (at most %.0f)", span,
                            w->event_ns - span, w->gap_max_ns);
    *span_ns = span;
    gputime_fail(GPUTIME_OK, why, whysz, "%d kernels and %d copies or sets over %.0f ns", k, m,
                 span);
    return GPUTIME_OK;
}

enum gputime_check gputime_spans(const struct gputime_rec *r, size_t n, long lost,
                                 const struct gputime_window *w, int nw, double *out, char *why,
                                 size_t whysz)
{
    enum gputime_check first = GPUTIME_OK;
    char one[160];
    for (int i = 0; i < nw; i++) {
        enum gputime_check c;
        out[i] = -1;
        if (lost > 0)
            c = gputime_fail(GPUTIME_COUNT, one, sizeof one, "%ld activity records were lost",
                             lost);
        else
            c = gputime_span(r, n, &w[i], &out[i], one, sizeof one);
        if (c != GPUTIME_OK) {
            out[i] = -1;
            if (first == GPUTIME_OK) {
                first = c;
                if (why != NULL && whysz > 0)
                    snprintf(why, whysz, "call %d: %s", i, one);
            }
        }
    }
    return first;
}

int gputime_gaps_ok(const double *ev, const double *g, size_t n, double bound,
                    double *median_gap)
{
    struct stats_summary st;
    *median_gap = 0;
    if (n == 0)
        return 1;
    double *d = malloc(n * sizeof *d);
    if (d == NULL)
        return 0;
    for (size_t i = 0; i < n; i++)
        d[i] = ev[i] - g[i];
    int rc = stats_summarize(d, n, &st); /* the median as every shape's is taken */
    free(d);
    if (rc != KJ_OK)
        return 0;
    *median_gap = st.median;
    return st.median <= bound;
}

const char *gputime_what_name(uint32_t what)
{
    switch (what) {
    case GPUTIME_KERNEL: return "kernel";
    case GPUTIME_COPY: return "copy";
    case GPUTIME_SET: return "set";
    }
    return "record";
}

const char *gputime_check_name(enum gputime_check c)
{
    switch (c) {
    case GPUTIME_OK: return "ok";
    case GPUTIME_NONE: return "none";
    case GPUTIME_COUNT: return "count";
    case GPUTIME_BAD_TIME: return "bad_time";
    case GPUTIME_NO_BLOCK: return "no_block";
    case GPUTIME_EARLY: return "early";
    case GPUTIME_LONGER: return "longer";
    case GPUTIME_SHORTER: return "shorter";
    case GPUTIME_BAD_WINDOW: return "bad_window";
    }
    return "unknown";
}
