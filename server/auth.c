/*
 * auth.c - tokens: random generation (RAND_bytes), SHA-256 hashing (EVP),
 * "Bearer" header parsing and lookup by hash with a constant-time compare.
 *
 * Called by main.c (creating tokens), the serve set-up and api_admin.c
 * (secret seeds), http_daemon.c (authenticating each request) and the handlers
 * that wait (auth_recheck); hands a struct db_user to the handlers.
 */
#include "auth.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

int auth_ssl_check_at(struct kj_err *err, int rc, const char *text, const char *file, int line)
{
    char buf[160];
    if (rc == 1)
        return 0;
    ERR_error_string_n(ERR_get_error(), buf, sizeof buf);
    return kj_errf(err, KJ_EINTERNAL, file, line, "openssl: %.60s at %s:%d: %s", text, file,
                   line, buf);
}

int auth_random_bytes(unsigned char *buf, size_t n, struct kj_err *err)
{
    if (KJ_NEVER(n > 1024))
        return KJ_FAIL(err, KJ_EINTERNAL, "%zu random bytes asked for at once", n);
    return AUTH_SSL_CHECK(err, RAND_bytes(buf, (int)n));
}

int auth_random_seed(uint64_t *out, struct kj_err *err)
{
    unsigned char raw[8];
    int rc = auth_random_bytes(raw, sizeof raw, err);
    *out = 0;
    for (size_t i = 0; rc == 0 && i < sizeof raw; i++)
        *out = *out << 8 | raw[i];
    OPENSSL_cleanse(raw, sizeof raw);
    return rc;
}

static void to_hex(const unsigned char *raw, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[raw[i] >> 4];
        out[2 * i + 1] = digits[raw[i] & 15];
    }
    out[2 * n] = '\0';
}

int auth_new_token(char *out, struct kj_err *err)
{
    unsigned char raw[AUTH_TOKEN_BYTES];
    int rc = auth_random_bytes(raw, sizeof raw, err);
    if (rc == 0)
        to_hex(raw, sizeof raw, out);
    OPENSSL_cleanse(raw, sizeof raw);
    return rc;
}

int auth_sha256_hex(const void *data, size_t len, char *out, struct kj_err *err)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    int rc = AUTH_SSL_CHECK(err, EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL));
    if (rc != 0)
        return rc;
    if (KJ_NEVER(mdlen != 32))
        return KJ_FAIL(err, KJ_EINTERNAL, "SHA-256 gave %u bytes", mdlen);
    to_hex(md, mdlen, out);
    return 0;
}

int auth_parse_bearer(const char *header, char *tok, size_t toksz)
{
    const char *p = header;
    size_t n;
    if (strncasecmp(p, "Bearer", 6) != 0 || (p[6] != ' ' && p[6] != '\t'))
        return KJ_EINVAL;
    p += 6;
    while (*p == ' ' || *p == '\t')
        p++;
    n = strlen(p);
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    if (n == 0 || n >= toksz || n > AUTH_MAX_TOKEN)
        return KJ_EINVAL;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] <= 0x20 || (unsigned char)p[i] >= 0x7f)
            return KJ_EINVAL;
    memcpy(tok, p, n);
    tok[n] = '\0';
    return 0;
}

int auth_lookup(struct db *db, const char *token, struct db_user *out, struct kj_err *err)
{
    char hash[DB_HASH_HEX];
    int rc;
    if ((rc = auth_sha256_hex(token, strlen(token), hash, err)) != 0)
        return rc;
    if ((rc = db_user_by_hash(db, hash, out, err)) != 0)
        return rc;
    /* The index found the row; the constant-time compare is what decides. */
    if (strlen(out->token_hash) != strlen(hash) ||
        CRYPTO_memcmp(out->token_hash, hash, strlen(hash)) != 0)
        return KJ_FAIL(err, KJ_ENOTFOUND, "no such token");
    return 0;
}

int auth_recheck(struct db *db, const struct db_user *u, const char **why, struct kj_err *err)
{
    struct db_user now;
    int rc = db_user_by_hash(db, u->token_hash, &now, err);
    *why = NULL;
    if (rc == KJ_ENOTFOUND || (rc == 0 && now.id != u->id)) {
        *why = "token_revoked";
        return 0;
    }
    if (rc == 0 && now.banned)
        *why = "banned";
    return rc;
}
