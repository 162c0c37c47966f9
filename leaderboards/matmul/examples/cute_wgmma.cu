// cute_wgmma.cu - matmul with CuTe on Hopper's warpgroup MMA (wgmma, sm_90a).
//!kjudge leaderboard matmul
//!kjudge launch matmul_cute grid=(ceil_div(N, 128), ceil_div(M, 128)) block=(256) smem=(3 * (128 * 64 + 64 * 128) * 2)
//
// One CTA computes a 128x128 tile of C with two warpgroups (each 64x128),
// K in steps of 64 through three shared-memory stages (two in flight
// while one is multiplied). The shared tiles use
// CuTe's 128-byte-swizzled GMMA layouts (A K-major, B N-major, as the board
// stores them), so wgmma reads them directly; the global loads are cp.async
// 16-byte copies where a whole row segment is in bounds, element copies with
// zero fill at the edges. The board's signature passes plain pointers, so
// there is no host-made tensor map for TMA (docs/languages-cuda.md).
#include <cute/tensor.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cute/arch/mma_sm90.hpp>
#include <cute/arch/copy_sm80.hpp>

using namespace cute;

namespace {
constexpr int BM = 128, BN = 128, BK = 64, STAGES = 3;
using SmemA = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<half_t>{}, Shape<Int<BM>, Int<BK>>{}));
using SmemB = decltype(tile_to_shape(GMMA::Layout_MN_SW128_Atom<half_t>{}, Shape<Int<BN>, Int<BK>>{}));

// Copy a (rows x cols) tile whose columns are contiguous in global memory
// (row stride ld) into s(row, col); zero outside [0, rmax) x [0, cmax).
template <int ROWS, int COLS, class STensor>
__device__ void load_tile(const half_t* g, long ld, int rmax, int cmax, STensor s, bool rows_first)
{
    constexpr int VEC = 8; // halves per 16-byte copy
    for (int i = threadIdx.x; i < ROWS * COLS / VEC; i += blockDim.x) {
        int r = i / (COLS / VEC), c = (i % (COLS / VEC)) * VEC;
        const half_t* src = g + (long)r * ld + c;
        if (r < rmax && c + VEC <= cmax && (reinterpret_cast<uintptr_t>(src) % 16) == 0) {
            // 8 contiguous halves land in 8 contiguous halves of the swizzled
            // layout (the swizzle moves 16-byte chunks as a whole).
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

extern "C" __global__ void __launch_bounds__(256) matmul_cute(const half_t* A, const half_t* B, float* C,
                                                             int M, int N, int K)
{
    extern __shared__ __align__(1024) unsigned char smem[];
    half_t* sa_ptr = reinterpret_cast<half_t*>(smem);
    half_t* sb_ptr = sa_ptr + STAGES * cosize(SmemA{});
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

    auto tiled_mma = make_tiled_mma(SM90_64x128x16_F32F16F16_SS<GMMA::Major::K, GMMA::Major::MN>{},
                                    Layout<Shape<_2, _1, _1>>{});
    auto thr_mma = tiled_mma.get_thread_slice(threadIdx.x);
    Tensor gC = make_tensor(make_gmem_ptr(C + (long)m0 * N + n0), make_shape(Int<BM>{}, Int<BN>{}),
                            make_stride((long)N, Int<1>{}));
    Tensor acc = partition_fragment_C(tiled_mma, Shape<Int<BM>, Int<BN>>{});
    clear(acc);

    const int ktiles = (K + BK - 1) / BK;
    auto stage = [&](int kt, int st) {
        Tensor sA = make_tensor(make_smem_ptr(sa_ptr + st * cosize(SmemA{})), SmemA{});
        Tensor sB = make_tensor(make_smem_ptr(sb_ptr + st * cosize(SmemB{})), SmemB{});
        int k0 = kt * BK;
        // A: rows m, contiguous k -> sA(m, k)
        load_tile<BM, BK>(A + (long)m0 * K + k0, K, M - m0, K - k0, sA, true);
        // B: rows k, contiguous n -> sB(n, k)
        load_tile<BK, BN>(B + (long)k0 * N + n0, N, K - k0, N - n0, sB, false);
    };
    // One cp.async group per stage, committed even when empty, so that
    // "all but the newest STAGES - 1 groups" is always stage kt.
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < ktiles)
            stage(s, s);
        asm volatile("cp.async.commit_group;\n" ::);
    }
    for (int kt = 0; kt < ktiles; kt++) {
        const int st = kt % STAGES, next = kt + STAGES - 1;
        if (next < ktiles)
            stage(next, next % STAGES); // its buffer was multiplied in iteration kt - 1
        asm volatile("cp.async.commit_group;\n" ::);
        asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 1));
        // Each thread makes its own shared-memory writes (cp.async and plain
        // stores) visible to the async proxy wgmma reads through, then all meet.
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        Tensor sA = make_tensor(make_smem_ptr(sa_ptr + st * cosize(SmemA{})), SmemA{});
        Tensor sB = make_tensor(make_smem_ptr(sb_ptr + st * cosize(SmemB{})), SmemB{});
        Tensor tA = thr_mma.partition_A(sA);
        Tensor tB = thr_mma.partition_B(sB);
        Tensor fA = thr_mma.make_fragment_A(tA);
        Tensor fB = thr_mma.make_fragment_B(tB);
        warpgroup_fence_operand(acc);
        warpgroup_arrive();
        gemm(tiled_mma, fA, fB, acc);
        warpgroup_commit_batch();
        warpgroup_wait<0>();
        warpgroup_fence_operand(acc);
        __syncthreads(); // every warpgroup is done with stage st before it is refilled
    }
    // Epilogue: each thread writes its accumulators, inside the bounds.
    Tensor cC = make_identity_tensor(make_shape(Int<BM>{}, Int<BN>{}));
    Tensor tCg = thr_mma.partition_C(gC);
    Tensor tCc = thr_mma.partition_C(cC);
    for (int i = 0; i < size(acc); i++) {
        if (m0 + get<0>(tCc(i)) < M && n0 + get<1>(tCc(i)) < N)
            tCg(i) = acc(i);
    }
}
