/*
 * test_dump.c - unit tests for runner/dump.c, the writer behind
 * `kjudge-runner eval --dump`.
 *
 * Dumps two fp8_quant cases from hand-made regions and checks the manifest
 * (kinds, vars, seeds as strings, shapes, files, evaluated tolerances), the
 * bytes of every file (inputs from the input region, outputs from the
 * output region), and that a folder holding anything else is refused.
 * Needs no GPU. Prints "test_dump: N passed, N failed, N skipped".
 */
#define KT_MAIN
#include "kt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "directive.h"
#include "dump.h"
#include "plan.h"
#include "spec.h"

/* Fill a region so that every byte says which region and offset it is. */
static void pattern(unsigned char *p, size_t n, unsigned char tag)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(tag ^ (i * 31u));
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    char root[] = "/tmp/kj_test_dump.XXXXXX", dir[128], path[256], cmd[300];
    struct spec *s = NULL;
    struct kj_err err;
    struct dump d;

    kj_err_clear(&err);
    if (mkdtemp(root) == NULL || spec_load("leaderboards/fp8_quant", &s, &err) != KJ_OK) {
        KT_CHECK(0, "setup: %s", err.msg);
        return kt_done("test_dump");
    }
    snprintf(dir, sizeof dir, "%s/out", root);
    KT_CHECK(dump_open(&d, dir, s, &err) == KJ_OK, "open: %s", err.msg);

    struct directives dirs;
    struct plan *p = NULL;
    const char *src = "//!kjudge launch quant grid=(T) block=(32)\n";
    KT_CHECK(dir_parse(src, strlen(src), &dirs, &err) == KJ_OK &&
             plan_build(s, &dirs, &dirs, NULL, &p, &err) == KJ_OK, "plan: %s", err.msg);
    if (p == NULL)
        return kt_done("test_dump");
    const struct case_plan *cases[2] = {plan_case(p, 0, 1), plan_case(p, 1, 0)};
    for (int k = 0; k < 2; k++) {
        const size_t *off = cases[k]->off, *size = cases[k]->size, total = cases[k]->total;
        unsigned char *in = malloc(total), *out = malloc(total);
        pattern(in, total, 0x11);
        pattern(out, total, 0xa5);
        KT_CHECK(dump_case(&d, s, cases[k], cases[k]->seed + (k ? 0xffffffff00000000ull : 0),
                           in, out, k ? "fail" : "pass", &err) == KJ_OK,
                 "case %d: %s", k, err.msg);
        /* x is an input: its bytes come from in; x_q an output: from out. */
        const char *names[3] = {"x", "x_q", "x_s"};
        for (int b = 0; b < 3; b++) {
            size_t n = 0;
            snprintf(path, sizeof path, "%s/%s/%s.bin", dir, k ? "benchmark0" : "test1", names[b]);
            char *got = kt_slurp(path, &n);
            const unsigned char *want = (b == 0 ? in : out) + off[b];
            KT_CHECK(got != NULL && n == size[b] && memcmp(got, want, n) == 0,
                     "case %d %s: %zu bytes, want %zu from the %s region", k, names[b], n,
                     size[b], b == 0 ? "input" : "output");
            free(got);
        }
        free(in);
        free(out);
    }
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    KT_CHECK(access(path, F_OK) != 0, "no manifest before close");
    KT_CHECK(dump_close(&d, &err) == KJ_OK, "close: %s", err.msg);

    size_t n = 0;
    char *text = kt_slurp(path, &n);
    cJSON *m = text ? cJSON_Parse(text) : NULL;
    KT_CHECK(m != NULL, "manifest parses");
    const cJSON *cs = cJSON_GetObjectItem(m, "cases");
    KT_CHECK(cJSON_GetArraySize(cs) == 2, "two cases");
    KT_CHECK(strcmp(cJSON_GetObjectItem(m, "leaderboard")->valuestring, "fp8_quant") == 0, "board");
    const cJSON *c0 = cJSON_GetArrayItem(cs, 0), *c1 = cJSON_GetArrayItem(cs, 1);
    if (c0 != NULL && c1 != NULL) {
        KT_CHECK(strcmp(cJSON_GetObjectItem(c0, "kind")->valuestring, "test") == 0 &&
                 cJSON_GetObjectItem(c0, "index")->valueint == 1, "case 0 is test 1");
        KT_CHECK(strcmp(cJSON_GetObjectItem(c0, "seed")->valuestring, "5236") == 0, "seed string");
        KT_CHECK(strcmp(cJSON_GetObjectItem(c1, "seed")->valuestring, "18446744069414586466") == 0,
                 "a 64-bit seed stays exact: %s", cJSON_GetObjectItem(c1, "seed")->valuestring);
        KT_CHECK(strcmp(cJSON_GetObjectItem(c1, "status")->valuestring, "fail") == 0, "status");
        const cJSON *v = cJSON_GetObjectItem(c0, "vars");
        KT_CHECK(cJSON_GetObjectItem(v, "T")->valueint == 4 && cJSON_GetObjectItem(v, "H")->valueint == 512 &&
                 cJSON_GetObjectItem(v, "GS")->valueint == 128, "vars");
        const cJSON *xs = cJSON_GetArrayItem(cJSON_GetObjectItem(c0, "buffers"), 2);
        const cJSON *shape = cJSON_GetObjectItem(xs, "shape");
        KT_CHECK(cJSON_GetArraySize(shape) == 2 && cJSON_GetArrayItem(shape, 0)->valueint == 4 &&
                 cJSON_GetArrayItem(shape, 1)->valueint == 4, "x_s shape [4,4]");
        KT_CHECK(strcmp(cJSON_GetObjectItem(xs, "file")->valuestring, "test1/x_s.bin") == 0 &&
                 strcmp(cJSON_GetObjectItem(xs, "role")->valuestring, "output") == 0 &&
                 cJSON_GetObjectItem(xs, "atol")->valuedouble == 1e-3, "x_s entry");
        const cJSON *x = cJSON_GetArrayItem(cJSON_GetObjectItem(c0, "buffers"), 0);
        KT_CHECK(cJSON_GetObjectItem(x, "atol") == NULL &&
                 strcmp(cJSON_GetObjectItem(x, "dtype")->valuestring, "float32") == 0, "x entry");
    }
    cJSON_Delete(m);
    free(text);

    /* A second dump into the same folder is fine; a folder with other files is not. */
    KT_CHECK(dump_open(&d, dir, s, &err) == KJ_OK, "reopen a dump: %s", err.msg);
    dump_abort(&d);
    snprintf(path, sizeof path, "%s/notes.txt", dir);
    FILE *f = fopen(path, "w");
    if (f != NULL)
        fclose(f);
    KT_CHECK(dump_open(&d, dir, s, &err) == KJ_EINVAL && strstr(err.msg, "notes.txt") != NULL,
             "a folder with other files is refused: %s", err.msg);
    KT_CHECK(dump_open(&d, "", s, &err) == KJ_EINVAL, "empty name refused");

    plan_free(p);
    spec_free(s);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", root);
    return kt_done("test_dump");
}
