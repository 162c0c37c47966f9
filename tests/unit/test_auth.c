/*
 * test_auth.c - unit tests for server/auth.c.
 *
 * SHA-256 against known vectors, token generation (length, hex, no
 * repeats), "Authorization: Bearer" parsing (schemes, spaces, control
 * characters, length), and lookup by token through a temporary database,
 * including a wrong token. Needs no GPU and no network.
 */
#define KT_MAIN
#include "kt.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "db.h"

static void test_sha256(void)
{
    char hex[DB_HASH_HEX];
    struct kj_err err;
    KT_CHECK(auth_sha256_hex("", 0, hex, &err) == 0 &&
             strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0,
             "sha256('') = %s", hex);
    KT_CHECK(auth_sha256_hex("abc", 3, hex, &err) == 0 &&
             strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0,
             "sha256('abc') = %s", hex);
}

static void test_tokens(void)
{
    char a[AUTH_TOKEN_HEX], b[AUTH_TOKEN_HEX];
    struct kj_err err;
    KT_CHECK(auth_new_token(a, &err) == 0 && auth_new_token(b, &err) == 0, "tokens");
    KT_CHECK(strlen(a) == 64 && strspn(a, "0123456789abcdef") == 64, "64 hex digits: %s", a);
    KT_CHECK(strcmp(a, b) != 0, "two tokens differ");
}

/* Secret seeds: 64 random bits each, so two draws differ. */
static void test_seeds(void)
{
    uint64_t a = 0, b = 0;
    struct kj_err err;
    KT_CHECK(auth_random_seed(&a, &err) == 0 && auth_random_seed(&b, &err) == 0, "two seeds");
    KT_CHECK(a != b, "they differ: %llu %llu", (unsigned long long)a, (unsigned long long)b);
}

static void test_bearer(void)
{
    char tok[AUTH_MAX_TOKEN + 1];
    KT_CHECK(auth_parse_bearer("Bearer abc123", tok, sizeof tok) == 0 && strcmp(tok, "abc123") == 0,
             "plain");
    KT_CHECK(auth_parse_bearer("bearer   abc  ", tok, sizeof tok) == 0 && strcmp(tok, "abc") == 0,
             "case and spaces");
    KT_CHECK(auth_parse_bearer("Basic abc", tok, sizeof tok) != 0, "other scheme");
    KT_CHECK(auth_parse_bearer("Bearer", tok, sizeof tok) != 0, "no token");
    KT_CHECK(auth_parse_bearer("Bearer ", tok, sizeof tok) != 0, "empty token");
    KT_CHECK(auth_parse_bearer("Bearerabc", tok, sizeof tok) != 0, "no separator");
    KT_CHECK(auth_parse_bearer("Bearer a b", tok, sizeof tok) != 0, "space inside");
    KT_CHECK(auth_parse_bearer("Bearer a\x01", tok, sizeof tok) != 0, "control character");
    char long_h[AUTH_MAX_TOKEN + 20];
    memcpy(long_h, "Bearer ", 7);
    memset(long_h + 7, 'x', AUTH_MAX_TOKEN + 1);
    long_h[7 + AUTH_MAX_TOKEN + 1] = '\0';
    KT_CHECK(auth_parse_bearer(long_h, tok, sizeof tok) != 0, "too long");
}

static void test_lookup(void)
{
    char dir[] = "/tmp/kj_test_auth.XXXXXX", path[64], tok[AUTH_TOKEN_HEX], hash[DB_HASH_HEX];
    struct db *db = NULL;
    struct db_user u;
    struct kj_err err;
    if (mkdtemp(dir) == NULL) {
        KT_SKIP("mkdtemp failed");
        return;
    }
    snprintf(path, sizeof path, "%s/t.db", dir);
    KT_CHECK(db_open(path, &db, &err) == 0, "db_open: %s", err.msg);
    if (db == NULL)
        return;
    auth_new_token(tok, &err);
    auth_sha256_hex(tok, strlen(tok), hash, &err);
    KT_CHECK(db_user_add(db, "eve", "user", hash, NULL, &err) == 0, "user add: %s", err.msg);
    KT_CHECK(auth_lookup(db, tok, &u, &err) == 0 && strcmp(u.name, "eve") == 0 &&
             strcmp(u.role, "user") == 0, "lookup finds the user");
    tok[0] = tok[0] == 'a' ? 'b' : 'a';
    KT_CHECK(auth_lookup(db, tok, &u, &err) == KJ_ENOTFOUND, "a changed token is not found");
    db_close(db);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_sha256());
    KT_RUN(test_tokens());
    KT_RUN(test_seeds());
    KT_RUN(test_bearer());
    KT_RUN(test_lookup());
    return kt_done("test_auth");
}
