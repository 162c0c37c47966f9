// template.cu - a correct, naive starting point for matmul. Submit it as it
// is to see the whole flow, then make it fast.
//!kjudge leaderboard matmul
//!kjudge launch matmul grid=(ceil_div(N, 16), ceil_div(M, 16)) block=(16, 16)
//
// The launch line above is the host side: a 2D grid of 16x16 blocks, one
// thread per element of C (x = column, y = row). grid, block and smem are
// integer expressions over M, N and K (with + - * / %, min, max, ceil_div,
// comparisons and ?:), so one file can pick its tiles per shape.
//
// Ideas for speed, roughly in order of payoff:
//  - this kernel reads A and B from global memory K times per element; tile
//    them through shared memory so each value is loaded once per tile;
//  - use the tensor cores: nvcuda::wmma (#include <mma.h>) multiplies 16x16x16
//    fp16 tiles into float accumulators; or mma.sync / wgmma through inline PTX;
//  - give each warp several accumulator tiles, stage the next K-tile with
//    cp.async while computing the current one, pad shared-memory rows to avoid
//    bank conflicts;
//  - ask for more than 48 KB of shared memory with smem= (the judge raises
//    the kernel's limit).
// Accumulate in float: fp16 accumulation, or rounding C through fp16, fails
// the tolerance (see the description).
#include <cuda_fp16.h>

extern "C" __global__ void matmul(const __half* A, const __half* B, float* C, int M, int N, int K)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N)
        return;
    float acc = 0.0f;
    for (int k = 0; k < K; k++)
        acc += __half2float(A[(long long)row * K + k]) * __half2float(B[(long long)k * N + col]);
    C[(long long)row * N + col] = acc;
}
