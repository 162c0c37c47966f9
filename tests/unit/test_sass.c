/*
 * test_sass.c - runner/sass.c: instruction classes from nvdisasm.
 *
 * 1. sass_apply on a hand-written listing: functions matched by lowered
 *    name, predicates skipped, every class recognised, unknown functions and
 *    lookalike opcodes ignored.
 * 2. With a real nvdisasm (the toolkit's, $KJUDGE_NVDISASM, or the one
 *    deploy/deps.sh puts in .tools/bin): the matmul board's fast example
 *    (WMMA + cp.async) and fp8_quant's (neither), compiled by NVRTC here,
 *    are classified from their machine code. Without nvdisasm these are
 *    counted as skipped.
 * 3. A missing tool is KJ_ENOTFOUND and a failing one an error; the PTX
 *    classes stay in both cases.
 * Prints "test_sass: N passed, N failed, N skipped".
 */
#define KT_MAIN
#include "kt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile.h"
#include "directive.h"
#include "sass.h"

static const char listing[] =
    "\t.section\t.text.k_mma,\"ax\",@progbits\n"
    "k_mma:\n"
    ".text.k_mma:\n"
    "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
    "        /*0010*/              @!P0 HMMA.16816.F32 R24, R36.reuse, R88, R24 ;\n"
    "        /*0020*/                   LDGSTS.E.BYPASS.128 [R29], desc[UR14][R6.64], P1 ;\n"
    "        /*0030*/                   HMMAX R1 ;\n"
    "        /*0040*/                   EXIT ;\n"
    "\t.section\t.text.k_tma,\"ax\",@progbits\n"
    ".text.k_tma:\n"
    "        /*0000*/                   UTMALDG.2D [UR8], [UR4] ;\n"
    "        /*0010*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24 ;\n"
    "        /*0020*/                   UBLKCP.S.G [UR4], [UR6], UR8 ;\n"
    ".text.k_gb:\n"
    "        /*0000*/                   UTCHMMA gdesc[UR4], gdesc[UR6], tmem[UR8] ;\n"
    ".text.not_launched:\n"
    "        /*0000*/                   HGMMA.64x8x16.F32 R0, gdesc[UR4], R0 ;\n";

static void test_apply(void)
{
    struct compile_result r;
    memset(&r, 0, sizeof r);
    r.nkernels = 4;
    const char *names[4] = {"k_mma", "k_tma", "k_gb", "k_plain"};
    for (int k = 0; k < 4; k++) {
        snprintf(r.kernels[k].lowered, sizeof r.kernels[k].lowered, "%s", names[k]);
        snprintf(r.kernels[k].tensor_cores, sizeof r.kernels[k].tensor_cores, "ptx");
    }
    int n = sass_apply(listing, strlen(listing), &r);
    KT_CHECK(n == 3, "three launched kernels in the listing, got %d", n);
    const struct compile_kernel *a = &r.kernels[0], *b = &r.kernels[1], *c = &r.kernels[2],
                                *d = &r.kernels[3];
    KT_CHECK(a->sass && strcmp(a->tensor_cores, "mma") == 0 && a->uses_cp_async && !a->uses_tma &&
             !a->uses_bulk_copy && a->sass_instructions == 5,
             "k_mma: predicated HMMA and LDGSTS, HMMAX is not HMMA (%s, %d insns)",
             a->tensor_cores, a->sass_instructions);
    KT_CHECK(b->sass && strcmp(b->tensor_cores, "wgmma") == 0 && b->uses_tma && b->uses_bulk_copy &&
             !b->uses_cp_async && b->sass_instructions == 3, "k_tma: HGMMA, UTMALDG, UBLKCP");
    KT_CHECK(c->sass && strcmp(c->tensor_cores, "tcgen05") == 0, "k_gb: UTCHMMA is tcgen05 (%s)",
             c->tensor_cores);
    KT_CHECK(!d->sass && strcmp(d->tensor_cores, "ptx") == 0, "a kernel not in the listing keeps its PTX classes");
    KT_CHECK(sass_apply("", 0, &r) == 0 && sass_apply("garbage\n/*", 10, &r) == 0, "empty and garbage listings");
}

static int compile_file(const char *path, struct compile_result *r)
{
    struct directives d;
    struct kj_err err;
    size_t len = 0;
    char *src = kt_slurp(path, &len);
    int rc = -1;
    memset(r, 0, sizeof *r);
    if (src != NULL && dir_parse(src, len, &d, &err) == KJ_OK &&
        compile_source(src, len, &d, "sm_90a", r, &err) == KJ_OK && r->ok)
        rc = 0;
    free(src);
    return rc;
}

static void test_real(void)
{
    char tool[1024];
    struct compile_result r;
    struct kj_err err;
    if (getenv("KJUDGE_NVDISASM") == NULL && access(".tools/bin/nvdisasm", X_OK) == 0) {
        char abs[1100], cwd[900];
        if (getcwd(cwd, sizeof cwd) != NULL) {
            snprintf(abs, sizeof abs, "%s/.tools/bin/nvdisasm", cwd);
            setenv("KJUDGE_NVDISASM", abs, 1);
        }
    }
    if (sass_tool(tool, sizeof tool) != 0) {
        KT_SKIP("no nvdisasm in the toolkit, $KJUDGE_NVDISASM or .tools/bin (deploy/deps.sh fetches one)");
        KT_SKIP("no nvdisasm: fp8_quant fast example not disassembled");
        return;
    }
    kj_err_clear(&err);
    KT_CHECK(compile_file("leaderboards/matmul/examples/fast.cu", &r) == 0, "matmul fast.cu compiles");
    int rc = sass_scan(&r, &err);
    KT_CHECK(rc == KJ_OK, "nvdisasm on matmul: %s", err.msg);
    KT_CHECK(r.nkernels == 1 && r.kernels[0].sass && strcmp(r.kernels[0].tensor_cores, "mma") == 0 &&
             r.kernels[0].uses_cp_async && r.kernels[0].sass_instructions > 100,
             "matmul fast: HMMA and LDGSTS in the machine code (%s, cp.async %d, %d insns)",
             r.kernels[0].tensor_cores, r.kernels[0].uses_cp_async, r.kernels[0].sass_instructions);
    compile_result_free(&r);
    KT_CHECK(compile_file("leaderboards/fp8_quant/examples/fast.cu", &r) == 0, "fp8 fast.cu compiles");
    rc = sass_scan(&r, &err);
    KT_CHECK(rc == KJ_OK && r.kernels[0].sass && r.kernels[0].tensor_cores[0] == '\0' &&
             !r.kernels[0].uses_tma && r.kernels[0].sass_instructions > 10,
             "fp8 fast: no tensor cores, no TMA (%d insns): %s", r.kernels[0].sass_instructions, err.msg);
    compile_result_free(&r);
}

static void test_failures(void)
{
    struct compile_result r;
    struct kj_err err;
    char *saved = getenv("KJUDGE_NVDISASM") ? strdup(getenv("KJUDGE_NVDISASM")) : NULL;
    KT_CHECK(compile_file("leaderboards/fp8_quant/examples/fast.cu", &r) == 0, "fp8 fast.cu compiles");
    char ptx_tc[16];
    snprintf(ptx_tc, sizeof ptx_tc, "%s", r.kernels[0].tensor_cores);
    setenv("KJUDGE_NVDISASM", "/nonexistent/nvdisasm", 1);
    KT_CHECK(sass_scan(&r, &err) == KJ_ENOTFOUND && !r.kernels[0].sass, "missing tool: %s", err.msg);
    setenv("KJUDGE_NVDISASM", "/bin/false", 1);
    int rc = sass_scan(&r, &err);
    KT_CHECK(rc != KJ_OK && rc != KJ_ENOTFOUND && !r.kernels[0].sass &&
             strcmp(r.kernels[0].tensor_cores, ptx_tc) == 0, "a failing tool changes nothing: %s", err.msg);
    compile_result_free(&r);
    memset(&r, 0, sizeof r);
    KT_CHECK(sass_scan(&r, &err) == KJ_EINVAL, "no cubin: %s", err.msg);
    if (saved != NULL)
        setenv("KJUDGE_NVDISASM", saved, 1);
    else
        unsetenv("KJUDGE_NVDISASM");
    free(saved);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_apply());
    KT_RUN(test_real());
    KT_RUN(test_failures());
    return kt_done("test_sass");
}
