/*
 * judge_boards.c - the board's own compiled files kept across jobs
 * (judge.h's judge_boards): reference.cu and generate.cu compile to the
 * same cubin for every job of a board on one architecture, so a runner
 * that judges many jobs compiles them once and gives each job a copy.
 *
 * judge.c asks judge_boards_get before it compiles them and gives what it
 * compiled to judge_boards_put. An entry is used only when the board's
 * name, the architecture, both files' text and their directives are the
 * ones of the job (the files are read again for every job), so a board
 * edited on disk is compiled again. The files are the operator's, trusted:
 * nothing of a submission is kept here.
 */
#include "judge_int.h"

#include <stdlib.h>
#include <string.h>

#define BOARDS_MAX 16 /* entries kept; the oldest goes first */

struct boards_entry {
    char name[64], arch[16];
    char *refsrc, *gensrc;         /* owned copies of the texts compiled */
    size_t reflen, genlen;
    struct directives refdirs, gendirs;
    struct compile_result refc, genc; /* owned; genc zeroed when the board has none */
    unsigned long used;            /* the clock of its last use */
};

struct judge_boards {
    struct boards_entry e[BOARDS_MAX];
    int n;
    unsigned long clock;
};

struct judge_boards *judge_boards_new(void)
{
    return calloc(1, sizeof(struct judge_boards));
}

static void boards_entry_free(struct boards_entry *e)
{
    free(e->refsrc);
    free(e->gensrc);
    compile_result_free(&e->refc);
    compile_result_free(&e->genc);
    memset(e, 0, sizeof *e);
}

void judge_boards_free(struct judge_boards *b)
{
    if (b == NULL)
        return;
    for (int i = 0; i < b->n; i++)
        boards_entry_free(&b->e[i]);
    free(b);
}

/* A deep copy of c (log and cubin); 0, or -1 out of memory (*out freed). */
static int boards_copy(const struct compile_result *c, struct compile_result *out)
{
    *out = *c;
    out->log = NULL;
    out->cubin = NULL;
    if (c->log != NULL && (out->log = strdup(c->log)) == NULL)
        return -1;
    if (c->cubin != NULL) {
        if ((out->cubin = malloc(c->cubin_size)) == NULL) {
            compile_result_free(out);
            return -1;
        }
        memcpy(out->cubin, c->cubin, c->cubin_size);
    }
    return 0;
}

static int boards_same(const char *a, size_t alen, const char *b, size_t blen)
{
    if (a == NULL || b == NULL)
        return a == b;
    return alen == blen && memcmp(a, b, alen) == 0;
}

static struct boards_entry *boards_find(struct judge_boards *b, const struct judge *j)
{
    for (int i = 0; i < b->n; i++) {
        struct boards_entry *e = &b->e[i];
        if (strcmp(e->name, j->spec->name) == 0 && strcmp(e->arch, j->dev.arch) == 0 &&
            boards_same(e->refsrc, e->reflen, j->refsrc, j->reflen) &&
            boards_same(e->gensrc, e->genlen, j->gensrc, j->genlen) &&
            memcmp(&e->refdirs, &j->refdirs, sizeof e->refdirs) == 0 &&
            (j->gensrc == NULL || memcmp(&e->gendirs, &j->gendirs, sizeof e->gendirs) == 0))
            return e;
    }
    return NULL;
}

int judge_boards_get(struct judge_boards *b, struct judge *j)
{
    struct boards_entry *e = b != NULL ? boards_find(b, j) : NULL;
    if (e == NULL)
        return 0;
    if (boards_copy(&e->refc, &j->refc) != 0 ||
        (j->gensrc != NULL && boards_copy(&e->genc, &j->genc) != 0)) {
        compile_result_free(&j->refc);
        return 0; /* compiled again */
    }
    e->used = ++b->clock;
    return 1;
}

void judge_boards_put(struct judge_boards *b, const struct judge *j)
{
    if (b == NULL || !j->refc.ok || (j->gensrc != NULL && !j->genc.ok) ||
        strlen(j->spec->name) >= sizeof b->e[0].name || boards_find(b, j) != NULL)
        return;
    struct boards_entry *e = &b->e[b->n < BOARDS_MAX ? b->n : 0];
    if (b->n == BOARDS_MAX) { /* the least recently used goes */
        for (int i = 1; i < BOARDS_MAX; i++)
            if (b->e[i].used < e->used)
                e = &b->e[i];
        boards_entry_free(e);
    } else {
        memset(e, 0, sizeof *e);
        b->n++;
    }
    snprintf(e->name, sizeof e->name, "%s", j->spec->name);
    snprintf(e->arch, sizeof e->arch, "%s", j->dev.arch);
    e->refdirs = j->refdirs;
    e->gendirs = j->gendirs;
    e->reflen = j->reflen;
    e->genlen = j->genlen;
    e->used = ++b->clock;
    if ((e->refsrc = malloc(j->reflen + 1)) == NULL ||
        (j->gensrc != NULL && (e->gensrc = malloc(j->genlen + 1)) == NULL) ||
        boards_copy(&j->refc, &e->refc) != 0 ||
        (j->gensrc != NULL && boards_copy(&j->genc, &e->genc) != 0)) {
        boards_entry_free(e); /* an empty entry matches no job */
        return;
    }
    memcpy(e->refsrc, j->refsrc, j->reflen + 1);
    if (j->gensrc != NULL)
        memcpy(e->gensrc, j->gensrc, j->genlen + 1);
}
