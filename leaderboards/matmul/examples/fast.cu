// fast.cu - an example matmul submission on the tensor cores: nvcuda::wmma
// 16x16x16 fp16 tiles with float accumulators, 128x128 block tiles, a
// three-stage cp.async pipeline over K in steps of 32, padded shared memory.
//!kjudge leaderboard matmul
//!kjudge launch mm_fast grid=(ceil_div(N, 128), ceil_div(M, 128)) block=(256) smem=56832
//
// Work split. Block (bx, by) computes C[by*128 .. +128, bx*128 .. +128]. Its
// 8 warps form a 2 x 4 grid; each warp owns a 64 x 32 piece of the tile, i.e.
// 4 x 2 accumulator fragments (64 floats a lane). One K-step of 32 is two
// wmma k-steps of 16: 4 A fragments and 2 B fragments loaded, 8 mma_sync.
//
// Pipeline. Shared memory holds three stages of an A tile (128 x 32 halves,
// rows padded to 40) and a B tile (32 x 128 halves, rows padded to 136):
// 3 * (10240 + 8704) = 56832 bytes, the smem= above. The padding of 16 bytes
// per row spreads the rows of a fragment over all banks. Each thread copies
// two 16-byte chunks of A and two of B per stage with cp.async (zero-filled
// past the matrix edge), so tile k+2 is in flight while tile k is computed.
// When K or N is not a multiple of 8 (never on this board's shapes, but
// allowed) a 16-byte chunk could straddle the edge; those shapes take plain
// element-by-element loads instead, through the same pipeline.
//
// Epilogue. Fragments fully inside C go straight to global memory with
// store_matrix_sync when N % 4 == 0; the others pass through a per-warp
// 16 x 16 staging area (in the now idle pipeline memory) and are written
// element by element, so any M, N, K is correct.
//
// Accuracy: the tensor cores multiply fp16 exactly and add in float, like
// the reference up to float rounding (see the tolerance in the description).
#include <cuda_fp16.h>
#include <mma.h>

using namespace nvcuda;

#define MM_BM 128
#define MM_BN 128
#define MM_BK 32
#define MM_STAGES 3
#define MM_LDA (MM_BK + 8)   /* halves per A row in shared memory */
#define MM_LDB (MM_BN + 8)   /* halves per B row in shared memory */
#define MM_A_STAGE (MM_BM * MM_LDA)
#define MM_B_STAGE (MM_BK * MM_LDB)
#define MM_THREADS 256

__device__ __forceinline__ void mm_cp16(void* dst, const void* src, int src_bytes)
{
    const unsigned int s = (unsigned int)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(src_bytes));
}

__device__ __forceinline__ void mm_commit()
{
    asm volatile("cp.async.commit_group;\n" ::);
}

template <int N>
__device__ __forceinline__ void mm_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Stage `kt` of A and B into shared buffers as, bs (one pipeline stage).
__device__ __forceinline__ void mm_load_tile(const __half* A, const __half* B, __half* as, __half* bs,
                                             int M, int N, int K, int m0, int n0, int kt, bool vec)
{
    const int k0 = kt * MM_BK;
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const int c = threadIdx.x + i * MM_THREADS;   // 512 chunks of 8 halves
        // A: 128 rows x 4 chunks
        const int ar = c >> 2, ac = (c & 3) * 8;
        const int gm = m0 + ar, gk = k0 + ac;
        __half* ad = as + ar * MM_LDA + ac;
        // B: 32 rows x 16 chunks
        const int br = c >> 4, bc = (c & 15) * 8;
        const int bk = k0 + br, bn = n0 + bc;
        __half* bd = bs + br * MM_LDB + bc;
        if (vec) {
            const bool ain = gm < M && gk < K, bin = bk < K && bn < N;
            mm_cp16(ad, ain ? (const void*)(A + (long long)gm * K + gk) : (const void*)A, ain ? 16 : 0);
            mm_cp16(bd, bin ? (const void*)(B + (long long)bk * N + bn) : (const void*)B, bin ? 16 : 0);
        } else {
#pragma unroll
            for (int j = 0; j < 8; j++) {
                ad[j] = (gm < M && gk + j < K) ? A[(long long)gm * K + gk + j] : __float2half(0.0f);
                bd[j] = (bk < K && bn + j < N) ? B[(long long)bk * N + bn + j] : __float2half(0.0f);
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(MM_THREADS)
mm_fast(const __half* A, const __half* B, float* C, int M, int N, int K)
{
    extern __shared__ __align__(128) unsigned char mm_smem[];
    __half* As = reinterpret_cast<__half*>(mm_smem);
    __half* Bs = As + MM_STAGES * MM_A_STAGE;

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wm = warp >> 2, wn = warp & 3;          // 2 x 4 warps
    const int m0 = blockIdx.y * MM_BM, n0 = blockIdx.x * MM_BN;
    const bool vec = K % 8 == 0 && N % 8 == 0 &&
                     ((reinterpret_cast<unsigned long long>(A) | reinterpret_cast<unsigned long long>(B)) & 15) == 0;
    const int ktiles = (K + MM_BK - 1) / MM_BK;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 2; j++)
            wmma::fill_fragment(acc[i][j], 0.0f);

#pragma unroll
    for (int s = 0; s < MM_STAGES - 1; s++) {
        if (s < ktiles)
            mm_load_tile(A, B, As + s * MM_A_STAGE, Bs + s * MM_B_STAGE, M, N, K, m0, n0, s, vec);
        mm_commit(); // always one group per stage, so the wait counts stay exact
    }

    for (int kt = 0; kt < ktiles; kt++) {
        mm_wait<MM_STAGES - 2>(); // tile kt has landed (for this thread) ...
        __syncthreads();          // ... for every thread; and stage kt-1 is free
        const int next = kt + MM_STAGES - 1;
        if (next < ktiles) {
            const int s = next % MM_STAGES;
            mm_load_tile(A, B, As + s * MM_A_STAGE, Bs + s * MM_B_STAGE, M, N, K, m0, n0, next, vec);
        }
        mm_commit();

        const __half* as = As + (kt % MM_STAGES) * MM_A_STAGE;
        const __half* bs = Bs + (kt % MM_STAGES) * MM_B_STAGE;
#pragma unroll
        for (int kk = 0; kk < MM_BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> af[4];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> bf[2];
#pragma unroll
            for (int i = 0; i < 4; i++)
                wmma::load_matrix_sync(af[i], as + (wm * 64 + i * 16) * MM_LDA + kk, MM_LDA);
#pragma unroll
            for (int j = 0; j < 2; j++)
                wmma::load_matrix_sync(bf[j], bs + kk * MM_LDB + wn * 32 + j * 16, MM_LDB);
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 2; j++)
                    wmma::mma_sync(acc[i][j], af[i], bf[j], acc[i][j]);
        }
    }
    mm_wait<0>();
    __syncthreads(); // the pipeline memory is now free for the staging areas

    float* stage = reinterpret_cast<float*>(mm_smem) + warp * 256;
#pragma unroll
    for (int i = 0; i < 4; i++) {
#pragma unroll
        for (int j = 0; j < 2; j++) {
            const int row = m0 + wm * 64 + i * 16, col = n0 + wn * 32 + j * 16;
            if (row >= M || col >= N)
                continue; // warp-uniform
            if (row + 16 <= M && col + 16 <= N && N % 4 == 0) {
                wmma::store_matrix_sync(C + (long long)row * N + col, acc[i][j], N, wmma::mem_row_major);
            } else {
                wmma::store_matrix_sync(stage, acc[i][j], 16, wmma::mem_row_major);
                __syncwarp();
                for (int e = lane; e < 256; e += 32) {
                    const int r = row + (e >> 4), c = col + (e & 15);
                    if (r < M && c < N)
                        C[(long long)r * N + c] = stage[e];
                }
                __syncwarp();
            }
        }
    }
}
