/*
 * test_pydirective.c - unit tests for common/pydirective.c (the "#!POPCORN"
 * and "#!kjudge" lines of a Python submission), common/sub_lang.c (which
 * language an upload is) and gputype_of_kernelbot (KernelBot's GPU names).
 *
 * Parses good and bad files and checks the fields, the notes, the exact
 * line of every error and its words. Prints
 * "test_pydirective: N passed, N failed, N skipped".
 */
#define KT_MAIN
#include "kt.h"

#include <string.h>

#include "gputype.h"
#include "pydirective.h"
#include "sub_lang.h"

#define KERNEL "def custom_kernel(data: input_t) -> output_t:\n    return data\n"

static struct pydir P;

static int parse(const char *src, struct kj_err *e)
{
    kj_err_clear(e);
    return pydir_parse(src, strlen(src), &P, e);
}

#define PARSE_OK(src)                                                          \
    do {                                                                       \
        struct kj_err e_;                                                      \
        int rc_ = parse((src), &e_);                                           \
        KT_CHECK(rc_ == 0, "rc=%d msg='%s' for:\n%s", rc_, e_.msg, (src));     \
    } while (0)

/* KJ_EINVAL, err->line == ln, "line N: " first, and both words present. */
#define PARSE_ERR(src, ln, w1, w2)                                             \
    do {                                                                       \
        struct kj_err e_;                                                      \
        char pre_[32];                                                         \
        int rc_ = parse((src), &e_);                                           \
        snprintf(pre_, sizeof pre_, "line %d: ", (ln));                        \
        KT_CHECK(rc_ == KJ_EINVAL && e_.line == (ln) &&                        \
                 strncmp(e_.msg, pre_, strlen(pre_)) == 0 &&                   \
                 strstr(e_.msg, (w1)) != NULL && strstr(e_.msg, (w2)) != NULL, \
                 "rc=%d line=%d msg='%s', want line %d with '%s' and '%s'",    \
                 rc_, e_.line, e_.msg, (ln), (w1), (w2));                      \
    } while (0)

static void test_kernelbot_file(void)
{
    PARSE_OK("#!POPCORN leaderboard fp8_quant\n#!POPCORN gpu B200_Nebius\n"
             "from task import input_t, output_t\nimport torch\n" KERNEL);
    KT_CHECK(strcmp(P.leaderboard, "fp8_quant") == 0 && P.leaderboard_line == 1, "board '%s' %d",
             P.leaderboard, P.leaderboard_line);
    KT_CHECK(strcmp(P.gpu, "B200") == 0 && strcmp(P.gpu_written, "B200_Nebius") == 0 &&
             P.gpu_line == 2, "gpu '%s' written '%s' line %d", P.gpu, P.gpu_written, P.gpu_line);
    KT_CHECK(P.custom_kernel_line == 5, "custom_kernel on line %d", P.custom_kernel_line);
    KT_CHECK(strstr(P.notes, "line 2: gpu B200_Nebius is GPU type B200") != NULL, "notes '%s'",
             P.notes);
    /* CRLF, blanks before the lines, "gpus", an H100 on Modal */
    PARSE_OK("  #!POPCORN leaderboard  vectoradd \r\n\t#!POPCORN gpus H100_Modal\r\n" KERNEL);
    KT_CHECK(strcmp(P.leaderboard, "vectoradd") == 0 && strcmp(P.gpu, "H100") == 0,
             "'%s' '%s'", P.leaderboard, P.gpu);
    /* kjudge's own lines; no mapping, no note */
    PARSE_OK("#!kjudge leaderboard matmul\n#!kjudge gpu H200\n" KERNEL);
    KT_CHECK(strcmp(P.leaderboard, "matmul") == 0 && strcmp(P.gpu, "H200") == 0 &&
             P.notes[0] == '\0', "'%s' '%s' notes '%s'", P.leaderboard, P.gpu, P.notes);
    /* nothing named: fine, the request names them */
    PARSE_OK(KERNEL);
    KT_CHECK(P.leaderboard[0] == '\0' && P.gpu[0] == '\0' && P.leaderboard_line == 0 &&
             P.gpu_line == 0, "fields set from nothing");
    /* both forms naming the same board and GPU type */
    PARSE_OK("#!POPCORN leaderboard fp8_quant\n#!kjudge leaderboard fp8_quant\n"
             "#!POPCORN gpu B200_Nebius\n#!kjudge gpu B200\n" KERNEL);
    KT_CHECK(P.leaderboard_line == 1 && P.gpu_line == 3, "first lines %d %d", P.leaderboard_line,
             P.gpu_line);
    /* custom_kernel bound by assignment, and "def custom_kernel (" */
    PARSE_OK("import torch\ncustom_kernel = torch.compile(lambda d: d)\n");
    KT_CHECK(P.custom_kernel_line == 2, "assigned on line %d", P.custom_kernel_line);
    PARSE_OK("def   custom_kernel (data):\n  pass\n");
    KT_CHECK(P.custom_kernel_line == 1, "line %d", P.custom_kernel_line);
}

static void test_ignored_keys(void)
{
    PARSE_OK("#!POPCORN leaderboard fp8_quant\n#!POPCORN timeout 30\n#!POPCORN\n" KERNEL);
    KT_CHECK(strstr(P.notes, "line 2: #!POPCORN timeout ignored") != NULL &&
             strstr(P.notes, "line 3: #!POPCORN (empty) ignored") != NULL, "notes '%s'", P.notes);
    /* many ignored keys: the notes are cut, never overflow, end with "..." */
    char big[8192] = "";
    for (int i = 0; i < 100; i++)
        strcat(big, "#!POPCORN something_rather_long value\n");
    strcat(big, KERNEL);
    PARSE_OK(big);
    size_t n = strlen(P.notes);
    KT_CHECK(n < sizeof P.notes && n >= 3 && strcmp(P.notes + n - 3, "...") == 0, "notes %zu '%s'",
             n, P.notes);
    /* lowercase popcorn, "#!POPCORNX" and other comments are plain comments */
    PARSE_OK("#!popcorn leaderboard x\n#!POPCORNX gpu y\n# !kjudge nothing\n" KERNEL);
    KT_CHECK(P.leaderboard[0] == '\0' && P.gpu[0] == '\0' && P.notes[0] == '\0',
             "'%s' '%s' '%s'", P.leaderboard, P.gpu, P.notes);
}

static void test_errors(void)
{
    PARSE_ERR("import torch\n#!kjudge launch k grid=(1) block=(1)\n" KERNEL, 2,
              "unknown directive '#!kjudge launch'", "leaderboard NAME");
    PARSE_ERR("#!kjudge mode test\n" KERNEL, 1, "#!kjudge mode", "gpu NAME");
    PARSE_ERR("\n\n#!kjudgeX gpu H200\n" KERNEL, 3, "'#!kjudgeX' is not a directive", "#!kjudge");
    PARSE_ERR("#!kjudge\n" KERNEL, 1, "unknown directive", "leaderboard");
    PARSE_ERR("#!POPCORN leaderboard\n" KERNEL, 1, "leaderboard", "missing name");
    PARSE_ERR("#!POPCORN leaderboard a b\n" KERNEL, 1, "unexpected 'b'", "one name per line");
    PARSE_ERR("#!POPCORN gpu H2$0\n" KERNEL, 1, "gpu: bad name 'H2$0'", "A-Z");
    PARSE_ERR("#!POPCORN gpus H100 B200\n" KERNEL, 1, "unexpected 'B200'", "gpu");
    PARSE_ERR("#!POPCORN leaderboard aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
              "\n" KERNEL, 1, "leaderboard", "too long");
    PARSE_ERR("#!POPCORN leaderboard fp8_quant\n\n#!kjudge leaderboard matmul\n" KERNEL, 3,
              "'matmul' disagrees with 'fp8_quant'", "line 1");
    PARSE_ERR("#!POPCORN gpu B200_Nebius\n#!kjudge gpu H200\n" KERNEL, 2,
              "'H200' disagrees with 'B200_Nebius'", "line 1");
    /* no custom_kernel: KJ_ENOTFOUND without a line */
    struct kj_err e;
    static const char *const none[] = {
        "#!POPCORN leaderboard fp8_quant\nimport torch\ndef kernel(data):\n    return data\n",
        "def custom_kernels(data):\n  pass\n", "# def custom_kernel(data):\n",
        "custom_kernel == 3\n", "x = 'def custom_kernel('\n", ""
    };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        int rc = parse(none[i], &e);
        KT_CHECK(rc == KJ_ENOTFOUND && e.line == 0 && strstr(e.msg, "custom_kernel") != NULL,
                 "case %zu: rc=%d line=%d msg='%s'", i, rc, e.line, e.msg);
    }
    /* a NUL byte inside a line does not hide the lines after it */
    static const char nul[] = "#!POPCORN gpu H200\0junk\n#!kjudge bad\n" KERNEL;
    kj_err_clear(&e);
    int rc = pydir_parse(nul, sizeof nul - 1, &P, &e);
    KT_CHECK(rc == KJ_EINVAL && e.line == 2, "rc=%d line=%d '%s'", rc, e.line, e.msg);
}

static void test_lang_detect(void)
{
    static const char py[] = "#!POPCORN leaderboard fp8_quant\n" KERNEL;
    static const char py2[] = "import torch\n\ndef custom_kernel(data):\n  return data\n";
    static const char cu[] = "//!kjudge launch k grid=(1) block=(1)\n"
                             "extern \"C\" __global__ void k() {}\n";
    KT_CHECK(sub_lang_detect("quant.py", cu, strlen(cu)) == SUB_LANG_PYTHON, ".py by name");
    KT_CHECK(sub_lang_detect("quant.cu", py, strlen(py)) == SUB_LANG_CUDA, ".cu by name");
    KT_CHECK(sub_lang_detect("k.cuh", py, strlen(py)) == SUB_LANG_CUDA, ".cuh by name");
    KT_CHECK(sub_lang_detect(NULL, py, strlen(py)) == SUB_LANG_PYTHON, "POPCORN content");
    KT_CHECK(sub_lang_detect("", py2, strlen(py2)) == SUB_LANG_PYTHON, "custom_kernel content");
    KT_CHECK(sub_lang_detect("-", py2, strlen(py2)) == SUB_LANG_PYTHON, "stdin name");
    KT_CHECK(sub_lang_detect(NULL, cu, strlen(cu)) == SUB_LANG_CUDA, "CUDA content");
    KT_CHECK(sub_lang_detect("x.py.cu", py, strlen(py)) == SUB_LANG_CUDA, "last extension wins");
    KT_CHECK(sub_lang_detect(".py", cu, strlen(cu)) == SUB_LANG_CUDA, "'.py' alone is no name");
    KT_CHECK(sub_lang_detect(NULL, "", 0) == SUB_LANG_CUDA, "empty");
    /* PTX: by name, or by a first statement ".version" after comments */
    static const char ptx[] = "//!kjudge launch k grid=(1) block=(1)\n/* c */\n  .version 9.0\n"
                              ".target sm_90\n";
    KT_CHECK(sub_lang_detect("k.ptx", cu, strlen(cu)) == SUB_LANG_PTX, ".ptx by name");
    KT_CHECK(sub_lang_detect(NULL, ptx, strlen(ptx)) == SUB_LANG_PTX, "PTX content");
    KT_CHECK(sub_lang_detect("k.cu", ptx, strlen(ptx)) == SUB_LANG_PTX, "PTX content wins");
    KT_CHECK(sub_lang_detect("k.py", ptx, strlen(ptx)) == SUB_LANG_PYTHON,
             "but a .py name is Python whatever it holds (the fuzzer's property)");
    KT_CHECK(sub_lang_is_ptx(ptx, strlen(ptx)) && !sub_lang_is_ptx(cu, strlen(cu)), "is_ptx");
    KT_CHECK(!sub_lang_is_ptx("int x;\n.version 9.0\n", 20), ".version later is not PTX");
    KT_CHECK(!sub_lang_is_ptx(".versions 1", 11) && !sub_lang_is_ptx(".version", 8), "word");
    /* only len bytes are read */
    KT_CHECK(sub_lang_detect(NULL, py, 5) == SUB_LANG_CUDA, "cut before the word");
    int l = -1;
    KT_CHECK(sub_lang_parse("python", &l) == 0 && l == SUB_LANG_PYTHON, "parse python");
    KT_CHECK(sub_lang_parse("ptx", &l) == 0 && l == SUB_LANG_PTX, "parse ptx");
    KT_CHECK(sub_lang_parse("Python", &l) != 0 && sub_lang_parse(NULL, &l) != 0, "bad names");
    KT_CHECK(strcmp(sub_lang_name(SUB_LANG_CUDA), "cuda") == 0 &&
             strcmp(sub_lang_name(SUB_LANG_COUNT), "?") == 0, "names");
}

static void test_kernelbot_gpus(void)
{
    static const struct { const char *in, *want; int mapped; } cases[] = {
        {"B200_Nebius", "B200", 1}, {"H100_Modal", "H100", 1}, {"A100_modal", "A100", 1},
        {"MI300_GitHub", "MI300", 1}, {"H200", "H200", 0}, {"H200_NVL", "H200_NVL", 0},
        {"_Modal", "_Modal", 0}, {"B200_Nebius_Modal", "B200_Nebius", 1}, {"", "", 0},
        {"x$y_Modal", "x$y_Modal", 0},
    };
    char out[GPUTYPE_MAX];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int m = gputype_of_kernelbot(cases[i].in, out, sizeof out);
        KT_CHECK(m == cases[i].mapped && strcmp(out, cases[i].want) == 0,
                 "'%s' -> '%s' (%d), want '%s' (%d)", cases[i].in, out, m, cases[i].want,
                 cases[i].mapped);
    }
    char small[4];
    int m = gputype_of_kernelbot("B200_Nebius", small, sizeof small);
    KT_CHECK(m == 0 && strlen(small) == 3, "small buffer: %d '%s'", m, small);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_kernelbot_file());
    KT_RUN(test_ignored_keys());
    KT_RUN(test_errors());
    KT_RUN(test_lang_detect());
    KT_RUN(test_kernelbot_gpus());
    return kt_done("test_pydirective");
}
