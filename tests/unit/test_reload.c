/*
 * test_reload.c - unit tests for server/reload.c.
 *
 * Two copies of one spec compare equal; each field that changes judged
 * results (variables, buffer shapes, types and distributions, tolerances,
 * test and benchmark cases, constraints, ranking) makes the board
 * "changed" with a message naming it; other fields (title, deadline, GPU
 * types, limits) only "edited"; sets report added and removed boards.
 */
#define KT_MAIN
#include "kt.h"

#include <stdlib.h>
#include <string.h>

#include "reload.h"

static struct spec *base(const char *name)
{
    struct spec *s = calloc(1, sizeof *s);
    strcpy(s->name, name);
    strcpy(s->title, "Quant");
    s->ngpus = 1;
    strcpy(s->gpus[0], "H200");
    s->nvars = 2;
    strcpy(s->vars[0], "T");
    strcpy(s->vars[1], "H");
    s->nbuffers = 2;
    strcpy(s->buffers[0].name, "x");
    s->buffers[0].ndim = 2;
    strcpy(s->buffers[0].shape[0], "T");
    strcpy(s->buffers[0].shape[1], "H");
    s->buffers[0].dist = SPEC_DIST_NORMAL;
    s->buffers[0].p1 = 1.0;
    strcpy(s->buffers[1].name, "y");
    s->buffers[1].role = SPEC_OUTPUT;
    s->buffers[1].ndim = 1;
    strcpy(s->buffers[1].shape[0], "T");
    s->buffers[1].atol = 1e-3;
    s->buffers[1].rtol = 1e-3;
    s->ntests = 2;
    s->tests[0] = (struct spec_case){{1, 256}, 42};
    s->tests[1] = (struct spec_case){{4, 512}, 43};
    s->nbenchmarks = 1;
    s->benchmarks[0] = (struct spec_case){{256, 4096}, 7};
    strcpy(s->ranking, "geomean");
    s->limit_test_s = 60;
    return s;
}

static void expect_kind(const char *what, struct spec *n, enum reload_kind want, const char *word)
{
    struct spec *o = base("b");
    char msg[RELOAD_MAX_WHAT];
    enum reload_kind k = reload_spec(o, n, msg, sizeof msg);
    KT_CHECK(k == want && (word == NULL || strstr(msg, word) != NULL), "%s: kind %s, what '%s'",
             what, reload_kind_name(k), msg);
    free(o);
    free(n);
}

static void test_fields(void)
{
    struct spec *n;
    expect_kind("identical", base("b"), RELOAD_SAME, NULL);
    n = base("b"), strcpy(n->vars[1], "K"), strcpy(n->buffers[0].shape[1], "K");
    expect_kind("a renamed variable", n, RELOAD_CHANGED, "shape variables changed (T,H -> T,K)");
    n = base("b"), strcpy(n->buffers[0].shape[1], "2*H");
    expect_kind("a buffer shape", n, RELOAD_CHANGED, "buffer x changed");
    n = base("b"), n->buffers[0].dtype = SPEC_F16;
    expect_kind("a buffer type", n, RELOAD_CHANGED, "buffer x changed");
    n = base("b"), n->buffers[0].p1 = 2.0;
    expect_kind("an input distribution", n, RELOAD_CHANGED, "buffer x changed");
    n = base("b"), n->buffers[1].atol = 1e-2;
    expect_kind("a tolerance", n, RELOAD_CHANGED, "tolerance of y changed (atol 0.001 -> 0.01");
    n = base("b"), n->tests[1].val[1] = 1024;
    expect_kind("a test shape", n, RELOAD_CHANGED, "test 1 changed (H 512 -> 1024)");
    n = base("b"), n->benchmarks[0].seed = 8;
    expect_kind("a benchmark seed", n, RELOAD_CHANGED, "benchmark 0 changed (seed)");
    n = base("b"), n->nbenchmarks = 2, n->benchmarks[1] = n->benchmarks[0];
    expect_kind("one more benchmark", n, RELOAD_CHANGED, "benchmarks changed (1 -> 2 cases)");
    n = base("b"), n->nconstraints = 1, strcpy(n->constraints[0], "H % 128 == 0");
    expect_kind("a constraint", n, RELOAD_CHANGED, "constraints changed");
    n = base("b"), strcpy(n->title, "New title"), strcpy(n->deadline, "2030-01-01T00:00:00Z");
    expect_kind("title and deadline", n, RELOAD_EDITED, "deadline (none -> 2030-01-01T00:00:00Z)");
    n = base("b"), n->ngpus = 2, strcpy(n->gpus[1], "B200"), n->limit_test_s = 30;
    expect_kind("gpus and limits", n, RELOAD_EDITED, "time limits");
    n = base("b"), n->buffers[1].atol = 1e-2, strcpy(n->title, "T2");
    expect_kind("a judged change wins over an edit", n, RELOAD_CHANGED, "tolerance");
}

static void test_sets(void)
{
    struct spec *old[2] = {base("a"), base("b")}, *new[2] = {base("b"), base("c")};
    struct reload_entry *e = NULL;
    struct kj_err err;
    int n = 0;
    kj_err_clear(&err);
    KT_CHECK(reload_compare(old, 2, new, 2, &e, &n, &err) == 0 && n == 3, "three names, got %d", n);
    if (n == 3) {
        KT_CHECK(strcmp(e[0].name, "a") == 0 && e[0].kind == RELOAD_REMOVED, "a removed");
        KT_CHECK(strcmp(e[1].name, "b") == 0 && e[1].kind == RELOAD_SAME, "b unchanged");
        KT_CHECK(strcmp(e[2].name, "c") == 0 && e[2].kind == RELOAD_ADDED, "c added");
    }
    free(e);
    KT_CHECK(reload_compare(old, 0, new, 0, &e, &n, &err) == 0 && n == 0, "empty sets");
    free(e);
    for (int i = 0; i < 2; i++) {
        free(old[i]);
        free(new[i]);
    }
    KT_CHECK(strcmp(reload_kind_name(RELOAD_EDITED), "edited") == 0, "kind names");
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_fields());
    KT_RUN(test_sets());
    return kt_done("test_reload");
}
