/*
 * fuzz_spec.c - libFuzzer harness for common/spec.c, the leaderboard.json
 * loader, and for the public bodies the server builds from a loaded board
 * (boards_from_specs in server/boards.c).
 *
 * The input is the text of a leaderboard.json. A scratch folder holds one
 * subfolder (with description.md and generate.cu) for each board name of
 * the repository, so a board whose "name" is one of them gets past the
 * folder checks. Properties besides ASan/UBSan's: an error has a message in
 * valid UTF-8 when the input is valid UTF-8; a loaded spec keeps every count
 * within its array, every string NUL-terminated, every enum in range (the
 * Python interface's indices too, every output given or returned); every
 * buffer size and tolerance evaluates for every case (the runner relies on
 * the loader having checked that); loading is deterministic; and the server
 * turns the spec into a GET /leaderboards body and list that parse as JSON
 * and are valid UTF-8.
 */
#include "fuzz.h"
#include "spec.h"
#include "boards.h"
#include "kj_err.h"

#include <cjson/cJSON.h>
#include <ftw.h>
#include <math.h>
#include <sys/stat.h>

static const char *const boards[] = {
    "conv2d", "fp8_quant", "gated_deltanet_recompute_w_u", "gated_deltanet_recompute_w_u_large",
    "grayscale", "histogram", "matmul", "prefixsum", "vectoradd", "b"
};
#define NBOARDS (sizeof boards / sizeof boards[0])

/* The scratch folder (under $TMPDIR, which run.sh removes even after a
 * crash); libFuzzer gives the harness no other place for it. */
static char scratch[64];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void scratch_remove(void)
{
    if (scratch[0] != '\0')
        nftw(scratch, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void put_file(const char *dir, const char *name, const char *text)
{
    char path[256];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if ((f = fopen(path, "w")) == NULL || fputs(text, f) < 0 || fclose(f) != 0)
        abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char dir[192];
    (void)argc, (void)argv;
    const char *tmp = getenv("TMPDIR");
    snprintf(scratch, sizeof scratch, "%s/kjfuzz-spec-XXXXXX",
             tmp != NULL && tmp[0] != '\0' && strlen(tmp) < 40 ? tmp : "/tmp");
    if (mkdtemp(scratch) == NULL)
        abort();
    atexit(scratch_remove);
    for (size_t i = 0; i < NBOARDS; i++) {
        snprintf(dir, sizeof dir, "%s/%s", scratch, boards[i]);
        if (mkdir(dir, 0700) != 0)
            abort();
        put_file(dir, "description.md", "# A board\n\nWhat the kernel computes, in \xc3\xa9 UTF-8.\n");
        put_file(dir, "generate.cu", "// trusted generator\n");
    }
    return 0;
}

/* The folder for the board named in text, or one that matches no name. */
static void pick_dir(const char *text, char *dir, size_t dirsz)
{
    cJSON *root = cJSON_Parse(text);
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "name");
    const char *name = "no_such_board";
    for (size_t i = 0; cJSON_IsString(n) && i < NBOARDS; i++)
        if (strcmp(n->valuestring, boards[i]) == 0)
            name = boards[i];
    snprintf(dir, dirsz, "%s/%s", scratch, name);
    cJSON_Delete(root);
}

static void check_nul(const char *what, const char *s, size_t cap)
{
    if (memchr(s, '\0', cap) == NULL)
        fuzz_fail("%s is not NUL-terminated", what);
}

static void check_case(const struct spec *s, const struct spec_case *k, const char *what)
{
    struct kj_err e;
    char label[512];
    for (int b = 0; b < s->nbuffers; b++) {
        int64_t elems = 0, dims[SPEC_MAX_DIMS];
        int ndim = -1;
        kj_err_clear(&e);
        if (spec_buffer_elems(s, b, k, &elems, &e) != 0 || elems < 1)
            fuzz_fail("%s: buffer %d did not evaluate after loading: %s", what, b, e.msg);
        if (spec_buffer_dims(s, b, k, dims, &ndim, &e) != 0 || ndim != s->buffers[b].ndim)
            fuzz_fail("%s: buffer %d dims: %s", what, b, e.msg);
        if (s->buffers[b].role == SPEC_OUTPUT) {
            double at = -1, rt = -1;
            if (spec_tolerance(s, b, k, &at, &rt, &e) != 0)
                fuzz_fail("%s: buffer %d tolerance did not evaluate after loading: %s", what, b,
                          e.msg);
            if (!(at >= 0) || !(rt >= 0) || !isfinite(at) || !isfinite(rt))
                fuzz_fail("%s: buffer %d tolerance atol %g rtol %g", what, b, at, rt);
        }
    }
    spec_case_label(s, k, label, sizeof label);
}

/* The Python interface: counts and indices in range, returns are outputs,
 * every output given or returned; nothing set when absent. */
static void check_python(const struct spec *s)
{
    const struct spec_python *p = &s->python;
    if (!p->present) {
        if (p->nargs != 0 || p->nreturns != 0)
            fuzz_fail("python absent but nargs %d nreturns %d", p->nargs, p->nreturns);
        return;
    }
    if (p->nargs < 1 || p->nargs > SPEC_MAX_PYARGS || p->nreturns < 1 ||
        p->nreturns > SPEC_MAX_PYARGS)
        fuzz_fail("python counts: nargs %d nreturns %d", p->nargs, p->nreturns);
    for (int i = 0; i < p->nargs; i++) {
        int k = p->args[i].kind, x = p->args[i].index;
        if (!(k == SPEC_PYARG_BUFFER && x >= 0 && x < s->nbuffers) &&
            !(k == SPEC_PYARG_VAR && x >= 0 && x < s->nvars))
            fuzz_fail("python.args[%d]: kind %d index %d", i, k, x);
    }
    for (int i = 0; i < p->nreturns; i++)
        if (p->returns[i] < 0 || p->returns[i] >= s->nbuffers ||
            s->buffers[p->returns[i]].role != SPEC_OUTPUT)
            fuzz_fail("python.returns[%d]: %d is not an output", i, p->returns[i]);
    for (int b = 0; b < s->nbuffers; b++) {
        int seen = s->buffers[b].role != SPEC_OUTPUT;
        for (int i = 0; i < p->nargs; i++)
            seen |= p->args[i].kind == SPEC_PYARG_BUFFER && p->args[i].index == b;
        for (int i = 0; i < p->nreturns; i++)
            seen |= p->returns[i] == b;
        if (!seen)
            fuzz_fail("output %d neither given nor returned", b);
    }
}

static void check_spec(const struct spec *s)
{
    if (s->nvars < 0 || s->nvars > SPEC_MAX_VARS || s->nbuffers < 1 ||
        s->nbuffers > SPEC_MAX_BUFFERS || s->ntests < 1 || s->ntests > SPEC_MAX_CASES ||
        s->nbenchmarks < 1 || s->nbenchmarks > SPEC_MAX_CASES || s->ngpus < 0 ||
        s->ngpus > SPEC_MAX_GPUS || s->nconstraints < 0 || s->nconstraints > 8)
        fuzz_fail("counts out of range: vars %d buffers %d tests %d benchmarks %d gpus %d",
                  s->nvars, s->nbuffers, s->ntests, s->nbenchmarks, s->ngpus);
    check_nul("name", s->name, sizeof s->name);
    check_nul("title", s->title, sizeof s->title);
    check_nul("deadline", s->deadline, sizeof s->deadline);
    check_nul("ranking", s->ranking, sizeof s->ranking);
    for (int i = 0; i < s->ngpus; i++)
        check_nul("gpu", s->gpus[i], SPEC_MAX_NAME);
    for (int i = 0; i < s->nvars; i++)
        check_nul("var", s->vars[i], SPEC_MAX_NAME);
    for (int b = 0; b < s->nbuffers; b++) {
        const struct spec_buffer *x = &s->buffers[b];
        check_nul("buffer name", x->name, sizeof x->name);
        if ((unsigned)x->dtype > SPEC_I64 || (unsigned)x->role > SPEC_OUTPUT ||
            (unsigned)x->dist > SPEC_DIST_GENERATED || x->ndim < 0 || x->ndim > SPEC_MAX_DIMS)
            fuzz_fail("buffer %d: dtype %d role %d dist %d ndim %d", b, x->dtype, x->role,
                      x->dist, x->ndim);
        spec_dtype_name(x->dtype);
    }
    if (!(s->limit_test_s > 0) || !(s->limit_benchmark_s > 0) || !(s->limit_leaderboard_s > 0))
        fuzz_fail("time limits %g %g %g", s->limit_test_s, s->limit_benchmark_s,
                  s->limit_leaderboard_s);
    check_python(s);
    for (int i = 0; i < s->ntests; i++)
        check_case(s, &s->tests[i], "test");
    for (int i = 0; i < s->nbenchmarks; i++)
        check_case(s, &s->benchmarks[i], "benchmark");
}

static void check_body(const char *what, const char *body, size_t len)
{
    cJSON *j;
    if (body == NULL || strlen(body) != len)
        fuzz_fail("%s: no body, or a NUL inside it", what);
    if (!fuzz_utf8_ok(body, len))
        fuzz_fail("%s is not valid UTF-8: %.300s", what, body);
    if ((j = cJSON_Parse(body)) == NULL)
        fuzz_fail("%s does not parse as JSON: %.300s", what, body);
    cJSON_Delete(j);
}

/* Build the public bodies as the server does at start and on reload. Takes s. */
static void check_server_bodies(struct spec *s)
{
    struct spec **specs = calloc(1, sizeof *specs);
    struct board_set *bs = NULL;
    struct kj_err e;
    if (specs == NULL)
        abort();
    specs[0] = s;
    kj_err_clear(&e);
    if (boards_from_specs(specs, 1, &bs, &e) != 0)
        fuzz_fail("boards_from_specs failed on a loaded spec: %s", e.msg);
    check_body("GET /leaderboards/{name}", bs->boards[0].detail, bs->boards[0].detail_len);
    check_body("GET /leaderboards", bs->list, bs->list_len);
    boards_release(bs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size), dir[192];
    struct spec *s = NULL, *again = NULL;
    struct kj_err err;
    int rc;
    pick_dir(text, dir, sizeof dir);
    kj_err_clear(&err);
    rc = spec_parse(text, dir, &s, &err);
    if (rc != 0) {
        if (s != NULL)
            fuzz_fail("spec_parse failed but returned a spec");
        if (err.msg[0] == '\0')
            fuzz_fail("error %s without a message", kj_code_name(err.code));
        if (fuzz_utf8_ok((const char *)data, size) && !fuzz_utf8_ok(err.msg, strlen(err.msg)))
            fuzz_fail("message is not valid UTF-8: %s", err.msg);
        free(text);
        return 0;
    }
    check_spec(s);
    if (spec_parse(text, dir, &again, &err) != 0 || memcmp(s, again, sizeof *s) != 0)
        fuzz_fail("loading the same text twice gives two different specs");
    spec_free(again);
    check_server_bodies(s);
    free(text);
    return 0;
}
