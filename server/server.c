/*
 * server.c - small helpers over struct server shared by the handlers:
 * finding a board, user names, ISO 8601 times, ETags, and freeing the loaded boards.
 *
 * Called by api_*.c and main.c; the boards themselves are built by
 * api_leaderboards.c at start and are read-only afterwards.
 */
#include "server.h"
#include "auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const struct srv_board *srv_board(const struct server *srv, const char *name)
{
    for (int i = 0; i < srv->nspecs && srv->boards != NULL; i++)
        if (strcmp(srv->specs[i]->name, name) == 0)
            return &srv->boards[i];
    return NULL;
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
    if (srv->boards != NULL) {
        for (int i = 0; i < srv->nspecs; i++)
            free(srv->boards[i].detail);
        free(srv->boards);
        srv->boards = NULL;
    }
    free(srv->boards_list);
    srv->boards_list = NULL;
    free(srv->openapi);
    srv->openapi = NULL;
    spec_free_all(srv->specs, srv->nspecs);
    srv->specs = NULL;
    srv->nspecs = 0;
}

int srv_valid_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > KJ_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == '-'))
            return 0;
    }
    return 1;
}
