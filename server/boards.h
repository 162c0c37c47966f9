/*
 * boards.h - the loaded leaderboards as the server serves them.
 *
 * A set is one generation of leaderboards/ (boards_load), with each board's
 * public JSON bodies built once and its rankings cache. The serve set-up
 * and api_admin.c's reload load sets and swap them in; http_daemon.c holds a
 * reference for each request; the handlers read through r->boards.
 */
#ifndef KJ_BOARDS_H
#define KJ_BOARDS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "kj_err.h"
#include "spec.h"

struct db;
struct server;

/* A rankings body for one (board, GPU type), shared by the cache and the
 * responses that send it. Reference counted: boards_ranking_release() frees
 * it when the last holder lets go (the cache, or MHD's free callback of a
 * response still being written). Immutable once published. */
struct board_ranking {
    atomic_int refs;
    uint64_t gen;            /* srv->rank_gen when its rows were read */
    int n;                   /* ranked rows */
    int64_t *ids;            /* owned: submission id of each row, in the order shown */
    int *ranks;              /* owned: the rank of each row ("1, 2, 2, 4"; a tie group
                                within the board's resolution shares one) */
    char etag[24];
    size_t len;
    char *body;              /* owned: the JSON text */
};

/* One leaderboard as served: its spec, the prebuilt public JSON and the
 * rankings cache (one slot per GPU type of the spec). */
struct board {
    const struct spec *spec; /* borrowed from the set's specs; lives as long as the set */
    char *detail;            /* owned: GET /leaderboards/{name} body */
    size_t detail_len;
    char etag[24];           /* quoted prefix of the body's SHA-256 */
    pthread_mutex_t cache_mu;                   /* guards rank[] */
    struct board_ranking *rank[SPEC_MAX_GPUS];  /* one reference each, or NULL */
};

/* One generation of loaded leaderboards, immutable once built.
 *
 * Ownership: the server holds one reference to the live set (srv->boards,
 * swapped under srv->boards_mu by POST /admin/reload); every request takes
 * its own reference when it starts (boards_acquire in http_daemon.c) and drops
 * it in the completion callback, after its response was sent. So a spec,
 * a board or a body borrowed from r->boards stays valid for the whole
 * request, even when a reload replaces the set meanwhile; the last holder
 * frees it (boards_release). Only the rankings cache inside the boards
 * changes, under each board's cache_mu. */
struct board_set {
    atomic_int refs;
    struct spec **specs;     /* owned (spec_free_all), sorted by name */
    int nspecs;
    struct board *boards;    /* owned, nspecs entries, same order as specs */
    char *list;              /* owned: GET /leaderboards body */
    size_t list_len;
    char list_etag[24];
};

/* Load every leaderboard under dir and build its public bodies into a new
 * set with one reference (the caller's). Errors name the file. */
int boards_load(const char *dir, struct board_set **out, struct kj_err *err);
/* The same from specs already loaded (nspecs of them, sorted by name); the
 * set takes them over, also on failure. */
int boards_from_specs(struct spec **specs, int nspecs, struct board_set **out,
                      struct kj_err *err);
/* Give every board of bs a secret seed in db unless it has one (the seeds
 * come from auth_random_seed). */
int boards_ensure_secrets(struct db *db, const struct board_set *bs, struct kj_err *err);

/* A new reference to the live set (never NULL once serve has started);
 * the caller drops it with boards_release(). */
struct board_set *boards_acquire(struct server *srv);
/* Drop a reference; the last one frees the set. NULL is ignored. */
void boards_release(struct board_set *bs);
/* Make next the live set; the server's reference to the old one is dropped
 * (requests still holding it keep it alive). Takes over the caller's
 * reference to next (NULL empties the server at shutdown). */
void boards_swap(struct server *srv, struct board_set *next);

/* The board named name in bs, or NULL. Borrowed from bs. */
struct board *boards_find(struct board_set *bs, const char *name);
/* Index of gpu among b's GPU types, or -1. */
int boards_gpu(const struct board *b, const char *gpu);

/* The rankings of board b on its g-th GPU type, from the cache or freshly
 * read: *out is a new reference the caller drops with boards_ranking_release(). */
int boards_ranking(struct server *srv, struct board *b, int g, struct board_ranking **out,
                   struct kj_err *err);
/* Drop a reference to a rankings body; the last one frees it. NULL is ignored. */
void boards_ranking_release(struct board_ranking *r);

#endif
