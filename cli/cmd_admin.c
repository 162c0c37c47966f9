/*
 * cmd_admin.c - `kjudge admin SUBCOMMAND`: the competition's controls for
 * an admin token: users, invite, ban, unban, disqualify, publish, reload,
 * stats, rejudge (docs/rejudge.md).
 *
 * main.c calls cmd_admin(), which dispatches on the subcommand. Each is
 * one request (kjc.c); the server checks the role, so a user's token gets
 * the server's 403 as a clear message. Invite codes are printed (they are
 * meant to be handed on); tokens are not.
 */
#include "kjc.h"
#include "rend.h"

#include <stdlib.h>
#include <string.h>

/* POST body (NULL: {}) to path; print the JSON (--json) or hand it back in *out. */
static int post(struct kjc *k, const char *path, const cJSON *body, cJSON **out)
{
    struct curlc_resp r;
    int rc;
    *out = NULL;
    if ((rc = kjc_post_json(k, path, body, &r)) != KJC_OK)
        return rc;
    if (k->json)
        kjc_print_body(k, &r);
    else if ((*out = kjc_json(k, &r)) == NULL)
        rc = KJC_ERROR;
    curlc_resp_free(&r);
    return rc;
}

static int get(struct kjc *k, const char *path, cJSON **out)
{
    struct curlc_resp r;
    int rc;
    *out = NULL;
    if ((rc = kjc_get(k, path, &r)) != KJC_OK)
        return rc;
    if (k->json)
        kjc_print_body(k, &r);
    else if ((*out = kjc_json(k, &r)) == NULL)
        rc = KJC_ERROR;
    curlc_resp_free(&r);
    return rc;
}

/* A user name as the server accepts it ([a-z0-9_.-]{1,32}). */
static int name_arg(struct kjc *k, const char *sub, const char *v)
{
    size_t n = strlen(v);
    if (n == 0 || n > 32 || strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789_.-") != n)
        return kjc_usage(k, sub, "'%.64s' is not a user name (a-z, 0-9, _ . -)", v);
    return KJC_OK;
}

/* ------------------------------------------------------------------ */
/* users, stats                                                        */
/* ------------------------------------------------------------------ */

static int admin_users(struct kjc *k)
{
    static const char *const heads[] = {"name", "role", "banned", "created", ">submissions",
                                        ">accepted", ">pending", "last submission"};
    struct rend_tab t;
    const cJSON *u;
    cJSON *j;
    int rc;
    if ((rc = get(k, "/api/v1/users", &j)) != KJC_OK || j == NULL)
        return rc;
    rend_tab_init(&t, 8, heads);
    cJSON_ArrayForEach(u, cJSON_GetObjectItemCaseSensitive(j, "users")) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(u, "submissions");
        char c[8][72];
        const char *row[] = {kjc_str(u, "name", c[0], 72), kjc_str(u, "role", c[1], 72),
                             kjc_str(u, "banned", c[2], 72), kjc_str(u, "created_at", c[3], 72),
                             kjc_str(s, "total", c[4], 72), kjc_str(s, "accepted", c[5], 72),
                             kjc_str(s, "pending", c[6], 72),
                             kjc_str(u, "last_submission_at", c[7], 72)};
        rend_tab_add(&t, row);
    }
    rend_tab_print(&t, k->out);
    rend_tab_free(&t);
    cJSON_Delete(j);
    return KJC_OK;
}

static void stats_groups(struct kjc *k, const cJSON *by)
{
    static const char *const heads[] = {"leaderboard", "mode", "outcome", ">count"};
    const cJSON *b, *m, *o;
    struct rend_tab t;
    char n[24];
    rend_tab_init(&t, 4, heads);
    cJSON_ArrayForEach(b, by)
        cJSON_ArrayForEach(m, b)
            cJSON_ArrayForEach(o, m) {
                rend_value(o, n, sizeof n);
                const char *row[] = {b->string, m->string, o->string, n};
                rend_tab_add(&t, row);
            }
    rend_tab_print(&t, k->out);
    rend_tab_free(&t);
}

static void stats_queues(struct kjc *k, const cJSON *queues, const cJSON *runners)
{
    static const char *const qh[] = {"gpu", ">queued", ">running", ">oldest queued"};
    static const char *const rh[] = {"runner", "gpu", "state", "last seen", ">ago"};
    const cJSON *q;
    struct rend_tab t;
    char c[5][72];
    rend_tab_init(&t, 4, qh);
    cJSON_ArrayForEach(q, queues) {
        const cJSON *age = cJSON_GetObjectItemCaseSensitive(q, "oldest_queued_age_s");
        if (cJSON_IsNumber(age))
            snprintf(c[3], sizeof c[3], "%.0f s", age->valuedouble);
        else
            snprintf(c[3], sizeof c[3], "-");
        const char *row[] = {kjc_str(q, "gpu", c[0], 72), kjc_str(q, "queued", c[1], 72),
                             kjc_str(q, "running", c[2], 72), c[3]};
        rend_tab_add(&t, row);
    }
    fputs("\nqueues:\n", k->out);
    rend_tab_print(&t, k->out);
    rend_tab_free(&t);
    rend_tab_init(&t, 5, rh);
    cJSON_ArrayForEach(q, runners) {
        snprintf(c[4], sizeof c[4], "%s s", kjc_str(q, "last_seen_age_s", c[3], 72));
        const char *row[] = {kjc_str(q, "name", c[0], 72), kjc_str(q, "gpu", c[1], 72),
                             kjc_str(q, "state", c[2], 72), kjc_str(q, "last_seen", c[3], 72),
                             c[4]};
        rend_tab_add(&t, row);
    }
    fputs("\nrunners:\n", k->out);
    rend_tab_print(&t, k->out);
    rend_tab_free(&t);
}

static int admin_stats(struct kjc *k)
{
    const cJSON *s;
    char a[24], b[24], c[24], d[24];
    cJSON *j;
    int rc;
    if ((rc = get(k, "/api/v1/stats", &j)) != KJC_OK || j == NULL)
        return rc;
    s = cJSON_GetObjectItemCaseSensitive(j, "submissions");
    fprintf(k->out, "users: %s; submissions: %s (%s disqualified, %s withdrawn)\n\n",
            kjc_str(j, "users", a, sizeof a), kjc_str(s, "total", b, sizeof b),
            kjc_str(s, "disqualified", c, sizeof c), kjc_str(s, "withdrawn", d, sizeof d));
    stats_groups(k, cJSON_GetObjectItemCaseSensitive(s, "by_leaderboard"));
    stats_queues(k, cJSON_GetObjectItemCaseSensitive(j, "queues"),
                 cJSON_GetObjectItemCaseSensitive(j, "runners"));
    cJSON_Delete(j);
    return KJC_OK;
}

/* ------------------------------------------------------------------ */
/* Changes                                                             */
/* ------------------------------------------------------------------ */

static int admin_invite(struct kjc *k, int argc, char **argv)
{
    static const char *const with_value[] = {"days", NULL};
    struct kjc_args a = {argc, 1, argv, "admin invite", with_value, NULL, 0};
    const char *name, *val;
    char code[128], until[40], *end;
    cJSON *body = cJSON_CreateObject(), *j = NULL;
    int rc = KJC_OK;
    while (rc == KJC_OK && (name = kjc_opt(k, &a, &val)) != NULL) {
        long days = name[0] != '\0' ? strtol(val, &end, 10) : 0;
        if (name[0] == '\0' || *end != '\0' || days < 1 || days > 365)
            rc = kjc_usage(k, "admin invite", "--days must be 1 to 365");
        else
            cJSON_AddNumberToObject(body, "days", (double)days);
    }
    if (rc == KJC_OK && !a.bad && (rc = post(k, "/api/v1/invites", body, &j)) == KJC_OK && j != NULL)
        fprintf(k->out, "invite code (single use, valid until %s): %s\nthe newcomer runs: kjudge "
                "login %s --invite %s --name NAME\n", kjc_str(j, "expires_at", until, sizeof until),
                kjc_str(j, "code", code, sizeof code), k->conf.url, code);
    cJSON_Delete(body);
    cJSON_Delete(j);
    return a.bad ? KJC_ERROR : rc;
}

static int admin_ban(struct kjc *k, int argc, char **argv, int ban)
{
    const char *sub = ban ? "admin ban" : "admin unban";
    char path[128];
    cJSON *j = NULL;
    int rc;
    if (argc != 2)
        return kjc_usage(k, sub, "name one user");
    if ((rc = name_arg(k, sub, argv[1])) != KJC_OK)
        return rc;
    snprintf(path, sizeof path, "/api/v1/users/%s/%s", argv[1], ban ? "ban" : "unban");
    if ((rc = post(k, path, NULL, &j)) == KJC_OK && j != NULL)
        fprintf(k->out, "%s %s\n", ban ? "banned" : "unbanned", argv[1]);
    cJSON_Delete(j);
    return rc;
}

static int admin_disqualify(struct kjc *k, int argc, char **argv)
{
    static const char *const with_value[] = {"reason", NULL};
    struct kjc_args a = {argc, 1, argv, "admin disqualify", with_value, NULL, 0};
    const char *name, *val, *id = NULL, *reason = NULL;
    char path[96];
    cJSON *body, *j = NULL;
    int rc;
    while ((name = kjc_opt(k, &a, &val)) != NULL) {
        if (name[0] == '\0' && id == NULL)
            id = val;
        else if (name[0] == '\0')
            return kjc_usage(k, "admin disqualify", "one submission at a time");
        else
            reason = val;
    }
    if (a.bad)
        return KJC_ERROR;
    if (id == NULL || !kjc_is_id(id) || reason == NULL || reason[0] == '\0')
        return kjc_usage(k, "admin disqualify", "give a submission number and --reason TEXT");
    snprintf(path, sizeof path, "/api/v1/submissions/%s/disqualify", id);
    body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "reason", reason);
    if ((rc = post(k, path, body, &j)) == KJC_OK && j != NULL)
        fprintf(k->out, "disqualified #%s; it left every ranking and its owner sees the reason\n", id);
    cJSON_Delete(body);
    cJSON_Delete(j);
    return rc;
}

static int admin_publish(struct kjc *k, int argc, char **argv)
{
    char path[160], at[40];
    cJSON *j = NULL;
    int rc;
    size_t n = argc == 2 ? strlen(argv[1]) : 0;
    if (n == 0 || n > 63 || strspn(argv[1], "abcdefghijklmnopqrstuvwxyz0123456789_") != n)
        return kjc_usage(k, "admin publish", "name one leaderboard");
    snprintf(path, sizeof path, "/api/v1/leaderboards/%s/publish", argv[1]);
    if ((rc = post(k, path, NULL, &j)) == KJC_OK && j != NULL)
        fprintf(k->out, "the sources of %s are %spublished (since %s): every signed-in user "
                "reads them, and the reference\n", argv[1],
                cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "already")) ? "already " : "",
                kjc_str(j, "published_at", at, sizeof at));
    cJSON_Delete(j);
    return rc;
}

/* "added: a, b" for one list of the reload answer (names or {name, what}). */
static void reload_list(struct kjc *k, const cJSON *j, const char *key)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, key), *it;
    char name[72], what[300];
    if (cJSON_GetArraySize(arr) == 0)
        return;
    fprintf(k->out, "%s:", key);
    cJSON_ArrayForEach(it, arr) {
        if (cJSON_IsString(it))
            fprintf(k->out, " %s", (rend_clean(name, sizeof name, it->valuestring), name));
        else
            fprintf(k->out, "\n  %s: %s", kjc_str(it, "name", name, sizeof name),
                    kjc_str(it, "what", what, sizeof what));
    }
    fputc('\n', k->out);
}

static int admin_reload(struct kjc *k, int argc, char **argv)
{
    static const char *const keys[] = {"added", "edited", "changed", "removed", "unchanged"};
    cJSON *body, *j = NULL;
    int rc;
    if (argc > 2 || (argc == 2 && strcmp(argv[1], "--force") != 0))
        return kjc_usage(k, "admin reload", "the only option is --force");
    body = cJSON_CreateObject();
    if (argc == 2)
        cJSON_AddBoolToObject(body, "force", 1);
    if ((rc = post(k, "/api/v1/admin/reload", body, &j)) == KJC_OK && j != NULL) {
        fprintf(k->out, "reloaded %d leaderboards%s\n",
                cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "leaderboards")),
                cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "forced")) ? " (forced)" : "");
        for (int i = 0; i < 5; i++)
            reload_list(k, j, keys[i]);
    }
    cJSON_Delete(body);
    cJSON_Delete(j);
    return rc;
}

/* ------------------------------------------------------------------ */
/* rejudge                                                             */
/* ------------------------------------------------------------------ */

/* "v2 version 1", or "none" for a null timing, into buf. */
static const char *timing_text(const cJSON *t, char *buf, size_t bufsz)
{
    char p[24], v[24];
    if (!cJSON_IsObject(t))
        snprintf(buf, bufsz, "none");
    else
        snprintf(buf, bufsz, "%s version %s", kjc_str(t, "protocol", p, sizeof p),
                 kjc_str(t, "version", v, sizeof v));
    return buf;
}

/* One rejudge: a line with its state and progress, its reason, and with
 * entries its table of jobs. */
static void rejudge_print(struct kjc *k, const cJSON *rj)
{
    static const char *const heads[] = {">submission", "user", ">job", "status", "verdict",
                                        ">score_ns", "timing"};
    const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(rj, "jobs"), *e;
    const cJSON *entries = cJSON_GetObjectItemCaseSensitive(rj, "entries");
    char c[12][72], from[64], to[64], why[300];
    struct rend_tab t;
    int running = strcmp(kjc_str(rj, "state", c[3], 72), "running") == 0;
    fprintf(k->out, "rejudge %s of %s on %s: %s, %s of %s jobs done (%s accepted, %s not), "
            "%s queued, %s running; timing %s -> %s; started %s by %s\n",
            kjc_str(rj, "id", c[0], 72), kjc_str(rj, "leaderboard", c[1], 72),
            kjc_str(rj, "gpu", c[2], 72), c[3],
            kjc_str(jobs, "done", c[4], 72), kjc_str(jobs, "total", c[5], 72),
            kjc_str(jobs, "accepted", c[6], 72), kjc_str(jobs, "not_accepted", c[7], 72),
            kjc_str(jobs, "queued", c[8], 72), kjc_str(jobs, "running", c[9], 72),
            timing_text(cJSON_GetObjectItemCaseSensitive(rj, "from_timing"), from, sizeof from),
            running ? "(the new results')"
                    : timing_text(cJSON_GetObjectItemCaseSensitive(rj, "to_timing"), to, sizeof to),
            kjc_str(rj, "created_at", c[10], 72), kjc_str(rj, "by", c[11], 72));
    if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(rj, "reason")))
        fprintf(k->out, "  %s\n", kjc_str(rj, "reason", why, sizeof why));
    if (cJSON_GetArraySize(entries) == 0)
        return;
    rend_tab_init(&t, 7, heads);
    cJSON_ArrayForEach(e, entries) {
        const char *row[] = {kjc_str(e, "submission", c[0], 72), kjc_str(e, "user", c[1], 72),
                             kjc_str(e, "job", c[2], 72), kjc_str(e, "status", c[3], 72),
                             kjc_str(e, "verdict", c[4], 72), kjc_str(e, "score_ns", c[5], 72),
                             timing_text(cJSON_GetObjectItemCaseSensitive(e, "timing"), c[6],
                                         72)};
        rend_tab_add(&t, row);
    }
    rend_tab_print(&t, k->out);
    rend_tab_free(&t);
}

static int rejudge_show(struct kjc *k, const cJSON *j, int rankings)
{
    const cJSON *it;
    char gpu[72], t[64];
    if (rankings)
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "rankings"))
            fprintf(k->out, "ranking on %s: timing %s\n", kjc_str(it, "gpu", gpu, sizeof gpu),
                    timing_text(cJSON_GetObjectItemCaseSensitive(it, "timing"), t, sizeof t));
    if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "rejudges")) == 0)
        fputs("no rejudge yet\n", k->out);
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "rejudges"))
        rejudge_print(k, it);
    return KJC_OK;
}

/* kjudge admin rejudge BOARD [--gpu G] [--since WHEN] | --status BOARD |
 * --cancel BOARD [--gpu G] */
static int admin_rejudge(struct kjc *k, int argc, char **argv)
{
    static const char *const with_value[] = {"gpu", "since", NULL};
    static const char *const flags[] = {"status", "cancel", NULL};
    struct kjc_args a = {argc, 1, argv, "admin rejudge", with_value, flags, 0};
    const char *name, *val, *board = NULL, *gpu = NULL, *since = NULL;
    int status = 0, cancel = 0, rc;
    char path[160];
    cJSON *body, *j = NULL;
    while ((name = kjc_opt(k, &a, &val)) != NULL) {
        if (name[0] == '\0' && board != NULL)
            return kjc_usage(k, "admin rejudge", "one leaderboard at a time");
        if (name[0] == '\0')
            board = val;
        else if (strcmp(name, "gpu") == 0)
            gpu = val;
        else if (strcmp(name, "since") == 0)
            since = val;
        else if (strcmp(name, "status") == 0)
            status = 1;
        else
            cancel = 1;
    }
    if (a.bad)
        return KJC_ERROR;
    size_t n = board != NULL ? strlen(board) : 0;
    if (n == 0 || n > 63 || strspn(board, "abcdefghijklmnopqrstuvwxyz0123456789_") != n)
        return kjc_usage(k, "admin rejudge", "name one leaderboard");
    if (status + cancel > 1 || (status && (gpu != NULL || since != NULL)) ||
        (cancel && since != NULL))
        return kjc_usage(k, "admin rejudge", "--status takes only the leaderboard, --cancel "
                         "only --gpu");
    snprintf(path, sizeof path, "/api/v1/leaderboards/%s/rejudge%s", board,
             cancel ? "/cancel" : "");
    if (status) {
        if ((rc = get(k, path, &j)) == KJC_OK && j != NULL)
            rc = rejudge_show(k, j, 1);
        cJSON_Delete(j);
        return rc;
    }
    body = cJSON_CreateObject();
    if (gpu != NULL)
        cJSON_AddStringToObject(body, "gpu", gpu);
    if (since != NULL)
        cJSON_AddStringToObject(body, "since", since);
    if ((rc = post(k, path, body, &j)) == KJC_OK && j != NULL) {
        fputs(cancel ? "cancelled; nothing was swapped:\n"
                     : "queued; each ranking swaps to the new results once all of its jobs "
                       "are judged (kjudge admin rejudge --status):\n", k->out);
        rc = rejudge_show(k, j, 0);
    }
    cJSON_Delete(body);
    cJSON_Delete(j);
    return rc;
}

int cmd_admin(struct kjc *k, int argc, char **argv)
{
    const char *sub = argc > 1 ? argv[1] : "";
    int rc;
    if (argc < 2)
        return kjc_usage(k, "admin", "name a subcommand: users, invite, ban, unban, disqualify, "
                         "publish, reload, stats, rejudge");
    if ((rc = kjc_ready(k, 1)) != KJC_OK)
        return rc;
    if (strcmp(sub, "users") == 0 && argc == 2)
        return admin_users(k);
    if (strcmp(sub, "stats") == 0 && argc == 2)
        return admin_stats(k);
    if (strcmp(sub, "invite") == 0)
        return admin_invite(k, argc - 1, argv + 1);
    if (strcmp(sub, "ban") == 0 || strcmp(sub, "unban") == 0)
        return admin_ban(k, argc - 1, argv + 1, sub[0] == 'b');
    if (strcmp(sub, "disqualify") == 0)
        return admin_disqualify(k, argc - 1, argv + 1);
    if (strcmp(sub, "publish") == 0)
        return admin_publish(k, argc - 1, argv + 1);
    if (strcmp(sub, "reload") == 0)
        return admin_reload(k, argc - 1, argv + 1);
    if (strcmp(sub, "rejudge") == 0)
        return admin_rejudge(k, argc - 1, argv + 1);
    return kjc_usage(k, "admin", "unknown subcommand or extra arguments: '%.64s'", sub);
}
