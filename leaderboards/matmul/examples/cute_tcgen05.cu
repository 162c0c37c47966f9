// cute_tcgen05.cu - matmul with CuTe on Blackwell's tcgen05 MMA and tensor memory (sm_100a).
//!kjudge leaderboard matmul
//!kjudge gpu B200
//!kjudge launch matmul_umma grid=(ceil_div(N, 128), ceil_div(M, 128)) block=(128) smem=(2 * (128 * 64 + 64 * 128) * 2 + 1024)
//
// One CTA of 4 warps computes a 128x128 tile of C. The accumulator lives in
// tensor memory (TMEM, 128 lanes x 128 columns of float), allocated by warp
// 0; one thread issues tcgen05.mma 128x128x16 on operands in shared memory
// (CuTe's 128-byte-swizzled layouts: A K-major, B N-major, as the board
// stores them), and tcgen05.commit signals an mbarrier when the MMAs of a
// K-step are done. K goes in steps of 64 through two shared-memory stages
// filled with cp.async. The epilogue reads TMEM into registers
// (tcgen05.ld, 32 lanes per warp) and writes C inside its bounds.
// A B200 example: it compiles for sm_100a only (make test compiles it);
// the board's H200 runners cannot run it.
#include <cute/tensor.hpp>
#include <cute/atom/mma_traits_sm100.hpp>
#include <cute/atom/copy_traits_sm100.hpp>
#include <cute/arch/tmem_allocator_sm100.hpp>
#include <cutlass/arch/barrier.h>

using namespace cute;

namespace {
constexpr int BM = 128, BN = 128, BK = 64, STAGES = 2;
using SmemA = decltype(tile_to_shape(UMMA::Layout_K_SW128_Atom<half_t>{}, Shape<Int<BM>, Int<BK>>{}));
using SmemB = decltype(tile_to_shape(UMMA::Layout_MN_SW128_Atom<half_t>{}, Shape<Int<BN>, Int<BK>>{}));

// Copy a (rows x cols) tile whose columns are contiguous in global memory
// (row stride ld) into s(row, col) (or s(col, row) when !rows_first); zero
// outside [0, rmax) x [0, cmax). 16-byte cp.async where a whole chunk is in
// bounds and aligned: a chunk of 8 halves stays whole under the swizzle.
template <int ROWS, int COLS, class STensor>
__device__ void load_tile(const half_t* g, long ld, int rmax, int cmax, STensor s, bool rows_first)
{
    constexpr int VEC = 8;
    for (int i = threadIdx.x; i < ROWS * COLS / VEC; i += blockDim.x) {
        int r = i / (COLS / VEC), c = (i % (COLS / VEC)) * VEC;
        const half_t* src = g + (long)r * ld + c;
        if (r < rmax && c + VEC <= cmax && (reinterpret_cast<uintptr_t>(src) % 16) == 0) {
            half_t* dst = rows_first ? &s(r, c) : &s(c, r);
            uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src));
        } else {
            for (int v = 0; v < VEC; v++) {
                half_t x = (r < rmax && c + v < cmax) ? src[v] : half_t(0);
                if (rows_first) s(r, c + v) = x; else s(c + v, r) = x;
            }
        }
    }
}
} // namespace

extern "C" __global__ void __launch_bounds__(128) matmul_umma(const half_t* A, const half_t* B, float* C,
                                                             int M, int N, int K)
{
    extern __shared__ __align__(1024) unsigned char smem[];
    half_t* sa_ptr = reinterpret_cast<half_t*>(smem);
    half_t* sb_ptr = sa_ptr + STAGES * cosize(SmemA{});
    uint64_t* mma_done = reinterpret_cast<uint64_t*>(sb_ptr + STAGES * cosize(SmemB{}));
    uint32_t* tmem_base = reinterpret_cast<uint32_t*>(mma_done + 1);
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int warp = threadIdx.x / 32;

    auto tiled_mma = make_tiled_mma(
        SM100_MMA_F16BF16_SS<half_t, half_t, float, BM, BN, UMMA::Major::K, UMMA::Major::MN>{});
    auto mma = tiled_mma.get_slice(0); // one CTA issues the whole 128x128 MMA

    Tensor gC = make_tensor(make_gmem_ptr(C + (long)m0 * N + n0), make_shape(Int<BM>{}, Int<BN>{}),
                            make_stride((long)N, Int<1>{}));
    Tensor cC = make_identity_tensor(make_shape(Int<BM>{}, Int<BN>{}));
    Tensor tCgC = mma.partition_C(gC);
    Tensor tCcC = mma.partition_C(cC);
    Tensor acc = mma.make_fragment_C(tCgC); // a TMEM tensor; its address is set below

    TMEM::Allocator1Sm tmem;
    if (warp == 0) {
        tmem.allocate(BN, tmem_base); // 128 columns of 32 bits
        tmem.release_allocation_lock(); // this CTA allocates nothing more
    }
    if (threadIdx.x == 0)
        cutlass::arch::ClusterBarrier::init(mma_done, 1);
    cutlass::arch::fence_barrier_init();
    __syncthreads();
    acc.data() = *tmem_base;

    const int ktiles = (K + BK - 1) / BK;
    auto stage = [&](int kt, int st) {
        Tensor sA = make_tensor(make_smem_ptr(sa_ptr + st * cosize(SmemA{})), SmemA{});
        Tensor sB = make_tensor(make_smem_ptr(sb_ptr + st * cosize(SmemB{})), SmemB{});
        int k0 = kt * BK;
        load_tile<BM, BK>(A + (long)m0 * K + k0, K, M - m0, K - k0, sA, true);
        load_tile<BK, BN>(B + (long)k0 * N + n0, N, K - k0, N - n0, sB, false);
    };
    stage(0, 0);
    asm volatile("cp.async.commit_group;\n" ::);
    int phase = 0;
    for (int kt = 0; kt < ktiles; kt++) {
        const int st = kt % STAGES;
        if (kt + 1 < ktiles)
            stage(kt + 1, (kt + 1) % STAGES);
        asm volatile("cp.async.commit_group;\n" ::);
        asm volatile("cp.async.wait_group 1;\n" ::);
        // Each thread makes its own shared-memory writes (cp.async and plain
        // stores) visible to the async proxy tcgen05.mma reads through, then all meet.
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        if (warp == 0) {
            Tensor sA = make_tensor(make_smem_ptr(sa_ptr + st * cosize(SmemA{})), SmemA{});
            Tensor sB = make_tensor(make_smem_ptr(sb_ptr + st * cosize(SmemB{})), SmemB{});
            Tensor fA = mma.make_fragment_A(mma.partition_A(sA));
            Tensor fB = mma.make_fragment_B(mma.partition_B(sB));
            tiled_mma.accumulate_ = kt == 0 ? UMMA::ScaleOut::Zero : UMMA::ScaleOut::One;
            for (int kb = 0; kb < size<2>(fA); kb++) {
                gemm(tiled_mma, fA(_, _, kb), fB(_, _, kb), acc);
                tiled_mma.accumulate_ = UMMA::ScaleOut::One;
            }
            cutlass::arch::umma_arrive(mma_done); // one thread commits; the barrier flips when done
        }
        cutlass::arch::ClusterBarrier::wait(mma_done, phase);
        phase ^= 1;
        __syncthreads(); // this stage is refilled two iterations on
    }
    // Epilogue: TMEM -> registers (each warp its 32 lanes = rows), then C.
    auto t2r = make_tmem_copy(SM100_TMEM_LOAD_32dp32b1x{}, acc);
    auto thr = t2r.get_slice(threadIdx.x);
    Tensor tDt = thr.partition_S(acc);
    Tensor tDg = thr.partition_D(tCgC);
    Tensor tDc = thr.partition_D(tCcC);
    Tensor tDr = make_tensor<float>(shape(tDg));
    if (ktiles > 0) {
        copy(t2r, tDt, tDr);
        cutlass::arch::fence_view_async_tmem_load(); // tcgen05.wait::ld
    } else {
        fill(tDr, 0.0f);
    }
    for (int i = 0; i < size(tDr); i++)
        if (m0 + get<0>(tDc(i)) < M && n0 + get<1>(tDc(i)) < N)
            tDg(i) = tDr(i);
    __syncthreads();
    if (warp == 0)
        tmem.free(*tmem_base, BN);
}
