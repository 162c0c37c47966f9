/*
 * test_plan.c - unit tests for runner/plan.c: every case of a job resolved
 * once. Layout of the fp8_quant cases (256-byte aligned buffers in spec
 * order); prefixsum's tolerance expressions, floor bytes and the workspace
 * and launch dimensions of the template's and the reference's directives;
 * generate.cu's launch lines; a launch line or a workspace that does not
 * evaluate for one case (recorded with its line, later lines still
 * evaluated, other cases fine); a variable too large for int; a "bytes"
 * expression that does not evaluate; a buffer without a valid size (the
 * only failure of plan_build). Needs no GPU; runs from the repository root.
 */
#define KT_MAIN
#include "kt.h"

#include <math.h>
#include <string.h>

#include "directive.h"
#include "plan.h"

static int parse(const char *path, struct directives *d)
{
    size_t len = 0;
    struct kj_err err;
    char *src = kt_slurp(path, &len);
    int rc = src != NULL ? dir_parse(src, len, d, &err) : -1;
    KT_CHECK(rc == KJ_OK, "parse %s: %s", path, src ? err.msg : "cannot read");
    free(src);
    return rc;
}

static int parse_str(const char *src, struct directives *d)
{
    struct kj_err err;
    int rc = dir_parse(src, strlen(src), d, &err);
    KT_CHECK(rc == KJ_OK, "parse: %s", err.msg);
    return rc;
}

static void test_layout(void)
{
    struct spec *s = NULL;
    struct plan *p = NULL;
    struct directives d;
    struct kj_err err;
    KT_CHECK(spec_load("leaderboards/fp8_quant", &s, &err) == KJ_OK, "spec: %s", err.msg);
    if (s == NULL || parse("leaderboards/fp8_quant/reference.cu", &d) != KJ_OK)
        goto out;
    KT_CHECK(plan_build(s, &d, &d, NULL, &p, &err) == KJ_OK, "build: %s", err.msg);
    if (p == NULL)
        goto out;
    /* T=4096 H=7168 GS=128, buffers 256-byte aligned in spec order. */
    const struct case_plan *c = plan_case(p, 1, 2);
    KT_CHECK(c != NULL && c->bench == 1 && c->index == 2 && c->seed == 54352, "benchmark 2");
    KT_CHECK(c->size[0] == 4096ull * 7168 * 4 && c->size[1] == c->size[0] &&
             c->size[2] == 4096ull * 56 * 4, "sizes %zu %zu %zu", c->size[0], c->size[1], c->size[2]);
    KT_CHECK(c->off[0] == 0 && c->off[1] == c->size[0] && c->off[2] == 2 * c->size[0] &&
             c->off[2] % 256 == 0 && c->total >= c->off[2] + c->size[2],
             "offsets %zu %zu %zu total %zu", c->off[0], c->off[1], c->off[2], c->total);
    KT_CHECK(c->nelem[2] == 4096 * 56 && c->ndim[2] == 2 && c->dims[2][0] == 4096 &&
             c->dims[2][1] == 56, "x_s: [4096, 56]");
    KT_CHECK(c->atol[0] == 0 && c->atol[1] == 1e-3 && c->rtol[2] == 1e-3, "tolerances");
    KT_CHECK(c->ivals[0] == 4096 && c->ivals[1] == 7168 && c->ivals[2] == 128 && c->bad_var < 0,
             "the vars as int");
    KT_CHECK(c->has_floor && c->floor_bytes == 4096.0 * 7168 * 8 + 4096.0 * 56 * 4,
             "floor bytes from the board's expression: %.0f", c->floor_bytes);
    KT_CHECK(p->max_total == c->total, "the largest case sizes the region");
    /* A case with tests[1] = T=4 H=512 GS=128: one launch of the reference. */
    const struct plan_launches *l = &plan_case(p, 0, 1)->set[PLAN_REF];
    KT_CHECK(l->nlaunch == d.nlaunch && l->bad < 0 && l->ok[0] && l->ws_bytes == 0,
             "the reference's launch evaluates: bad %d", l->bad);
    KT_CHECK(plan_case(p, 0, 5) == NULL && plan_case(p, 1, 3) == NULL &&
             plan_case(p, 0, -1) == NULL && plan_case(NULL, 0, 0) == NULL, "out of range: NULL");
    KT_CHECK(plan_case(p, 0, 0)->set[PLAN_GEN].nlaunch == 0, "no generate.cu: an empty set");
out:
    plan_free(p);
    plan_free(NULL);
    spec_free(s);
}

static void test_prefixsum(void)
{
    struct spec *s = NULL;
    struct plan *p = NULL;
    struct directives sub, ref, bad;
    struct kj_err err;
    KT_CHECK(spec_load("leaderboards/prefixsum", &s, &err) == KJ_OK, "spec: %s", err.msg);
    if (s == NULL || parse("leaderboards/prefixsum/template.cu", &sub) != KJ_OK ||
        parse("leaderboards/prefixsum/reference.cu", &ref) != KJ_OK)
        goto out;
    KT_CHECK(plan_build(s, &sub, &ref, NULL, &p, &err) == KJ_OK, "build: %s", err.msg);
    if (p == NULL)
        goto out;
    const struct case_plan *c = plan_case(p, 0, 0); /* N = 1023 */
    KT_CHECK(fabs(c->atol[1] - 1e-5 * sqrt(1023.0)) < 1e-15 && c->rtol[1] == c->atol[1],
             "tolerance expressions per case: %g", c->atol[1]);
    KT_CHECK(c->floor_bytes == 1023.0 * 8, "floor: N*4 + N*4 = %.0f", c->floor_bytes);
    KT_CHECK(c->set[PLAN_SUB].ws_bytes == 4 && c->set[PLAN_REF].ws_bytes == 8 * 4,
             "workspaces: template %llu, reference %llu",
             (unsigned long long)c->set[PLAN_SUB].ws_bytes,
             (unsigned long long)c->set[PLAN_REF].ws_bytes);
    KT_CHECK(c->set[PLAN_SUB].nlaunch == 3 && c->set[PLAN_SUB].dims[0].grid[0] == 1 &&
             c->set[PLAN_SUB].dims[0].block[0] == 1024 && c->set[PLAN_REF].dims[1].block[0] == 1024,
             "launch dimensions of both sets");
    c = plan_case(p, 1, 10); /* N = 268435456 */
    KT_CHECK(c->set[PLAN_SUB].dims[0].grid[0] == 262144 && c->size[0] == 268435456ull * 4 &&
             p->max_total == 2 * c->size[0], "the largest benchmark: grid %u, region %zu",
             c->set[PLAN_SUB].dims[0].grid[0], p->max_total);
    plan_free(p);
    p = NULL;

    /* Line 1 does not evaluate for N = 1023 (grid.x = 0); line 2 does. */
    if (parse_str("//!kjudge launch a grid=(N-1023) block=(32)\n"
                  "//!kjudge launch b grid=(1) block=(32)\n"
                  "//!kjudge workspace 1024-N\n", &bad) != KJ_OK)
        goto out;
    KT_CHECK(plan_build(s, &bad, &ref, NULL, &p, &err) == KJ_OK, "a bad line is no error: %s",
             err.msg);
    if (p == NULL)
        goto out;
    const struct plan_launches *l = &plan_case(p, 0, 0)->set[PLAN_SUB];
    KT_CHECK(l->bad == 0 && l->err.line == 1 && strstr(l->err.msg, "grid.x") && !l->ok[0] &&
             l->ok[1] && l->dims[1].grid[0] == 1, "N=1023: line 1 is bad (%s), line 2 fine",
             l->err.msg);
    l = &plan_case(p, 0, 1)->set[PLAN_SUB];
    KT_CHECK(l->bad == -1 && l->ws_bytes == 0 && l->ok[0] && l->dims[0].grid[0] == 1,
             "N=1024: all fine, workspace 0: bad %d", l->bad);
    l = &plan_case(p, 0, 2)->set[PLAN_SUB];
    KT_CHECK(l->bad == 2 && l->err.line == 3 && l->ok[0] && l->ok[1],
             "N=1025: the workspace is bad (%s)", l->err.msg);
    KT_CHECK(plan_case(p, 0, 0)->set[PLAN_REF].bad == -1, "the reference's own lines are fine");
    plan_free(p);
    p = NULL;

    /* A variable too large for int, and a "bytes" that does not evaluate. */
    s->tests[3].val[0] = 1ll << 33;
    snprintf(s->bytes_expr, sizeof s->bytes_expr, "N / (N - 1023)");
    KT_CHECK(plan_build(s, &sub, &ref, NULL, &p, &err) == KJ_OK, "build: %s", err.msg);
    if (p != NULL) {
        KT_CHECK(plan_case(p, 0, 3)->bad_var == 0 && plan_case(p, 0, 2)->bad_var == -1,
                 "N = 2^33 does not fit in int");
        KT_CHECK(!plan_case(p, 0, 0)->has_floor && plan_case(p, 0, 1)->has_floor &&
                 plan_case(p, 0, 1)->floor_bytes == 1024, "no floor where bytes divides by 0");
        plan_free(p);
        p = NULL;
    }

    /* A buffer without a valid size is the judge's error, naming the buffer. */
    snprintf(s->buffers[0].shape[0], sizeof s->buffers[0].shape[0], "N - 2048");
    KT_CHECK(plan_build(s, &sub, &ref, NULL, &p, &err) == KJ_EINVAL && p == NULL &&
             strstr(err.msg, "buffer x") != NULL, "a bad buffer size: %s", err.msg);
out:
    plan_free(p);
    spec_free(s);
}

static void test_generate(void)
{
    struct spec *s = NULL;
    struct plan *p = NULL;
    struct directives ref, gen;
    struct kj_err err;
    KT_CHECK(spec_load("leaderboards/histogram", &s, &err) == KJ_OK, "spec: %s", err.msg);
    if (s == NULL || parse("leaderboards/histogram/reference.cu", &ref) != KJ_OK ||
        parse("leaderboards/histogram/generate.cu", &gen) != KJ_OK)
        goto out;
    KT_CHECK(plan_build(s, &ref, &ref, &gen, &p, &err) == KJ_OK, "build: %s", err.msg);
    if (p != NULL) {
        const struct case_plan *c = plan_case(p, 0, 0);
        const struct plan_launches *g = &c->set[PLAN_GEN];
        int64_t n = c->val[0];
        KT_CHECK(g->nlaunch == gen.nlaunch && g->bad == -1 && g->ok[0] &&
                 g->dims[0].grid[0] == (uint32_t)((n + 255) / 256), "generate.cu's launch");
    }
out:
    plan_free(p);
    spec_free(s);
}

/* Boxes started before their job size their regions with no submission
 * (judge.h's judge_prestart): the layout must not depend on its directives,
 * workspace line included. */
static void test_board_region(void)
{
    static const char *boards[] = {"fp8_quant", "histogram", "prefixsum", "matmul"};
    for (size_t b = 0; b < sizeof boards / sizeof boards[0]; b++) {
        struct spec *s = NULL;
        struct plan *with = NULL, *without = NULL;
        struct directives ref, sub;
        struct kj_err err;
        char path[256];
        snprintf(path, sizeof path, "leaderboards/%s", boards[b]);
        KT_CHECK(spec_load(path, &s, &err) == KJ_OK, "spec %s: %s", boards[b], err.msg);
        snprintf(path, sizeof path, "leaderboards/%s/reference.cu", boards[b]);
        if (s == NULL || parse(path, &ref) != KJ_OK)
            goto next;
        sub = ref;
        snprintf(sub.workspace, sizeof sub.workspace, "1 << 20");
        KT_CHECK(plan_build(s, &sub, &ref, NULL, &with, &err) == KJ_OK &&
                 plan_build(s, NULL, &ref, NULL, &without, &err) == KJ_OK, "build: %s", err.msg);
        KT_CHECK(with != NULL && without != NULL && with->max_total == without->max_total &&
                 without->max_total > 0, "%s: the region is the board's alone (%zu, %zu)",
                 boards[b], with ? with->max_total : 0, without ? without->max_total : 0);
    next:
        plan_free(with);
        plan_free(without);
        spec_free(s);
    }
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_layout());
    KT_RUN(test_prefixsum());
    KT_RUN(test_generate());
    KT_RUN(test_board_region());
    return kt_done("test_plan");
}
