/*
 * cmd_boards.c - the public reads: `kjudge boards`, `kjudge board L`,
 * `kjudge template L [-o FILE] [--lang python|ptx]` and `kjudge rankings L
 * [--gpu G]`.
 *
 * main.c calls these; each makes one or two GETs (kjc.c) and prints a
 * table or the board's statement, or with --json the server's JSON as it
 * came. A token is sent when one is configured (it matters for
 * `template --reference` once the sources are published) but none is
 * needed. The template is written byte for byte; -o refuses to replace an
 * existing file unless --force.
 */
#include "kjc.h"
#include "rend.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SHAPE_COLS 4 /* per-shape median columns in `rankings` */

/* Column titles made at run time (right-aligned: '>' first). */
struct heads {
    char buf[REND_MAX_COLS][72];
    const char *ptr[REND_MAX_COLS];
    int n;
};

static void head_add(struct heads *h, const char *title, int right)
{
    if (h->n >= REND_MAX_COLS)
        return;
    snprintf(h->buf[h->n], sizeof h->buf[h->n], "%s%.64s", right ? ">" : "", title);
    h->ptr[h->n] = h->buf[h->n];
    h->n++;
}

/* GET path and parse it; with --json print it and return NULL with *rc = KJC_OK. */
static cJSON *get_json(struct kjc *k, const char *path, int *rc)
{
    struct curlc_resp r;
    cJSON *j = NULL;
    if ((*rc = kjc_get(k, path, &r)) != KJC_OK)
        return NULL;
    if (k->json)
        kjc_print_body(k, &r);
    else if ((j = kjc_json(k, &r)) == NULL)
        *rc = KJC_ERROR;
    curlc_resp_free(&r);
    return j;
}

/* A positional board name, checked to be one (the server's [a-z0-9_]). */
static int board_arg(struct kjc *k, const char *cmd, const char *v)
{
    size_t n = v != NULL ? strlen(v) : 0;
    if (n == 0)
        return kjc_usage(k, cmd, "name the leaderboard (kjudge boards lists them)");
    if (n > 63 || strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789_") != n)
        return kjc_usage(k, cmd, "'%.64s' is not a leaderboard name (a-z, 0-9, _)", v);
    return KJC_OK;
}

/* "H200, B200" of a JSON array of strings. */
static void join(const cJSON *arr, char *buf, size_t bufsz)
{
    const cJSON *it;
    size_t used = 0;
    char one[72];
    buf[0] = '\0';
    cJSON_ArrayForEach(it, arr) {
        rend_clean(one, sizeof one, cJSON_IsString(it) ? it->valuestring : "?");
        if (used + strlen(one) + 3 < bufsz)
            used += (size_t)snprintf(buf + used, bufsz - used, "%s%s", used ? ", " : "", one);
    }
}

/* ------------------------------------------------------------------ */
/* boards, board                                                       */
/* ------------------------------------------------------------------ */

int cmd_boards(struct kjc *k, int argc, char **argv)
{
    static const char *const heads[] = {"name", "title", "gpus", "deadline", ">tests", ">shapes"};
    struct rend_tab t;
    const cJSON *b;
    cJSON *j;
    int rc;
    (void)argv;
    if (argc > 1)
        return kjc_usage(k, "boards", "takes no arguments");
    if ((rc = kjc_ready(k, 0)) != KJC_OK || (j = get_json(k, "/api/v1/leaderboards", &rc)) == NULL)
        return rc;
    rend_tab_init(&t, 6, heads);
    cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(j, "leaderboards")) {
        char name[72], title[160], gpus[160], dl[40], nt[16], nb[16];
        join(cJSON_GetObjectItemCaseSensitive(b, "gpus"), gpus, sizeof gpus);
        kjc_str(b, "deadline", dl, sizeof dl);
        const char *row[] = {kjc_str(b, "name", name, sizeof name),
                             kjc_str(b, "title", title, sizeof title), gpus,
                             dl[0] && strcmp(dl, "-") ? dl : "none",
                             kjc_str(b, "num_tests", nt, sizeof nt),
                             kjc_str(b, "num_benchmarks", nb, sizeof nb)};
        rend_tab_add(&t, row);
    }
    rend_tab_fit(&t, 1, k->fit); /* the title gives way: the name is what commands take */
    rend_tab_print(&t, k->out);
    rend_tab_free(&t);
    cJSON_Delete(j);
    return KJC_OK;
}

/* A table of cases (tests or benchmarks) over the board's variables. */
static void cases_table(struct kjc *k, const cJSON *vars, const cJSON *cases)
{
    struct heads h;
    struct rend_tab t;
    const cJSON *c, *v;
    char cells[REND_MAX_COLS][48];
    const char *row[REND_MAX_COLS];
    memset(&h, 0, sizeof h);
    cJSON_ArrayForEach(v, vars)
        head_add(&h, cJSON_IsString(v) ? v->valuestring : "?", 1);
    head_add(&h, "seed", 1);
    rend_tab_init(&t, h.n, h.ptr);
    cJSON_ArrayForEach(c, cases) {
        int i = 0;
        cJSON_ArrayForEach(v, vars)
            if (i < h.n - 1) {
                rend_value(cJSON_GetObjectItemCaseSensitive(c, cJSON_IsString(v) ? v->valuestring
                                                                                  : ""),
                           cells[i], sizeof cells[i]);
                row[i] = cells[i];
                i++;
            }
        rend_value(cJSON_GetObjectItemCaseSensitive(c, "seed"), cells[i], sizeof cells[i]);
        row[i] = cells[i];
        rend_tab_add(&t, row);
    }
    rend_tab_print(&t, k->out);
    rend_tab_free(&t);
}

int cmd_board(struct kjc *k, int argc, char **argv)
{
    char path[128], name[72], buf[1024], gpus[160], lim[3][24];
    const cJSON *tl;
    cJSON *j;
    int rc;
    if (argc != 2)
        return kjc_usage(k, "board", "name one leaderboard");
    if ((rc = board_arg(k, "board", argv[1])) != KJC_OK || (rc = kjc_ready(k, 0)) != KJC_OK)
        return rc;
    snprintf(path, sizeof path, "/api/v1/leaderboards/%s", argv[1]);
    if ((j = get_json(k, path, &rc)) == NULL)
        return rc;
    kjc_str(j, "name", name, sizeof name);
    fprintf(k->out, "%s: %s\n", name, kjc_str(j, "title", buf, sizeof buf));
    join(cJSON_GetObjectItemCaseSensitive(j, "gpus"), gpus, sizeof gpus);
    kjc_str(j, "deadline", buf, sizeof buf);
    fprintf(k->out, "gpus: %s; deadline: %s\n", gpus, buf[0] && strcmp(buf, "-") ? buf : "none");
    fprintf(k->out, "kernel arguments: %s\n", kjc_str(j, "signature", buf, sizeof buf));
    fprintf(k->out, "ranking: %s of the per-shape medians\n", kjc_str(j, "ranking", buf, sizeof buf));
    tl = cJSON_GetObjectItemCaseSensitive(j, "time_limits_s");
    fprintf(k->out, "time limits: test %s s, benchmark %s s, leaderboard %s s\n\n",
            kjc_str(tl, "test", lim[0], sizeof lim[0]), kjc_str(tl, "benchmark", lim[1], sizeof lim[1]),
            kjc_str(tl, "leaderboard", lim[2], sizeof lim[2]));
    const cJSON *desc = cJSON_GetObjectItemCaseSensitive(j, "description");
    rend_block(k->out, cJSON_IsString(desc) ? desc->valuestring : "", "", 400);
    fprintf(k->out, "\ntests (checked in every mode):\n");
    cases_table(k, cJSON_GetObjectItemCaseSensitive(j, "vars"), cJSON_GetObjectItemCaseSensitive(j, "tests"));
    fprintf(k->out, "\nbenchmark shapes (timed in benchmark and leaderboard mode; leaderboard mode "
            "mixes the seeds with a secret):\n");
    cases_table(k, cJSON_GetObjectItemCaseSensitive(j, "vars"),
                cJSON_GetObjectItemCaseSensitive(j, "benchmarks"));
    fprintf(k->out, "\nstarter kernel: kjudge template %s -o %s.cu\n", name, name);
    if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j, "python")))
        fprintf(k->out, "in Python (KernelBot's form): kjudge template %s --lang python -o %s.py\n",
                name, name);
    cJSON_Delete(j);
    return KJC_OK;
}

/* ------------------------------------------------------------------ */
/* template                                                            */
/* ------------------------------------------------------------------ */

/* Write n bytes of buf to path: a new file, or replace it when force. */
int cmd_write_file(struct kjc *k, const char *path, const char *buf, size_t n, int force)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (force ? O_TRUNC : O_EXCL), 0644);
    size_t done = 0;
    if (fd < 0 && errno == EEXIST)
        return kjc_fail(k, "%s exists; add --force to replace it", path);
    if (fd < 0)
        return kjc_fail(k, "cannot create %s: %s", path, strerror(errno));
    while (done < n) {
        ssize_t w = write(fd, buf + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            return kjc_fail(k, "cannot write %s: %s", path, strerror(errno));
        }
        done += (size_t)w;
    }
    if (close(fd) != 0)
        return kjc_fail(k, "cannot write %s: %s", path, strerror(errno));
    return KJC_OK;
}

int cmd_template(struct kjc *k, int argc, char **argv)
{
    static const char *const with_value[] = {"o", "output", "lang", NULL};
    static const char *const flags[] = {"force", "reference", NULL};
    struct kjc_args a = {argc, 1, argv, "template", with_value, flags, 0};
    const char *name, *val, *board = NULL, *outp = NULL, *file = "template.cu", *lang = NULL;
    struct curlc_resp r;
    char path[160];
    int force = 0, rc;
    while ((name = kjc_opt(k, &a, &val)) != NULL) {
        if (name[0] == '\0' && board == NULL)
            board = val;
        else if (name[0] == '\0')
            return kjc_usage(k, "template", "one leaderboard at a time");
        else if (strcmp(name, "force") == 0)
            force = 1;
        else if (strcmp(name, "reference") == 0)
            file = "reference.cu";
        else if (strcmp(name, "lang") == 0)
            lang = val;
        else
            outp = val;
    }
    /* --lang python: the Python starter (template.py); the reference is CUDA only. */
    /* --lang ptx: the PTX starter (template.ptx), where the board has one. */
    if (lang != NULL && strcmp(lang, "python") != 0 && strcmp(lang, "cuda") != 0 &&
        strcmp(lang, "ptx") != 0)
        return kjc_usage(k, "template", "--lang must be cuda, python or ptx");
    if (lang != NULL && strcmp(lang, "cuda") != 0 && strcmp(file, "reference.cu") == 0)
        return kjc_usage(k, "template", "the reference is CUDA C++: --reference goes without "
                         "--lang python or ptx");
    if (lang != NULL && strcmp(lang, "python") == 0)
        file = "template.py";
    if (lang != NULL && strcmp(lang, "ptx") == 0)
        file = "template.ptx";
    if (a.bad || (rc = board_arg(k, "template", board)) != KJC_OK || (rc = kjc_ready(k, 0)) != KJC_OK)
        return a.bad ? KJC_ERROR : rc;
    snprintf(path, sizeof path, "/api/v1/leaderboards/%s/files/%s", board, file);
    if ((rc = kjc_get(k, path, &r)) != KJC_OK)
        return rc;
    if (outp == NULL || strcmp(outp, "-") == 0) {
        fwrite(r.body, 1, r.len, k->out);
    } else if ((rc = cmd_write_file(k, outp, r.body, r.len, force)) == KJC_OK) {
        fprintf(k->err, "kjudge: wrote %s of %s to %s (%zu bytes)\n", file, board, outp, r.len);
    }
    curlc_resp_free(&r);
    return rc;
}

/* ------------------------------------------------------------------ */
/* rankings                                                            */
/* ------------------------------------------------------------------ */

/* The board's first GPU type into buf (for `rankings` without --gpu). */
static int first_gpu(struct kjc *k, const char *board, char *buf, size_t bufsz, char *others,
                     size_t othersz)
{
    char path[128];
    struct curlc_resp r;
    const cJSON *g;
    cJSON *j;
    snprintf(path, sizeof path, "/api/v1/leaderboards/%s", board);
    if (kjc_get(k, path, &r) != KJC_OK)
        return KJC_ERROR;
    j = kjc_json(k, &r);
    curlc_resp_free(&r);
    g = cJSON_GetObjectItemCaseSensitive(j, "gpus");
    if (j == NULL || !cJSON_IsString(cJSON_GetArrayItem(g, 0))) {
        cJSON_Delete(j);
        return j == NULL ? KJC_ERROR : kjc_fail(k, "leaderboard %s lists no GPU type", board);
    }
    rend_clean(buf, bufsz, cJSON_GetArrayItem(g, 0)->valuestring);
    cJSON_DeleteItemFromArray(cJSON_GetObjectItemCaseSensitive(j, "gpus"), 0);
    join(cJSON_GetObjectItemCaseSensitive(j, "gpus"), others, othersz);
    cJSON_Delete(j);
    return KJC_OK;
}

/* One rankings row into t; the first row also names the shape columns in legend. */
static void ranking_row(struct rend_tab *t, const cJSON *row, int nshapes)
{
    char rank[16], user[72], score[32], id[24], at[32], med[SHAPE_COLS][32];
    const char *cells[5 + SHAPE_COLS];
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(row, "score_ns");
    int i = 0;
    rend_ns(cJSON_IsNumber(s) ? s->valuedouble : -1, score, sizeof score);
    cells[0] = kjc_str(row, "rank", rank, sizeof rank);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(row, "tied")) && strlen(rank) + 2 < sizeof rank)
        strcat(rank, "="); /* tied: the same rank as another row */
    cells[1] = kjc_str(row, "user", user, sizeof user);
    cells[2] = score;
    cells[3] = kjc_str(row, "submission_id", id, sizeof id);
    cells[4] = kjc_str(row, "submitted_at", at, sizeof at);
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(row, "shapes")) {
        if (i >= nshapes)
            break;
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(s, "median_ns");
        rend_ns(cJSON_IsNumber(m) ? m->valuedouble : -1, med[i], sizeof med[i]);
        cells[5 + i] = med[i];
        i++;
    }
    for (; i < nshapes; i++)
        cells[5 + i] = "-";
    rend_tab_add(t, cells);
}

static void rankings_print(struct kjc *k, const cJSON *j)
{
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(j, "rankings"), *row, *s;
    const cJSON *shapes = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(rows, 0), "shapes");
    struct heads h;
    struct rend_tab t;
    char title[24], shape[256];
    int nshapes = cJSON_GetArraySize(shapes) < SHAPE_COLS ? cJSON_GetArraySize(shapes) : SHAPE_COLS;
    memset(&h, 0, sizeof h);
    head_add(&h, "rank", 1);
    head_add(&h, "user", 0);
    head_add(&h, "score", 1);
    head_add(&h, "submission", 1);
    head_add(&h, "submitted", 0);
    for (int i = 0; i < nshapes; i++) {
        snprintf(title, sizeof title, "shape %d", i + 1);
        head_add(&h, title, 1);
    }
    rend_tab_init(&t, h.n, h.ptr);
    cJSON_ArrayForEach(row, rows)
        ranking_row(&t, row, nshapes);
    rend_tab_print(&t, k->out);
    rend_tab_free(&t);
    int i = 0;
    cJSON_ArrayForEach(s, shapes) {
        if (i >= nshapes)
            break;
        rend_shape(cJSON_GetObjectItemCaseSensitive(s, "shape"), shape, sizeof shape);
        fprintf(k->out, "shape %d: %s\n", ++i, shape);
    }
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(j, "resolution_pct");
    const cJSON *score = cJSON_GetObjectItemCaseSensitive(j, "score");
    if (cJSON_IsString(score) && strcmp(score->valuestring, "gpu_time") == 0)
        fprintf(k->out, "scores: GPU time (the span of each call's kernels and copies, CUPTI)\n");
    else if (cJSON_IsString(score))
        fprintf(k->out, "scores: CUDA events around each call\n");
    if (cJSON_IsNumber(res))
        fprintf(k->out, "resolution %.3g %%: scores closer than that are tied (rank marked =), "
                "listed by time of submission\n", res->valuedouble);
    else if (res != NULL)
        fprintf(k->out, "resolution not measured on this GPU: only equal scores are tied\n");
}

int cmd_rankings(struct kjc *k, int argc, char **argv)
{
    static const char *const with_value[] = {"gpu", NULL};
    struct kjc_args a = {argc, 1, argv, "rankings", with_value, NULL, 0};
    const char *name, *val, *board = NULL, *gpu = NULL;
    char gpubuf[72], others[160] = "", enc[160], path[320], buf[72];
    cJSON *j;
    int rc;
    while ((name = kjc_opt(k, &a, &val)) != NULL) {
        if (name[0] == '\0' && board == NULL)
            board = val;
        else if (name[0] == '\0')
            return kjc_usage(k, "rankings", "one leaderboard at a time");
        else
            gpu = val;
    }
    if (a.bad || (rc = board_arg(k, "rankings", board)) != KJC_OK || (rc = kjc_ready(k, 0)) != KJC_OK)
        return a.bad ? KJC_ERROR : rc;
    if (gpu == NULL && (rc = first_gpu(k, board, gpubuf, sizeof gpubuf, others, sizeof others)) != KJC_OK)
        return rc;
    kjc_urlenc(gpu != NULL ? gpu : gpubuf, enc, sizeof enc);
    snprintf(path, sizeof path, "/api/v1/leaderboards/%s/rankings?gpu=%s", board, enc);
    if ((j = get_json(k, path, &rc)) == NULL)
        return rc;
    fprintf(k->out, "%s on %s", board, kjc_str(j, "gpu", buf, sizeof buf));
    if (others[0] != '\0')
        fprintf(k->out, " (also: %s, with --gpu)", others);
    fprintf(k->out, "%s\n", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "sources_published"))
            ? "; sources published" : "");
    rankings_print(k, j);
    cJSON_Delete(j);
    return KJC_OK;
}
