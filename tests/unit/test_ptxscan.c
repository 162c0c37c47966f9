/*
 * test_ptxscan.c - runner/ptxscan.c on hand-written PTX (each instruction
 * class, entries that must not leak into each other, .maxntid) and on real
 * NVRTC output: a wmma kernel uses tensor cores, a cp.async kernel async
 * copies, __launch_bounds__ bounds the block, and the register arithmetic.
 */
#define KT_MAIN
#include "kt.h"
#include "compile.h"
#include "ptxscan.h"

#include <string.h>

static struct compile_kernel scan(const char *ptx, const char *name, int regs)
{
    struct compile_kernel k;
    memset(&k, 0, sizeof k);
    snprintf(k.lowered, sizeof k.lowered, "%s", name);
    k.registers = regs;
    ptxscan_kernel(ptx, strlen(ptx), &k);
    return k;
}

static const char *ptx =
    ".version 9.0\n.target sm_90a\n"
    ".visible .entry plain(\n.param .u64 a\n)\n{\n ld.global.f32 %f1, [%rd1];\n ret;\n}\n"
    ".visible .entry hopper(\n.param .u64 a\n)\n.maxntid 128, 1, 1\n{\n"
    " wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%f1}, %rd1, %rd2, 1, 1, 1, 0, 0;\n"
    " cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd3, {%r2, %r3}], [%r4];\n"
    " ret;\n}\n"
    ".visible .entry ampere(\n.param .u64 a\n)\n{\n"
    " mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1,%f2,%f3,%f4}, {%r1,%r2,%r3,%r4}, {%r5,%r6}, {%f5,%f6,%f7,%f8};\n"
    " cp.async.ca.shared.global [%r1], [%rd1], 16;\n cp.async.commit_group;\n"
    " cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 256, [%r2];\n ret;\n}\n";

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    struct compile_kernel k = scan(ptx, "plain", 32);
    KT_CHECK(k.tensor_cores[0] == '\0' && !k.uses_tma && !k.uses_cp_async && !k.uses_bulk_copy,
             "plain uses nothing (leaks from later entries?)");
    KT_CHECK(k.max_threads_per_block == 1024, "32 registers -> 1024 threads, got %d", k.max_threads_per_block);
    k = scan(ptx, "hopper", 90);
    KT_CHECK(strcmp(k.tensor_cores, "wgmma") == 0 && k.uses_tma && !k.uses_bulk_copy && !k.uses_cp_async,
             "hopper: wgmma + TMA (tc=%s tma=%d bulk=%d cp=%d)", k.tensor_cores, k.uses_tma,
             k.uses_bulk_copy, k.uses_cp_async);
    KT_CHECK(k.max_threads_per_block == 128, ".maxntid 128 bounds the block, got %d", k.max_threads_per_block);
    k = scan(ptx, "ampere", 128);
    KT_CHECK(strcmp(k.tensor_cores, "mma") == 0 && k.uses_cp_async && k.uses_bulk_copy && !k.uses_tma,
             "ampere: mma + cp.async + bulk copy");
    KT_CHECK(k.max_threads_per_block == 512, "128 registers -> 512 threads, got %d", k.max_threads_per_block);
    k = scan(ptx, "missing", 64);
    KT_CHECK(k.tensor_cores[0] == '\0' && k.max_threads_per_block == 1024, "unknown entry: nothing, bound by registers");
    k = scan(ptx, "hop", 64);
    KT_CHECK(k.tensor_cores[0] == '\0', "a prefix of an entry name does not match it");
    KT_CHECK(ptxscan_max_threads(255, 0) == 256 && ptxscan_max_threads(0, 0) == 0 &&
             ptxscan_max_threads(65, 0) == 896, "register arithmetic: %d %d", ptxscan_max_threads(255, 0),
             ptxscan_max_threads(65, 0));

    /* Real NVRTC output. */
    const char *src =
        "//!kjudge launch tc grid=(1) block=(32)\n"
        "//!kjudge launch cp grid=(1) block=(64)\n"
        "#include <mma.h>\n#include <cuda_pipeline.h>\nusing namespace nvcuda;\n"
        "extern \"C\" __global__ void tc(const half* a, const half* b, float* c) {\n"
        " wmma::fragment<wmma::matrix_a,16,16,16,half,wmma::row_major> fa;\n"
        " wmma::fragment<wmma::matrix_b,16,16,16,half,wmma::col_major> fb;\n"
        " wmma::fragment<wmma::accumulator,16,16,16,float> fc; wmma::fill_fragment(fc, 0.f);\n"
        " wmma::load_matrix_sync(fa, a, 16); wmma::load_matrix_sync(fb, b, 16);\n"
        " wmma::mma_sync(fc, fa, fb, fc); wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major); }\n"
        "extern \"C\" __global__ void __launch_bounds__(64) cp(const float4* x, float4* y) {\n"
        " __shared__ float4 s[64]; __pipeline_memcpy_async(&s[threadIdx.x], &x[threadIdx.x], 16);\n"
        " __pipeline_commit(); __pipeline_wait_prior(0); y[threadIdx.x] = s[threadIdx.x]; }\n";
    struct directives d;
    struct compile_result r;
    struct kj_err err;
    memset(&r, 0, sizeof r);
    KT_CHECK(dir_parse(src, strlen(src), &d, &err) == KJ_OK, "directives: %s", err.msg);
    KT_CHECK(compile_source(src, strlen(src), &d, "sm_90a", &r, &err) == KJ_OK && r.ok,
             "compiles: %s", r.log ? r.log : err.msg);
    if (r.ok && r.nkernels == 2) {
        const struct compile_kernel *tc = strcmp(r.kernels[0].name, "tc") == 0 ? &r.kernels[0] : &r.kernels[1];
        const struct compile_kernel *cp = tc == &r.kernels[0] ? &r.kernels[1] : &r.kernels[0];
        KT_CHECK(strcmp(tc->tensor_cores, "mma") == 0, "wmma kernel uses tensor cores (got '%s')", tc->tensor_cores);
        KT_CHECK(cp->uses_cp_async && cp->tensor_cores[0] == '\0', "pipeline kernel uses cp.async");
        KT_CHECK(cp->max_threads_per_block == 64, "__launch_bounds__(64) -> %d", cp->max_threads_per_block);
    }
    compile_result_free(&r);
    return kt_done("test_ptxscan");
}
