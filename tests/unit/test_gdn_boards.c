/*
 * test_gdn_boards.c - checks of the two gated_deltanet_recompute_w_u boards
 * (no GPU needed). Both specs load; every kernel file of both folders
 * compiles with NVRTC into the kernels its launch lines name, and its
 * launch lines give valid H200 launches for every shape; and the
 * _large board's kernel files are byte copies of the base board's, except
 * for their `//!kjudge leaderboard` line, so that a fix to one reaches the
 * other (the loader needs the files inside each folder). Runs from the
 * repository root.
 */
#define KT_MAIN
#include "kt.h"

#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "directive.h"
#include "spec.h"

#define GDN_BASE "gated_deltanet_recompute_w_u"
#define GDN_LARGE GDN_BASE "_large"
#define GDN_ARCH "sm_90a"

static const char *const gdn_files[] = {"reference.cu", "generate.cu", "template.cu",
                                        "examples/fast.cu", NULL};

/* Read a whole file; caller frees. NULL when it cannot be read. */
static void test_specs_load(void)
{
    const char *names[] = {GDN_BASE, GDN_LARGE};
    for (int i = 0; i < 2; i++) {
        char dir[256];
        struct spec *s = NULL;
        struct kj_err err = {0};
        snprintf(dir, sizeof dir, "leaderboards/%s", names[i]);
        KT_CHECK(spec_load(dir, &s, &err) == KJ_OK, "%s: %s", dir, err.msg);
        spec_free(s);
    }
}

/* Every file parses, compiles, and yields one kernel per distinct launch. */
static void test_files_compile(void)
{
    const char *names[] = {GDN_BASE, GDN_LARGE};
    for (int b = 0; b < 2; b++)
        for (int i = 0; gdn_files[i] != NULL; i++) {
            char path[256];
            size_t len = 0;
            struct directives d;
            struct compile_result r;
            struct kj_err err = {0};

            snprintf(path, sizeof path, "leaderboards/%s/%s", names[b], gdn_files[i]);
            char *src = kt_slurp(path, &len);
            KT_CHECK(src != NULL, "cannot read %s", path);
            if (src == NULL)
                continue;
            memset(&r, 0, sizeof r);
            if (dir_parse(src, len, &d, &err) != KJ_OK) {
                KT_CHECK(0, "%s: %s", path, err.msg);
            } else {
                KT_CHECK(strcmp(d.leaderboard, names[b]) == 0, "%s names '%s'", path,
                         d.leaderboard);
                KT_CHECK(compile_source(src, len, &d, GDN_ARCH, &r, &err) == 0 && r.ok == 1,
                         "%s does not compile: %s %s", path, err.msg, r.log ? r.log : "");
                KT_CHECK(r.nkernels >= 1, "%s: %d kernels", path, r.nkernels);
                for (int k = 0; k < r.nkernels; k++)
                    KT_CHECK(r.kernels[k].spill_stores == 0, "%s: %s spills", path,
                             r.kernels[k].name);
                compile_result_free(&r);
            }
            free(src);
        }
}

/* Every launch line of every file evaluates, for every test and benchmark
 * shape of its board, to dimensions an H200 accepts (1024 threads a block,
 * grid.y and grid.z up to 65535, 227 KB of shared memory a block); fast.cu's
 * grid covers all K + V columns with its NT/2-column slabs, and its smem is
 * the 17920 + NT*128 bytes the kernel lays out. */
static void test_launches_fit(void)
{
    const char *names[] = {GDN_BASE, GDN_LARGE};
    for (int b = 0; b < 2; b++) {
        char dir[256];
        struct spec *s = NULL;
        struct kj_err err = {0};
        snprintf(dir, sizeof dir, "leaderboards/%s", names[b]);
        if (spec_load(dir, &s, &err) != KJ_OK)
            continue; /* reported by test_specs_load */
        const char *vn[SPEC_MAX_VARS];
        for (int v = 0; v < s->nvars; v++)
            vn[v] = s->vars[v];
        for (int i = 0; gdn_files[i] != NULL; i++) {
            char path[600];
            size_t len = 0;
            struct directives d;
            snprintf(path, sizeof path, "%s/%s", dir, gdn_files[i]);
            char *src = kt_slurp(path, &len);
            if (src == NULL || dir_parse(src, len, &d, &err) != KJ_OK) {
                free(src);
                continue; /* reported by test_files_compile */
            }
            for (int c = 0; c < s->ntests + s->nbenchmarks; c++) {
                const struct spec_case *sc = c < s->ntests ? &s->tests[c]
                                                           : &s->benchmarks[c - s->ntests];
                struct expr_vars ev = {s->nvars, vn, sc->val};
                for (int l = 0; l < d.nlaunch; l++) {
                    struct dir_dims dd;
                    int rc = dir_eval_launch(&d.launch[l], &ev, &dd, &err);
                    KT_CHECK(rc == KJ_OK, "%s case %d: %s", path, c, err.msg);
                    if (rc != KJ_OK)
                        continue;
                    uint64_t nt = (uint64_t)dd.block[0] * dd.block[1] * dd.block[2];
                    KT_CHECK(nt <= 1024 && dd.grid[1] <= 65535 && dd.grid[2] <= 65535 &&
                             dd.smem <= 227 * 1024,
                             "%s case %d: grid (%u,%u,%u) block %llu smem %u", path, c,
                             dd.grid[0], dd.grid[1], dd.grid[2], (unsigned long long)nt, dd.smem);
                    if (strcmp(gdn_files[i], "examples/fast.cu") == 0) {
                        int64_t K = sc->val[3], V = sc->val[4];
                        KT_CHECK(dd.smem == 17920 + nt * 128 && (nt == 128 || nt == 256) &&
                                 (int64_t)dd.grid[0] * (int64_t)(nt / 2) >= K + V,
                                 "%s case %d: block %llu smem %u grid.x %u", path, c,
                                 (unsigned long long)nt, dd.smem, dd.grid[0]);
                    }
                }
            }
            free(src);
        }
        spec_free(s);
    }
}

/* Drop the line `//!kjudge leaderboard NAME` from a source, in place. */
static void drop_leaderboard_line(char *s)
{
    char *p = strstr(s, "//!kjudge leaderboard ");
    if (p == NULL)
        return;
    char *e = strchr(p, '\n');
    memmove(p, e ? e + 1 : p + strlen(p), strlen(e ? e + 1 : p + strlen(p)) + 1);
}

static void test_large_is_a_copy(void)
{
    for (int i = 0; gdn_files[i] != NULL; i++) {
        char pa[256], pb[256];
        size_t la = 0, lb = 0;
        snprintf(pa, sizeof pa, "leaderboards/%s/%s", GDN_BASE, gdn_files[i]);
        snprintf(pb, sizeof pb, "leaderboards/%s/%s", GDN_LARGE, gdn_files[i]);
        char *a = kt_slurp(pa, &la), *b = kt_slurp(pb, &lb);
        KT_CHECK(a != NULL && b != NULL, "cannot read %s or %s", pa, pb);
        if (a != NULL && b != NULL) {
            drop_leaderboard_line(a);
            drop_leaderboard_line(b);
            KT_CHECK(strcmp(a, b) == 0,
                     "%s differs from %s beyond its leaderboard line: copy it over and "
                     "rename the board in that line", pb, pa);
        }
        free(a);
        free(b);
    }
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_specs_load());
    KT_RUN(test_files_compile());
    KT_RUN(test_launches_fit());
    KT_RUN(test_large_is_a_copy());
    return kt_done("test_gdn_boards");
}
