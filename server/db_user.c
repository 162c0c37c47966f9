/*
 * db_user.c - user accounts: creation (users, the configured admin, runner
 * tokens through db_user_insert_locked), lookup by token hash or name,
 * token rotation and revocation, bans, invite codes and self-registration.
 *
 * main.c creates users and the admin row; auth.c looks every token up
 * (db_user_by_hash); api_users.c calls the rest for the /users, /invites,
 * /register and /me/token routes; db_runner.c adds runner tokens. Only
 * SHA-256 hashes of tokens and invite codes reach the database.
 */
#include "db_int.h"

#include <stdio.h>
#include <string.h>

int db_user_insert_locked(struct db *db, const char *name, const char *role,
                          const char *token_hash, const char *gpus, int64_t *id_out,
                          struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "INSERT INTO users(name, role, token_hash, created_at, "
                     "runner_gpus) VALUES (?, ?, ?, ?, ?)", gpus != NULL ? "tttit" : "tttin",
                     name, role, token_hash, db_now(), gpus);
    if (rc == 0 && (rc = db_step(db, err, st)) == KJ_ECONFLICT)
        KJ_FAIL(err, KJ_ECONFLICT, "the name '%s' (or the token) is already taken", name);
    if (rc == 0 && id_out != NULL)
        *id_out = sqlite3_last_insert_rowid(db->h);
    sqlite3_finalize(st);
    return rc;
}

int db_user_add(struct db *db, const char *name, const char *role, const char *token_hash,
                int64_t *id_out, struct kj_err *err)
{
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = db_user_insert_locked(db, name, role, token_hash, NULL, id_out, err);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int db_user_set_admin(struct db *db, const char *token_hash, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "INSERT INTO users(name, role, token_hash, created_at) "
                 "VALUES ('admin', 'admin', ?, ?) ON CONFLICT(name) DO UPDATE SET "
                 "role = 'admin', token_hash = excluded.token_hash", "ti", token_hash, db_now());
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

/* The user whose column col ("token_hash" or "name") is value into out:
 * 0, 1 when there is none (out zeroed), or an error. */
static int user_find(struct db *db, const char *col, const char *value, struct db_user *out,
                     struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    char sql[128];
    int rc;
    memset(out, 0, sizeof *out);
    snprintf(sql, sizeof sql, "SELECT id, name, role, token_hash, banned FROM users WHERE %s = ?",
             col);
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, sql, "t", value);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        out->id = sqlite3_column_int64(st, 0);
        db_col_text(st, 1, out->name, sizeof out->name);
        db_col_text(st, 2, out->role, sizeof out->role);
        db_col_text(st, 3, out->token_hash, sizeof out->token_hash);
        out->banned = sqlite3_column_int(st, 4) != 0;
        rc = 0;
    } else if (rc == 0) {
        rc = 1;
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int db_user_by_hash(struct db *db, const char *token_hash, struct db_user *out, struct kj_err *err)
{
    int rc = user_find(db, "token_hash", token_hash, out, err);
    return rc == 1 ? KJ_FAIL(err, KJ_ENOTFOUND, "no such token") : rc;
}

int db_user_by_name(struct db *db, const char *name, struct db_user *out, struct kj_err *err)
{
    int rc = user_find(db, "name", name, out, err);
    return rc == 1 ? KJ_FAIL(err, KJ_ENOTFOUND, "no user '%s'", name) : rc;
}

/* Run an UPDATE of one user; KJ_ENOTFOUND (naming what) when no row changed. */
static int db_user_update(struct db *db, sqlite3_stmt *st, int rc, const char *what,
                          struct kj_err *err)
{
    if (rc == 0 && (rc = db_step(db, err, st)) == 0 && sqlite3_changes(db->h) == 0)
        rc = KJ_FAIL(err, KJ_ENOTFOUND, "no user '%s'", what);
    sqlite3_finalize(st);
    return rc;
}

int db_user_set_token(struct db *db, int64_t user_id, const char *token_hash, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "UPDATE users SET token_hash = ? WHERE id = ?", "ti", token_hash,
                 user_id);
    rc = db_user_update(db, st, rc, "(by id)", err);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int db_user_revoke(struct db *db, const char *name, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    pthread_mutex_lock(&db->mu);
    /* Not hex of 64 digits, so no token's SHA-256 can equal it; unique per row. */
    rc = db_prep(db, err, &st, "UPDATE users SET token_hash = 'revoked-' || id || '-' || "
                 "lower(hex(randomblob(8))) WHERE name = ?", "t", name);
    rc = db_user_update(db, st, rc, name, err);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int db_user_set_banned(struct db *db, const char *name, int banned, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "UPDATE users SET banned = ? WHERE name = ?", "it",
                 (int64_t)(banned != 0), name);
    rc = db_user_update(db, st, rc, name, err);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int db_invite_add(struct db *db, const char *code_hash, int64_t expires_at, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "INSERT INTO invites(code_hash, created_at, expires_at) "
                 "VALUES (?, ?, ?)", "tii", code_hash, db_now(), expires_at);
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

/* Inside the register transaction: mark the invite used by user id. */
static int db_invite_use_locked(struct db *db, const char *code_hash, int64_t id, int64_t now,
                                struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "UPDATE invites SET used_by = ?, used_at = ? WHERE "
                     "code_hash = ? AND used_by IS NULL AND expires_at > ?", "iiti", id, now,
                     code_hash, now);
    if (rc == 0 && (rc = db_step(db, err, st)) == 0 && sqlite3_changes(db->h) == 0)
        rc = KJ_FAIL(err, KJ_ENOTFOUND, "the invite is unknown, used or expired");
    sqlite3_finalize(st);
    return rc;
}

/* Inside the register transaction: is the invite usable at now? KJ_ENOTFOUND when not.
 * Checked before the name, so a caller without an invite learns nothing about names. */
static int db_invite_check_locked(struct db *db, const char *code_hash, int64_t now,
                                  struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "SELECT 1 FROM invites WHERE code_hash = ? AND "
                     "used_by IS NULL AND expires_at > ?", "ti", code_hash, now);
    if (rc == 0 && (rc = db_step(db, err, st)) == 0)
        rc = KJ_FAIL(err, KJ_ENOTFOUND, "the invite is unknown, used or expired");
    else if (rc == 1)
        rc = 0;
    sqlite3_finalize(st);
    return rc;
}

int db_register(struct db *db, const char *name, const char *code_hash, const char *token_hash,
                int64_t now, int64_t *id_out, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int64_t id = 0;
    int rc;
    pthread_mutex_lock(&db->mu);
    if ((rc = db_exec(db, err, "BEGIN IMMEDIATE")) != 0)
        goto out;
    if ((rc = db_invite_check_locked(db, code_hash, now, err)) == 0)
        rc = db_prep(db, err, &st, "INSERT INTO users(name, role, token_hash, created_at) "
                 "VALUES (?, 'user', ?, ?)", "tti", name, token_hash, now);
    if (rc == 0 && st != NULL && (rc = db_step(db, err, st)) == KJ_ECONFLICT)
        KJ_FAIL(err, KJ_ECONFLICT, "the name '%s' is already taken", name);
    sqlite3_finalize(st);
    if (rc == 0) {
        id = sqlite3_last_insert_rowid(db->h);
        rc = db_invite_use_locked(db, code_hash, id, now, err);
    }
    if (rc == 0)
        rc = db_exec(db, err, "COMMIT");
    if (rc != 0)
        db_exec(db, NULL, "ROLLBACK");
    else if (id_out != NULL)
        *id_out = id;
out:
    pthread_mutex_unlock(&db->mu);
    return rc;
}
