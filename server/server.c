/*
 * server.c - small helpers over struct server shared by the handlers: the
 * rankings generation, user names, ISO 8601 times, ETags.
 *
 * Called by api_*.c, boards.c, http_daemon.c and main.c. The loaded leaderboards
 * are in boards.c.
 */
#include "server.h"
#include "auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void srv_rank_invalidate(struct server *srv)
{
    atomic_fetch_add(&srv->rank_gen, 1);
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
