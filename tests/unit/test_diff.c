/*
 * test_diff.c - unit tests for server/diff.c.
 *
 * Exact output for small cases (one change, a new file, removed lines,
 * separate and merged hunks, a missing last newline), the limits on lines,
 * changes and output size, and a property check: for many random pairs of
 * texts, applying the printed diff to the old text gives the new one, and
 * the counts of added and removed lines are minimal where that is known.
 */
#define KT_MAIN
#include "kt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"

static const struct diff_limits lim = {3, 1000, 100, 1 << 20};

static char *run(const char *a, const char *b, int *add, int *del, int *rc)
{
    char *out = NULL;
    struct kj_err err;
    kj_err_clear(&err);
    *rc = diff_unified(a, strlen(a), b, strlen(b), "a/k.cu", "b/k.cu", &lim, &out, add, del, &err);
    return out;
}

static void expect(const char *what, const char *a, const char *b, const char *want)
{
    int add = 0, del = 0, rc;
    char *got = run(a, b, &add, &del, &rc);
    KT_CHECK(rc == 0 && got != NULL && strcmp(got, want) == 0, "%s:\n%s\nwant:\n%s", what,
             got ? got : "(null)", want);
    free(got);
}

static void test_exact(void)
{
    expect("equal texts give no diff", "a\nb\n", "a\nb\n", "");
    expect("both empty", "", "", "");
    expect("one changed line", "a\nb\nc\n", "a\nB\nc\n",
           "--- a/k.cu\n+++ b/k.cu\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
    expect("a new file", "", "x\ny\n", "--- a/k.cu\n+++ b/k.cu\n@@ -0,0 +1,2 @@\n+x\n+y\n");
    expect("everything removed", "x\n", "", "--- a/k.cu\n+++ b/k.cu\n@@ -1 +0,0 @@\n-x\n");
    expect("missing last newline", "a\nb", "a\nb\n",
           "--- a/k.cu\n+++ b/k.cu\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n");
    expect("context is three lines", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nX\n6\n7\n8\n9\n",
           "--- a/k.cu\n+++ b/k.cu\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+X\n 6\n 7\n 8\n");
    expect("far changes make two hunks",
           "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "X\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\nY\n",
           "--- a/k.cu\n+++ b/k.cu\n@@ -1,4 +1,4 @@\n-1\n+X\n 2\n 3\n 4\n"
           "@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+Y\n");
    expect("near changes share a hunk", "1\n2\n3\n4\n5\n6\n7\n8\n", "X\n2\n3\n4\n5\n6\n7\nY\n",
           "--- a/k.cu\n+++ b/k.cu\n@@ -1,8 +1,8 @@\n-1\n+X\n 2\n 3\n 4\n 5\n 6\n 7\n-8\n+Y\n");
    expect("an insertion in the middle", "a\nb\n", "a\nnew\nb\n",
           "--- a/k.cu\n+++ b/k.cu\n@@ -1,2 +1,3 @@\n a\n+new\n b\n");
}

static void test_limits(void)
{
    struct diff_limits small = {3, 4, 2, 1 << 20};
    struct kj_err err;
    char *out = (char *)"x";
    int rc;
    kj_err_clear(&err);
    rc = diff_unified("1\n2\n3\n4\n5\n", 10, "1\n", 2, "a", "b", &small, &out, NULL, NULL, &err);
    KT_CHECK(rc == KJ_ELIMIT && out == NULL && strstr(err.msg, "lines") != NULL,
             "too many lines -> KJ_ELIMIT: %s", err.msg);
    rc = diff_unified("1\n2\n3\n", 6, "4\n", 2, "a", "b", &small, &out, NULL, NULL, &err);
    KT_CHECK(rc == KJ_ELIMIT && out == NULL && strstr(err.msg, "changed") != NULL,
             "too many changes -> KJ_ELIMIT: %s", err.msg);
    rc = diff_unified("1\n2\n", 4, "1\n", 2, "a", "b", &small, &out, NULL, NULL, &err);
    KT_CHECK(rc == 0 && out != NULL, "within the limits: rc %d", rc);
    free(out);
    struct diff_limits tiny = {3, 100, 100, 20};
    rc = diff_unified("aaaaaaaa\n", 9, "bbbbbbbb\n", 9, "a", "b", &tiny, &out, NULL, NULL, &err);
    KT_CHECK(rc == KJ_ELIMIT && out == NULL && strstr(err.msg, "bytes") != NULL,
             "output over the cap -> KJ_ELIMIT: %s", err.msg);
    rc = diff_unified("a\n", 2, "b\n", 2, "x\nevil", "b", &lim, &out, NULL, NULL, &err);
    KT_CHECK(rc == 0 && strncmp(out, "--- x?evil\n", 11) == 0, "labels lose control characters");
    free(out);
}

/* Apply unified diff d to text a (lines); returns the new text (caller frees) or NULL. */
static char *apply(const char *a, const char *d)
{
    size_t cap = strlen(a) + strlen(d) + 1, n = 0;
    char *out = calloc(1, cap);
    const char *ap = a, *p = d;
    int aline = 1;
    /* Skip the two label lines. */
    for (int i = 0; i < 2 && *p; i++)
        p = strchr(p, '\n') + 1;
    while (*p) {
        int as = 0, an = 1, bs = 0, bn = 1;
        if (sscanf(p, "@@ -%d,%d", &as, &an) < 1) {
            free(out);
            return NULL;
        }
        (void)bs;
        (void)bn;
        if (an == 0)
            as++; /* "-s,0": the hunk goes after line s */
        while (aline < as) { /* copy untouched lines */
            const char *e = strchr(ap, '\n');
            size_t len = e ? (size_t)(e - ap + 1) : strlen(ap);
            memcpy(out + n, ap, len), n += len, ap += len, aline++;
        }
        p = strchr(p, '\n') + 1;
        while (*p && *p != '@') {
            const char *e = strchr(p, '\n');
            size_t len = (size_t)(e - p); /* without '\n' */
            int nonl = e[1] == '\\';
            if (*p == ' ' || *p == '-') {
                const char *ae = strchr(ap, '\n');
                ap += ae ? (size_t)(ae - ap + 1) : strlen(ap);
                aline++;
            }
            if (*p == ' ' || *p == '+') {
                memcpy(out + n, p + 1, len - 1), n += len - 1;
                if (!nonl)
                    out[n++] = '\n';
            }
            p = e + 1;
            if (nonl)
                p = strchr(p, '\n') + 1;
        }
    }
    memcpy(out + n, ap, strlen(ap));
    n += strlen(ap);
    out[n] = '\0';
    return out;
}

static unsigned rnd_state = 12345;
static unsigned rnd(void)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return (rnd_state >> 16) & 0x7fff;
}

static void random_text(char *buf, int lines, int alphabet)
{
    char *p = buf;
    for (int i = 0; i < lines; i++)
        p += sprintf(p, "L%u\n", rnd() % (unsigned)alphabet);
    if (lines > 0 && rnd() % 4 == 0)
        p[-1] = '\0'; /* no last newline */
    *p = '\0';
}

/* Split text into line pointers (each line with its '\n'); returns the count. */
static int lines_of(const char *t, const char **ls, int *lens)
{
    int n = 0;
    while (*t) {
        const char *e = strchr(t, '\n');
        int len = e ? (int)(e - t + 1) : (int)strlen(t);
        ls[n] = t;
        lens[n++] = len;
        t += len;
    }
    return n;
}

/* Fewest inserted plus deleted lines, from the longest common subsequence. */
static int min_edits(const char *a, const char *b)
{
    const char *la[64], *lb[64];
    int na_len[64], nb_len[64], t[65][65];
    int na = lines_of(a, la, na_len), nb = lines_of(b, lb, nb_len);
    for (int i = 0; i <= na; i++)
        for (int j = 0; j <= nb; j++) {
            if (i == 0 || j == 0)
                t[i][j] = 0;
            else if (na_len[i - 1] == nb_len[j - 1] && memcmp(la[i - 1], lb[j - 1], (size_t)na_len[i - 1]) == 0)
                t[i][j] = t[i - 1][j - 1] + 1;
            else
                t[i][j] = t[i - 1][j] > t[i][j - 1] ? t[i - 1][j] : t[i][j - 1];
        }
    return na + nb - 2 * t[na][nb];
}

static void test_random(void)
{
    char a[4096], b[4096];
    int bad = 0, worse = 0;
    for (int t = 0; t < 2000; t++) {
        int add = 0, del = 0, rc;
        random_text(a, (int)(rnd() % 40), 2 + (int)(rnd() % 8));
        if (rnd() % 2) {
            random_text(b, (int)(rnd() % 40), 2 + (int)(rnd() % 8));
        } else { /* b: a with a few lines changed */
            strcpy(b, a);
            for (int k = 0; k < 3; k++) {
                char *nl = strchr(b + rnd() % (strlen(b) + 1), '\n');
                if (nl != NULL)
                    *nl = rnd() % 2 ? 'x' : '\n';
            }
        }
        char *d = run(a, b, &add, &del, &rc);
        char *got = rc == 0 ? apply(a, d) : NULL;
        if (got == NULL || strcmp(got, b) != 0) {
            if (bad++ == 0)
                fprintf(stderr, "FAIL: diff does not apply\nA:\n%s\nB:\n%s\nD:\n%s\nGOT:\n%s\n", a, b,
                        d ? d : "(null)", got ? got : "(null)");
        }
        if (rc == 0 && add + del != min_edits(a, b))
            worse++;
        if (strcmp(a, b) == 0 && (add != 0 || del != 0 || (d && d[0] != '\0')))
            worse++;
        free(got);
        free(d);
    }
    KT_CHECK(bad == 0, "%d of 2000 random diffs did not apply", bad);
    KT_CHECK(worse == 0, "%d random diffs were not minimal (or equal texts gave one)", worse);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_exact());
    KT_RUN(test_limits());
    KT_RUN(test_random());
    return kt_done("test_diff");
}
