/*
 * cmd_submit.c - `kjudge submit FILE`: upload a kernel, follow its judging
 * live, print the verdict with its evidence or its timing table.
 *
 * main.c calls cmd_submit(). The board, GPU type and mode come from the
 * options, else from the file's "//!kjudge" lines (common/directive.c; a
 * Python file's "#!POPCORN"/"#!kjudge" lines, common/pydirective.c, by
 * common/sub_lang.c's rule), else the mode is test and the GPU the board's
 * only one. Only what the
 * options name is sent; the server applies the file's lines itself and
 * refuses a disagreement (422). After the 202 the event stream
 * (GET /submissions/{id}/events?stream=1) feeds prog.c until the job is
 * done (cmd_follow in follow.c); the final answer is
 * GET /submissions/{id}. Exit 0 when accepted, 1 for another verdict.
 */
#include "kjc.h"
#include "directive.h"
#include "prog.h"
#include "pydirective.h"
#include "sub_lang.h"
#include "rend.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SUBMIT_MAX_FILE (1024 * 1024) /* the server's KJ_MAX_SOURCE_BYTES */

struct submit_opts {
    const char *file, *board, *gpu, *mode, *tool, *shape;
    int no_wait;
};

/* ------------------------------------------------------------------ */
/* Submitting                                                          */
/* ------------------------------------------------------------------ */

static int parse_args(struct kjc *k, int argc, char **argv, struct submit_opts *o)
{
    static const char *const with_value[] = {"leaderboard", "gpu", "mode", "l", "tool", "shape",
                                             NULL};
    static const char *const flags[] = {"no-wait", NULL};
    struct kjc_args a = {argc, 1, argv, "submit", with_value, flags, 0};
    const char *name, *val;
    memset(o, 0, sizeof *o);
    while ((name = kjc_opt(k, &a, &val)) != NULL) {
        if (name[0] == '\0' && o->file == NULL)
            o->file = val;
        else if (name[0] == '\0')
            return kjc_usage(k, "submit", "one file at a time ('%.64s' is extra)", val);
        else if (strcmp(name, "leaderboard") == 0 || strcmp(name, "l") == 0)
            o->board = val;
        else if (strcmp(name, "gpu") == 0)
            o->gpu = val;
        else if (strcmp(name, "mode") == 0)
            o->mode = val;
        else if (strcmp(name, "tool") == 0)
            o->tool = val;
        else if (strcmp(name, "shape") == 0)
            o->shape = val;
        else
            o->no_wait = 1;
    }
    if (a.bad)
        return KJC_ERROR;
    if (o->file == NULL)
        return kjc_usage(k, "submit", "name the file to submit");
    static const char *const modes[] = {"test", "benchmark", "leaderboard", "profile", "sanitize",
                                        NULL};
    int known = o->mode == NULL;
    for (int i = 0; modes[i] != NULL && !known; i++)
        known = strcmp(o->mode, modes[i]) == 0;
    if (!known)
        return kjc_usage(k, "submit", "--mode must be test, benchmark, leaderboard, profile or "
                         "sanitize");
    if (o->tool != NULL && (o->mode == NULL || strcmp(o->mode, "sanitize") != 0))
        return kjc_usage(k, "submit", "--tool goes with --mode sanitize");
    if (o->shape != NULL && (o->mode == NULL || strcmp(o->mode, "profile") != 0))
        return kjc_usage(k, "submit", "--shape goes with --mode profile");
    return KJC_OK;
}

/* Read the file (at most SUBMIT_MAX_FILE bytes) into *src (caller frees). */
static int read_source(struct kjc *k, const char *path, char **src, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    size_t n;
    if (f == NULL)
        return kjc_fail(k, "cannot read %s: %s", path, strerror(errno));
    if ((buf = malloc(SUBMIT_MAX_FILE + 1)) == NULL) {
        fclose(f);
        return kjc_fail(k, "out of memory");
    }
    n = fread(buf, 1, SUBMIT_MAX_FILE + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || n > SUBMIT_MAX_FILE || n == 0) {
        free(buf);
        return kjc_fail(k, "%s: %s", path, bad ? "read error" : n == 0 ? "the file is empty"
                        : "larger than 1 MiB, the server's limit");
    }
    buf[n] = '\0';
    *src = buf;
    *len = n;
    return KJC_OK;
}

/* What a file names by its lines where the options are silent: board,
 * GPU type, mode ("" when absent), and how a GPU line is written in it. */
struct file_names {
    char board[64], gpu[64], mode[16];
    const char *gpu_line;           /* static: "//!kjudge gpu NAME" or "#!POPCORN gpu NAME" */
    int lang;                       /* enum sub_lang */
};

/* The lines of src (a file that does not parse is sent anyway: the server
 * names the line). */
static void file_names(const char *path, const char *src, size_t len, struct file_names *fn)
{
    const char *base = strrchr(path, '/');
    memset(fn, 0, sizeof *fn);
    fn->lang = sub_lang_detect(base != NULL ? base + 1 : path, src, len);
    fn->gpu_line = fn->lang == SUB_LANG_PYTHON ? "#!POPCORN gpu NAME" : "//!kjudge gpu NAME";
    if (fn->lang == SUB_LANG_PYTHON) {
        struct pydir pd;
        int rc = pydir_parse(src, len, &pd, NULL);
        if (rc != 0 && rc != KJ_ENOTFOUND) /* no custom_kernel: the lines are read all the same */
            return;
        snprintf(fn->board, sizeof fn->board, "%s", pd.leaderboard);
        snprintf(fn->gpu, sizeof fn->gpu, "%s", pd.gpu); /* the GPU type: B200_Nebius is B200 */
        return;
    }
    struct directives *d = calloc(1, sizeof *d);
    if (d != NULL && dir_parse(src, len, d, NULL) == 0) {
        snprintf(fn->board, sizeof fn->board, "%s", d->leaderboard);
        snprintf(fn->gpu, sizeof fn->gpu, "%s", d->gpu);
        snprintf(fn->mode, sizeof fn->mode, "%s", d->mode);
    }
    free(d);
}

/* What the board says: the GPU to use when none was named, and the
 * number of tests and timed shapes (for "k/N"). gpu_line: how the file
 * would name one, for the message. */
static int board_facts(struct kjc *k, const char *board, const char *gpu_line, const char **gpu,
                       char *gpubuf, size_t gpusz, int *ntests, int *nbench)
{
    char path[160], enc[96];
    struct curlc_resp r;
    const cJSON *g;
    cJSON *j;
    kjc_urlenc(board, enc, sizeof enc);
    snprintf(path, sizeof path, "/api/v1/leaderboards/%s", enc);
    if (kjc_get(k, path, &r) != KJC_OK)
        return KJC_ERROR;
    j = kjc_json(k, &r);
    curlc_resp_free(&r);
    if (j == NULL)
        return KJC_ERROR;
    *ntests = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "tests"));
    *nbench = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "benchmarks"));
    g = cJSON_GetObjectItemCaseSensitive(j, "gpus");
    if (*gpu == NULL && cJSON_GetArraySize(g) == 1 && cJSON_IsString(g->child)) {
        snprintf(gpubuf, gpusz, "%s", g->child->valuestring);
        *gpu = gpubuf;
    } else if (*gpu == NULL) {
        char list[256] = "";
        const cJSON *it;
        cJSON_ArrayForEach(it, g)
            if (cJSON_IsString(it) && strlen(list) + strlen(it->valuestring) + 3 < sizeof list)
                strcat(strcat(list, list[0] ? ", " : ""), it->valuestring);
        cJSON_Delete(j);
        return kjc_usage(k, "submit", "leaderboard %s runs on %s: choose one with --gpu or a "
                         "line \"%s\"", board, list, gpu_line);
    }
    cJSON_Delete(j);
    return KJC_OK;
}

/* POST the file; *id gets the new submission's id. */
static int upload(struct kjc *k, const struct submit_opts *o, const char *gpu, const char *src,
                  size_t len, char *id, size_t idsz)
{
    struct curlc_part parts[6];
    struct curlc_resp r;
    const char *base = strrchr(o->file, '/');
    int n = 0;
    cJSON *j;
    if (o->board != NULL)
        parts[n++] = (struct curlc_part){"leaderboard", o->board, strlen(o->board), NULL};
    if (gpu != NULL)
        parts[n++] = (struct curlc_part){"gpu", gpu, strlen(gpu), NULL};
    if (o->mode != NULL)
        parts[n++] = (struct curlc_part){"mode", o->mode, strlen(o->mode), NULL};
    if (o->tool != NULL) /* the server checks both */
        parts[n++] = (struct curlc_part){"tool", o->tool, strlen(o->tool), NULL};
    if (o->shape != NULL)
        parts[n++] = (struct curlc_part){"shape", o->shape, strlen(o->shape), NULL};
    parts[n++] = (struct curlc_part){"file", src, len, base != NULL ? base + 1 : o->file};
    if (kjc_post_form(k, "/api/v1/submissions", parts, n, &r) != KJC_OK)
        return KJC_ERROR;
    if ((j = kjc_json(k, &r)) == NULL || !cJSON_IsNumber(cJSON_GetObjectItem(j, "id"))) {
        cJSON_Delete(j);
        curlc_resp_free(&r);
        return kjc_fail(k, "the server's answer to the upload has no id");
    }
    snprintf(id, idsz, "%.0f", cJSON_GetObjectItem(j, "id")->valuedouble);
    const cJSON *note = cJSON_GetObjectItemCaseSensitive(j, "note");
    if (!k->json && cJSON_IsString(note)) /* a Python file's GPU mapping, ignored keys */
        fprintf(k->out, "note: %s\n", note->valuestring);
    if (o->no_wait && k->json)
        kjc_print_body(k, &r);
    cJSON_Delete(j);
    curlc_resp_free(&r);
    return KJC_OK;
}

/* The final answer: print it (or its JSON) and choose the exit code. */
static int finish(struct kjc *k, const char *id, struct curlc_resp *final)
{
    char verdict[32], mode[16], path[96];
    struct curlc_resp d;
    cJSON *j = kjc_json(k, final), *detail = NULL;
    if (j == NULL)
        return KJC_ERROR;
    kjc_str(j, "verdict", verdict, sizeof verdict);
    kjc_str(j, "mode", mode, sizeof mode);
    if (k->json) {
        kjc_print_body(k, final);
    } else {
        memset(&d, 0, sizeof d);
        snprintf(path, sizeof path, "/api/v1/submissions/%s/detail", id);
        if (strcmp(verdict, "accepted") == 0 && strcmp(mode, "leaderboard") == 0 &&
            curlc_get(k->http, path, &d, NULL) == 0 && d.status == 200)
            detail = cJSON_Parse(d.body);
        curlc_resp_free(&d);
        cmd_print_sub(k, j, cJSON_GetObjectItemCaseSensitive(detail, "rank"));
    }
    cJSON_Delete(detail);
    cJSON_Delete(j);
    return strcmp(verdict, "accepted") == 0 ? KJC_OK : KJC_FAILED;
}

int cmd_submit(struct kjc *k, int argc, char **argv)
{
    struct submit_opts o;
    struct file_names fn;
    struct curlc_resp final;
    struct prog p;
    char *src = NULL, id[32], gpubuf[64], head[256];
    const char *gpu;
    size_t len = 0;
    int ntests = 0, nbench = 0, rc;
    if ((rc = parse_args(k, argc, argv, &o)) != KJC_OK || (rc = kjc_ready(k, 1)) != KJC_OK ||
        (rc = read_source(k, o.file, &src, &len)) != KJC_OK)
        return rc;
    /* What the file says, where the options are silent. */
    file_names(o.file, src, len, &fn);
    const char *board = o.board != NULL ? o.board : fn.board[0] ? fn.board : NULL;
    const char *mode = o.mode != NULL ? o.mode : fn.mode[0] ? fn.mode : "test";
    gpu = o.gpu != NULL ? o.gpu : fn.gpu[0] ? fn.gpu : NULL;
    if (board == NULL)
        rc = kjc_usage(k, "submit", "name the leaderboard: --leaderboard NAME or a line "
                       "\"%s leaderboard NAME\" in %s", fn.lang == SUB_LANG_PYTHON ? "#!POPCORN"
                       : "//!kjudge", o.file);
    else
        rc = board_facts(k, board, fn.gpu_line, &gpu, gpubuf, sizeof gpubuf, &ntests, &nbench);
    if (rc == KJC_OK)
        snprintf(head, sizeof head, "%s on %s (%s mode)", board, gpu, mode);
    if (rc == KJC_OK)
        rc = upload(k, &o, o.gpu != NULL ? o.gpu : fn.gpu[0] ? NULL : gpu, src, len, id,
                    sizeof id);
    free(src);
    if (rc != KJC_OK || o.no_wait) {
        if (rc == KJC_OK && !k->json)
            fprintf(k->out, "submitted #%s: %s; follow it with: kjudge events %s\n", id, head, id);
        return rc;
    }
    if (!k->json) {
        char h2[300];
        snprintf(h2, sizeof h2, "#%s %s", id, head);
        fprintf(k->out, "submitted #%s: %s\n", id, head);
        int shapes = strcmp(mode, "test") == 0 || strcmp(mode, "sanitize") == 0 ? 0 :
                     strcmp(mode, "profile") == 0 && o.shape != NULL ? 1 : nbench;
        prog_init(&p, k->out, k->tty, k->width, h2, ntests, shapes);
    }
    if ((rc = cmd_follow(k, id, k->json ? NULL : &p, &final)) != KJC_OK)
        return rc;
    if (!k->json)
        prog_done(&p);
    rc = finish(k, id, &final);
    curlc_resp_free(&final);
    return rc;
}
