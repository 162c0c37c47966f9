/*
 * boards.c - the leaderboards as the server serves them: a reference-counted
 * set loaded from leaderboards/ with each board's public bodies built once
 * (GET /leaderboards, /leaderboards/{name}), and each board's rankings
 * cache (GET /leaderboards/{name}/rankings, a submission's rank).
 *
 * The serve set-up and api_admin.c's reload load a set (boards_load) and
 * give every board its secret seed; http_daemon.c takes a reference for each
 * request; the handlers find boards and read their bodies and rankings.
 * Rankings are read from the database (db_rank_rows, rank.c: best accepted
 * leaderboard-mode submission per user, lower score_ns first; scores closer
 * than the board's resolution on that GPU share a rank, listed by time
 * of submission; the resolution of the measure the ranking holds:
 * resolution_pct for events, gpu_time_resolution_pct for GPU time) and
 * kept per board and GPU type until srv->rank_gen moves (a verdict or a
 * disqualification bumps it), so a busy board costs no query per request. The ownership rule of a set is written at struct
 * board_set in boards.h.
 */
#include "boards.h"
#include "auth.h"
#include "db.h"
#include "db_rejudge.h"
#include "kj_file.h"
#include "protocol.h"
#include "rank.h"
#include "server.h"
#include "sub_lang.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BOARD_MAX_DESCRIPTION (256 * 1024)
#define JSON_SAFE_INT 9007199254740992ULL /* larger seeds are sent as strings */

/* ------------------------------------------------------------------ */
/* The public bodies                                                   */
/* ------------------------------------------------------------------ */

static const char *c_type(enum spec_dtype t)
{
    static const char *const names[] = {"float", "__half", "__nv_bfloat16", "double",
                                        "signed char", "unsigned char", "int", "unsigned int",
                                        "long long"};
    return names[t];
}

/* "(const float* x, float* x_q, ..., int T, int H, int GS)" */
static void signature(const struct spec *s, char *buf, size_t bufsz)
{
    size_t used = 0;
    int n = snprintf(buf, bufsz, "(");
    for (int i = 0; i < s->nbuffers + s->nvars && n >= 0 && (used += (size_t)n) < bufsz; i++) {
        const char *sep = i ? ", " : "";
        if (i < s->nbuffers) {
            const struct spec_buffer *b = &s->buffers[i];
            n = snprintf(buf + used, bufsz - used, "%s%s%s* %s", sep,
                         b->role == SPEC_INPUT ? "const " : "", c_type(b->dtype), b->name);
        } else {
            n = snprintf(buf + used, bufsz - used, "%sint %s", sep, s->vars[i - s->nbuffers]);
        }
    }
    if (n >= 0 && (used += (size_t)n) < bufsz)
        snprintf(buf + used, bufsz - used, ")");
}

static cJSON *str_array(const char (*items)[SPEC_MAX_NAME], int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a != NULL && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(items[i]));
    return a;
}

static cJSON *buffer_json(const struct spec_buffer *b)
{
    static const char *const dists[] = {"none", "normal", "uniform", "int", "generated"};
    cJSON *o = cJSON_CreateObject(), *shape = cJSON_AddArrayToObject(o, "shape"), *init;
    cJSON_AddStringToObject(o, "name", b->name);
    cJSON_AddStringToObject(o, "dtype", spec_dtype_name(b->dtype));
    for (int d = 0; d < b->ndim; d++)
        cJSON_AddItemToArray(shape, cJSON_CreateString(b->shape[d]));
    cJSON_AddStringToObject(o, "role", b->role == SPEC_INPUT ? "input" : "output");
    if (b->role == SPEC_OUTPUT) {
        /* An expression stays a string, as in the file. */
        if (b->atol_expr[0] != '\0')
            cJSON_AddStringToObject(o, "atol", b->atol_expr);
        else
            cJSON_AddNumberToObject(o, "atol", b->atol);
        if (b->rtol_expr[0] != '\0')
            cJSON_AddStringToObject(o, "rtol", b->rtol_expr);
        else
            cJSON_AddNumberToObject(o, "rtol", b->rtol);
        return o;
    }
    init = cJSON_AddObjectToObject(o, "init");
    cJSON_AddStringToObject(init, "dist", dists[b->dist]);
    if (b->dist == SPEC_DIST_NORMAL) {
        cJSON_AddNumberToObject(init, "mean", b->p0);
        cJSON_AddNumberToObject(init, "std", b->p1);
    } else if (b->dist == SPEC_DIST_UNIFORM || b->dist == SPEC_DIST_INT) {
        cJSON_AddNumberToObject(init, "lo", b->p0);
        cJSON_AddNumberToObject(init, "hi", b->p1);
    }
    return o;
}

static cJSON *cases_json(const struct spec *s, const struct spec_case *cases, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a != NULL && i < n; i++) {
        cJSON *c = cJSON_CreateObject();
        char seed[24];
        for (int v = 0; v < s->nvars; v++)
            cJSON_AddNumberToObject(c, s->vars[v], (double)cases[i].val[v]);
        if (cases[i].seed <= JSON_SAFE_INT) {
            cJSON_AddNumberToObject(c, "seed", (double)cases[i].seed);
        } else {
            snprintf(seed, sizeof seed, "%llu", (unsigned long long)cases[i].seed);
            cJSON_AddStringToObject(c, "seed", seed);
        }
        cJSON_AddItemToArray(a, c);
    }
    return a;
}

/* Fields shared by the list entry and the detail. */
static cJSON *board_summary(const struct spec *s)
{
    cJSON *o = cJSON_CreateObject();
    char url[160];
    cJSON_AddStringToObject(o, "name", s->name);
    cJSON_AddStringToObject(o, "title", s->title);
    if (s->deadline[0] != '\0')
        cJSON_AddStringToObject(o, "deadline", s->deadline);
    else
        cJSON_AddNullToObject(o, "deadline");
    cJSON_AddItemToObject(o, "gpus", str_array(s->gpus, s->ngpus));
    cJSON_AddItemToObject(o, "vars", str_array(s->vars, s->nvars));
    cJSON *langs = cJSON_AddArrayToObject(o, "langs"); /* what it takes (sub_lang.h's names) */
    cJSON_AddItemToArray(langs, cJSON_CreateString(sub_lang_name(SUB_LANG_CUDA)));
    if (s->python.present)
        cJSON_AddItemToArray(langs, cJSON_CreateString(sub_lang_name(SUB_LANG_PYTHON)));
    cJSON_AddItemToArray(langs, cJSON_CreateString(sub_lang_name(SUB_LANG_PTX))); /* any board */
    cJSON_AddNumberToObject(o, "num_tests", s->ntests);
    cJSON_AddNumberToObject(o, "num_benchmarks", s->nbenchmarks);
    snprintf(url, sizeof url, "/api/v1/leaderboards/%s", s->name);
    cJSON_AddStringToObject(o, "url", url);
    return o;
}

/* key: {"H200": pct or null, ...}, one entry per GPU type of s. */
static void add_resolution(cJSON *o, const char *key, const struct spec *s, const double *pct)
{
    cJSON *arr = cJSON_AddObjectToObject(o, key);
    for (int g = 0; g < s->ngpus && arr != NULL; g++)
        if (pct[g] > 0)
            cJSON_AddNumberToObject(arr, s->gpus[g], pct[g]);
        else
            cJSON_AddNullToObject(arr, s->gpus[g]);
}

/* The board's Python interface (spec.h's struct spec_python) by names,
 * {"args": [...], "returns": [...]}, or null when it takes no Python. */
static cJSON *python_json(const struct spec *s)
{
    const struct spec_python *p = &s->python;
    cJSON *o, *args, *rets;
    if (!p->present)
        return cJSON_CreateNull();
    o = cJSON_CreateObject();
    args = cJSON_AddArrayToObject(o, "args");
    for (int i = 0; i < p->nargs; i++)
        cJSON_AddItemToArray(args, cJSON_CreateString(p->args[i].kind == SPEC_PYARG_VAR
                                                      ? s->vars[p->args[i].index]
                                                      : s->buffers[p->args[i].index].name));
    rets = cJSON_AddArrayToObject(o, "returns");
    for (int i = 0; i < p->nreturns; i++)
        cJSON_AddItemToArray(rets, cJSON_CreateString(s->buffers[p->returns[i]].name));
    return o;
}

static cJSON *board_detail(const struct spec *s, const char *description)
{
    cJSON *o = board_summary(s), *arr, *lim;
    char sig[1024];
    cJSON_AddStringToObject(o, "description", description);
    signature(s, sig, sizeof sig);
    cJSON_AddStringToObject(o, "signature", sig);
    arr = cJSON_AddArrayToObject(o, "constraints");
    for (int i = 0; i < s->nconstraints; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateString(s->constraints[i]));
    arr = cJSON_AddArrayToObject(o, "buffers");
    for (int i = 0; i < s->nbuffers; i++)
        cJSON_AddItemToArray(arr, buffer_json(&s->buffers[i]));
    cJSON_AddItemToObject(o, "tests", cases_json(s, s->tests, s->ntests));
    cJSON_AddItemToObject(o, "benchmarks", cases_json(s, s->benchmarks, s->nbenchmarks));
    if (s->bytes_expr[0] != '\0')
        cJSON_AddStringToObject(o, "bytes", s->bytes_expr);
    else
        cJSON_AddNullToObject(o, "bytes");
    if (s->flops_expr[0] != '\0')
        cJSON_AddStringToObject(o, "flops", s->flops_expr);
    else
        cJSON_AddNullToObject(o, "flops");
    cJSON_AddStringToObject(o, "ranking", s->ranking);
    cJSON_AddStringToObject(o, "score", s->score_gpu_time ? "gpu_time" : "events");
    /* Whether anyone may read reference.cu (api_files.c); otherwise signed-in
     * users may once the sources are published (the rankings' sources_published). */
    cJSON_AddBoolToObject(o, "public_reference", s->public_reference);
    cJSON_AddItemToObject(o, "python", python_json(s));
    add_resolution(o, "resolution_pct", s, s->resolution_pct);
    add_resolution(o, "gpu_time_resolution_pct", s, s->gpu_resolution_pct);
    lim = cJSON_AddObjectToObject(o, "time_limits_s");
    cJSON_AddNumberToObject(lim, "test", s->limit_test_s);
    cJSON_AddNumberToObject(lim, "benchmark", s->limit_benchmark_s);
    cJSON_AddNumberToObject(lim, "leaderboard", s->limit_leaderboard_s);
    if (s->limit_tools_s > 0) /* else the runner's default (docs/operator-tools.md) */
        cJSON_AddNumberToObject(lim, "tools", s->limit_tools_s);
    return o;
}

/* Read the board's description file (caller frees). */
static int read_description(const struct spec *s, char **out, struct kj_err *err)
{
    char path[SPEC_MAX_PATH + SPEC_MAX_NAME + 2];
    snprintf(path, sizeof path, "%s/%s", s->dir, s->description_file);
    return kj_read_file(path, BOARD_MAX_DESCRIPTION, out, NULL, err);
}

/* Serialize json (deleted here) into *text and its ETag. */
static int freeze(cJSON *json, char **text, size_t *len, char *etag, size_t etagsz,
                  struct kj_err *err)
{
    *text = json != NULL ? cJSON_PrintUnformatted(json) : NULL;
    cJSON_Delete(json);
    if (*text == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory building leaderboard JSON");
    *len = strlen(*text);
    return srv_etag(*text, *len, etag, etagsz, err);
}

/* Build bs->boards and bs->list from bs->specs (reads each description). */
static int build_bodies(struct board_set *bs, struct kj_err *err)
{
    cJSON *list = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(list, "leaderboards");
    int rc = 0;
    if (bs->nspecs > 0 && (bs->boards = calloc((size_t)bs->nspecs, sizeof *bs->boards)) == NULL)
        rc = KJ_FAIL(err, KJ_ENOMEM, "out of memory building leaderboards");
    for (int i = 0; rc == 0 && i < bs->nspecs; i++) {
        struct board *b = &bs->boards[i];
        char *desc = NULL;
        b->spec = bs->specs[i];
        pthread_mutex_init(&b->cache_mu, NULL);
        if ((rc = read_description(b->spec, &desc, err)) != 0)
            break;
        rc = freeze(board_detail(b->spec, desc), &b->detail, &b->detail_len, b->etag,
                    sizeof b->etag, err);
        free(desc);
        cJSON_AddItemToArray(arr, board_summary(b->spec));
    }
    if (rc == 0)
        return freeze(list, &bs->list, &bs->list_len, bs->list_etag, sizeof bs->list_etag, err);
    cJSON_Delete(list);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Sets                                                                */
/* ------------------------------------------------------------------ */

struct board *boards_find(struct board_set *bs, const char *name)
{
    for (int i = 0; bs != NULL && i < bs->nspecs && bs->boards != NULL; i++)
        if (strcmp(bs->specs[i]->name, name) == 0)
            return &bs->boards[i];
    return NULL;
}

/* Free a set whose last reference is gone (or that was never shared). */
static void boards_free(struct board_set *bs)
{
    if (bs == NULL)
        return;
    if (bs->boards != NULL) {
        for (int i = 0; i < bs->nspecs; i++) {
            free(bs->boards[i].detail);
            for (int g = 0; g < SPEC_MAX_GPUS; g++)
                boards_ranking_release(bs->boards[i].rank[g]);
            pthread_mutex_destroy(&bs->boards[i].cache_mu);
        }
        free(bs->boards);
    }
    free(bs->list);
    spec_free_all(bs->specs, bs->nspecs);
    free(bs);
}

int boards_from_specs(struct spec **specs, int nspecs, struct board_set **out,
                      struct kj_err *err)
{
    struct board_set *bs = calloc(1, sizeof *bs);
    int rc;
    *out = NULL;
    if (bs == NULL) {
        spec_free_all(specs, nspecs);
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory loading leaderboards");
    }
    atomic_init(&bs->refs, 1);
    bs->specs = specs;
    bs->nspecs = nspecs;
    if ((rc = build_bodies(bs, err)) != 0) {
        boards_free(bs);
        return rc;
    }
    *out = bs;
    return 0;
}

int boards_load(const char *dir, struct board_set **out, struct kj_err *err)
{
    struct spec **specs = NULL;
    int n = 0, rc;
    *out = NULL;
    if ((rc = spec_load_all(dir, &specs, &n, err)) != 0)
        return rc;
    return boards_from_specs(specs, n, out, err);
}

int boards_ensure_secrets(struct db *db, const struct board_set *bs, struct kj_err *err)
{
    uint64_t seed;
    int rc = 0;
    for (int i = 0; rc == 0 && i < bs->nspecs; i++)
        if ((rc = auth_random_seed(&seed, err)) == 0)
            rc = db_secret_ensure(db, bs->specs[i]->name, seed, err);
    return rc;
}

struct board_set *boards_acquire(struct server *srv)
{
    struct board_set *bs;
    pthread_mutex_lock(&srv->boards_mu);
    bs = srv->boards;
    if (bs != NULL)
        atomic_fetch_add(&bs->refs, 1);
    pthread_mutex_unlock(&srv->boards_mu);
    return bs;
}

void boards_release(struct board_set *bs)
{
    if (bs != NULL && atomic_fetch_sub(&bs->refs, 1) == 1)
        boards_free(bs);
}

void boards_swap(struct server *srv, struct board_set *next)
{
    struct board_set *old;
    pthread_mutex_lock(&srv->boards_mu);
    old = srv->boards;
    srv->boards = next;
    pthread_mutex_unlock(&srv->boards_mu);
    boards_release(old);
}

/* ------------------------------------------------------------------ */
/* Rankings and their cache                                            */
/* ------------------------------------------------------------------ */

void boards_ranking_release(struct board_ranking *b)
{
    if (b == NULL || atomic_fetch_sub(&b->refs, 1) != 1)
        return;
    free(b->ids);
    free(b->ranks);
    free(b->body);
    free(b);
}

static cJSON *ranking_row(const struct db_rank_row *row, int rank, int tied)
{
    cJSON *o = cJSON_CreateObject(), *shapes;
    char when[32];
    srv_iso_time(row->created_at, when, sizeof when);
    cJSON_AddNumberToObject(o, "rank", rank);
    cJSON_AddBoolToObject(o, "tied", tied);
    cJSON_AddStringToObject(o, "user", row->user);
    cJSON_AddStringToObject(o, "lang", sub_lang_name(row->lang));
    cJSON_AddNumberToObject(o, "score_ns", row->score_ns);
    cJSON_AddNumberToObject(o, "submission_id", (double)row->submission_id);
    cJSON_AddStringToObject(o, "submitted_at", when);
    shapes = cJSON_AddArrayToObject(o, "shapes");
    for (int i = 0; i < row->nmedians; i++) {
        /* The shape is the checked result's own JSON text, copied as it is;
         * median_ns is the ranked median, raw_median_ns (a corrected timing
         * protocol v2 result only) the one before the correction. */
        const struct db_median *md = &row->medians[i];
        cJSON *m = cJSON_CreateObject();
        cJSON_AddItemToObject(m, "shape", cJSON_CreateRaw(md->shape));
        cJSON_AddNumberToObject(m, "median_ns", md->median_ns);
        if (md->corrected)
            cJSON_AddNumberToObject(m, "raw_median_ns", md->raw_median_ns);
        if (md->floor_ns > 0) /* the shape's bound in that run: floor_ns / median_ns reached */
            cJSON_AddNumberToObject(m, "floor_ns", md->floor_ns);
        cJSON_AddItemToArray(shapes, m);
    }
    return o;
}

/* The board's measured resolution on gpu (percent) for the measure gpu_time
 * (1: GPU time, 0: events), 0 when not measured. */
static double board_resolution(const struct spec *s, const char *gpu, int gpu_time)
{
    for (int g = 0; g < s->ngpus; g++)
        if (strcmp(s->gpus[g], gpu) == 0)
            return gpu_time ? s->gpu_resolution_pct[g] : s->resolution_pct[g];
    return 0;
}

/* The rankings body of rows into blob (ids, ranks, body, etag): rows within
 * the board's resolution on gpu for the measure they were ranked on
 * (gpu_time 1: GPU time) are tied (rank.h, rank_ties). */
static int rank_fill(const struct board *b, const char *gpu, int gpu_time, int published,
                     const struct db_rank_row *rows, int n, struct board_ranking *blob,
                     struct kj_err *err)
{
    size_t m = (size_t)n + 1;
    double *scores = malloc(m * sizeof *scores), res = board_resolution(b->spec, gpu, gpu_time);
    int64_t *times = malloc(m * sizeof *times), *sids = malloc(m * sizeof *sids);
    int *order = malloc(m * sizeof *order), *tied = malloc(m * sizeof *tied);
    cJSON *root = NULL, *arr;
    int rc;
    blob->ids = malloc(m * sizeof *blob->ids);
    blob->ranks = malloc(m * sizeof *blob->ranks);
    if (scores == NULL || times == NULL || sids == NULL || order == NULL || tied == NULL ||
        blob->ids == NULL || blob->ranks == NULL || (root = cJSON_CreateObject()) == NULL) {
        rc = KJ_FAIL(err, KJ_ENOMEM, "out of memory building rankings of %d rows", n);
        goto out;
    }
    for (int i = 0; i < n; i++) {
        scores[i] = rows[i].score_ns;
        times[i] = rows[i].created_at;
        sids[i] = rows[i].submission_id;
    }
    rank_ties(scores, times, sids, n, res, order, blob->ranks, tied);
    for (int k = 0; k < n; k++)
        blob->ids[k] = rows[order[k]].submission_id;
    blob->n = n;
    cJSON_AddStringToObject(root, "leaderboard", b->spec->name);
    cJSON_AddStringToObject(root, "gpu", gpu);
    cJSON_AddStringToObject(root, "ranking", b->spec->ranking);
    cJSON_AddStringToObject(root, "score", gpu_time ? "gpu_time" : "events");
    if (res > 0)
        cJSON_AddNumberToObject(root, "resolution_pct", res);
    else
        cJSON_AddNullToObject(root, "resolution_pct");
    cJSON_AddBoolToObject(root, "sources_published", published);
    arr = cJSON_AddArrayToObject(root, "rankings");
    for (int k = 0; k < n; k++)
        cJSON_AddItemToArray(arr, ranking_row(&rows[order[k]], blob->ranks[k], tied[k]));
    rc = freeze(root, &blob->body, &blob->len, blob->etag, sizeof blob->etag, err);
    root = NULL; /* freeze deleted it */
out:
    cJSON_Delete(root);
    free(scores);
    free(times);
    free(sids);
    free(order);
    free(tied);
    return rc;
}

/* Read the rankings of (b, gpu) from the database into a new blob (one reference). */
static int rank_build(struct server *srv, const struct board *b, const char *gpu,
                      uint64_t gen, struct board_ranking **out, struct kj_err *err)
{
    struct board_ranking *blob = calloc(1, sizeof *blob);
    struct db_rank_row *rows = NULL;
    struct db_timing timing;
    int64_t published_at = 0;
    int n = 0, rc, gpu_time;
    *out = NULL;
    if (blob == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory building rankings");
    atomic_init(&blob->refs, 1);
    blob->gen = gen;
    /* The measure is the ranking's timing's; before its first ranked
     * result, the board's "score". */
    if ((rc = db_published(srv->db, b->spec->name, &published_at, err)) == 0 &&
        (rc = db_rank_timing(srv->db, b->spec->name, gpu, &timing, err)) == 0 &&
        (rc = db_rank_rows(srv->db, b->spec->name, gpu, &rows, &n, err)) == 0) {
        gpu_time = timing.protocol[0] != '\0' ? KJ_TIMING_VERSION_IS_GPU(timing.version)
                                              : b->spec->score_gpu_time;
        rc = rank_fill(b, gpu, gpu_time, published_at != 0, rows, n, blob, err);
    }
    db_rank_rows_free(rows, n);
    if (rc != 0) {
        boards_ranking_release(blob);
        return rc;
    }
    *out = blob;
    return 0;
}

int boards_ranking(struct server *srv, struct board *b, int g, struct board_ranking **out,
                 struct kj_err *err)
{
    uint64_t gen = atomic_load(&srv->rank_gen);
    struct board_ranking *blob, *old = NULL;
    int rc;
    *out = NULL;
    if (KJ_NEVER(g < 0 || g >= b->spec->ngpus))
        return KJ_FAIL(err, KJ_EINTERNAL, "leaderboard %s has no GPU type %d", b->spec->name, g);
    pthread_mutex_lock(&b->cache_mu);
    if ((blob = b->rank[g]) != NULL && blob->gen == gen)
        atomic_fetch_add(&blob->refs, 1);
    else
        blob = NULL;
    pthread_mutex_unlock(&b->cache_mu);
    if ((*out = blob) != NULL)
        return 0;
    if ((rc = rank_build(srv, b, b->spec->gpus[g], gen, &blob, err)) != 0)
        return rc;
    /* Keep it unless the rankings moved while it was read (then it is already stale). */
    pthread_mutex_lock(&b->cache_mu);
    if (gen == atomic_load(&srv->rank_gen) && (b->rank[g] == NULL || b->rank[g]->gen != gen)) {
        old = b->rank[g];
        atomic_fetch_add(&blob->refs, 1);
        b->rank[g] = blob;
    }
    pthread_mutex_unlock(&b->cache_mu);
    boards_ranking_release(old);
    *out = blob;
    return 0;
}

int boards_gpu(const struct board *b, const char *gpu)
{
    for (int i = 0; gpu != NULL && i < b->spec->ngpus; i++)
        if (strcmp(b->spec->gpus[i], gpu) == 0)
            return i;
    return -1;
}
