/*
 * test_directive.c - unit tests for common/directive.c, the "//!kjudge" lines.
 *
 * Parses good and bad sources and checks the stored fields, the exact line
 * of every error and its key words; then checks names against a leaderboard's
 * variables, evaluates launches and workspaces for one shape, and walks the
 * NVRTC allow-list. Prints "test_directive: N passed, N failed, N skipped".
 */
#define KT_MAIN
#include "kt.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "directive.h"

#define LAUNCH1 "//!kjudge launch k grid=(1) block=(1)\n"

static const char *const fp8_names[] = {"T", "H", "GS"};
static const int64_t fp8_values[] = {4096, 7168, 128};
static const struct expr_vars FP8 = {3, fp8_names, fp8_values};

/* One parse result that every check reads; static because it is large. */
static struct directives D;

static int parse(const char *src, struct kj_err *e)
{
    kj_err_clear(e);
    return dir_parse(src, strlen(src), &D, e);
}

/* "line N: " at the start of msg, err->line == N, and both words present. */
static int err_is(const struct kj_err *e, int rc, int line, const char *w1, const char *w2)
{
    char prefix[32];
    snprintf(prefix, sizeof prefix, "line %d: ", line);
    return rc == KJ_EINVAL && e->code == KJ_EINVAL && e->line == line &&
           strncmp(e->msg, prefix, strlen(prefix)) == 0 && strstr(e->msg, w1) != NULL &&
           strstr(e->msg, w2) != NULL;
}

#define PARSE_OK(src)                                                             \
    do {                                                                          \
        struct kj_err e_;                                                         \
        int rc_ = parse((src), &e_);                                              \
        KT_CHECK(rc_ == 0, "rc=%d msg='%s' for:\n%s", rc_, e_.msg, (src));        \
    } while (0)

#define PARSE_ERR(src, ln, w1, w2)                                              \
    do {                                                                          \
        struct kj_err e_;                                                         \
        int rc_ = parse((src), &e_);                                              \
        KT_CHECK(err_is(&e_, rc_, (ln), (w1), (w2)),                            \
                 "rc=%d line=%d msg='%s', want line %d with '%s' and '%s'", rc_,  \
                 e_.line, e_.msg, (ln), (w1), (w2));                            \
    } while (0)

static void test_fp8_example(void)
{
    const char *src =
        "//!kjudge leaderboard fp8_quant\n"
        "//!kjudge launch quant grid=(ceil_div(T*H/GS, 8)) block=(32, 8) smem=0\n"
        "extern \"C\" __global__ void quant(const float* x, float* x_q, float* x_s,\n"
        "                                 int T, int H, int GS) { }\n";
    struct dir_dims dims;
    struct kj_err e;
    uint64_t ws = 99;
    int rc;

    PARSE_OK(src);
    KT_CHECK(strcmp(D.leaderboard, "fp8_quant") == 0 && D.leaderboard_line == 1, "lb='%s' %d",
             D.leaderboard, D.leaderboard_line);
    KT_CHECK(D.nlaunch == 1 && D.launch[0].line == 2, "n=%d line=%d", D.nlaunch,
             D.launch[0].line);
    KT_CHECK(strcmp(D.launch[0].kernel, "quant") == 0, "kernel='%s'", D.launch[0].kernel);
    KT_CHECK(D.launch[0].ngrid == 1 && strcmp(D.launch[0].grid[0], "ceil_div(T*H/GS, 8)") == 0,
             "grid '%s'", D.launch[0].grid[0]);
    KT_CHECK(D.launch[0].nblock == 2 && strcmp(D.launch[0].block[0], "32") == 0 &&
                 strcmp(D.launch[0].block[1], "8") == 0,
             "block '%s' '%s'", D.launch[0].block[0], D.launch[0].block[1]);
    KT_CHECK(strcmp(D.launch[0].smem, "0") == 0 && D.launch[0].ncluster == 0, "smem '%s'",
             D.launch[0].smem);
    KT_CHECK(D.workspace[0] == '\0' && D.workspace_line == 0 && D.nnvrtc == 0, "ws '%s'",
             D.workspace);

    kj_err_clear(&e);
    rc = dir_check_names(&D, &FP8, &e);
    KT_CHECK(rc == 0, "check rc=%d msg=%s", rc, e.msg);
    rc = dir_eval_launch(&D.launch[0], &FP8, &dims, &e);
    KT_CHECK(rc == 0 && dims.grid[0] == 28672 && dims.grid[1] == 1 && dims.grid[2] == 1,
             "rc=%d grid %u %u %u msg=%s", rc, dims.grid[0], dims.grid[1], dims.grid[2], e.msg);
    KT_CHECK(dims.block[0] == 32 && dims.block[1] == 8 && dims.block[2] == 1, "block %u %u %u",
             dims.block[0], dims.block[1], dims.block[2]);
    KT_CHECK(dims.smem == 0 && dims.has_cluster == 0 && dims.cluster[0] == 1 &&
                 dims.cluster[1] == 1 && dims.cluster[2] == 1,
             "smem %u cluster %d", dims.smem, dims.has_cluster);
    rc = dir_eval_workspace(&D, &FP8, &ws, &e);
    KT_CHECK(rc == 0 && ws == 0, "rc=%d ws=%" PRIu64, rc, ws);
}

static void test_good_sources(void)
{
    /* Keys in any order, several launches, cluster, blanks and tabs. */
    PARSE_OK("#include <cuda_fp16.h>\n"
             "\n"
             "  \t//!kjudge   launch\tk1 smem=(T * 4) block=(256) cluster=(2, 1,1)  grid=(T/2, H, 1)\n"
             "// a comment\n"
             "//!kjudge launch k2 grid = (max(1, T / 2), (H + 1) / 2) block= ( 64 , 2 , 2 )\t\n"
             "//!kjudge workspace T * H * 4\n"
             "//!kjudge nvrtc --use_fast_math -maxrregcount=128\n"
             "/*\n"
             "//!kjudge nvrtc -DBLOCK=64 --ftz=true\n"
             "*/\n"
             "int x; //!kjudge launch ignored grid=(0) block=(0)\n"
             "// !kjudge launch ignored2\n"
             "//kjudge launch ignored3\n"
             "//!kjudge launch k3 grid=(1) block=(1) smem=T>1024?49152:0");
    KT_CHECK(D.nlaunch == 3, "nlaunch=%d", D.nlaunch);
    KT_CHECK(D.launch[0].line == 3 && D.launch[1].line == 5 && D.launch[2].line == 14,
             "lines %d %d %d", D.launch[0].line, D.launch[1].line, D.launch[2].line);
    KT_CHECK(strcmp(D.launch[0].kernel, "k1") == 0 && strcmp(D.launch[0].smem, "(T * 4)") == 0,
             "'%s' '%s'", D.launch[0].kernel, D.launch[0].smem);
    KT_CHECK(D.launch[0].ncluster == 3 && strcmp(D.launch[0].cluster[0], "2") == 0 &&
                 strcmp(D.launch[0].cluster[2], "1") == 0,
             "cluster %d", D.launch[0].ncluster);
    KT_CHECK(D.launch[0].ngrid == 3 && strcmp(D.launch[0].grid[0], "T/2") == 0 &&
                 strcmp(D.launch[0].grid[1], "H") == 0,
             "grid %d '%s'", D.launch[0].ngrid, D.launch[0].grid[0]);
    KT_CHECK(D.launch[1].ngrid == 2 && strcmp(D.launch[1].grid[0], "max(1, T / 2)") == 0 &&
                 strcmp(D.launch[1].grid[1], "(H + 1) / 2") == 0,
             "'%s' '%s'", D.launch[1].grid[0], D.launch[1].grid[1]);
    KT_CHECK(D.launch[1].nblock == 3 && strcmp(D.launch[1].block[0], "64") == 0 &&
                 strcmp(D.launch[1].block[2], "2") == 0 && D.launch[1].smem[0] == '\0',
             "block '%s'", D.launch[1].block[0]);
    KT_CHECK(strcmp(D.workspace, "T * H * 4") == 0 && D.workspace_line == 6, "ws '%s' %d",
             D.workspace, D.workspace_line);
    KT_CHECK(D.nnvrtc == 4 && strcmp(D.nvrtc[0], "--use_fast_math") == 0 &&
                 strcmp(D.nvrtc[1], "-maxrregcount=128") == 0 &&
                 strcmp(D.nvrtc[2], "-DBLOCK=64") == 0 && strcmp(D.nvrtc[3], "--ftz=true") == 0,
             "nvrtc %d", D.nnvrtc);
    KT_CHECK(D.nvrtc_line[0] == 7 && D.nvrtc_line[1] == 7 && D.nvrtc_line[2] == 9 &&
                 D.nvrtc_line[3] == 9,
             "nvrtc lines %d %d", D.nvrtc_line[0], D.nvrtc_line[2]);
    KT_CHECK(D.leaderboard[0] == '\0' && D.leaderboard_line == 0, "lb '%s'", D.leaderboard);
}

/* Evaluate what test_good_sources parsed. */
static void test_good_sources_eval(void)
{
    struct dir_dims dims;
    struct kj_err e;
    uint64_t ws = 0;
    int rc;

    kj_err_clear(&e);
    KT_CHECK(dir_check_names(&D, &FP8, &e) == 0, "check: %s", e.msg);
    rc = dir_eval_launch(&D.launch[0], &FP8, &dims, &e);
    KT_CHECK(rc == 0 && dims.grid[0] == 2048 && dims.grid[1] == 7168 && dims.grid[2] == 1 &&
                 dims.block[0] == 256 && dims.block[1] == 1 && dims.smem == 16384 &&
                 dims.has_cluster == 1 && dims.cluster[0] == 2 && dims.cluster[1] == 1,
             "rc=%d %s", rc, e.msg);
    rc = dir_eval_launch(&D.launch[1], &FP8, &dims, &e);
    KT_CHECK(rc == 0 && dims.grid[0] == 2048 && dims.grid[1] == 3584 && dims.grid[2] == 1 &&
                 dims.block[0] == 64 && dims.block[2] == 2 && dims.smem == 0 &&
                 dims.has_cluster == 0,
             "rc=%d %s", rc, e.msg);
    rc = dir_eval_launch(&D.launch[2], &FP8, &dims, &e);
    KT_CHECK(rc == 0 && dims.smem == 49152, "rc=%d smem=%u", rc, dims.smem);
    rc = dir_eval_workspace(&D, &FP8, &ws, &e);
    KT_CHECK(rc == 0 && ws == UINT64_C(117440512), "rc=%d ws=%" PRIu64, rc, ws);
}

static void test_kernel_names(void)
{
    PARSE_OK("//!kjudge launch quant<128,8> grid=(1) block=(1)\n");
    KT_CHECK(strcmp(D.launch[0].kernel, "quant<128,8>") == 0, "'%s'", D.launch[0].kernel);
    PARSE_OK("//!kjudge launch quant<128, float> grid=(1) block=(1)\n");
    KT_CHECK(strcmp(D.launch[0].kernel, "quant<128, float>") == 0, "'%s'", D.launch[0].kernel);
    PARSE_OK("//!kjudge launch ns::k<a<1>, 2>   block=(1) grid=(1)\n");
    KT_CHECK(strcmp(D.launch[0].kernel, "ns::k<a<1>, 2>") == 0, "'%s'", D.launch[0].kernel);
    PARSE_OK("//!kjudge launch _k9 grid=(1) block=(1)\n");
    KT_CHECK(strcmp(D.launch[0].kernel, "_k9") == 0, "'%s'", D.launch[0].kernel);

    PARSE_ERR("//!kjudge launch\n", 1, "missing kernel name", "");
    PARSE_ERR("\n//!kjudge launch   \n", 2, "missing kernel name", "");
    PARSE_ERR("//!kjudge launch grid=(1) block=(1)\n", 1, "missing kernel name", "grid");
    PARSE_ERR("//!kjudge launch grid = (1) block=(1)\n", 1, "missing kernel name", "grid");
    PARSE_ERR("//!kjudge launch 1k grid=(1) block=(1)\n", 1, "kernel name", "'1k'");
    PARSE_ERR("//!kjudge launch k<1 grid=(1) block=(1)\n", 1, "unbalanced '<'", "kernel");
    PARSE_ERR("//!kjudge launch k> grid=(1) block=(1)\n", 1, "unbalanced '>'", "kernel");
    PARSE_ERR("//!kjudge launch k(1) grid=(1) block=(1)\n", 1, "bad character '('", "kernel");
    PARSE_ERR("//!kjudge launch k<\"x\"> grid=(1) block=(1)\n", 1, "bad character", "kernel");
    PARSE_ERR("//!kjudge launch k,j grid=(1) block=(1)\n", 1, "bad character ','", "kernel");

    char src[512];
    memset(src, 0, sizeof src);
    strcpy(src, "//!kjudge launch ");
    memset(src + strlen(src), 'k', DIR_MAX_KERNEL - 1);
    strcat(src, " grid=(1) block=(1)\n");
    PARSE_OK(src);
    KT_CHECK(strlen(D.launch[0].kernel) == DIR_MAX_KERNEL - 1, "len %zu",
             strlen(D.launch[0].kernel));
    memset(src, 0, sizeof src);
    strcpy(src, "//!kjudge launch ");
    memset(src + strlen(src), 'k', DIR_MAX_KERNEL);
    strcat(src, " grid=(1) block=(1)\n");
    PARSE_ERR(src, 1, "kernel name too long", "127");
}

static void test_launch_errors(void)
{
    PARSE_ERR("// x\n//!kjudge launch k block=(1)\n", 2, "missing grid", "");
    PARSE_ERR("//!kjudge launch k grid=(1)\n", 1, "missing block", "");
    PARSE_ERR("//!kjudge launch k smem=0\n", 1, "missing grid", "");
    PARSE_ERR("\n\n//!kjudge launch k grid=(1) block=(1) grid=(2)\n", 3, "duplicate key 'grid'",
              "");
    PARSE_ERR("//!kjudge launch k grid=(1) block=(1) smem=0 smem=1\n", 1, "duplicate key 'smem'",
              "");
    PARSE_ERR("//!kjudge launch k grid=(1) block=(1) threads=(1)\n", 1, "unknown key 'threads'",
              "grid, block, smem or cluster");
    PARSE_ERR("//!kjudge launch k grid=(1) block=(1) extra\n", 1, "expected key=value", "extra");
    PARSE_ERR("//!kjudge launch k grid=(1) block=(1) smem=T + 4\n", 1, "expected key=value",
              "'+'");
    PARSE_ERR("//!kjudge launch k grid=(1 block=(1)\n", 1, "unbalanced parentheses",
              "missing ')'");
    PARSE_ERR("//!kjudge launch k grid=(1)) block=(1)\n", 1, "unbalanced parentheses", "grid");
    PARSE_ERR("//!kjudge launch k grid=(min(1,2) block=(1)\n", 1, "unbalanced", "grid");
    PARSE_ERR("//!kjudge launch k grid=4 block=(1)\n", 1, "grid must be a parenthesized list",
              "'4'");
    PARSE_ERR("//!kjudge launch k grid=(1)+(2) block=(1)\n", 1, "parenthesized list", "grid");
    PARSE_ERR("//!kjudge launch k grid=(1) block=\n", 1, "block", "missing value");
    PARSE_ERR("//!kjudge launch k grid=(1) block=(1) smem=\n", 1, "smem", "missing value");
    PARSE_ERR("//!kjudge launch k grid=(1,2,3,4) block=(1)\n", 1, "more than 3 components",
              "grid");
    PARSE_ERR("//!kjudge launch k grid=(1) block=(32,,8)\n", 1, "empty component 2", "block");
    PARSE_ERR("//!kjudge launch k grid=() block=(1)\n", 1, "empty component 1", "grid");
    PARSE_ERR("//!kjudge launch k grid=(1, ) block=(1)\n", 1, "empty component 2", "grid");
    PARSE_ERR("//!kjudge launch k grid=(1) block=(1) cluster=(,1)\n", 1, "empty component 1",
              "cluster");
    PARSE_ERR("//!kjudge launch k grid=(T+) block=(1)\n", 1, "grid.x: unexpected end", "T+");
    PARSE_ERR("//!kjudge launch k grid=(1, 2*) block=(1)\n", 1, "grid.y", "unexpected end");
    PARSE_ERR("//!kjudge launch k grid=(1) block=(1, 1, foo(2))\n", 1, "block.z",
              "unknown function 'foo'");
    PARSE_ERR("//!kjudge launch k grid=(1) block=(1) smem=1/\n", 1, "smem", "unexpected end");
    PARSE_ERR("//!kjudge launch k grid=(1) block=(1) smem=010\n", 1, "smem", "leading zero");
    PARSE_ERR("//!kjudge launch k grid=(9223372036854775808) block=(1)\n", 1, "grid.x",
              "too large");
    PARSE_ERR("//!kjudge launch k grid=(min(1)) block=(1)\n", 1, "grid.x", "takes 2 arguments");

    /* One component may be as long as the field holds, not longer. */
    char src[700];
    strcpy(src, "//!kjudge launch k block=(1) grid=(1");
    for (int i = 0; i < 127; i++)
        strcat(src, "+1");
    strcat(src, ")\n");
    PARSE_OK(src);
    KT_CHECK(strlen(D.launch[0].grid[0]) == EXPR_MAX_LEN - 1, "len %zu",
             strlen(D.launch[0].grid[0]));
    strcpy(src, "//!kjudge launch k block=(1) grid=(11");
    for (int i = 0; i < 127; i++)
        strcat(src, "+1");
    strcat(src, ")\n");
    PARSE_ERR(src, 1, "grid.x: expression too long", "max 255");
}

static void test_launch_count(void)
{
    char src[1024] = "";
    int i;

    for (i = 0; i < DIR_MAX_LAUNCHES; i++)
        strcat(src, LAUNCH1);
    PARSE_OK(src);
    KT_CHECK(D.nlaunch == DIR_MAX_LAUNCHES && D.launch[7].line == 8, "n=%d", D.nlaunch);
    strcat(src, "// fine\n" LAUNCH1);
    PARSE_ERR(src, 10, "too many launch lines", "max 8");
}

static void test_other_verbs(void)
{
    char src[512];

    PARSE_ERR(LAUNCH1 "//!kjudge lunch k grid=(1) block=(1)\n", 2, "unknown directive 'lunch'",
              "leaderboard, gpu, mode, launch, workspace or nvrtc");
    PARSE_ERR(LAUNCH1 "//!kjudge Launch k grid=(1) block=(1)\n", 2, "unknown directive", "");
    PARSE_ERR(LAUNCH1 "\n//!kjudge\n", 3, "without a directive", "");
    PARSE_ERR(LAUNCH1 "//!kjudge   \t\n", 2, "without a directive", "");
    PARSE_ERR("//!kjudgelaunch k grid=(1) block=(1)\n" LAUNCH1, 1, "followed by a blank", "");
    PARSE_ERR("//!kjudge:launch\n", 1, "followed by a blank", "");

    PARSE_OK("//!kjudge leaderboard gated_deltanet_2\n" LAUNCH1);
    KT_CHECK(strcmp(D.leaderboard, "gated_deltanet_2") == 0, "'%s'", D.leaderboard);
    PARSE_ERR(LAUNCH1 "//!kjudge leaderboard\n", 2, "leaderboard: missing name", "");
    PARSE_ERR("//!kjudge leaderboard FP8\n" LAUNCH1, 1, "bad name 'FP8'", "a-z");
    PARSE_ERR("//!kjudge leaderboard fp8-quant\n" LAUNCH1, 1, "bad name", "");
    PARSE_ERR("//!kjudge leaderboard fp8 quant\n" LAUNCH1, 1, "unexpected 'quant'", "");
    PARSE_ERR("//!kjudge leaderboard a\n" LAUNCH1 "//!kjudge leaderboard a\n", 3,
              "leaderboard given twice", "first on line 1");
    strcpy(src, "//!kjudge leaderboard ");
    memset(src + strlen(src), 'a', 63);
    strcpy(src + 22 + 63, "\n" LAUNCH1);
    PARSE_OK(src);
    KT_CHECK(strlen(D.leaderboard) == 63, "len %zu", strlen(D.leaderboard));
    strcpy(src, "//!kjudge leaderboard ");
    memset(src + strlen(src), 'a', 64);
    strcpy(src + 22 + 64, "\n" LAUNCH1);
    PARSE_ERR(src, 1, "name too long", "63");

    PARSE_ERR(LAUNCH1 "//!kjudge workspace\n", 2, "workspace: missing", "");
    PARSE_ERR(LAUNCH1 "//!kjudge workspace 1\n//!kjudge workspace 2\n", 3,
              "workspace given twice", "first on line 2");
    PARSE_ERR(LAUNCH1 "//!kjudge workspace T *\n", 2, "workspace: unexpected end", "");
    PARSE_ERR(LAUNCH1 "//!kjudge workspace T H\n", 2, "workspace", "unexpected 'H'");
    PARSE_OK(LAUNCH1 "//!kjudge workspace   (T + 1) * 8   \n");
    KT_CHECK(strcmp(D.workspace, "(T + 1) * 8") == 0, "'%s'", D.workspace);
}

/* gpu and mode: where a submission may name its GPU type and mode itself. */
static void test_gpu_mode_verbs(void)
{
    char src[512];

    PARSE_OK("//!kjudge gpu H200\n//!kjudge mode leaderboard\n" LAUNCH1);
    KT_CHECK(strcmp(D.gpu, "H200") == 0 && D.gpu_line == 1, "gpu '%s' %d", D.gpu, D.gpu_line);
    KT_CHECK(strcmp(D.mode, "leaderboard") == 0 && D.mode_line == 2, "mode '%s' %d", D.mode,
             D.mode_line);
    PARSE_OK(LAUNCH1 "  //!kjudge gpu\tB200-sxm_2  \r\n//!kjudge mode test\n");
    KT_CHECK(strcmp(D.gpu, "B200-sxm_2") == 0 && D.gpu_line == 2, "gpu '%s'", D.gpu);
    KT_CHECK(strcmp(D.mode, "test") == 0, "mode '%s'", D.mode);
    PARSE_OK(LAUNCH1);
    KT_CHECK(D.gpu[0] == '\0' && D.gpu_line == 0 && D.mode[0] == '\0' && D.mode_line == 0,
             "absent: gpu '%s' mode '%s'", D.gpu, D.mode);
    PARSE_OK("//!kjudge mode benchmark\n" LAUNCH1);
    KT_CHECK(strcmp(D.mode, "benchmark") == 0, "mode '%s'", D.mode);

    PARSE_ERR(LAUNCH1 "//!kjudge gpu\n", 2, "gpu: missing name", "");
    PARSE_ERR("//!kjudge gpu H 200\n" LAUNCH1, 1, "gpu: unexpected '200'", "");
    PARSE_ERR("//!kjudge gpu H200!\n" LAUNCH1, 1, "gpu: bad name 'H200!'", "A-Z");
    PARSE_ERR("//!kjudge gpu H200\n" LAUNCH1 "//!kjudge gpu B200\n", 3, "gpu given twice",
              "first on line 1");
    strcpy(src, "//!kjudge gpu ");
    memset(src + strlen(src), 'G', 64);
    strcpy(src + 14 + 64, "\n" LAUNCH1);
    PARSE_ERR(src, 1, "gpu: name too long", "63");

    PARSE_ERR(LAUNCH1 "//!kjudge mode\n", 2, "mode: missing", "test, benchmark or leaderboard");
    PARSE_ERR("//!kjudge mode fast\n" LAUNCH1, 1, "mode: 'fast' is not", "test, benchmark or "
              "leaderboard");
    PARSE_ERR("//!kjudge mode Test\n" LAUNCH1, 1, "mode: 'Test' is not", "");
    PARSE_ERR("//!kjudge mode test now\n" LAUNCH1, 1, "mode: unexpected 'now'", "");
    PARSE_ERR("//!kjudge mode test\n//!kjudge mode test\n" LAUNCH1, 2, "mode given twice",
              "first on line 1");
}

static void test_nvrtc_lines(void)
{
    char src[2048];
    int i;

    PARSE_OK(LAUNCH1 "//!kjudge nvrtc --fmad=false   --prec-div=true\t-lineinfo\n");
    KT_CHECK(D.nnvrtc == 3 && strcmp(D.nvrtc[2], "-lineinfo") == 0 && D.nvrtc_line[2] == 2,
             "n=%d", D.nnvrtc);
    PARSE_ERR(LAUNCH1 "//!kjudge nvrtc\n", 2, "nvrtc: no options", "");
    PARSE_ERR(LAUNCH1 "\n//!kjudge nvrtc --use_fast_math -I/etc\n", 3,
              "option '-I/etc' not allowed", "--use_fast_math");
    PARSE_ERR(LAUNCH1 "//!kjudge nvrtc --include-path=/etc\n", 2, "not allowed", "-lineinfo");
    PARSE_ERR(LAUNCH1 "//!kjudge nvrtc -arch=sm_90\n", 2, "not allowed", "-DNAME[=VALUE]");
    PARSE_ERR(LAUNCH1 "//!kjudge nvrtc --maxrregcount=8\n", 2, "not allowed", "16..255)");
    /* The whole allow-list fits in the message, even for a long option. */
    PARSE_ERR(LAUNCH1 "//!kjudge nvrtc --include-path=/a/very/long/path/to/somewhere/else\n", 2,
              "'--include-path=/a/ve...' not allowed",
              "allowed: --use_fast_math --ftz=B --prec-div=B --prec-sqrt=B --fmad=B "
              "--maxrregcount=N --extra-device-vectorization --generate-line-info -lineinfo "
              "-DNAME[=VALUE] (B: true|false, N: 16..255)");
    strcpy(src, LAUNCH1 "//!kjudge nvrtc -D");
    memset(src + strlen(src), 'X', DIR_MAX_OPT);
    strcat(src, "\n");
    PARSE_ERR(src, 2, "nvrtc: option", "too long");

    strcpy(src, LAUNCH1 "//!kjudge nvrtc");
    for (i = 0; i < DIR_MAX_NVRTC; i++)
        strcat(src, " -lineinfo");
    strcat(src, "\n");
    PARSE_OK(src);
    KT_CHECK(D.nnvrtc == DIR_MAX_NVRTC, "n=%d", D.nnvrtc);
    strcat(src, "//!kjudge nvrtc --use_fast_math\n");
    PARSE_ERR(src, 3, "too many nvrtc options", "max 16");
}

static void test_source_shapes(void)
{
    static const char crlf[] = "//!kjudge leaderboard fp8_quant\r\n"
                               "//!kjudge launch quant<8, 2> grid=(T) block=(32, 8) smem=0\r\n"
                               "\r\n"
                               "//!kjudge nvrtc --use_fast_math\r\n";
    static const char crlf_bad[] = "// x\r\n\r\n//!kjudge launch k grid=(1)\r\n" LAUNCH1;
    static const char nul_src[] = "// x\n" LAUNCH1 "int a;\0 //!kjudge launch z grid=(1)\n";
    struct kj_err e;
    int rc;

    PARSE_OK(crlf);
    KT_CHECK(strcmp(D.leaderboard, "fp8_quant") == 0, "'%s'", D.leaderboard);
    KT_CHECK(strcmp(D.launch[0].kernel, "quant<8, 2>") == 0 && D.launch[0].line == 2 &&
                 strcmp(D.launch[0].smem, "0") == 0,
             "'%s' smem '%s'", D.launch[0].kernel, D.launch[0].smem);
    KT_CHECK(D.nnvrtc == 1 && strcmp(D.nvrtc[0], "--use_fast_math") == 0 && D.nvrtc_line[0] == 4,
             "'%s'", D.nvrtc[0]);
    PARSE_ERR(crlf_bad, 3, "missing block", "");

    /* A NUL before len is an error naming its line; src need not end in NUL. */
    kj_err_clear(&e);
    rc = dir_parse(nul_src, sizeof nul_src - 1, &D, &e);
    KT_CHECK(err_is(&e, rc, 3, "NUL byte", ""), "rc=%d line=%d msg=%s", rc, e.line, e.msg);
    kj_err_clear(&e);
    rc = dir_parse(nul_src, 5 + strlen(LAUNCH1) + 6, &D, &e);
    KT_CHECK(rc == 0 && D.nlaunch == 1, "rc=%d msg=%s", rc, e.msg);
    /* len cuts the source: the last directive is not seen at all. */
    {
        char *buf = malloc(strlen(LAUNCH1) * 2);
        memcpy(buf, LAUNCH1, strlen(LAUNCH1));
        memcpy(buf + strlen(LAUNCH1), LAUNCH1, strlen(LAUNCH1));
        kj_err_clear(&e);
        rc = dir_parse(buf, strlen(LAUNCH1) * 2, &D, &e);
        KT_CHECK(rc == 0 && D.nlaunch == 2, "rc=%d n=%d msg=%s", rc, D.nlaunch, e.msg);
        rc = dir_parse(buf, strlen(LAUNCH1) * 2 - 3, &D, &e);
        KT_CHECK(rc == KJ_EINVAL && e.line == 2 && strstr(e.msg, "block") != NULL,
                 "rc=%d msg=%s", rc, e.msg);
        free(buf);
    }

}

static void test_no_launch_and_long_line(void)
{
    struct kj_err e;
    int rc;

    /* No launch line: the one error without a line. */
    kj_err_clear(&e);
    rc = dir_parse("//!kjudge leaderboard x\nint main;\n", 34, &D, &e);
    KT_CHECK(rc == KJ_EINVAL && e.line == 0 &&
                 strcmp(e.msg, "no '//!kjudge launch' line: a submission must declare at "
                               "least one kernel launch") == 0,
             "rc=%d msg=%s", rc, e.msg);
    rc = dir_parse("", 0, &D, &e);
    KT_CHECK(rc == KJ_EINVAL && strstr(e.msg, "no '//!kjudge launch' line") != NULL, "rc=%d", rc);
    rc = dir_parse(NULL, 0, &D, &e);
    KT_CHECK(rc == KJ_EINVAL && strstr(e.msg, "no '//!kjudge launch' line") != NULL, "rc=%d", rc);

    /* A directive line longer than the parser's buffer. */
    {
        size_t n = 5000;
        char *big = malloc(n + 64);
        strcpy(big, "//!kjudge nvrtc");
        memset(big + strlen(big), ' ', n);
        strcpy(big + 15 + n, "-lineinfo\n" LAUNCH1);
        kj_err_clear(&e);
        rc = dir_parse(big, strlen(big), &D, &e);
        KT_CHECK(err_is(&e, rc, 1, "directive too long", ""), "rc=%d msg=%s", rc, e.msg);
        free(big);
    }
}

#define CHECK_NAMES_ERR(src, ln, w1, w2)                                       \
    do {                                                                         \
        struct kj_err e_;                                                        \
        int rc_ = parse((src), &e_);                                             \
        KT_CHECK(rc_ == 0, "parse rc=%d msg=%s", rc_, e_.msg);                   \
        kj_err_clear(&e_);                                                       \
        rc_ = dir_check_names(&D, &FP8, &e_);                                    \
        KT_CHECK(err_is(&e_, rc_, (ln), (w1), (w2)), "rc=%d line=%d msg='%s'", \
                 rc_, e_.line, e_.msg);                                          \
    } while (0)

static void test_check_names(void)
{
    const struct expr_vars none = {0, NULL, NULL};
    struct kj_err e;
    int rc;

    CHECK_NAMES_ERR("// x\n//!kjudge launch k grid=(X*2) block=(1)\n", 2,
                    "unknown variable 'X' in grid.x (known: T, H, GS)", "");
    CHECK_NAMES_ERR(LAUNCH1 "//!kjudge launch k grid=(T) block=(32, t)\n", 2,
                    "unknown variable 't' in block.y", "known: T, H, GS");
    CHECK_NAMES_ERR(LAUNCH1 LAUNCH1 "//!kjudge launch k grid=(1) block=(1) smem=GS*N\n", 3,
                    "unknown variable 'N' in smem", "");
    CHECK_NAMES_ERR("//!kjudge launch k grid=(1) block=(1) cluster=(1,1,Q)\n", 1,
                    "unknown variable 'Q' in cluster.z", "");
    CHECK_NAMES_ERR(LAUNCH1 "//!kjudge workspace T*H*bytes\n", 2,
                    "unknown variable 'bytes' in workspace", "");
    CHECK_NAMES_ERR(LAUNCH1 "//!kjudge workspace 0 ? X : 1\n", 2, "unknown variable 'X'", "");

    PARSE_OK("//!kjudge launch k grid=(T) block=(H)\n");
    kj_err_clear(&e);
    rc = dir_check_names(&D, &none, &e);
    KT_CHECK(err_is(&e, rc, 1, "unknown variable 'T' in grid.x", "(known: none)"), "msg=%s",
             e.msg);
    rc = dir_check_names(&D, NULL, &e);
    KT_CHECK(rc == 0, "rc=%d", rc);
}

#define EVAL_LAUNCH_ERR(src, ln, w1, w2)                                       \
    do {                                                                         \
        struct kj_err e_;                                                        \
        struct dir_dims d_;                                                      \
        int rc_ = parse((src), &e_);                                             \
        KT_CHECK(rc_ == 0, "parse rc=%d msg=%s", rc_, e_.msg);                   \
        kj_err_clear(&e_);                                                       \
        rc_ = dir_eval_launch(&D.launch[D.nlaunch - 1], &FP8, &d_, &e_);         \
        KT_CHECK(err_is(&e_, rc_, (ln), (w1), (w2)), "rc=%d line=%d msg='%s'", \
                 rc_, e_.line, e_.msg);                                          \
    } while (0)

static void test_eval_launch(void)
{
    struct dir_dims dims;
    struct kj_err e;
    int rc;

    EVAL_LAUNCH_ERR(LAUNCH1 "//!kjudge launch k grid=(1, T-4096) block=(1)\n", 2,
                    "grid.y = 0, must be >= 1", "");
    EVAL_LAUNCH_ERR(LAUNCH1 "//!kjudge launch k grid=(1) block=(4294967296)\n", 2,
                    "block.x = 4294967296 is too large", "max 2147483647");
    EVAL_LAUNCH_ERR("//!kjudge launch k grid=(T*H*GS) block=(1)\n", 1,
                    "grid.x = 3758096384 is too large", "");
    EVAL_LAUNCH_ERR("//!kjudge launch k grid=(2147483648) block=(1)\n", 1, "grid.x", "too large");
    EVAL_LAUNCH_ERR("//!kjudge launch k grid=(1) block=(1,1,-5)\n", 1, "block.z = -5",
                    "must be >= 1");
    EVAL_LAUNCH_ERR("//!kjudge launch k grid=(1) block=(1) cluster=(0)\n", 1, "cluster.x = 0",
                    ">= 1");
    EVAL_LAUNCH_ERR("//!kjudge launch k grid=(1) block=(1) smem=-1\n", 1,
                    "smem = -1, must be >= 0", "");
    EVAL_LAUNCH_ERR("//!kjudge launch k grid=(1) block=(1) smem=4294967296\n", 1,
                    "smem = 4294967296 is too large", "4294967295");
    EVAL_LAUNCH_ERR("\n//!kjudge launch k grid=(T/(GS-128)) block=(1)\n", 2,
                    "grid.x: division by zero in 'T/(GS-128)' at column 2", "");
    EVAL_LAUNCH_ERR("//!kjudge launch k grid=(1) block=(1) smem=(T%(H-7168))\n", 1, "smem",
                    "modulo by zero");
    EVAL_LAUNCH_ERR("//!kjudge launch k grid=(T*T*T*T*T*T) block=(1)\n", 1, "grid.x",
                    "overflow");
    EVAL_LAUNCH_ERR("//!kjudge launch k grid=(1) block=(1, ceil_div(T, GS-128))\n", 1, "block.y",
                    "ceil_div divisor must be > 0");
    EVAL_LAUNCH_ERR("//!kjudge launch k grid=(Z) block=(1)\n", 1, "grid.x",
                    "unknown variable 'Z'");

    /* The largest values that pass. */
    PARSE_OK("//!kjudge launch k grid=(2147483647, 65535, 65535) block=(1024) "
             "smem=4294967295 cluster=(16)\n");
    kj_err_clear(&e);
    rc = dir_eval_launch(&D.launch[0], &FP8, &dims, &e);
    KT_CHECK(rc == 0 && dims.grid[0] == 2147483647u && dims.grid[2] == 65535 &&
                 dims.smem == 4294967295u && dims.has_cluster == 1 && dims.cluster[0] == 16 &&
                 dims.cluster[1] == 1 && dims.cluster[2] == 1,
             "rc=%d msg=%s", rc, e.msg);
    PARSE_OK("//!kjudge launch k grid=(GS == 0 ? 1 : T/GS) block=(1)\n");
    rc = dir_eval_launch(&D.launch[0], &FP8, &dims, &e);
    KT_CHECK(rc == 0 && dims.grid[0] == 32, "rc=%d grid %u", rc, dims.grid[0]);

    /* A launch that dir_parse did not fill is our bug, not the user's. */
    {
        struct dir_launch empty;
        memset(&empty, 0, sizeof empty);
        rc = dir_eval_launch(&empty, &FP8, &dims, &e);
        KT_CHECK(rc == KJ_EINTERNAL, "rc=%d", rc);
    }
}

static void test_eval_workspace(void)
{
    struct kj_err e;
    uint64_t ws = 5;
    int rc;

    PARSE_OK(LAUNCH1 "//!kjudge workspace 17179869184\n");
    rc = dir_eval_workspace(&D, &FP8, &ws, &e);
    KT_CHECK(rc == 0 && ws == UINT64_C(17179869184), "rc=%d ws=%" PRIu64, rc, ws);
    PARSE_OK(LAUNCH1 "\n\n//!kjudge workspace 17179869184 + 1\n");
    kj_err_clear(&e);
    rc = dir_eval_workspace(&D, &FP8, &ws, &e);
    KT_CHECK(err_is(&e, rc, 4, "workspace = 17179869185 is too large", "17179869184"),
             "rc=%d msg=%s", rc, e.msg);
    PARSE_OK("//!kjudge workspace -T\n" LAUNCH1);
    kj_err_clear(&e);
    rc = dir_eval_workspace(&D, &FP8, &ws, &e);
    KT_CHECK(err_is(&e, rc, 1, "workspace = -4096, must be >= 0", ""), "msg=%s", e.msg);
    PARSE_OK(LAUNCH1 "//!kjudge workspace T/(H-7168)\n");
    kj_err_clear(&e);
    rc = dir_eval_workspace(&D, &FP8, &ws, &e);
    KT_CHECK(err_is(&e, rc, 2, "workspace: division by zero", "column 2"), "msg=%s", e.msg);
    PARSE_OK(LAUNCH1);
    ws = 7;
    rc = dir_eval_workspace(&D, &FP8, &ws, &e);
    KT_CHECK(rc == 0 && ws == 0, "rc=%d ws=%" PRIu64, rc, ws);
}

static void test_allow_list(void)
{
    static const char *const good[] = {
        "--use_fast_math", "-use_fast_math", "--ftz=true", "--ftz=false", "--prec-div=true",
        "--prec-div=false", "--prec-sqrt=true", "--prec-sqrt=false", "--fmad=true",
        "--fmad=false", "-maxrregcount=16", "-maxrregcount=255", "--maxrregcount=64",
        "--extra-device-vectorization", "-lineinfo", "--generate-line-info", "-DX", "-D_Y1",
        "-DBLOCK=64", "-DSCALE=1.5", "-DNAME=a_b.c"};
    static const char *const bad[] = {
        "", "-I/etc", "-I", "--include-path=/etc", "-include", "--pre-include=/etc/passwd",
        "-arch=sm_90", "--gpu-architecture=compute_90", "--use_fast_math ", " -lineinfo",
        "--use-fast-math", "--ftz", "--ftz=", "--ftz=1", "--ftz=True", "--ftz=truex",
        "--fmad=false;", "-maxrregcount=15", "-maxrregcount=256", "-maxrregcount=016",
        "-maxrregcount=", "-maxrregcount=64k", "-maxrregcount=99999", "--maxrregcount=-32",
        "-maxrregcount 64", "-D", "-D1X", "-DX=", "-DX=a/b", "-DX=\"1\"", "-DX=1 2", "-DX Y",
        "-D X", "-DX==1", "-DX-Y", "-U", "-UX", "-E", "--device-as-default-execution-space",
        "-default-device", "--dopt=on", "-G", "--lineinfo", "-lineinfo=1"};
    char longdef[DIR_MAX_OPT + 8];
    size_t i;

    for (i = 0; i < sizeof good / sizeof good[0]; i++)
        KT_CHECK(dir_nvrtc_allowed(good[i]) == 1, "'%s' should be allowed", good[i]);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
        KT_CHECK(dir_nvrtc_allowed(bad[i]) == 0, "'%s' should be refused", bad[i]);
    KT_CHECK(dir_nvrtc_allowed(NULL) == 0, "NULL");
    memset(longdef, 0, sizeof longdef);
    longdef[0] = '-';
    longdef[1] = 'D';
    memset(longdef + 2, 'A', DIR_MAX_OPT - 3);
    KT_CHECK(dir_nvrtc_allowed(longdef) == 1, "len %zu", strlen(longdef));
    longdef[DIR_MAX_OPT - 1] = 'A';
    KT_CHECK(dir_nvrtc_allowed(longdef) == 0, "len %zu", strlen(longdef));
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_fp8_example());
    KT_RUN(test_good_sources());
    KT_RUN(test_good_sources_eval());
    KT_RUN(test_kernel_names());
    KT_RUN(test_launch_errors());
    KT_RUN(test_launch_count());
    KT_RUN(test_other_verbs());
    KT_RUN(test_gpu_mode_verbs());
    KT_RUN(test_nvrtc_lines());
    KT_RUN(test_source_shapes());
    KT_RUN(test_no_launch_and_long_line());
    KT_RUN(test_check_names());
    KT_RUN(test_eval_launch());
    KT_RUN(test_eval_workspace());
    KT_RUN(test_allow_list());
    return kt_done("test_directive");
}
