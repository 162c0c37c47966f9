/*
 * diff.c - unified line diffs (Myers' O(ND) greedy algorithm) with caps.
 *
 * Called by api_detail.c for a submission against its owner's previous one.
 * The texts are split into lines (each keeps its '\n', so a missing last
 * newline is a difference), the common head and tail are trimmed, the
 * shortest edit script of what is left is found by the greedy forward search
 * over diagonals, keeping each round's furthest-reaching x so the path can
 * be walked back, and the script is printed as hunks with context lines.
 * Work and memory grow with (lines x changes) and (changes^2): both are
 * bounded by struct diff_limits, and a diff that would pass them is refused.
 */
#include "diff.h"
#include "kj_buf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct line {
    const char *p;   /* borrowed from the caller's text */
    size_t n;        /* bytes, the '\n' included when there is one */
    uint64_t h;      /* FNV-1a of the bytes */
};

enum { OP_EQ = 'e', OP_DEL = 'd', OP_INS = 'i' };

/* ------------------------------------------------------------------ */
/* Private functions                                                   */
/* ------------------------------------------------------------------ */

static uint64_t fnv1a(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static int same(const struct line *a, const struct line *b)
{
    return a->h == b->h && a->n == b->n && memcmp(a->p, b->p, a->n) == 0;
}

/* Split text into lines; KJ_ELIMIT past max lines. *out: caller frees. */
static int split(const char *t, size_t len, int max, const char *which, struct line **out,
                 int *n, struct kj_err *err)
{
    size_t count = 0, start = 0;
    int k = 0;
    *out = NULL;
    *n = 0;
    for (size_t i = 0; i < len; i++)
        count += t[i] == '\n';
    if (len > 0 && t[len - 1] != '\n')
        count++;
    if (count > (size_t)max)
        return KJ_FAIL(err, KJ_ELIMIT, "the %s text has %zu lines; diffs stop at %d", which,
                       count, max);
    if (count == 0)
        return 0;
    if ((*out = malloc(count * sizeof **out)) == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory splitting %zu lines", count);
    for (size_t i = 0; i < len; i++) {
        if (t[i] != '\n' && i + 1 < len)
            continue;
        (*out)[k].p = t + start;
        (*out)[k].n = i + 1 - start;
        (*out)[k].h = fnv1a(t + start, i + 1 - start);
        k++;
        start = i + 1;
    }
    *n = k;
    return 0;
}

/* Walk the saved rounds back from (n, m) and write the middle script into
 * ops[0..n+m) from the end; returns how many ops were written. trace holds
 * round d's V[-d..d] at trace[d*d + k + d]. */
static int backtrack(const int *trace, int dlast, int n, int m, char *ops, int opsz)
{
    int x = n, y = m, pos = opsz;
    for (int d = dlast; d > 0; d--) {
        const int *pv = trace + (size_t)(d - 1) * (size_t)(d - 1) + (d - 1); /* index by k */
        int k = x - y, down = k == -d || (k != d && pv[k - 1] < pv[k + 1]);
        int pk = down ? k + 1 : k - 1, px = pv[pk], py = px - pk;
        int mx = down ? px : px + 1;
        while (x > mx) {
            ops[--pos] = OP_EQ;
            x--;
            y--;
        }
        ops[--pos] = down ? OP_INS : OP_DEL;
        x = px;
        y = py;
    }
    while (x > 0) {
        ops[--pos] = OP_EQ;
        x--;
    }
    return opsz - pos;
}

/* Shortest edit script turning a[0..n) into b[0..m): written to the end of
 * ops (size n + m), *nops set. KJ_ELIMIT past max_edits. */
static int myers(const struct line *a, int n, const struct line *b, int m, int max_edits,
                 char *ops, int *nops, struct kj_err *err)
{
    int dmax = n + m < max_edits ? n + m : max_edits, off = dmax + 1, dlast = -1, rc = 0;
    int *v = calloc((size_t)(2 * dmax + 3), sizeof *v), *trace = NULL;
    size_t tcap = 0;
    if (v == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory for a diff");
    for (int d = 0; d <= dmax && dlast < 0; d++) {
        size_t need = (size_t)(d + 1) * (size_t)(d + 1);
        if (need > tcap) {
            size_t ncap = tcap ? tcap * 4 : 64;
            int *grown = realloc(trace, (ncap < need ? need : ncap) * sizeof *trace);
            if (grown == NULL) {
                rc = KJ_FAIL(err, KJ_ENOMEM, "out of memory for a diff");
                goto out;
            }
            trace = grown;
            tcap = ncap < need ? need : ncap;
        }
        for (int k = -d; k <= d; k += 2) {
            int x = (k == -d || (k != d && v[off + k - 1] < v[off + k + 1])) ? v[off + k + 1]
                                                                          : v[off + k - 1] + 1;
            int y = x - k;
            while (x < n && y < m && same(&a[x], &b[y])) {
                x++;
                y++;
            }
            v[off + k] = x;
            if (x >= n && y >= m)
                dlast = d;
        }
        memcpy(trace + (size_t)d * (size_t)d, v + off - d, (size_t)(2 * d + 1) * sizeof *v);
    }
    if (dlast < 0) {
        rc = KJ_FAIL(err, KJ_ELIMIT, "more than %d lines changed; no diff shown", max_edits);
        goto out;
    }
    *nops = backtrack(trace, dlast, n, m, ops, n + m);
out:
    free(v);
    free(trace);
    return rc;
}

/* The output functions append to a kj_buf whose cap is the diff's byte
 * limit; they return its failure (KJ_ELIMIT, KJ_ENOMEM), which diff_unified
 * turns into a message. */

static int out_line(struct kj_buf *b, char mark, const struct line *l)
{
    static const char nonl[] = "\n\\ No newline at end of file\n";
    kj_buf_putc(b, mark);
    kj_buf_putn(b, l->p, l->n);
    if (l->n == 0 || l->p[l->n - 1] != '\n')
        kj_buf_putn(b, nonl, sizeof nonl - 1);
    return kj_buf_status(b);
}

/* "--- label" with control characters shown as '?'. */
static int out_label(struct kj_buf *b, const char *prefix, const char *label)
{
    char safe[256];
    size_t i = 0;
    for (; label[i] != '\0' && i < sizeof safe - 1; i++)
        safe[i] = (unsigned char)label[i] < 0x20 || label[i] == 0x7f ? '?' : label[i];
    safe[i] = '\0';
    kj_buf_printf(b, "%s%s\n", prefix, safe);
    return kj_buf_status(b);
}

/* "l,n" as unified diffs write a range (0-based start s, n lines). */
static void range(char *buf, size_t sz, int s, int n)
{
    if (n == 1)
        snprintf(buf, sz, "%d", s + 1);
    else
        snprintf(buf, sz, "%d,%d", n == 0 ? s : s + 1, n);
}

/* Print ops[start..end) as one hunk; ai and bi are the line numbers at start. */
static int hunk(struct kj_buf *b, const char *ops, int start, int end, int ai, int bi,
                const struct line *a, const struct line *bl)
{
    char ra[32], rb[32];
    int na = 0, nb = 0, rc;
    for (int i = start; i < end; i++) {
        na += ops[i] != OP_INS;
        nb += ops[i] != OP_DEL;
    }
    range(ra, sizeof ra, ai, na);
    range(rb, sizeof rb, bi, nb);
    if ((rc = kj_buf_printf(b, "@@ -%s +%s @@\n", ra, rb)) != 0)
        return rc;
    for (int i = start; i < end && rc == 0; i++) {
        if (ops[i] == OP_EQ)
            rc = out_line(b, ' ', &a[ai++]), bi++;
        else if (ops[i] == OP_DEL)
            rc = out_line(b, '-', &a[ai++]);
        else
            rc = out_line(b, '+', &bl[bi++]);
    }
    return rc;
}

/* Group the script into hunks (changes closer than 2*ctx equal lines share one). */
static int print_hunks(struct kj_buf *b, const char *ops, int nops, int ctx, const struct line *a,
                       const struct line *bl)
{
    int i = 0, cur = 0, ai = 0, bi = 0, rc = 0;
    while (i < nops && rc == 0) {
        if (ops[i] == OP_EQ) {
            i++;
            continue;
        }
        int start = i - ctx > cur ? i - ctx : cur, last = i, k = i;
        while (k < nops) {
            if (ops[k] != OP_EQ) {
                last = k++;
                continue;
            }
            int r = k;
            while (r < nops && ops[r] == OP_EQ)
                r++;
            if (r == nops || r - k > 2 * ctx)
                break;
            k = r;
        }
        int end = last + 1 + ctx < nops ? last + 1 + ctx : nops;
        for (; cur < start; cur++) {
            ai += ops[cur] != OP_INS;
            bi += ops[cur] != OP_DEL;
        }
        rc = hunk(b, ops, start, end, ai, bi, a, bl);
        for (; cur < end; cur++) {
            ai += ops[cur] != OP_INS;
            bi += ops[cur] != OP_DEL;
        }
        i = end;
    }
    return rc;
}

/* ------------------------------------------------------------------ */
/* API                                                                 */
/* ------------------------------------------------------------------ */

int diff_unified(const char *a, size_t alen, const char *b, size_t blen, const char *a_label,
                 const char *b_label, const struct diff_limits *lim, char **out, int *nadd,
                 int *ndel, struct kj_err *err)
{
    struct line *la = NULL, *lb = NULL;
    struct kj_buf out_text;
    char *ops = NULL;
    int na = 0, nb = 0, pre = 0, suf = 0, mid = 0, rc;

    *out = NULL;
    /* The text and its NUL fit in max_out bytes. */
    kj_buf_init(&out_text, lim->max_out > 1 ? lim->max_out - 1 : 1);
    if ((rc = split(a, alen, lim->max_lines, "old", &la, &na, err)) != 0 ||
        (rc = split(b, blen, lim->max_lines, "new", &lb, &nb, err)) != 0)
        goto out;
    while (pre < na && pre < nb && same(&la[pre], &lb[pre]))
        pre++;
    while (suf < na - pre && suf < nb - pre && same(&la[na - 1 - suf], &lb[nb - 1 - suf]))
        suf++;
    if ((ops = malloc((size_t)na + (size_t)nb + 1)) == NULL) {
        rc = KJ_FAIL(err, KJ_ENOMEM, "out of memory for a diff");
        goto out;
    }
    memset(ops, OP_EQ, (size_t)pre);
    rc = myers(la + pre, na - pre - suf, lb + pre, nb - pre - suf, lim->max_edits, ops + pre,
               &mid, err);
    if (rc != 0)
        goto out;
    /* myers() wrote its script at the end of its span; move it next to the head. */
    memmove(ops + pre, ops + pre + (na - pre - suf) + (nb - pre - suf) - mid, (size_t)mid);
    memset(ops + pre + mid, OP_EQ, (size_t)suf);
    int nops = pre + mid + suf, adds = 0, dels = 0;
    for (int i = 0; i < nops; i++) {
        adds += ops[i] == OP_INS;
        dels += ops[i] == OP_DEL;
    }
    if (nadd != NULL)
        *nadd = adds;
    if (ndel != NULL)
        *ndel = dels;
    if (lim->max_out == 0 ||
        (adds + dels > 0 && (out_label(&out_text, "--- ", a_label) != 0 ||
                             out_label(&out_text, "+++ ", b_label) != 0 ||
                             print_hunks(&out_text, ops, nops, lim->context, la, lb) != 0))) {
        rc = lim->max_out == 0 || kj_buf_status(&out_text) == KJ_ELIMIT
                 ? KJ_FAIL(err, KJ_ELIMIT, "the diff is larger than %zu bytes; no diff shown",
                           lim->max_out)
                 : KJ_FAIL(err, KJ_ENOMEM, "out of memory for a diff");
        goto out;
    }
    if ((*out = kj_buf_take(&out_text, NULL)) == NULL)
        rc = KJ_FAIL(err, KJ_ENOMEM, "out of memory for a diff");
out:
    kj_buf_free(&out_text);
    free(ops);
    free(la);
    free(lb);
    return rc;
}
