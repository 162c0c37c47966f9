/*
 * test_spec.c - unit tests for common/spec.c.
 *
 * Loads the real leaderboards/fp8_quant spec and checks what it holds, then
 * writes broken variants of a small valid spec into a temporary folder and
 * checks that each class of mistake is refused with a message naming the
 * file and the field. Runs from the repository root; needs no GPU.
 */
#define KT_MAIN
#include "kt.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kj_err.h"
#include "spec.h"

/* A valid board; the broken cases replace one piece of it. */
static const char base_json[] =
    "{\n"
    "  \"name\": \"NAME\",\n"
    "  \"title\": \"Test board\",\n"
    "  \"description\": \"description.md\",\n"
    "  \"deadline\": \"2027-03-15T00:00:00Z\",\n"
    "  \"gpus\": [\"H200\"],\n"
    "  \"vars\": [\"N\", \"K\"],\n"
    "  \"constraints\": [\"N % K == 0\"],\n"
    "  \"buffers\": [\n"
    "    {\"name\": \"a\", \"dtype\": \"float32\", \"shape\": [\"N\"], \"role\": \"input\",\n"
    "     \"init\": {\"dist\": \"uniform\", \"lo\": -1, \"hi\": 1}},\n"
    "    {\"name\": \"idx\", \"dtype\": \"int32\", \"shape\": [\"N/K\"], \"role\": \"input\",\n"
    "     \"init\": {\"dist\": \"int\", \"lo\": 0, \"hi\": 7}},\n"
    "    {\"name\": \"out\", \"dtype\": \"float32\", \"shape\": [\"N/K\", \"K\"], \"role\": \"output\",\n"
    "     \"atol\": 1e-3, \"rtol\": 1e-3},\n"
    "    {\"name\": \"cnt\", \"dtype\": \"int64\", \"shape\": [], \"role\": \"output\"}\n"
    "  ],\n"
    "  \"tests\": [{\"N\": 64, \"K\": 8, \"seed\": 1}, {\"N\": 16, \"K\": 16, \"seed\": \"18446744073709551615\"}],\n"
    "  \"benchmarks\": [{\"N\": 4096, \"K\": 64, \"seed\": 7}],\n"
    "  \"bytes\": \"N*4 + N/K*4 + N*4 + 8\",\n"
    "  \"ranking\": \"geomean\",\n"
    "  \"time_limits_s\": {\"test\": 60, \"benchmark\": 60, \"leaderboard\": 120}\n"
    "}\n";

static char tmp_root[256];

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fputs(text, f);
    return fclose(f);
}

/* base_json with the first `from` replaced by `to` and NAME by name; caller frees. */
static char *variant(const char *name, const char *from, const char *to)
{
    size_t cap = sizeof base_json + (to ? strlen(to) : 0) + strlen(name) + 64;
    char *out = malloc(cap), *p;
    const char *at;
    if (out == NULL)
        return NULL;
    snprintf(out, cap, "%s", base_json);
    if (from != NULL && (at = strstr(out, from)) != NULL) {
        char *rest = strdup(at + strlen(from));
        snprintf(out + (at - out), cap - (size_t)(at - out), "%s%s", to, rest);
        free(rest);
    } else if (from != NULL) {
        fprintf(stderr, "test bug: '%s' not in base\n", from);
    }
    if ((p = strstr(out, "NAME")) != NULL) {
        char *rest = strdup(p + 4);
        snprintf(p, cap - (size_t)(p - out), "%s%s", name, rest);
        free(rest);
    }
    return out;
}

static void make_board(const char *folder, const char *text, int with_desc);

/* tmp_root/<name> made from variant(name, from, to) and loaded: the spec
 * (the caller frees it), NULL when it does not load (err says why). */
static struct spec *load_variant(const char *name, const char *from, const char *to,
                                 struct kj_err *err)
{
    char dir[512];
    struct spec *s = NULL;
    char *text = variant(name, from, to);
    make_board(name, text, 1);
    free(text);
    snprintf(dir, sizeof dir, "%s/%s", tmp_root, name);
    kj_err_clear(err);
    return spec_load(dir, &s, err) == 0 ? s : NULL;
}

/* Make tmp_root/<folder> holding leaderboard.json (text) and description.md. */
static void make_board(const char *folder, const char *text, int with_desc)
{
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/%s", tmp_root, folder);
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/leaderboard.json", dir);
    write_file(path, text);
    snprintf(path, sizeof path, "%s/description.md", dir);
    if (with_desc)
        write_file(path, "# test\n");
    else
        unlink(path);
}

/* Load a variant and expect failure whose message contains each of want1, want2. */
static void expect_fail(const char *folder, const char *from, const char *to,
                        const char *want1, const char *want2)
{
    char dir[512];
    struct spec *s = (struct spec *)1;
    struct kj_err err;
    char *text = variant(folder, from, to);
    kj_err_clear(&err);
    make_board(folder, text, 1);
    free(text);
    snprintf(dir, sizeof dir, "%s/%s", tmp_root, folder);
    int rc = spec_load(dir, &s, &err);
    KT_CHECK(rc == KJ_EINVAL, "%s: rc %d (%s)", folder, rc, err.msg);
    KT_CHECK(s == NULL, "%s: *out must be NULL on failure", folder);
    KT_CHECK(strstr(err.msg, "leaderboard.json") != NULL, "%s: message names the file: %s",
             folder, err.msg);
    KT_CHECK(want1 == NULL || strstr(err.msg, want1) != NULL, "%s: want '%s' in: %s", folder,
             want1, err.msg);
    KT_CHECK(want2 == NULL || strstr(err.msg, want2) != NULL, "%s: want '%s' in: %s", folder,
             want2, err.msg);
    spec_free(s);
}

static void test_fp8_quant(void)
{
    struct spec *s = NULL;
    struct kj_err err;
    int64_t n, dims[SPEC_MAX_DIMS];
    int ndim;
    char label[64];

    kj_err_clear(&err);
    int rc = spec_load("leaderboards/fp8_quant", &s, &err);
    KT_CHECK(rc == 0 && s != NULL, "fp8_quant loads: %s", err.msg);
    if (s == NULL)
        return;
    KT_CHECK(strcmp(s->name, "fp8_quant") == 0, "name %s", s->name);
    KT_CHECK(s->deadline_unix == 1805068800, "deadline %lld", (long long)s->deadline_unix);
    KT_CHECK(s->ngpus == 2 && strcmp(s->gpus[0], "H200") == 0 && strcmp(s->gpus[1], "B200") == 0,
             "gpus");
    KT_CHECK(s->nvars == 3 && spec_var_index(s, "GS") == 2 && spec_var_index(s, "Q") == -1, "vars");
    KT_CHECK(s->nconstraints == 2, "constraints %d", s->nconstraints);
    KT_CHECK(s->nbuffers == 3, "buffers %d", s->nbuffers);
    KT_CHECK(s->buffers[0].role == SPEC_INPUT && s->buffers[0].dist == SPEC_DIST_NORMAL &&
             s->buffers[0].p0 == 0.0 && s->buffers[0].p1 == 1.0, "x init");
    KT_CHECK(s->buffers[1].role == SPEC_OUTPUT && s->buffers[1].atol == 1e-3 &&
             s->buffers[1].rtol == 1e-3, "x_q tolerances");
    KT_CHECK(s->buffers[2].ndim == 2 && strcmp(s->buffers[2].shape[1], "H/GS") == 0, "x_s shape");
    KT_CHECK(s->ntests == 5 && s->nbenchmarks == 3, "cases %d %d", s->ntests, s->nbenchmarks);
    KT_CHECK(s->tests[0].val[0] == 1 && s->tests[0].val[1] == 256 && s->tests[0].seed == 4242,
             "test 0");
    KT_CHECK(s->benchmarks[2].val[0] == 4096 && s->benchmarks[2].seed == 54352, "bench 2");
    KT_CHECK(spec_buffer_elems(s, 2, &s->tests[0], &n, &err) == 0 && n == 4, "x_s elems %lld",
             (long long)n);
    KT_CHECK(spec_buffer_dims(s, 1, &s->benchmarks[2], dims, &ndim, &err) == 0 && ndim == 2 &&
             dims[0] == 4096 && dims[1] == 7168, "x_q dims");
    spec_case_label(s, &s->tests[0], label, sizeof label);
    KT_CHECK(strcmp(label, "T=1 H=256 GS=64") == 0, "label '%s'", label);
    KT_CHECK(strcmp(s->ranking, "geomean") == 0 && s->limit_leaderboard_s == 420, "ranking, limits");
    KT_CHECK(s->bytes_expr[0] != '\0' && s->flops_expr[0] == '\0', "bytes/flops");
    KT_CHECK(s->has_generate == 0, "no generate.cu");
    spec_free(s);
}

static void test_dtypes(void)
{
    KT_CHECK(spec_dtype_size(SPEC_BF16) == 2 && spec_dtype_size(SPEC_I64) == 8 &&
             spec_dtype_size(SPEC_U8) == 1, "sizes");
    KT_CHECK(strcmp(spec_dtype_name(SPEC_BF16), "bfloat16") == 0, "names");
    KT_CHECK(spec_dtype_is_int(SPEC_U32) && !spec_dtype_is_int(SPEC_F64), "is_int");
}

static void test_valid_variant(void)
{
    char dir[512], path[600];
    struct spec *s = NULL;
    struct kj_err err;
    char *text = variant("good", NULL, NULL);
    make_board("good", text, 1);
    free(text);
    snprintf(dir, sizeof dir, "%s/good", tmp_root);
    kj_err_clear(&err);
    KT_CHECK(spec_load(dir, &s, &err) == 0, "base spec loads: %s", err.msg);
    if (s != NULL) {
        KT_CHECK(s->tests[1].seed == UINT64_MAX, "string seed %llu",
                 (unsigned long long)s->tests[1].seed);
        KT_CHECK(s->buffers[3].ndim == 0 && s->buffers[3].atol == 0, "scalar int output");
        int64_t n = 0;
        KT_CHECK(spec_buffer_elems(s, 3, &s->tests[0], &n, &err) == 0 && n == 1, "scalar elems");
        KT_CHECK(s->public_reference == 0, "the reference is not public by default");
        KT_CHECK(s->limit_tools_s == 0, "no time_limits_s.tools: the runner's default");
        KT_CHECK(s->resolution_pct[0] == 0, "no resolution_pct: not measured");
        KT_CHECK(s->score_gpu_time == 1, "no score: GPU time ranks");
    }
    spec_free(s);

    /* time_limits_s.tools: profile and sanitize jobs' limit on this board. */
    s = load_variant("tools", "\"leaderboard\": 120", "\"leaderboard\": 120, \"tools\": 90", &err);
    KT_CHECK(s != NULL && s->limit_tools_s == 90, "time_limits_s.tools loads: %s", err.msg);
    spec_free(s);

    /* "public_reference": true lets anyone download reference.cu. */
    s = load_variant("pubref", "\"ranking\"", "\"public_reference\": true, \"ranking\"", &err);
    KT_CHECK(s != NULL && s->public_reference == 1, "public_reference true loads: %s", err.msg);
    spec_free(s);

    /* "resolution_pct" per GPU type; absent types stay 0 (not measured). */
    s = load_variant("resol", "\"ranking\"", "\"resolution_pct\": {\"H200\": 0.55}, \"ranking\"", &err);
    KT_CHECK(s != NULL && s->resolution_pct[0] == 0.55, "resolution_pct loads: %s", err.msg);
    spec_free(s);
    /* "gpu_time_resolution_pct": the same for GPU-time scores, apart from it. */
    s = load_variant("gresol", "\"ranking\"", "\"resolution_pct\": {\"H200\": 0.55}, "
                     "\"gpu_time_resolution_pct\": {\"H200\": 0.2}, \"ranking\"", &err);
    KT_CHECK(s != NULL && s->resolution_pct[0] == 0.55 && s->gpu_resolution_pct[0] == 0.2,
             "gpu_time_resolution_pct loads beside resolution_pct: %s", err.msg);
    spec_free(s);

    /* "score": which measure ranks; "gpu_time" when absent (the base above). */
    s = load_variant("score", "\"ranking\"", "\"score\": \"gpu_time\", \"ranking\"", &err);
    KT_CHECK(s != NULL && s->score_gpu_time == 1, "score gpu_time loads: %s", err.msg);
    spec_free(s);
    s = load_variant("scoreev", "\"ranking\"", "\"score\": \"events\", \"ranking\"", &err);
    KT_CHECK(s != NULL && s->score_gpu_time == 0, "score events loads: %s", err.msg);
    spec_free(s);

    /* Tolerances may be real expressions over the vars, evaluated per case. */
    s = load_variant("tolexpr", "\"atol\": 1e-3, \"rtol\": 1e-3",
                     "\"atol\": \"1e-5 * sqrt(N)\", \"rtol\": \"max(1e-4, 1e-6 * K)\"", &err);
    KT_CHECK(s != NULL, "tolerance expressions load: %s", err.msg);
    if (s != NULL) {
        double at = -1, rt = -1;
        KT_CHECK(spec_tolerance(s, 2, &s->tests[0], &at, &rt, &err) == 0 &&
                 fabs(at - 8e-5) < 1e-15 && rt == 1e-4, "N=64: atol %g rtol %g", at, rt);
        KT_CHECK(spec_tolerance(s, 2, &s->benchmarks[0], &at, &rt, &err) == 0 &&
                 fabs(at - 64e-5) < 1e-15, "N=4096: atol %g", at);
        KT_CHECK(spec_tolerance(s, 3, &s->tests[0], &at, &rt, &err) == 0 && at == 0 && rt == 0,
                 "integer output keeps 0: %g %g", at, rt);
    }
    spec_free(s);

    /* "generated" is accepted once generate.cu exists. */
    text = variant("gen", "{\"dist\": \"uniform\", \"lo\": -1, \"hi\": 1}", "{\"dist\": \"generated\"}");
    make_board("gen", text, 1);
    free(text);
    snprintf(path, sizeof path, "%s/gen/generate.cu", tmp_root);
    write_file(path, "// trusted\n");
    snprintf(dir, sizeof dir, "%s/gen", tmp_root);
    s = NULL;
    KT_CHECK(spec_load(dir, &s, &err) == 0 && s != NULL && s->has_generate == 1 &&
             s->buffers[0].dist == SPEC_DIST_GENERATED, "generated with generate.cu: %s", err.msg);
    spec_free(s);
}

static void test_broken(void)
{
    expect_fail("tolsyntax", "\"atol\": 1e-3", "\"atol\": \"1e-3 *\"", "buffers[2].atol",
                "unexpected end");
    expect_fail("tolname", "\"atol\": 1e-3", "\"atol\": \"Q\"", "buffers[2].atol",
                "unknown variable 'Q'");
    expect_fail("tolneg", "\"rtol\": 1e-3", "\"rtol\": \"1e-3 - 1e-6 * N\"", "benchmarks[0]",
                "must be >= 0");
    expect_fail("tolinf", "\"rtol\": 1e-3", "\"rtol\": \"1 / (N - 64)\"", "tests[0]",
                "division by zero");
    expect_fail("badscore", "\"ranking\"", "\"score\": \"cupti\", \"ranking\"", "score",
                "'cupti' is not a measure (\"events\" or \"gpu_time\")");
    expect_fail("numscore", "\"ranking\"", "\"score\": 1, \"ranking\"", "score", "must be a string");
    /* Bytes that are not UTF-8 would reach the public JSON bodies as they are. */
    expect_fail("badutf8", "Test board", "Test \xff board", "line 3", "not valid UTF-8");
    expect_fail("surrogate", "Test board", "Test \xed\xa0\x80 board", "line 3", "UTF-8");
    expect_fail("cututf8", "\"Test board\"", "\"Test board\xc3\"", "line 3", "UTF-8");
    expect_fail("badjson", "\"gpus\": [\"H200\"],", "\"gpus\": [\"H200\"", "not valid JSON", "line 7");
    expect_fail("unknownkey", "\"ranking\"", "\"rankng\": 1, \"ranking\"", "(top level)", "rankng");
    expect_fail("dupkey", "\"ranking\"", "\"title\": \"again\", \"ranking\"", "title", "twice");
    expect_fail("folder", "\"name\": \"NAME\"", "\"name\": \"other\"", "name", "folder");
    expect_fail("BadName", NULL, NULL, "name", "[a-z0-9_]+");
    expect_fail("nodesc", "description.md", "missing.md", "description", "does not exist");
    expect_fail("deadline", "2027-03-15T00:00:00Z", "2027-03-15 00:00", "deadline", NULL);
    expect_fail("feb30", "2027-03-15T00:00:00Z", "2027-02-30T00:00:00Z", "deadline", NULL);
    expect_fail("nogpus", "[\"H200\"]", "[]", "gpus", "non-empty");
    expect_fail("badvar", "[\"N\", \"K\"]", "[\"N\", \"2K\"]", "vars[1]", "identifier");
    expect_fail("dupvar", "[\"N\", \"K\"]", "[\"N\", \"N\"]", "vars[1]", "twice");
    expect_fail("badconstraint", "N % K == 0", "N %% K", "constraints[0]", NULL);
    expect_fail("unknownvar", "[\"N/K\"], \"role\": \"input\"", "[\"Q\"], \"role\": \"input\"",
                "buffers[1].shape[0]", "Q");
    expect_fail("dtype", "\"int64\"", "\"int128\"", "buffers[3].dtype", "int128");
    expect_fail("role", "\"role\": \"output\"}", "\"role\": \"inout\"}", "buffers[3].role", "inout");
    expect_fail("noinit", ",\n     \"init\": {\"dist\": \"uniform\", \"lo\": -1, \"hi\": 1}", "",
                "buffers[0].init", "missing");
    expect_fail("baddist", "\"dist\": \"uniform\"", "\"dist\": \"gauss\"", "buffers[0].init.dist", "gauss");
    expect_fail("generated", "{\"dist\": \"uniform\", \"lo\": -1, \"hi\": 1}", "{\"dist\": \"generated\"}",
                "buffers[0].init.dist", "generate.cu");
    expect_fail("intdist", "\"dist\": \"int\"", "\"dist\": \"normal\", \"mean\": 0, \"std\": 1, \"x\": \"int\"",
                "buffers[1].init", "x");
    expect_fail("noatol", "\"atol\": 1e-3, \"rtol\"", "\"rtol\"", "buffers[2].atol", "missing");
    expect_fail("negrtol", "\"rtol\": 1e-3}", "\"rtol\": -1}", "buffers[2].rtol", ">= 0");
    expect_fail("outinit", "\"role\": \"output\"}", "\"role\": \"output\", \"init\": {\"dist\": \"int\"}}",
                "buffers[3]", "init");
    expect_fail("dupbuf", "\"name\": \"idx\"", "\"name\": \"a\"", "buffers[1].name", "buffers[0]");
    expect_fail("notests", "\"tests\": [", "\"tests\": [], \"x_tests\": [", "(top level)", "x_tests");
    expect_fail("emptytests", "[{\"N\": 64, \"K\": 8, \"seed\": 1}, ", "[], \"t\": [",
                "(top level)", NULL);
    expect_fail("missingvar", "{\"N\": 64, \"K\": 8, \"seed\": 1}", "{\"N\": 64, \"seed\": 1}",
                "tests[0].K", "missing");
    expect_fail("casekey", "{\"N\": 64, \"K\": 8, \"seed\": 1}", "{\"N\": 64, \"K\": 8, \"M\": 1, \"seed\": 1}",
                "tests[0]", "'M'");
    expect_fail("fraction", "{\"N\": 64, \"K\": 8, \"seed\": 1}", "{\"N\": 64.5, \"K\": 8, \"seed\": 1}",
                "tests[0].N", "integer");
    expect_fail("noseed", "{\"N\": 64, \"K\": 8, \"seed\": 1}", "{\"N\": 64, \"K\": 8}", "tests[0].seed", "missing");
    expect_fail("negseed", "{\"N\": 64, \"K\": 8, \"seed\": 1}", "{\"N\": 64, \"K\": 8, \"seed\": -1}",
                "tests[0].seed", NULL);
    expect_fail("constraint", "{\"N\": 4096, \"K\": 64, \"seed\": 7}", "{\"N\": 4096, \"K\": 100, \"seed\": 7}",
                "benchmarks[0]", "N % K == 0");
    expect_fail("zerosize", "{\"N\": 64, \"K\": 8, \"seed\": 1}", "{\"N\": 0, \"K\": 8, \"seed\": 1}",
                "tests[0]", "must be positive");
    expect_fail("ranking", "\"geomean\"", "\"mean\"", "ranking", "geomean");
    expect_fail("limits", "\"leaderboard\": 120", "\"leaderboard\": 0", "time_limits_s.leaderboard", "positive");
    expect_fail("toolszero", "\"leaderboard\": 120", "\"leaderboard\": 120, \"tools\": 0",
                "time_limits_s.tools", "positive");
    expect_fail("toolsbig", "\"leaderboard\": 120", "\"leaderboard\": 120, \"tools\": 3601",
                "time_limits_s.tools", "3600");
    expect_fail("toolsstr", "\"leaderboard\": 120", "\"leaderboard\": 120, \"tools\": \"60\"",
                "time_limits_s.tools", "number");
    expect_fail("limitkey", "\"leaderboard\": 120", "\"leaderboard\": 120, \"compile\": 5",
                "time_limits_s", "compile");
    expect_fail("pubrefnum", "\"ranking\"", "\"public_reference\": 1, \"ranking\"",
                "public_reference", "true or false");
    expect_fail("bytes", "\"N*4 + N/K*4 + N*4 + 8\"", "\"N*4 + Z\"", "bytes", "Z");
    expect_fail("resgpu", "\"ranking\"", "\"resolution_pct\": {\"B200\": 0.5}, \"ranking\"",
                "resolution_pct.B200", "not one of the board's gpus");
    expect_fail("reszero", "\"ranking\"", "\"resolution_pct\": {\"H200\": 0}, \"ranking\"",
                "resolution_pct.H200", "above 0");
    expect_fail("resbig", "\"ranking\"", "\"resolution_pct\": {\"H200\": 101}, \"ranking\"",
                "resolution_pct.H200", "at most 100");
    expect_fail("gresgpu", "\"ranking\"", "\"gpu_time_resolution_pct\": {\"B200\": 0.5}, \"ranking\"",
                "gpu_time_resolution_pct.B200", "not one of the board's gpus");
    expect_fail("greszero", "\"ranking\"", "\"gpu_time_resolution_pct\": {\"H200\": -1}, \"ranking\"",
                "gpu_time_resolution_pct.H200", "above 0");
    expect_fail("gresobj", "\"ranking\"", "\"gpu_time_resolution_pct\": 0.2, \"ranking\"",
                "gpu_time_resolution_pct", "must be an object");
    expect_fail("resstr", "\"ranking\"", "\"resolution_pct\": {\"H200\": \"0.5\"}, \"ranking\"",
                "resolution_pct.H200", "percentage");
    expect_fail("resdup", "\"ranking\"",
                "\"resolution_pct\": {\"H200\": 0.5, \"H200\": 0.6}, \"ranking\"",
                "resolution_pct.H200", "twice");
    expect_fail("resarr", "\"ranking\"", "\"resolution_pct\": [0.5], \"ranking\"",
                "resolution_pct", "object");
}

/* "python": the tuple custom_kernel receives and returns, as indices. */
static void test_python_block(void)
{
    char dir[512];
    struct spec *s = NULL;
    struct kj_err err;
    kj_err_clear(&err);
    char *text = variant("pyok", "\"ranking\"",
                         "\"python\": {\"args\": [\"a\", \"idx\", \"out\", \"N\", \"K\"], "
                         "\"returns\": [\"cnt\", \"out\"]}, \"ranking\"");
    make_board("pyok", text, 1);
    free(text);
    snprintf(dir, sizeof dir, "%s/pyok", tmp_root);
    KT_CHECK(spec_load(dir, &s, &err) == 0 && s != NULL, "python block loads: %s", err.msg);
    if (s != NULL) {
        const struct spec_python *p = &s->python;
        KT_CHECK(p->present == 1 && p->nargs == 5 && p->nreturns == 2, "present %d nargs %d "
                 "nreturns %d", p->present, p->nargs, p->nreturns);
        KT_CHECK(p->args[0].kind == SPEC_PYARG_BUFFER && p->args[0].index == 0 &&
                 p->args[2].kind == SPEC_PYARG_BUFFER && p->args[2].index == 2 &&
                 p->args[3].kind == SPEC_PYARG_VAR && p->args[3].index == 0 &&
                 p->args[4].kind == SPEC_PYARG_VAR && p->args[4].index == 1, "args");
        KT_CHECK(p->returns[0] == 3 && p->returns[1] == 2, "returns %d %d", p->returns[0],
                 p->returns[1]);
    }
    spec_free(s);
    s = NULL;
    text = variant("pynone", NULL, NULL);
    make_board("pynone", text, 1);
    free(text);
    snprintf(dir, sizeof dir, "%s/pynone", tmp_root);
    KT_CHECK(spec_load(dir, &s, &err) == 0 && s != NULL && s->python.present == 0 &&
             s->python.nargs == 0, "no python block: not present");
    spec_free(s);

    /* Every board with a block: fp8_quant's exact KernelBot interface. */
    s = NULL;
    KT_CHECK(spec_load("leaderboards/fp8_quant", &s, &err) == 0 && s != NULL &&
             s->python.present && s->python.nargs == 3 && s->python.args[0].index == 0 &&
             s->python.args[1].index == 1 && s->python.args[2].index == 2 &&
             s->python.nreturns == 2 && s->python.returns[0] == 1 && s->python.returns[1] == 2,
             "fp8_quant: args x, x_q, x_s; returns x_q, x_s: %s", err.msg);
    spec_free(s);
    s = NULL;
    KT_CHECK(spec_load("leaderboards/gated_deltanet_recompute_w_u", &s, &err) == 0 && s != NULL &&
             s->python.present && s->python.nargs == 5 && s->python.args[4].index == 4 &&
             s->python.nreturns == 2 && s->python.returns[0] == 5 && s->python.returns[1] == 6,
             "gated_deltanet: args k, v, beta, A, g; returns w, u: %s", err.msg);
    spec_free(s);
}

static void test_python_broken(void)
{
#define PY(json) "\"python\": " json ", \"ranking\""
    static const char *const outs = "\"returns\": [\"out\", \"cnt\"]";
    char buf[512];
    expect_fail("pyarr", "\"ranking\"", PY("[]"), "python", "object");
    expect_fail("pykey", "\"ranking\"", PY("{\"args\": [\"a\"], \"returns\": [\"out\", "
                "\"cnt\"], \"kwargs\": []}"), "python", "unknown key 'kwargs'");
    expect_fail("pynoargs", "\"ranking\"", PY("{\"returns\": [\"out\", \"cnt\"]}"),
                "python.args", "missing");
    expect_fail("pynorets", "\"ranking\"", PY("{\"args\": [\"a\", \"out\", \"cnt\"]}"),
                "python.returns", "missing");
    expect_fail("pyempty", "\"ranking\"", PY("{\"args\": [], \"returns\": [\"out\", \"cnt\"]}"),
                "python.args", "non-empty");
    snprintf(buf, sizeof buf, PY("{\"args\": [\"a\", \"Q\"], %s}"), outs);
    expect_fail("pyunknown", "\"ranking\"", buf, "python.args[1]", "'Q' is neither a buffer nor");
    snprintf(buf, sizeof buf, PY("{\"args\": [\"a\", 3], %s}"), outs);
    expect_fail("pynotstr", "\"ranking\"", buf, "python.args[1]", "name");
    snprintf(buf, sizeof buf, PY("{\"args\": [\"a\", \"N\", \"a\"], %s}"), outs);
    expect_fail("pydup", "\"ranking\"", buf, "python.args[2]", "twice (also python.args[0])");
    expect_fail("pyretdup", "\"ranking\"", PY("{\"args\": [\"a\"], \"returns\": "
                "[\"out\", \"cnt\", \"out\"]}"), "python.returns[2]", "twice");
    expect_fail("pyretin", "\"ranking\"", PY("{\"args\": [\"a\"], \"returns\": "
                "[\"out\", \"idx\", \"cnt\"]}"), "python.returns[1]", "'idx' is an input");
    expect_fail("pyretvar", "\"ranking\"", PY("{\"args\": [\"a\"], \"returns\": "
                "[\"out\", \"cnt\", \"N\"]}"), "python.returns[2]", "a variable cannot");
    expect_fail("pyretunk", "\"ranking\"", PY("{\"args\": [\"a\"], \"returns\": "
                "[\"zz\"]}"), "python.returns[0]", "'zz' is not a buffer");
    /* cnt is neither given nor returned */
    expect_fail("pyuncovered", "\"ranking\"", PY("{\"args\": [\"a\", \"idx\"], "
                "\"returns\": [\"out\"]}"), "python", "output 'cnt' is neither given");
    /* too many: 17 names */
    expect_fail("pymany", "\"ranking\"", PY("{\"args\": [\"a\",\"b1\",\"b2\",\"b3\","
                "\"b4\",\"b5\",\"b6\",\"b7\",\"b8\",\"b9\",\"c1\",\"c2\",\"c3\",\"c4\","
                "\"c5\",\"c6\",\"c7\"], \"returns\": [\"out\", \"cnt\"]}"), "python.args",
                "more than 16");
#undef PY
}

static void test_load_all(void)
{
    char root[512], path[600];
    struct spec **specs = NULL;
    struct kj_err err;
    int n = -1;

    snprintf(root, sizeof root, "%s/all", tmp_root);
    mkdir(root, 0700);
    const char *names[] = {"zeta", "alpha", "mid"};
    for (int i = 0; i < 3; i++) {
        char *text = variant(names[i], NULL, NULL);
        snprintf(path, sizeof path, "all/%s", names[i]);
        make_board(path, text, 1);
        free(text);
    }
    snprintf(path, sizeof path, "%s/notaboard", root);
    mkdir(path, 0700);
    kj_err_clear(&err);
    KT_CHECK(spec_load_all(root, &specs, &n, &err) == 0 && n == 3, "load_all: %s", err.msg);
    if (specs != NULL && n == 3)
        KT_CHECK(strcmp(specs[0]->name, "alpha") == 0 && strcmp(specs[1]->name, "mid") == 0 &&
                 strcmp(specs[2]->name, "zeta") == 0, "sorted by name");
    spec_free_all(specs, n);

    char *text = variant("broken", "\"geomean\"", "\"median\"");
    make_board("all/broken", text, 1);
    free(text);
    specs = NULL;
    KT_CHECK(spec_load_all(root, &specs, &n, &err) == KJ_EINVAL && specs == NULL,
             "one broken board fails the whole load");
    KT_CHECK(strstr(err.msg, "broken/leaderboard.json") != NULL, "names the board: %s", err.msg);
    KT_CHECK(spec_load_all("/nonexistent/kjudge", &specs, &n, &err) == KJ_ENOTFOUND, "missing root");
    struct spec *one = NULL;
    KT_CHECK(spec_load("/nonexistent/kjudge", &one, &err) == KJ_ENOTFOUND && one == NULL,
             "missing folder: %s", err.msg);
}

/* spec_find_reload: a known board at once, a board added since after one
 * reload, an unknown one NULL with the loaded boards kept. */
static void test_find_reload(void)
{
    char root[512];
    struct spec **specs = NULL;
    struct kj_err err;
    int n = 0;
    snprintf(root, sizeof root, "%s/find", tmp_root);
    mkdir(root, 0700);
    char *text = variant("first", NULL, NULL);
    make_board("find/first", text, 1);
    free(text);
    KT_CHECK(spec_load_all(root, &specs, &n, &err) == 0 && n == 1, "one board: %s", err.msg);
    struct spec **before = specs;
    const struct spec *s = spec_find_reload(root, &specs, &n, "first");
    KT_CHECK(s != NULL && strcmp(s->name, "first") == 0 && specs == before,
             "a known board: found without reading the folder again");
    text = variant("second", NULL, NULL);
    make_board("find/second", text, 1);
    free(text);
    s = spec_find_reload(root, &specs, &n, "second");
    KT_CHECK(s != NULL && strcmp(s->name, "second") == 0 && n == 2,
             "a board added since: the folder is read again and it is found (n=%d)", n);
    s = spec_find_reload(root, &specs, &n, "nosuch");
    KT_CHECK(s == NULL && n == 2 && specs != NULL, "an unknown board: NULL, the boards kept");
    spec_free_all(specs, n);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    snprintf(tmp_root, sizeof tmp_root, "/tmp/kj_test_spec.XXXXXX");
    if (mkdtemp(tmp_root) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    KT_RUN(test_fp8_quant());
    KT_RUN(test_dtypes());
    KT_RUN(test_valid_variant());
    KT_RUN(test_broken());
    KT_RUN(test_python_block());
    KT_RUN(test_python_broken());
    KT_RUN(test_load_all());
    KT_RUN(test_find_reload());
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmp_root);
    return kt_done("test_spec");
}
