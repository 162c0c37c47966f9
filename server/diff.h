/*
 * diff.h - a unified line diff of two texts, with limits on size and work.
 *
 * api_detail.c calls diff_unified() to show a submission against the same
 * user's previous submission to its leaderboard. The texts are untrusted
 * sources (up to KJ_MAX_SOURCE_BYTES each), so the number of lines, the
 * number of changed lines and the output size are capped; past a cap the
 * answer is KJ_ELIMIT and no diff, never a partial one.
 */
#ifndef KJ_DIFF_H
#define KJ_DIFF_H

#include <stddef.h>
#include "kj_err.h"

struct diff_limits {
    int context;      /* unchanged lines shown around each change (3 is usual) */
    int max_lines;    /* lines per text */
    int max_edits;    /* inserted plus deleted lines */
    size_t max_out;   /* bytes of diff text */
};

/* The unified diff ("--- a_label", "+++ b_label", "@@ -l,n +l,n @@" hunks,
 * "\ No newline at end of file" where a text lacks its last newline) that
 * turns a into b. *out is a new NUL-terminated string the caller frees
 * with free(); it is "" when the texts are equal. *nadd and *ndel (may be
 * NULL) get the inserted and deleted line counts. Errors: KJ_ELIMIT when a
 * limit is passed (err names it), KJ_ENOMEM; *out is NULL then. */
int diff_unified(const char *a, size_t alen, const char *b, size_t blen, const char *a_label,
                 const char *b_label, const struct diff_limits *lim, char **out, int *nadd,
                 int *ndel, struct kj_err *err);

#endif
