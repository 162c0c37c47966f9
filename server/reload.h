/*
 * reload.h - what changed between the leaderboards being served and the
 * ones just loaded from disk.
 *
 * api_admin.c loads leaderboards/ again on POST /api/v1/admin/reload,
 * calls reload_compare() on the two sets and refuses (unless forced) to
 * remove a board that has submissions or to change what its results mean:
 * its shape variables, buffers (shapes, types, input distributions), test
 * and benchmark cases, constraints, ranking or output tolerances. Other
 * edits (title, deadline, GPU types, time limits, description) go through.
 */
#ifndef KJ_RELOAD_H
#define KJ_RELOAD_H

#include "kj_err.h"
#include "spec.h"

#define RELOAD_MAX_WHAT 256

enum reload_kind {
    RELOAD_SAME = 0,   /* nothing that the server serves differs */
    RELOAD_EDITED,     /* only fields that do not touch judged results */
    RELOAD_CHANGED,    /* shapes or tolerances: results judged before mean something else */
    RELOAD_ADDED,      /* only in the new set */
    RELOAD_REMOVED     /* only in the old set */
};

struct reload_entry {
    char name[SPEC_MAX_NAME];
    enum reload_kind kind;
    char what[RELOAD_MAX_WHAT]; /* CHANGED/EDITED: the first differences, e.g. "benchmark 2 changed (H 7168 -> 7169)" */
};

/* Compare one board's old and new spec. Returns the kind (RELOAD_SAME,
 * RELOAD_EDITED or RELOAD_CHANGED) and describes the differences in what. */
enum reload_kind reload_spec(const struct spec *old, const struct spec *new, char *what,
                             size_t whatsz);

/* Compare two sets (each sorted or not): one entry per board name in
 * either, old names first in their order, then the added ones. *out is a
 * new array of *n entries the caller frees with free(). */
int reload_compare(struct spec *const *old, int nold, struct spec *const *new, int nnew,
                   struct reload_entry **out, int *n, struct kj_err *err);

/* "added", "removed", "changed", "edited" or "unchanged". */
const char *reload_kind_name(enum reload_kind k);

#endif
