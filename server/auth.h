/*
 * auth.h - bearer tokens: generation, SHA-256 hashing, lookup.
 *
 * main.c creates tokens for `user add` / `runner add` and the admin token;
 * http_daemon.c calls auth_lookup() for every request that carries an
 * Authorization header; the serve set-up and reloads draw the boards'
 * secret seeds here. Only SHA-256 hashes of tokens are stored or
 * compared (CRYPTO_memcmp); a token itself is never logged.
 */
#ifndef KJ_AUTH_H
#define KJ_AUTH_H

#include <stddef.h>
#include <stdint.h>
#include "kj_err.h"
#include "db.h"

#define AUTH_TOKEN_BYTES 32                      /* random bytes in a token */
#define AUTH_TOKEN_HEX (2 * AUTH_TOKEN_BYTES + 1) /* hex text plus NUL */
#define AUTH_MAX_TOKEN 256                       /* longer bearer values are refused */

/* Every OpenSSL call returning 1 on success goes through this: on failure,
 * err gets KJ_EINTERNAL, the call text, file:line and OpenSSL's error string. */
int auth_ssl_check_at(struct kj_err *err, int rc, const char *text, const char *file, int line);
#define AUTH_SSL_CHECK(err, call) auth_ssl_check_at((err), (call), #call, __FILE__, __LINE__)

/* n bytes from OpenSSL's CSPRNG (RAND_bytes). */
int auth_random_bytes(unsigned char *buf, size_t n, struct kj_err *err);

/* A leaderboard's secret seed: 8 random bytes as one number (db_secret_ensure). */
int auth_random_seed(uint64_t *out, struct kj_err *err);

/* A new token: AUTH_TOKEN_BYTES random bytes as lowercase hex into out[AUTH_TOKEN_HEX]. */
int auth_new_token(char *out, struct kj_err *err);

/* SHA-256 of data as lowercase hex into out[DB_HASH_HEX] (OpenSSL EVP). */
int auth_sha256_hex(const void *data, size_t len, char *out, struct kj_err *err);

/* Extract the token of an "Authorization: Bearer X" header value into
 * tok (size toksz). Returns 0, or KJ_EINVAL when the value is not of that
 * form (wrong scheme, empty, too long, control characters). */
int auth_parse_bearer(const char *header, char *tok, size_t toksz);

/* Look up the user or runner holding token. KJ_ENOTFOUND when no such
 * token exists; KJ_EDB/KJ_EINTERNAL for our own faults. */
int auth_lookup(struct db *db, const char *token, struct db_user *out, struct kj_err *err);

/* Does the token that authenticated u (auth_lookup) still hold? *why =
 * NULL when it does, else "banned" or "token_revoked" (revoked or rotated).
 * ?wait=1 requests and event streams ask again while they last. */
int auth_recheck(struct db *db, const struct db_user *u, const char **why, struct kj_err *err);

#endif
