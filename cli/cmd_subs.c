/*
 * cmd_subs.c - one's submissions: `kjudge submissions` (filters, pages),
 * `kjudge show ID [--source] [--diff [ID2]]`, `kjudge events ID` and
 * `kjudge withdraw ID`; and cmd_print_sub(), the view of one submission
 * that `submit` ends with.
 *
 * main.c calls the commands. The list follows the server's cursor until
 * --limit rows are shown; --json prints one page unchanged. A diff against
 * the previous submission comes from the server's detail; one against any
 * other submission is computed here with the server's own diff code
 * (server/diff.c, the same limits) from the two sources the caller may read.
 */
#include "kjc.h"
#include "diff.h"
#include "prog.h"
#include "rend.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LIST_DEFAULT 20
#define LIST_MAX_TOTAL 100000
#define LIST_PAGE_MAX 500 /* the server's KJ_LIST_MAX */

/* ------------------------------------------------------------------ */
/* One submission                                                      */
/* ------------------------------------------------------------------ */

void cmd_print_sub(struct kjc *k, const cJSON *sub, const cJSON *rank)
{
    char id[24], board[72], gpu[72], mode[16], user[72], status[16], verdict[32], why[300];
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(sub, "result");
    const cJSON *score = cJSON_GetObjectItemCaseSensitive(sub, "score_ns");
    kjc_str(sub, "verdict", verdict, sizeof verdict);
    kjc_str(sub, "status", status, sizeof status);
    fprintf(k->out, "#%s %s on %s, %s mode, by %s: %s\n", kjc_str(sub, "id", id, sizeof id),
            kjc_str(sub, "leaderboard", board, sizeof board), kjc_str(sub, "gpu", gpu, sizeof gpu),
            kjc_str(sub, "mode", mode, sizeof mode), kjc_str(sub, "user", user, sizeof user),
            verdict[0] && strcmp(verdict, "-") ? verdict : status);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sub, "withdrawn")))
        fprintf(k->out, "withdrawn from the rankings by its owner at %s\n",
                kjc_str(sub, "withdrawn_at", why, sizeof why));
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sub, "disqualified")))
        fprintf(k->out, "disqualified%s%s\n",
                kjc_str(sub, "disqualified_reason", why, sizeof why)[0] ? ": " : "", why);
    if (strcmp(status, "done") != 0)
        return;
    if (strcmp(verdict, "accepted") != 0) {
        rend_evidence(k->out, sub);
        rend_sanitize(k->out, res); /* findings explain many a failure */
        return;
    }
    if (cJSON_IsNumber(score)) {
        char s[32], rk[64];
        rend_ns(score->valuedouble, s, sizeof s);
        fprintf(k->out, "score %s (geometric mean of the shape medians)%s%s\n", s,
                cJSON_IsObject(rank) ? ", rank " : "",
                cJSON_IsObject(rank) ? kjc_str(rank, "text", rk, sizeof rk) : "");
    }
    if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(res, "profile")) ||
        cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(res, "sanitize"))) {
        fprintf(k->out, "%d tests passed\n",
                cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(res, "tests")));
        rend_profile(k->out, res, kjc_str(sub, "id", id, sizeof id));
        rend_sanitize(k->out, res);
    } else if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(res, "benchmarks")) > 0)
        rend_timing(k->out, res);
    else
        fprintf(k->out, "%d tests passed\n",
                cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(res, "tests")));
}

/* ------------------------------------------------------------------ */
/* submissions                                                         */
/* ------------------------------------------------------------------ */

struct list_opts {
    const char *filters[5][2]; /* {name, value} of leaderboard, gpu, mode, verdict, user */
    int nfilters;
    long limit;
    const char *cursor;
};

static int list_args(struct kjc *k, int argc, char **argv, struct list_opts *o)
{
    static const char *const with_value[] = {"leaderboard", "gpu", "mode", "verdict", "user",
                                             "limit", "cursor", "l", NULL};
    struct kjc_args a = {argc, 1, argv, "submissions", with_value, NULL, 0};
    const char *name, *val;
    char *end;
    memset(o, 0, sizeof *o);
    o->limit = LIST_DEFAULT;
    while ((name = kjc_opt(k, &a, &val)) != NULL) {
        if (name[0] == '\0')
            return kjc_usage(k, "submissions", "unexpected '%.64s'", val);
        if (strcmp(name, "limit") == 0) {
            o->limit = strtol(val, &end, 10);
            if (*end != '\0' || o->limit < 1 || o->limit > LIST_MAX_TOTAL)
                return kjc_usage(k, "submissions", "--limit must be 1 to %d", LIST_MAX_TOTAL);
        } else if (strcmp(name, "cursor") == 0) {
            o->cursor = val;
        } else if (o->nfilters < 5) {
            /* name is kjc_opt's buffer: keep the table's own string */
            for (int i = 0; with_value[i] != NULL; i++)
                if (strcmp(name, with_value[i]) == 0)
                    o->filters[o->nfilters][0] = strcmp(name, "l") == 0 ? "leaderboard"
                                                                         : with_value[i];
            o->filters[o->nfilters++][1] = val;
        }
    }
    return a.bad ? KJC_ERROR : KJC_OK;
}

/* The first page's path: the filters, the page size and the cursor. */
static void list_path(const struct list_opts *o, long page, char *buf, size_t bufsz)
{
    char enc[200];
    size_t used = (size_t)snprintf(buf, bufsz, "/api/v1/submissions?limit=%ld", page);
    for (int i = 0; i < o->nfilters && used < bufsz; i++) {
        kjc_urlenc(o->filters[i][1], enc, sizeof enc);
        used += (size_t)snprintf(buf + used, bufsz - used, "&%s=%s", o->filters[i][0], enc);
    }
    if (o->cursor != NULL && used < bufsz) {
        kjc_urlenc(o->cursor, enc, sizeof enc);
        snprintf(buf + used, bufsz - used, "&cursor=%s", enc);
    }
}

static void list_row(struct rend_tab *t, const cJSON *s)
{
    char id[24], at[32], board[72], gpu[72], mode[16], user[72], res[64], score[32];
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(s, "score_ns");
    kjc_str(s, "verdict", res, sizeof res);
    if (res[0] == '\0' || strcmp(res, "-") == 0)
        kjc_str(s, "status", res, sizeof res);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "withdrawn")))
        strncat(res, " (withdrawn)", sizeof res - strlen(res) - 1);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "disqualified")))
        strncat(res, " (disqualified)", sizeof res - strlen(res) - 1);
    rend_ns(cJSON_IsNumber(sc) ? sc->valuedouble : -1, score, sizeof score);
    const char *row[] = {kjc_str(s, "id", id, sizeof id), kjc_str(s, "created_at", at, sizeof at),
                         kjc_str(s, "user", user, sizeof user),
                         kjc_str(s, "leaderboard", board, sizeof board),
                         kjc_str(s, "gpu", gpu, sizeof gpu), kjc_str(s, "mode", mode, sizeof mode),
                         res, score};
    rend_tab_add(t, row);
}

int cmd_submissions(struct kjc *k, int argc, char **argv)
{
    static const char *const heads[] = {">id", "submitted", "user", "leaderboard", "gpu", "mode",
                                        "result", ">score"};
    struct list_opts o;
    struct rend_tab t;
    char path[2048], next[2048] = "";
    long shown = 0;
    int rc;
    if ((rc = list_args(k, argc, argv, &o)) != KJC_OK || (rc = kjc_ready(k, 1)) != KJC_OK)
        return rc;
    list_path(&o, o.limit < LIST_PAGE_MAX ? o.limit : LIST_PAGE_MAX, path, sizeof path);
    if (k->json) {
        struct curlc_resp r;
        if ((rc = kjc_get(k, path, &r)) == KJC_OK)
            kjc_print_body(k, &r);
        curlc_resp_free(&r);
        return rc;
    }
    rend_tab_init(&t, 8, heads);
    while (rc == KJC_OK && path[0] != '\0' && shown < o.limit) {
        struct curlc_resp r;
        const cJSON *s, *nx;
        cJSON *j;
        if ((rc = kjc_get(k, path, &r)) != KJC_OK || (j = kjc_json(k, &r)) == NULL) {
            curlc_resp_free(&r);
            rc = KJC_ERROR;
            break;
        }
        curlc_resp_free(&r);
        cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(j, "submissions"))
            if (shown++ < o.limit)
                list_row(&t, s);
        nx = cJSON_GetObjectItemCaseSensitive(j, "next");
        path[0] = '\0';
        next[0] = '\0';
        if (cJSON_IsString(nx) && strlen(nx->valuestring) < sizeof path) {
            snprintf(path, sizeof path, "%s", nx->valuestring);
            kjc_str(j, "next_cursor", next, sizeof next);
        }
        cJSON_Delete(j);
    }
    if (rc == KJC_OK) {
        rend_tab_print(&t, k->out);
        if (next[0] != '\0')
            fprintf(k->out, "(more: add --cursor %s)\n", next);
    }
    rend_tab_free(&t);
    return rc;
}

/* ------------------------------------------------------------------ */
/* show                                                                */
/* ------------------------------------------------------------------ */

/* GET path as JSON into *out (--json: printed instead when print). */
static int fetch(struct kjc *k, const char *path, cJSON **out)
{
    struct curlc_resp r;
    int rc;
    *out = NULL;
    if ((rc = kjc_get(k, path, &r)) != KJC_OK)
        return rc;
    if ((*out = kjc_json(k, &r)) == NULL)
        rc = KJC_ERROR;
    else if (k->json)
        kjc_print_body(k, &r);
    curlc_resp_free(&r);
    return rc;
}

/* Text the server sent, to the terminal cleaned line by line, elsewhere byte for byte. */
static void print_text(struct kjc *k, const char *text)
{
    if (k->tty)
        rend_block(k->out, text, "", 1 << 30);
    else
        fputs(text, k->out);
}

static int show_source(struct kjc *k, const cJSON *sub, const char *id)
{
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(sub, "source");
    if (!cJSON_IsString(src))
        return kjc_fail(k, "the source of #%s is not shown to you: only its owner and admins "
                        "see it, and everyone signed in once the board's sources are published",
                        id);
    print_text(k, src->valuestring);
    return KJC_OK;
}

/* show ID --diff ID2: the diff from ID2's source to ID's, computed here. */
static int show_diff2(struct kjc *k, const cJSON *b, const char *id, const char *id2)
{
    struct diff_limits lim = {3, 20000, 1000, 512 * 1024};
    char path[96], la[200], lb[200], fa[128], fb[128];
    const cJSON *sa, *sb = cJSON_GetObjectItemCaseSensitive(b, "source");
    struct kj_err err;
    cJSON *a = NULL;
    char *out = NULL;
    int add = 0, del = 0, rc;
    snprintf(path, sizeof path, "/api/v1/submissions/%s", id2);
    if ((rc = fetch(k, path, &a)) != KJC_OK)
        return rc;
    sa = cJSON_GetObjectItemCaseSensitive(a, "source");
    if (!cJSON_IsString(sa) || !cJSON_IsString(sb)) {
        cJSON_Delete(a);
        return kjc_fail(k, "both sources are needed for a diff, and the source of #%s is not "
                        "shown to you", cJSON_IsString(sb) ? id2 : id);
    }
    snprintf(la, sizeof la, "a/%s (#%s)", kjc_str(a, "file_name", fa, sizeof fa), id2);
    snprintf(lb, sizeof lb, "b/%s (#%s)", kjc_str(b, "file_name", fb, sizeof fb), id);
    kj_err_clear(&err);
    rc = diff_unified(sa->valuestring, strlen(sa->valuestring), sb->valuestring,
                      strlen(sb->valuestring), la, lb, &lim, &out, &add, &del, &err);
    cJSON_Delete(a);
    if (rc != 0)
        return kjc_fail(k, "no diff: %s", err.msg);
    if (out[0] == '\0')
        fprintf(k->out, "#%s and #%s have the same source\n", id2, id);
    print_text(k, out);
    free(out);
    return KJC_OK;
}

/* show ID --diff: the server's diff against the previous submission. */
static int show_diff_prev(struct kjc *k, const char *id)
{
    char path[96], note[300];
    cJSON *d = NULL;
    const cJSON *diff, *u;
    int rc;
    snprintf(path, sizeof path, "/api/v1/submissions/%s/detail", id);
    if ((rc = fetch(k, path, &d)) != KJC_OK || k->json) {
        cJSON_Delete(d);
        return rc;
    }
    diff = cJSON_GetObjectItemCaseSensitive(d, "diff");
    u = cJSON_GetObjectItemCaseSensitive(diff, "unified");
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "source_visible")))
        rc = kjc_fail(k, "the source of #%s is not shown to you, so neither is its diff", id);
    else if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(d, "previous")))
        fprintf(k->out, "#%s is its author's first submission to this board: nothing to diff\n", id);
    else if (!cJSON_IsString(u))
        fprintf(k->out, "no diff: %s\n", kjc_str(d, "diff_note", note, sizeof note));
    else if (u->valuestring[0] == '\0')
        fprintf(k->out, "#%s has the same source as the previous submission\n", id);
    else
        print_text(k, u->valuestring);
    cJSON_Delete(d);
    return rc;
}

int cmd_show(struct kjc *k, int argc, char **argv)
{
    static const char *const flags[] = {"source", "diff", NULL};
    struct kjc_args a = {argc, 1, argv, "show", NULL, flags, 0};
    const char *name, *val, *id = NULL, *id2 = NULL;
    int source = 0, diff = 0, rc;
    char path[96], verdict[32], mode[16];
    cJSON *sub = NULL, *det = NULL;
    while ((name = kjc_opt(k, &a, &val)) != NULL) {
        if (name[0] == '\0' && id == NULL)
            id = val;
        else if (name[0] == '\0' && diff && id2 == NULL)
            id2 = val;
        else if (name[0] == '\0')
            return kjc_usage(k, "show", "unexpected '%.64s'", val);
        else if (strcmp(name, "source") == 0)
            source = 1;
        else
            diff = 1;
    }
    if (a.bad)
        return KJC_ERROR;
    if (id == NULL || !kjc_is_id(id) || (id2 != NULL && !kjc_is_id(id2)))
        return kjc_usage(k, "show", "name a submission by its number");
    if (source && diff)
        return kjc_usage(k, "show", "--source and --diff do not go together");
    if (id2 != NULL && k->json)
        return kjc_usage(k, "show", "--json shows the server's JSON, and the server has no diff "
                         "between two chosen submissions: drop --json");
    if ((rc = kjc_ready(k, 0)) != KJC_OK)
        return rc;
    if (diff && id2 == NULL)
        return show_diff_prev(k, id);
    snprintf(path, sizeof path, "/api/v1/submissions/%s", id);
    if ((rc = fetch(k, path, &sub)) != KJC_OK || (k->json && !source)) {
        cJSON_Delete(sub);
        return rc;
    }
    if (source)
        rc = k->json ? KJC_OK : show_source(k, sub, id);
    else if (diff)
        rc = show_diff2(k, sub, id, id2);
    else {
        kjc_str(sub, "verdict", verdict, sizeof verdict);
        kjc_str(sub, "mode", mode, sizeof mode);
        snprintf(path, sizeof path, "/api/v1/submissions/%s/detail", id);
        if (strcmp(verdict, "accepted") == 0 && strcmp(mode, "leaderboard") == 0 &&
            (rc = fetch(k, path, &det)) != KJC_OK) {
            cJSON_Delete(sub);
            return rc;
        }
        cmd_print_sub(k, sub, cJSON_GetObjectItemCaseSensitive(det, "rank"));
    }
    cJSON_Delete(det);
    cJSON_Delete(sub);
    return rc;
}

/* ------------------------------------------------------------------ */
/* events, withdraw                                                    */
/* ------------------------------------------------------------------ */

/* The board's test and shape counts of submission sub (0 when unknown). */
static void counts(struct kjc *k, const cJSON *sub, int *ntests, int *nbench)
{
    char board[72], mode[16], path[128];
    struct curlc_resp r;
    cJSON *b;
    *ntests = *nbench = 0;
    kjc_str(sub, "leaderboard", board, sizeof board);
    kjc_str(sub, "mode", mode, sizeof mode);
    snprintf(path, sizeof path, "/api/v1/leaderboards/%s", board);
    if (curlc_get(k->http, path, &r, NULL) == 0 && r.status == 200 &&
        (b = cJSON_Parse(r.body)) != NULL) {
        *ntests = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(b, "tests"));
        if (strcmp(mode, "test") != 0)
            *nbench = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(b, "benchmarks"));
        cJSON_Delete(b);
    }
    curlc_resp_free(&r);
}

int cmd_events(struct kjc *k, int argc, char **argv)
{
    char path[96], head[64];
    struct curlc_resp final;
    struct prog p;
    cJSON *sub = NULL;
    int ntests, nbench, rc;
    if (argc != 2 || !kjc_is_id(argv[1]))
        return kjc_usage(k, "events", "name a submission by its number");
    if ((rc = kjc_ready(k, 1)) != KJC_OK)
        return rc;
    if (k->json) {
        snprintf(path, sizeof path, "/api/v1/submissions/%s/events", argv[1]);
        rc = fetch(k, path, &sub);
        cJSON_Delete(sub);
        return rc;
    }
    snprintf(path, sizeof path, "/api/v1/submissions/%s", argv[1]);
    if ((rc = fetch(k, path, &sub)) != KJC_OK)
        return rc;
    counts(k, sub, &ntests, &nbench);
    cJSON_Delete(sub);
    snprintf(head, sizeof head, "#%s", argv[1]);
    prog_init(&p, k->out, 0, k->width, head, ntests, nbench);
    if ((rc = cmd_follow(k, argv[1], &p, &final)) == KJC_OK)
        curlc_resp_free(&final);
    return rc;
}

int cmd_withdraw(struct kjc *k, int argc, char **argv)
{
    static const char *const flags[] = {"yes", "y", NULL};
    struct kjc_args a = {argc, 1, argv, "withdraw", NULL, flags, 0};
    char path[96], at[40], answer[16];
    const char *name, *val, *id = NULL;
    struct curlc_resp r;
    cJSON *j;
    int rc, yes = 0;
    while ((name = kjc_opt(k, &a, &val)) != NULL) {
        if (name[0] != '\0')
            yes = 1;
        else if (id == NULL)
            id = val;
        else
            return kjc_usage(k, "withdraw", "unexpected '%.64s'", val);
    }
    if (a.bad)
        return KJC_ERROR;
    if (id == NULL || !kjc_is_id(id))
        return kjc_usage(k, "withdraw", "name a submission by its number");
    if ((rc = kjc_ready(k, 1)) != KJC_OK)
        return rc;
    /* Withdrawing cannot be undone: ask on a terminal, else want --yes. */
    if (!yes && !isatty(STDIN_FILENO))
        return kjc_usage(k, "withdraw", "withdrawing #%s cannot be undone: add --yes to confirm",
                         id);
    if (!yes) {
        fprintf(k->err, "Take #%s out of the rankings for good? This cannot be undone. [y/N] ", id);
        fflush(k->err);
        if (fgets(answer, sizeof answer, stdin) == NULL || (answer[0] != 'y' && answer[0] != 'Y')) {
            fprintf(k->err, "not withdrawn\n");
            return KJC_ERROR;
        }
    }
    argv[1] = (char *)id; /* the messages below name it */
    snprintf(path, sizeof path, "/api/v1/submissions/%s/withdraw", argv[1]);
    if ((rc = kjc_post_json(k, path, NULL, &r)) != KJC_OK)
        return rc;
    if (k->json) {
        kjc_print_body(k, &r);
    } else if ((j = kjc_json(k, &r)) != NULL) {
        kjc_str(j, "withdrawn_at", at, sizeof at);
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "already")))
            fprintf(k->out, "#%s was already withdrawn (at %s)\n", argv[1], at);
        else
            fprintf(k->out, "withdrew #%s from the rankings at %s; it stays listed, marked "
                    "withdrawn, and cannot be restored\n", argv[1], at);
        cJSON_Delete(j);
    } else {
        rc = KJC_ERROR;
    }
    curlc_resp_free(&r);
    return rc;
}

/* ------------------------------------------------------------------ */
/* artifact                                                            */
/* ------------------------------------------------------------------ */

int cmd_artifact(struct kjc *k, int argc, char **argv)
{
    static const char *const with_value[] = {"o", "output", "name", NULL};
    static const char *const flags[] = {"force", NULL};
    struct kjc_args a = {argc, 1, argv, "artifact", with_value, flags, 0};
    const char *name, *val, *id = NULL, *outp = NULL, *file = "profile.ncu-rep";
    char path[160], def[96];
    struct curlc_resp r;
    int force = 0, rc;
    while ((name = kjc_opt(k, &a, &val)) != NULL) {
        if (name[0] == '\0' && id == NULL)
            id = val;
        else if (name[0] == '\0')
            return kjc_usage(k, "artifact", "one submission at a time");
        else if (strcmp(name, "force") == 0)
            force = 1;
        else if (strcmp(name, "name") == 0)
            file = val;
        else
            outp = val;
    }
    if (a.bad)
        return KJC_ERROR;
    if (id == NULL || id[0] == '\0' || strspn(id, "0123456789") != strlen(id) || strlen(id) > 18)
        return kjc_usage(k, "artifact", "name a submission by its number");
    if (strspn(file, "abcdefghijklmnopqrstuvwxyz0123456789.-_") != strlen(file) || strlen(file) > 64)
        return kjc_usage(k, "artifact", "--name is an artifact's name, e.g. profile.ncu-rep");
    if ((rc = kjc_ready(k, 1)) != KJC_OK)
        return rc;
    snprintf(path, sizeof path, "/api/v1/submissions/%s/artifacts/%s", id, file);
    if ((rc = kjc_get(k, path, &r)) != KJC_OK)
        return rc;
    if (outp == NULL) {
        snprintf(def, sizeof def, "submission-%s-%s", id, file);
        outp = def;
    }
    if (strcmp(outp, "-") == 0)
        fwrite(r.body, 1, r.len, k->out);
    else if ((rc = cmd_write_file(k, outp, r.body, r.len, force)) == KJC_OK)
        fprintf(k->err, "kjudge: wrote %s of #%s to %s (%zu bytes)\n", file, id, outp, r.len);
    curlc_resp_free(&r);
    return rc;
}
