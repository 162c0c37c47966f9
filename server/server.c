/*
 * server.c - small helpers over struct server shared by the handlers:
 * the reference-counted set of loaded leaderboards (load, acquire, release,
 * swap), finding a board, the rankings generation, user names, ISO 8601
 * times, ETags.
 *
 * Called by api_*.c, http.c and main.c; the public bodies of a set are
 * built by api_leaderboards.c when it is loaded and are read-only after
 * that (the ownership rule is written at struct srv_boards in server.h).
 */
#include "server.h"
#include "api.h"
#include "auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct srv_board *srv_board(struct srv_boards *bs, const char *name)
{
    for (int i = 0; bs != NULL && i < bs->nspecs && bs->boards != NULL; i++)
        if (strcmp(bs->specs[i]->name, name) == 0)
            return &bs->boards[i];
    return NULL;
}

/* Free a set whose last reference is gone (or that was never shared). */
static void boards_free(struct srv_boards *bs)
{
    if (bs == NULL)
        return;
    if (bs->boards != NULL) {
        for (int i = 0; i < bs->nspecs; i++) {
            free(bs->boards[i].detail);
            for (int g = 0; g < SPEC_MAX_GPUS; g++)
                srv_rank_blob_release(bs->boards[i].rank[g]);
            pthread_mutex_destroy(&bs->boards[i].cache_mu);
        }
        free(bs->boards);
    }
    free(bs->list);
    spec_free_all(bs->specs, bs->nspecs);
    free(bs);
}

int srv_boards_load(const char *dir, struct srv_boards **out, struct kj_err *err)
{
    struct srv_boards *bs = calloc(1, sizeof *bs);
    int rc;
    *out = NULL;
    if (bs == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory loading leaderboards");
    atomic_init(&bs->refs, 1);
    if ((rc = spec_load_all(dir, &bs->specs, &bs->nspecs, err)) != 0 ||
        (rc = api_boards_build(bs, err)) != 0) {
        boards_free(bs);
        return rc;
    }
    *out = bs;
    return 0;
}

struct srv_boards *srv_boards_acquire(struct server *srv)
{
    struct srv_boards *bs;
    pthread_mutex_lock(&srv->boards_mu);
    bs = srv->boards;
    if (bs != NULL)
        atomic_fetch_add(&bs->refs, 1);
    pthread_mutex_unlock(&srv->boards_mu);
    return bs;
}

void srv_boards_release(struct srv_boards *bs)
{
    if (bs != NULL && atomic_fetch_sub(&bs->refs, 1) == 1)
        boards_free(bs);
}

void srv_boards_swap(struct server *srv, struct srv_boards *next)
{
    struct srv_boards *old;
    pthread_mutex_lock(&srv->boards_mu);
    old = srv->boards;
    srv->boards = next;
    pthread_mutex_unlock(&srv->boards_mu);
    srv_boards_release(old);
}

void srv_rank_invalidate(struct server *srv)
{
    atomic_fetch_add(&srv->rank_gen, 1);
}

void srv_rank_blob_release(struct srv_rank_blob *b)
{
    if (b == NULL || atomic_fetch_sub(&b->refs, 1) != 1)
        return;
    free(b->ids);
    free(b->ranks);
    free(b->body);
    free(b);
}

void srv_iso_time(int64_t t, char *buf, size_t bufsz)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (gmtime_r(&tt, &tm) == NULL || strftime(buf, bufsz, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, bufsz, "1970-01-01T00:00:00Z");
}

int srv_etag(const char *body, size_t len, char *out, size_t outsz, struct kj_err *err)
{
    char hex[DB_HASH_HEX];
    int rc = auth_sha256_hex(body, len, hex, err);
    if (rc != 0)
        return rc;
    snprintf(out, outsz, "\"%.16s\"", hex);
    return 0;
}

void srv_free_boards(struct server *srv)
{
    srv_boards_swap(srv, NULL);
    free(srv->openapi);
    srv->openapi = NULL;
}

/* The first character is a letter or digit: no ".", "..", "..." (which
 * clients fold away in URL paths such as /users/{name}/ban), no "-x"
 * (an option on a command line) and no "_x". */
int srv_valid_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > KJ_NAME_MAX || !((name[0] >= 'a' && name[0] <= 'z') ||
                                       (name[0] >= '0' && name[0] <= '9')))
        return 0;
    for (size_t i = 1; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == '-'))
            return 0;
    }
    return 1;
}
