/*
 * test_compile.c - unit tests of runner/compile.c (NVRTC, no GPU needed).
 *
 * Compiles the fp8_quant leaderboard's reference, template and examples,
 * and small sources that exercise each rule of the compile step: unknown
 * kernels, template kernels, ptxas numbers, forbidden #include, toolkit
 * headers, log cleaning and capping. Runs from the repository root.
 */
#define KT_MAIN
#include "kt.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compile.h"
#include "directive.h"
#include "result.h"

#define ARCH "sm_90a"

/* Parse the directives of src and compile it; returns compile_source's rc
 * (or -100 when the directives do not parse). */
static int compile_text(const char *src, size_t len, struct compile_result *r)
{
    struct directives d;
    struct kj_err err = {0};
    int rc;

    memset(r, 0, sizeof *r);
    if (dir_parse(src, len, &d, &err) != 0) {
        fprintf(stderr, "dir_parse: %s\n", err.msg);
        return -100;
    }
    rc = compile_source(src, len, &d, ARCH, r, &err);
    if (rc != 0)
        fprintf(stderr, "compile_source: %s (%s:%d)\n", err.msg, err.file, err.src_line);
    return rc;
}

static int compile_str(const char *src, struct compile_result *r)
{
    return compile_text(src, strlen(src), r);
}

/* 1 if s is valid UTF-8 without control characters other than \n and \t. */
static int clean_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = *p < 0x80 ? 1 : (*p & 0xE0) == 0xC0 ? 2 : (*p & 0xF0) == 0xE0 ? 3
                 : (*p & 0xF8) == 0xF0 ? 4 : 0;
        if (n == 0 || (*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f)
            return 0;
        for (size_t i = 1; i < n; i++)
            if ((p[i] & 0xC0) != 0x80)
                return 0;
        p += n;
    }
    return 1;
}

/* Checks every successful compile of a leaderboard file must pass. */
static void check_file_ok(const char *path, const char *kernel, int extern_c)
{
    struct compile_result r;
    size_t len = 0;
    char *src = kt_slurp(path, &len);
    int rc, k;

    KT_CHECK(src != NULL, "cannot read %s", path);
    if (src == NULL)
        return;
    rc = compile_text(src, len, &r);
    KT_CHECK(rc == 0, "%s: rc %d", path, rc);
    KT_CHECK(r.ok == 1, "%s does not compile:\n%s", path, r.log ? r.log : "(no log)");
    KT_CHECK(r.cubin != NULL && r.cubin_size > 0, "%s: no cubin", path);
    KT_CHECK(r.nkernels == 1, "%s: %d kernels", path, r.nkernels);
    for (k = 0; k < r.nkernels; k++) {
        const struct compile_kernel *ck = &r.kernels[k];
        KT_CHECK(strcmp(ck->name, kernel) == 0, "%s: kernel '%s'", path, ck->name);
        KT_CHECK(ck->registers > 0, "%s: %d registers", path, ck->registers);
        KT_CHECK(ck->lowered[0] != '\0', "%s: no lowered name", path);
        if (extern_c)
            KT_CHECK(strcmp(ck->lowered, kernel) == 0, "%s: lowered '%s'", path, ck->lowered);
        KT_CHECK(ck->spill_stores == 0 && ck->spill_loads == 0, "%s: spills", path);
        printf("  %s: %s regs=%d smem=%d stack=%d barriers=%d %.2fs\n", path, ck->lowered,
               ck->registers, ck->smem_static, ck->stack_frame, ck->barriers, r.seconds);
    }
    KT_CHECK(r.log != NULL && strstr(r.log, "ptxas info") == NULL, "%s: ptxas info kept", path);
    KT_CHECK(r.log != NULL && strstr(r.log, "/usr/local/cuda") == NULL, "%s: host path", path);
    compile_result_free(&r);
    free(src);
}

static void test_leaderboard_files(void)
{
    check_file_ok("leaderboards/fp8_quant/reference.cu", "ref_quant", 1);
    check_file_ok("leaderboards/fp8_quant/template.cu", "quant", 1);
    check_file_ok("leaderboards/fp8_quant/examples/fast.cu", "quant_fast", 1);
    check_file_ok("leaderboards/fp8_quant/examples/wrong.cu", "quant", 1);
}

static void test_broken_example(void)
{
    struct compile_result r;
    size_t len = 0;
    char *src = kt_slurp("leaderboards/fp8_quant/examples/broken.cu", &len);

    KT_CHECK(src != NULL, "cannot read broken.cu");
    if (src == NULL)
        return;
    KT_CHECK(compile_text(src, len, &r) == 0, "rc");
    KT_CHECK(r.ok == 0 && r.cubin == NULL, "broken.cu compiled");
    KT_CHECK(r.log && strstr(r.log, "submission.cu(14): error") != NULL, "log: %s", r.log);
    compile_result_free(&r);
    free(src);
}

static void test_syntax_error(void)
{
    struct compile_result r;
    const char *src = "//!kjudge launch k grid=(1) block=(32)\n"
                      "extern \"C\" __global__ void k(float* x) {\n"
                      "    x[0] = 1.0f\n"
                      "}\n";

    KT_CHECK(compile_str(src, &r) == 0, "rc");
    KT_CHECK(r.ok == 0, "a syntax error compiled");
    KT_CHECK(r.log && strstr(r.log, "submission.cu(4)") != NULL, "log: %s", r.log);
    KT_CHECK(r.log && clean_utf8(r.log), "log not clean");
    compile_result_free(&r);
}

static void test_warnings_and_echo(void)
{
    struct compile_result r;
    const char *src = "//!kjudge launch k grid=(1) block=(32)\n"
                      "extern \"C\" __global__ void k(float* x) {\n"
                      "    int unused_var = 3;\n"
                      "    x[0] = 1.0f;\n"
                      "}\n";

    KT_CHECK(compile_str(src, &r) == 0, "rc");
    KT_CHECK(r.ok == 1, "a warning failed the compile: %s", r.log);
    KT_CHECK(r.log && strstr(r.log, "submission.cu(3): warning") != NULL &&
             strstr(r.log, "unused_var") != NULL, "warning missing: %s", r.log);
    compile_result_free(&r);

    /* An error comes with its source line and a caret. */
    src = "//!kjudge launch k grid=(1) block=(32)\n"
          "extern \"C\" __global__ void k(float* x) {\n"
          "    x[0] = not_declared_here;\n"
          "}\n";
    KT_CHECK(compile_str(src, &r) == 0, "rc");
    KT_CHECK(r.ok == 0, "compiled");
    KT_CHECK(r.log && strstr(r.log, "submission.cu(3): error: identifier \"not_declared_here\"")
             != NULL, "log: %s", r.log);
    KT_CHECK(r.log && strstr(r.log, "    x[0] = not_declared_here;\n") != NULL &&
             strstr(r.log, "^") != NULL, "no source echo: %s", r.log);
    compile_result_free(&r);
}

/* A flood of warnings on one long line: the log stays bounded and the
 * compile still succeeds. */
static void test_warning_flood(void)
{
    const char *hdr = "//!kjudge launch k grid=(1) block=(32)\n"
                      "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }\n"
                      "__device__ int w = 0 /*";
    size_t cap = 512 * 1024, n;
    char *src = malloc(cap);
    struct compile_result r;
    char mark[64];

    KT_CHECK(src != NULL, "malloc");
    if (src == NULL)
        return;
    n = (size_t)snprintf(src, cap, "%s", hdr);
    while (n + 3 + 8 < cap)
        memcpy(src + n, " /*", 3), n += 3;
    n += (size_t)snprintf(src + n, cap - n, " */;\n");
    KT_CHECK(compile_text(src, n, &r) == 0, "rc");
    KT_CHECK(r.ok == 1, "flood: %.300s", r.log);
    snprintf(mark, sizeof mark, "\n[log truncated at %d bytes]\n", COMPILE_MAX_LOG);
    KT_CHECK(r.log && strlen(r.log) <= COMPILE_MAX_LOG && strstr(r.log, mark) != NULL,
             "log of %zu bytes", r.log ? strlen(r.log) : 0);
    compile_result_free(&r);
    free(src);
}

static void test_missing_kernel(void)
{
    struct compile_result r;
    const char *src = "// a kernel that is not there\n"
                      "//!kjudge launch k grid=(1) block=(32)\n"
                      "//!kjudge launch nothere grid=(1) block=(32)\n"
                      "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }\n";

    KT_CHECK(compile_str(src, &r) == 0, "rc");
    KT_CHECK(r.ok == 0 && r.cubin == NULL, "ok with a missing kernel");
    KT_CHECK(r.log && strncmp(r.log, "line 3: launch: no kernel named 'nothere' in the source",
                              55) == 0, "log: %s", r.log);
    KT_CHECK(r.log && strstr(r.log, "__nv_name_map") == NULL, "name map kept: %s", r.log);
    KT_CHECK(r.log && strstr(r.log, "'k'") == NULL, "k reported: %s", r.log);
    compile_result_free(&r);

    /* The same with a syntax error elsewhere: both are reported. */
    src = "//!kjudge launch nothere grid=(1) block=(32)\n"
          "extern \"C\" __global__ void k(float* x) { x[0] = y; }\n";
    KT_CHECK(compile_str(src, &r) == 0, "rc");
    KT_CHECK(r.ok == 0, "ok");
    KT_CHECK(r.log && strncmp(r.log, "line 1: launch: no kernel named 'nothere'", 41) == 0,
             "log: %s", r.log);
    KT_CHECK(r.log && strstr(r.log, "submission.cu(2)") != NULL, "log: %s", r.log);
    compile_result_free(&r);
}

static void test_not_a_kernel(void)
{
    struct compile_result r;
    const char *src = "//!kjudge launch helper grid=(1) block=(32)\n"
                      "__device__ float helper(float a) { return a * 2.0f; }\n"
                      "extern \"C\" __global__ void k(float* x) { x[0] = helper(1.0f); }\n";

    KT_CHECK(compile_str(src, &r) == 0, "rc");
    KT_CHECK(r.ok == 0, "a __device__ function launched");
    KT_CHECK(r.log && strncmp(r.log, "line 1: launch: 'helper' is not a __global__ kernel", 51)
             == 0, "log: %s", r.log);
    compile_result_free(&r);
}

static void test_template_kernel(void)
{
    struct compile_result r;
    const char *src =
        "//!kjudge launch quant<128,8> grid=(1) block=(128)\n"
        "//!kjudge launch quant<128,8> grid=(2) block=(128)\n"
        "template <int GS, int W>\n"
        "__global__ void quant(const float* x, float* x_q, float* x_s, int T, int H, int gs)\n"
        "{ x_q[threadIdx.x] = x[threadIdx.x] * GS + W; x_s[0] = 0.0f; }\n";

    KT_CHECK(compile_str(src, &r) == 0, "rc");
    KT_CHECK(r.ok == 1, "template kernel: %s", r.log);
    KT_CHECK(r.nkernels == 1, "%d kernels for one name", r.nkernels);
    KT_CHECK(strcmp(r.kernels[0].name, "quant<128,8>") == 0, "name %s", r.kernels[0].name);
    KT_CHECK(strncmp(r.kernels[0].lowered, "_Z5quantILi128ELi8EE", 20) == 0, "lowered %s",
             r.kernels[0].lowered);
    KT_CHECK(r.kernels[0].registers > 0, "registers %d", r.kernels[0].registers);
    compile_result_free(&r);
}

static void test_resources(void)
{
    struct compile_result r;
    const char *src =
        "//!kjudge launch big grid=(1) block=(32)\n"
        "//!kjudge launch shared grid=(1) block=(256)\n"
        "extern \"C\" __global__ void big(float* x, int n) {\n"
        "    float a[512];\n"
        "    for (int i = 0; i < 512; i++) a[i] = x[i * n];\n"
        "    x[threadIdx.x] = a[n & 511];\n"
        "}\n"
        "extern \"C\" __global__ void shared(float* x, int n) {\n"
        "    __shared__ float s[300];\n"
        "    s[threadIdx.x] = x[threadIdx.x]; __syncthreads();\n"
        "    x[threadIdx.x] = s[(threadIdx.x + n) % 300];\n"
        "}\n";

    KT_CHECK(compile_str(src, &r) == 0, "rc");
    KT_CHECK(r.ok == 1 && r.nkernels == 2, "resources: %s", r.log);
    KT_CHECK(r.kernels[0].stack_frame >= 2048, "stack_frame %d", r.kernels[0].stack_frame);
    KT_CHECK(r.kernels[1].smem_static == 1200, "smem %d", r.kernels[1].smem_static);
    KT_CHECK(r.kernels[1].barriers == 1, "barriers %d", r.kernels[1].barriers);
    KT_CHECK(r.kernels[1].stack_frame == 0, "stack %d", r.kernels[1].stack_frame);
    compile_result_free(&r);
}

/* Each of these must be refused before NVRTC reads any file. */
static void test_forbidden_includes(void)
{
    static const char *const bad[] = {
        "#include \"/etc/passwd\"\n",
        "#include </etc/passwd>\n",
        "  #  include   \"/etc/passwd\"\n",
        "# /* hidden */ include \"/etc/passwd\"\n",
        "%:include \"/etc/passwd\"\n",
        "#inc\\\nlude \"/etc/passwd\"\n",
        "#include \\\n\"/etc/passwd\"\n",
        "#include_next \"/etc/passwd\"\n",
        "#include <../../../../etc/passwd>\n",
        "#include \"cuda_fp16.h/../../../../../etc/passwd\"\n",
        "#define P \"/etc/passwd\"\n#include P\n",
        "#include \"Makefile\"\n",
        "#embed \"/etc/passwd\"\n",
        "#import \"/etc/passwd\"\n",
        "#if __has_include(\"/etc/passwd\")\n#endif\n",
        "/* a comment\n */ #include \"/etc/passwd\"\n",
        "const char* s = \"/*\";\n#include \"/etc/passwd\"\n// */\n",
        "int a = 1'0'/*';\n#include \"/etc/passwd\"\n// */\n",
    };
    char src[512];
    size_t i;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct compile_result r;
        snprintf(src, sizeof src, "//!kjudge launch k grid=(1) block=(32)\n%s"
                 "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }\n", bad[i]);
        KT_CHECK(compile_str(src, &r) == 0, "rc for case %zu", i);
        KT_CHECK(r.ok == 0, "case %zu compiled: %s", i, bad[i]);
        KT_CHECK(r.log && strstr(r.log, "root:") == NULL && strstr(r.log, "/etc/passwd") == NULL,
                 "case %zu log: %s", i, r.log);
        KT_CHECK(r.log && strncmp(r.log, "line ", 5) == 0 && strstr(r.log, "include") != NULL,
                 "case %zu log: %s", i, r.log);
        compile_result_free(&r);
    }

    /* The line number counts spliced lines. */
    struct compile_result r;
    const char *s2 = "//!kjudge launch k grid=(1) block=(32)\n"
                     "#define A 1 \\\n  + 2\n"
                     "#include \"/etc/passwd\"\n"
                     "extern \"C\" __global__ void k(float* x) { x[0] = A; }\n";
    KT_CHECK(compile_str(s2, &r) == 0 && r.ok == 0, "ok");
    KT_CHECK(r.log && strncmp(r.log, "line 4: #include", 16) == 0, "log: %s", r.log);
    compile_result_free(&r);
}

/* #include "name" must not pick up a file of that name in the current
 * directory. */
static void test_quoted_include_cwd(void)
{
    char dir[] = "/tmp/kj_compile_XXXXXX", cwd[4096], path[4200];
    struct compile_result r;
    const char *src = "//!kjudge launch k grid=(1) block=(32)\n"
                      "#include \"cuda_fp16.h\"\n"
                      "extern \"C\" __global__ void k(float* x) { x[0] = __half2float(__float2half(1.0f)); }\n";
    FILE *f;

    if (getcwd(cwd, sizeof cwd) == NULL || mkdtemp(dir) == NULL) {
        KT_SKIP("no temporary directory");
        return;
    }
    snprintf(path, sizeof path, "%s/cuda_fp16.h", dir);
    f = fopen(path, "w");
    KT_CHECK(f != NULL, "cannot write %s", path);
    if (f != NULL) {
        fputs("#error FAKE_HEADER_IN_CWD\n", f);
        fclose(f);
    }
    KT_CHECK(chdir(dir) == 0, "chdir");
    KT_CHECK(compile_str(src, &r) == 0, "rc");
    KT_CHECK(r.ok == 1 && r.log && strstr(r.log, "FAKE_HEADER") == NULL, "log: %s", r.log);
    compile_result_free(&r);
    KT_CHECK(chdir(cwd) == 0, "chdir back");
    unlink(path);
    rmdir(dir);
}

static void test_toolkit_headers(void)
{
    struct compile_result r;
    const char *src =
        "//!kjudge launch k grid=(1) block=(128)\n"
        "#include <cuda_fp16.h>\n"
        "#include <cuda_bf16.h>\n"
        "#include \"cuda_fp8.h\"\n"
        "#include <cooperative_groups.h>\n"
        "#include <cuda/barrier>\n"
        "#include <cub/block/block_reduce.cuh>\n"
        "#include <cub/warp/warp_reduce.cuh>\n"
        "#if __has_include(<cuda/std/cstdint>)\n"
        "#include <cuda/std/cstdint>\n"
        "#endif\n"
        "namespace cg = cooperative_groups;\n"
        "extern \"C\" __global__ void k(float* x) {\n"
        "    __shared__ cuda::barrier<cuda::thread_scope_block> bar;\n"
        "    using R = cub::BlockReduce<float, 128>;\n"
        "    __shared__ typename R::TempStorage tmp;\n"
        "    if (threadIdx.x == 0) init(&bar, blockDim.x);\n"
        "    cg::thread_block b = cg::this_thread_block();\n"
        "    b.sync();\n"
        "    __half h = __float2half(x[threadIdx.x]);\n"
        "    __nv_bfloat16 bf = __float2bfloat16(x[threadIdx.x]);\n"
        "    __nv_fp8_e4m3 f8(x[threadIdx.x]);\n"
        "    float v = __half2float(h) + __bfloat162float(bf) + float(f8);\n"
        "    float sum = R(tmp).Sum(v);\n"
        "    bar.arrive_and_wait();\n"
        "    cuda::std::int32_t i = 0;\n"
        "    if (threadIdx.x == 0) x[0] = sum + i;\n"
        "}\n";

    KT_CHECK(compile_str(src, &r) == 0, "rc");
    KT_CHECK(r.ok == 1, "toolkit headers:\n%s", r.log);
    KT_CHECK(r.log && strstr(r.log, "/usr/local/cuda") == NULL, "host path in log");
    compile_result_free(&r);

    /* The umbrella <cub/cub.cuh> passes our check, but CUDA 13.0's pulls in
     * the device-wide algorithms (host code, <cstdint>) that NVRTC cannot
     * compile: the failure must be NVRTC's, with toolkit paths hidden. */
    src = "//!kjudge launch k grid=(1) block=(32)\n"
          "#include <cub/cub.cuh>\n"
          "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }\n";
    KT_CHECK(compile_str(src, &r) == 0, "rc");
    KT_CHECK(r.log && strstr(r.log, "only the CUDA toolkit's headers") == NULL, "log: %s", r.log);
    KT_CHECK(r.log && strstr(r.log, "/usr/local/cuda") == NULL, "host path in log");
    if (r.ok)
        printf("  note: <cub/cub.cuh> compiles with this NVRTC\n");
    else
        printf("  note: <cub/cub.cuh> does not compile with this NVRTC; use cub/block/*.cuh\n");
    compile_result_free(&r);
}

static void test_log_cleaning(void)
{
    struct compile_result r;
    /* An error inside a toolkit header, a #line with a host path, a control
     * character and an invalid UTF-8 byte in an echoed source line. */
    const char *src = "//!kjudge launch k grid=(1) block=(32)\n"
                      "#define __half int\n"
                      "#include <cuda_fp16.h>\n"
                      "#line 1 \"/home/alice/secret/kernel.cu\"\n"
                      "int y = \x01 \xff;\n"
                      "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }\n";

    KT_CHECK(compile_str(src, &r) == 0, "rc");
    KT_CHECK(r.ok == 0, "compiled");
    KT_CHECK(r.log && strstr(r.log, "/usr/local/cuda") == NULL, "cuda path: %.300s", r.log);
    KT_CHECK(r.log && strstr(r.log, "<cuda>/cuda_fp16.h(") != NULL, "no <cuda>: %.300s", r.log);
    KT_CHECK(r.log && strstr(r.log, "/home/alice") == NULL, "host path kept");
    KT_CHECK(r.log && strstr(r.log, "<path>(1)") != NULL, "no <path>");
    KT_CHECK(r.log && clean_utf8(r.log), "log not clean UTF-8");
    compile_result_free(&r);
}

static void test_log_cap(void)
{
    struct compile_result r;
    size_t cap = 200 * 1024, n = 0;
    char *src = malloc(cap);
    char mark[64];

    KT_CHECK(src != NULL, "malloc");
    if (src == NULL)
        return;
    n += (size_t)snprintf(src + n, cap - n, "//!kjudge launch k grid=(1) block=(32)\n"
                          "extern \"C\" __global__ void k(float* x) {\n");
    while (n + 1200 < cap - 200) { /* ~1 KB lines: 100 errors are more than the cap */
        n += (size_t)snprintf(src + n, cap - n, "  x[0] = undefined_%zu", n);
        memset(src + n, 'a', 1000);
        n += 1000;
        n += (size_t)snprintf(src + n, cap - n, ";\n");
    }
    n += (size_t)snprintf(src + n, cap - n, "}\n");
    KT_CHECK(compile_text(src, n, &r) == 0, "rc");
    KT_CHECK(r.ok == 0, "compiled");
    snprintf(mark, sizeof mark, "\n[log truncated at %d bytes]\n", COMPILE_MAX_LOG);
    KT_CHECK(r.log && strlen(r.log) <= COMPILE_MAX_LOG, "log %zu bytes", strlen(r.log));
    KT_CHECK(r.log && strlen(r.log) > strlen(mark) &&
             strcmp(r.log + strlen(r.log) - strlen(mark), mark) == 0, "no truncation marker");
    compile_result_free(&r);
    free(src);
}

static void test_bad_sources(void)
{
    struct compile_result r;
    struct directives d;
    struct kj_err err = {0};
    const char *hdr = "//!kjudge launch k grid=(1) block=(32)\n";
    size_t big = COMPILE_MAX_SOURCE + 1;
    char *src = malloc(big);

    KT_CHECK(src != NULL, "malloc");
    if (src == NULL)
        return;
    memset(src, ' ', big);
    memcpy(src, hdr, strlen(hdr));
    KT_CHECK(dir_parse(src, strlen(hdr), &d, &err) == 0, "dir_parse");
    KT_CHECK(compile_source(src, big, &d, ARCH, &r, &err) == 0, "rc");
    KT_CHECK(r.ok == 0 && r.log && strstr(r.log, "limit is 1048576 bytes"), "log: %s", r.log);
    compile_result_free(&r);

    const char nul[] = "//!kjudge launch k grid=(1) block=(32)\n\n"
                       "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }\0\n";
    KT_CHECK(compile_source(nul, sizeof nul - 1, &d, ARCH, &r, &err) == 0, "rc");
    KT_CHECK(r.ok == 0 && r.log && strncmp(r.log, "line 3: the source contains a NUL", 33) == 0,
             "log: %s", r.log);
    compile_result_free(&r);
    free(src);
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Sources built to make a naive scanner quadratic must stay fast. */
static void test_hostile_sources(void)
{
    const char *hdr = "//!kjudge launch k grid=(1) block=(32)\n"
                      "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }\n";
    size_t cap = COMPILE_MAX_SOURCE, n, unit;
    char *src = malloc(cap);
    struct compile_result r;
    double t0;

    KT_CHECK(src != NULL, "malloc");
    if (src == NULL)
        return;
    /* "#", "/", "*" again and again: a block comment that is never closed. */
    n = (size_t)snprintf(src, cap, "%s", hdr);
    while (n + 3 <= cap)
        memcpy(src + n, "#/*", 3), n += 3;
    t0 = seconds_now();
    KT_CHECK(compile_text(src, n, &r) == 0, "rc");
    KT_CHECK(r.ok == 0 && seconds_now() - t0 < 20.0, "took %.1f s", seconds_now() - t0);
    KT_CHECK(r.log && strstr(r.log, "submission.cu(3)") != NULL, "log: %.200s", r.log);
    compile_result_free(&r);

    /* Many allowed includes, each behind a line splice: over the limit. */
    n = (size_t)snprintf(src, cap, "%s", hdr);
    unit = strlen("#include \\\n\"cuda_fp16.h\"\n");
    while (n + unit < cap)
        n += (size_t)snprintf(src + n, cap - n, "#include \\\n\"cuda_fp16.h\"\n");
    t0 = seconds_now();
    KT_CHECK(compile_text(src, n, &r) == 0, "rc");
    KT_CHECK(r.ok == 0 && r.log && strstr(r.log, "is one too many") != NULL, "log: %.200s",
             r.log);
    KT_CHECK(seconds_now() - t0 < 20.0, "took %.1f s", seconds_now() - t0);
    compile_result_free(&r);
    free(src);
}

static void test_options(void)
{
    struct compile_result r;
    struct directives d;
    struct kj_err err = {0};
    const char *src = "//!kjudge launch k grid=(1) block=(32)\n"
                      "//!kjudge nvrtc --use_fast_math -maxrregcount=32 -DSCALE=2\n"
                      "extern \"C\" __global__ void k(float* x) { x[0] = __expf(x[1]) * SCALE; }\n";

    KT_CHECK(compile_str(src, &r) == 0, "rc");
    KT_CHECK(r.ok == 1, "allowed options: %s", r.log);
    compile_result_free(&r);

    /* A struct that did not come from dir_parse fails closed. */
    KT_CHECK(dir_parse(src, strlen(src), &d, &err) == 0, "dir_parse");
    snprintf(d.nvrtc[0], sizeof d.nvrtc[0], "--include-path=/etc");
    KT_CHECK(compile_source(src, strlen(src), &d, ARCH, &r, &err) == 0, "rc");
    KT_CHECK(r.ok == 0 && r.log && strncmp(r.log, "line 2: nvrtc: option", 21) == 0,
             "log: %s", r.log);
    compile_result_free(&r);

    KT_CHECK(compile_source(src, strlen(src), &d, "sm_9x", &r, &err) == KJ_EINVAL,
             "bad arch accepted");
    compile_result_free(&r);
    KT_CHECK(compile_source(src, strlen(src), &d, "sm_1", &r, &err) == KJ_EINVAL,
             "unsupported arch accepted");
    compile_result_free(&r);
}

static void test_other_arch(void)
{
    struct compile_result r;
    size_t len = 0;
    char *src = kt_slurp("leaderboards/fp8_quant/examples/fast.cu", &len);
    struct directives d;
    struct kj_err err = {0};

    KT_CHECK(src != NULL && dir_parse(src, len, &d, &err) == 0, "fast.cu");
    if (src == NULL)
        return;
    KT_CHECK(compile_source(src, len, &d, "sm_100a", &r, &err) == 0, "rc: %s", err.msg);
    KT_CHECK(r.ok == 1 && strcmp(r.arch, "sm_100a") == 0, "sm_100a: %s", r.log);
    compile_result_free(&r);
    free(src);
}

static void test_json_and_version(void)
{
    struct compile_result r;
    const char *src = "//!kjudge launch k grid=(1) block=(32)\n"
                      "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }\n";
    char ver[16];
    cJSON *j, *ks, *k0;

    KT_CHECK(compile_str(src, &r) == 0 && r.ok, "compile");
    j = result_compile_json(&r);
    KT_CHECK(j != NULL, "json");
    ks = cJSON_GetObjectItem(j, "kernels");
    k0 = cJSON_GetArrayItem(ks, 0);
    KT_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(j, "ok")), "ok");
    KT_CHECK(cJSON_IsString(cJSON_GetObjectItem(j, "arch")), "arch");
    KT_CHECK(cJSON_IsString(cJSON_GetObjectItem(j, "log")), "log");
    KT_CHECK(cJSON_IsNumber(cJSON_GetObjectItem(j, "seconds")), "seconds");
    KT_CHECK(cJSON_GetArraySize(ks) == 1, "kernels");
    KT_CHECK(k0 && strcmp(cJSON_GetObjectItem(k0, "lowered")->valuestring, "k") == 0, "lowered");
    KT_CHECK(k0 && cJSON_GetObjectItem(k0, "registers")->valueint > 0, "registers");
    KT_CHECK(k0 && cJSON_IsNumber(cJSON_GetObjectItem(k0, "spill_loads")), "spill_loads");
    cJSON_Delete(j);
    compile_result_free(&r);
    compile_result_free(&r); /* twice is fine */
    compile_result_free(NULL);

    compile_nvrtc_version(ver, sizeof ver);
    KT_CHECK(strncmp(ver, "13.", 3) == 0, "version %s", ver);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_leaderboard_files());
    KT_RUN(test_broken_example());
    KT_RUN(test_syntax_error());
    KT_RUN(test_warnings_and_echo());
    KT_RUN(test_warning_flood());
    KT_RUN(test_missing_kernel());
    KT_RUN(test_not_a_kernel());
    KT_RUN(test_template_kernel());
    KT_RUN(test_resources());
    KT_RUN(test_forbidden_includes());
    KT_RUN(test_quoted_include_cwd());
    KT_RUN(test_toolkit_headers());
    KT_RUN(test_log_cleaning());
    KT_RUN(test_log_cap());
    KT_RUN(test_bad_sources());
    KT_RUN(test_hostile_sources());
    KT_RUN(test_options());
    KT_RUN(test_other_arch());
    KT_RUN(test_json_and_version());
    return kt_done("test_compile");
}
