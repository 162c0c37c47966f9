/*
 * test_compile_ptx.c - unit tests of runner/compile_ptx.c (PTX modules
 * through the toolkit's PTX compiler, no GPU needed) and of CUTLASS's
 * include dir in the compile step (compile.c, compile_scan.c).
 *
 * The PTX cases start from the matmul board's template.ptx and change one
 * line each: a .target for another GPU, a .version newer than the compiler,
 * a launch line naming no .entry, a parameter out of the board's order,
 * missing directives. The CUTLASS cases need .cutlass/include (deploy/
 * deps.sh) and skip without it. Blackwell readiness: every example that can
 * run on a B200 compiles for sm_100a: the Triton PTX here, the CuTe
 * fp8_quant and the tcgen05/TMEM CuTe matmul (tcgen05 among its instruction
 * classes) each in a compile box started first, so that their NVRTC time
 * (most of this test's) overlaps the rest. Runs from the repository root.
 */
#define KT_MAIN
#include "kt.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cbox.h"
#include "compile.h"
#include "directive.h"
#include "kj_file.h"
#include "mono.h"

/* nvJitLink keeps one buffer of its own for the life of the process. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libnvJitLink.so\n";
}

static int compile_arch(const char *src, const char *arch, struct compile_result *r)
{
    struct directives d;
    struct kj_err err = {0};
    int rc;

    memset(r, 0, sizeof *r);
    if (dir_parse(src, strlen(src), &d, &err) != 0) {
        fprintf(stderr, "dir_parse: %s\n", err.msg);
        return -100;
    }
    rc = compile_source(src, strlen(src), &d, arch, r, &err);
    if (rc != 0)
        fprintf(stderr, "compile_source: %s\n", err.msg);
    return rc;
}

/* The matmul template.ptx with `from` replaced by `to` (caller frees). */
static char *template_with(const char *from, const char *to)
{
    char *src = NULL, *out, *at;
    size_t len = 0;
    struct kj_err err = {0};

    if (kj_read_file("leaderboards/matmul/template.ptx", 1 << 20, &src, &len, &err) != 0)
        return NULL;
    if (from == NULL || (at = strstr(src, from)) == NULL)
        return src;
    out = malloc(len + strlen(to) + 1);
    if (out != NULL)
        sprintf(out, "%.*s%s%s", (int)(at - src), src, to, at + strlen(from));
    free(src);
    return out;
}

/* One changed template: compiled, not ok, and the log holds want. */
static void expect_fail(const char *from, const char *to, const char *want)
{
    struct compile_result r;
    char *src = template_with(from, to);

    KT_CHECK(src != NULL, "template.ptx");
    if (src == NULL)
        return;
    KT_CHECK(compile_arch(src, "sm_90a", &r) == 0, "rc");
    KT_CHECK(!r.ok && r.cubin == NULL, "'%s' -> '%s' compiled", from, to);
    KT_CHECK(r.log && strstr(r.log, want), "want '%s', log: %s", want, r.log ? r.log : "");
    compile_result_free(&r);
    free(src);
}

static void test_good_module(void)
{
    const char *arch[] = {"sm_90a", "sm_100a"};
    for (int a = 0; a < 2; a++) {
        struct compile_result r;
        char *src = template_with(NULL, NULL);
        KT_CHECK(src && compile_arch(src, arch[a], &r) == 0 && r.ok, "%s: %s", arch[a],
                 r.log ? r.log : "");
        KT_CHECK(r.nkernels == 1 && strcmp(r.kernels[0].lowered, "matmul") == 0, "lowered");
        KT_CHECK(r.kernels[0].registers > 0 && r.kernels[0].max_threads_per_block > 0,
                 "ptxas report: %d registers", r.kernels[0].registers);
        KT_CHECK(r.cubin != NULL && r.cubin_size > 0, "cubin");
        compile_result_free(&r);
        free(src);
    }
}

static void test_bad_modules(void)
{
    expect_fail(".target sm_90\n", ".target sm_100a\n",
                "line 11: .target sm_100a is PTX for another GPU; this runner compiles for sm_90a");
    expect_fail(".version 9.0", ".version 9.9", "line 10: fatal   : Unsupported .version 9.9");
    expect_fail("launch matmul ", "launch matmul2 ", "line 5: launch: no kernel named 'matmul2'");
    expect_fail(".param .u32 matmul_param_4", ".param .u64 matmul_param_4",
                ".entry matmul: a pointer parameter after the ints");
    expect_fail(".param .u64 matmul_param_0", ".param .f32 matmul_param_0",
                "neither a pointer (.u64) nor an int (.u32)");
}

/* An unrolled bomb (the PTX compiler's time) is bounded by the source cap
 * and the box's limits (tests/exploits/ptx_unrolled_bomb.ptx,
 * test_exploits_compile.py); here: a module without .target, directives
 * that ask for NVRTC options. */
static void test_missing_parts(void)
{
    struct compile_result r;
    const char *no_target = "//!kjudge leaderboard matmul\n"
                            "//!kjudge launch matmul grid=(1) block=(1)\n"
                            ".version 9.0\n.address_size 64\n"
                            ".visible .entry matmul()\n{\n\tret;\n}\n";
    const char *opts = "//!kjudge leaderboard matmul\n"
                       "//!kjudge launch matmul grid=(1) block=(1)\n"
                       "//!kjudge nvrtc --use_fast_math\n"
                       ".version 9.0\n.target sm_90\n.address_size 64\n"
                       ".visible .entry matmul()\n{\n\tret;\n}\n";
    KT_CHECK(compile_arch(no_target, "sm_90a", &r) == 0 && !r.ok, "no .target compiled");
    KT_CHECK(r.log && strstr(r.log, "needs a .version and a .target line"), "log: %s", r.log);
    compile_result_free(&r);
    const char *commented = "//!kjudge leaderboard matmul\n"
                            "//!kjudge launch matmul grid=(1) block=(1)\n"
                            ".version 9.0\n.target sm_90\n.address_size 64\n"
                            "// .visible .entry matmul()\n"
                            ".visible .entry other()\n{\n\tret;\n}\n";
    KT_CHECK(compile_arch(commented, "sm_90a", &r) == 0 && !r.ok, "a commented .entry counted");
    KT_CHECK(r.log && strstr(r.log, "line 2: launch: no kernel named 'matmul'"), "log: %s", r.log);
    compile_result_free(&r);
    KT_CHECK(compile_arch(opts, "sm_90a", &r) == 0 && !r.ok, "nvrtc options taken");
    KT_CHECK(r.log && strstr(r.log, "line 3: nvrtc: options do not apply to a PTX module"),
             "log: %s", r.log);
    compile_result_free(&r);
}

/* CUTLASS: a header that does not exist, a path that climbs out. */
static void test_cutlass(void)
{
    char real[4096];
    struct compile_result r;
    const char *missing = "//!kjudge leaderboard vectoradd\n"
                          "//!kjudge launch k grid=(1) block=(1)\n"
                          "#include <cute/no_such_header.hpp>\n"
                          "extern \"C\" __global__ void k() {}\n";
    const char *climb = "//!kjudge leaderboard vectoradd\n"
                        "//!kjudge launch k grid=(1) block=(1)\n\n"
                        "#include <cute/../../../../etc/passwd>\n"
                        "extern \"C\" __global__ void k() {}\n";
    if (realpath(".cutlass/include", real) == NULL) {
        KT_SKIP("no .cutlass/include (deploy/deps.sh fetches it)");
        return;
    }
    setenv(COMPILE_CUTLASS_ENV, real, 1);
    KT_CHECK(compile_arch(missing, "sm_90a", &r) == 0 && !r.ok, "missing header compiled");
    KT_CHECK(r.log && strstr(r.log, "line 3: #include \"cute/no_such_header.hpp\" is not a "
                                    "header of CUTLASS"), "log: %s", r.log);
    compile_result_free(&r);
    KT_CHECK(compile_arch(climb, "sm_90a", &r) == 0 && !r.ok, "climbing path compiled");
    KT_CHECK(r.log && strstr(r.log, "line 4: #include names a file outside"), "log: %s", r.log);
    compile_result_free(&r);
    unsetenv(COMPILE_CUTLASS_ENV);
}

/* The Triton PTX example for both GPUs the boards name. */
static void test_triton_ptx(void)
{
    const char *arch[] = {"sm_90a", "sm_100a"};
    char *src = NULL;
    size_t len = 0;
    struct kj_err err = {0};

    KT_CHECK(kj_read_file("leaderboards/fp8_quant/examples/triton_ptx.ptx", 1 << 20, &src, &len,
                          &err) == 0, "triton_ptx.ptx");
    for (int a = 0; src != NULL && a < 2; a++) {
        struct compile_result r;
        KT_CHECK(compile_arch(src, arch[a], &r) == 0 && r.ok && r.nkernels == 1 &&
                 r.kernels[0].registers > 0, "triton_ptx.ptx for %s: %s", arch[a],
                 r.log ? r.log : "");
        compile_result_free(&r);
    }
    free(src);
}

/* The CuTe examples, each compiled in its own compile box (CUTLASS bound
 * read-only) while the other tests run: the sm_100a ones, and the TMA
 * matmul for sm_90a (its tensor maps made on the device, docs/languages-cuda.md). */
struct box_job {
    const char *path;
    const char *arch;
    int started;
    double t0;
    char *src;
    struct directives d;
    struct cbox_proc p;
};

static void box_start(struct box_job *b, const char *path, const char *arch)
{
    char real[4096];
    size_t len = 0;
    struct kj_err err = {0};

    memset(b, 0, sizeof *b);
    b->path = path;
    b->arch = arch;
    if (realpath(".cutlass/include", real) == NULL ||
        kj_read_file(path, 1 << 20, &b->src, &len, &err) ||
        dir_parse(b->src, len, &b->d, &err) != 0)
        return;
    setenv(COMPILE_CUTLASS_ENV, real, 1); /* read by the box's child at its start */
    b->t0 = mono_now();
    b->started = cbox_start(b->src, len, &b->d, arch, NULL, &b->p, &err) == KJ_OK;
    unsetenv(COMPILE_CUTLASS_ENV);
}

/* Collect b: compiled, its first kernel's tensor-core class is tc, and it
 * uses TMA when tma is 1. */
static void box_check(struct box_job *b, const char *tc, int tma)
{
    struct compile_result r;
    struct kj_err err = {0};

    if (!b->started) {
        KT_SKIP("%s: no .cutlass/include (deploy/deps.sh fetches it)", b->path);
        free(b->src);
        return;
    }
    if (cbox_finish(&b->p, b->arch, &r, &err) != KJ_OK) {
        KT_CHECK(0, "%s for %s: the compile box failed: %s", b->path, b->arch, err.msg);
        free(b->src);
        return;
    }
    KT_CHECK(r.ok, "%s for %s in the compile box: %s", b->path, b->arch, r.log ? r.log : "");
    if (!r.ok || r.nkernels < 1) {
        compile_result_free(&r);
        free(b->src);
        return;
    }
    KT_CHECK(r.nkernels == 1 && strcmp(r.kernels[0].tensor_cores, tc) == 0,
             "%s: tensor cores '%s' (want '%s')", b->path, r.kernels[0].tensor_cores, tc);
    KT_CHECK(!tma || r.kernels[0].uses_tma, "%s: TMA not reported", b->path);
    KT_CHECK(r.kernels[0].spill_stores == 0, "%s: %d spill stores", b->path, r.kernels[0].spill_stores);
    fprintf(stderr, "  %s for %s: %.1f s in NVRTC, %.1f s since the start; %d registers, "
            "tensor cores '%s', TMA %d, cp.async %d\n", b->path, b->arch, r.seconds, mono_now() - b->t0,
            r.kernels[0].registers, r.kernels[0].tensor_cores, r.kernels[0].uses_tma,
            r.kernels[0].uses_cp_async);
    compile_result_free(&r);
    free(b->src);
}

static void test_cute_examples(struct box_job *jobs)
{
    box_check(&jobs[0], "tcgen05", 0);
    box_check(&jobs[1], "", 0);
    box_check(&jobs[2], "wgmma", 1);
}

int main(int argc, char **argv)
{
    struct box_job jobs[3];

    kt_init(argc, argv);
    memset(jobs, 0, sizeof jobs);
    if (kt_counts.filter == NULL || strstr("test_cute_examples", kt_counts.filter) != NULL) {
        /* first, so that they overlap the rest */
        box_start(&jobs[0], "leaderboards/matmul/examples/cute_tcgen05.cu", "sm_100a");
        box_start(&jobs[1], "leaderboards/fp8_quant/examples/cute_quant.cu", "sm_100a");
        box_start(&jobs[2], "leaderboards/matmul/examples/cute_tma.cu", "sm_90a");
    }
    KT_RUN(test_good_module());
    KT_RUN(test_bad_modules());
    KT_RUN(test_missing_parts());
    KT_RUN(test_cutlass());
    KT_RUN(test_triton_ptx());
    KT_RUN(test_cute_examples(jobs));
    return kt_done("test_compile_ptx");
}
