// fast.cu - an example vectoradd submission tuned for memory bandwidth:
// 16-byte loads and stores (eight halves added with four __hadd2), four
// independent loads per operand in flight per thread, one block per 1024
// vectors (16 KB of each operand).
//!kjudge leaderboard vectoradd
//!kjudge launch add_fast grid=(max(1, ceil_div(N*N, 8*256*4))) block=(256)
//
// The 4 in the grid is VA_UNROLL below: keep the two in step.
//
// Layout: the N*N elements are n8 = N*N / 8 uint4 vectors plus a tail of
// N*N % 8 scalars (N = 127 gives 16129 = 2016*8 + 1). Block b handles the
// vectors [b*1024, b*1024 + 1024) in four rounds of 256, each round one
// coalesced 4 KB load per operand; the loop strides by the grid, so any
// grid is correct. The tail is added by the first threads of the grid.
// Buffers that are not 16-byte aligned (the judge's never are) take the
// scalar path.
//
// __hadd2 rounds each sum once to the nearest fp16, exactly as the
// reference does, so the output is bit-identical to it.
#include <cuda_fp16.h>

#define VA_UNROLL 4
#define VA_BLOCK 256

__device__ __forceinline__ uint4 va_add8(uint4 a, uint4 b)
{
    uint4 r;
    const __half2* x = reinterpret_cast<const __half2*>(&a);
    const __half2* y = reinterpret_cast<const __half2*>(&b);
    __half2* z = reinterpret_cast<__half2*>(&r);
#pragma unroll
    for (int k = 0; k < 4; k++)
        z[k] = __hadd2(x[k], y[k]);
    return r;
}

extern "C" __global__ void __launch_bounds__(VA_BLOCK)
add_fast(const __half* A, const __half* B, __half* C, int N)
{
    const long long n = (long long)N * N;
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long nthreads = (long long)gridDim.x * blockDim.x;
    const bool aligned = ((reinterpret_cast<unsigned long long>(A) |
                           reinterpret_cast<unsigned long long>(B) |
                           reinterpret_cast<unsigned long long>(C)) & 15) == 0;
    if (!aligned) {
        for (long long i = tid; i < n; i += nthreads)
            C[i] = __hadd(A[i], B[i]);
        return;
    }

    const long long n8 = n / 8;
    const uint4* a8 = reinterpret_cast<const uint4*>(A);
    const uint4* b8 = reinterpret_cast<const uint4*>(B);
    uint4* c8 = reinterpret_cast<uint4*>(C);
    const long long step = (long long)gridDim.x * blockDim.x * VA_UNROLL;

    for (long long base = (long long)blockIdx.x * blockDim.x * VA_UNROLL + threadIdx.x; base < n8;
         base += step) {
        uint4 va[VA_UNROLL], vb[VA_UNROLL];
#pragma unroll
        for (int u = 0; u < VA_UNROLL; u++) {
            const long long v = base + (long long)u * blockDim.x;
            if (v < n8) {
                va[u] = __ldg(a8 + v);
                vb[u] = __ldg(b8 + v);
            }
        }
#pragma unroll
        for (int u = 0; u < VA_UNROLL; u++) {
            const long long v = base + (long long)u * blockDim.x;
            if (v < n8)
                c8[v] = va_add8(va[u], vb[u]);
        }
    }

    const long long i = n8 * 8 + tid; // the tail: fewer than 8 elements
    if (i < n)
        C[i] = __hadd(A[i], B[i]);
}
