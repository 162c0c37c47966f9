// wrong.cu - an example that compiles and runs but is wrong: it accumulates
// in fp16 (__hfma) instead of float. With K = 64 the sums reach about 16,
// where an fp16 ulp is 1/64, so the result is off by far more than the
// tolerance (7.7e-6 relative at K = 64); the judge answers wrong_answer.
//!kjudge leaderboard matmul
//!kjudge launch matmul grid=(ceil_div(N, 16), ceil_div(M, 16)) block=(16, 16)
#include <cuda_fp16.h>

extern "C" __global__ void matmul(const __half* A, const __half* B, float* C, int M, int N, int K)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N)
        return;
    __half acc = __float2half(0.0f); // the bug: an fp16 accumulator
    for (int k = 0; k < K; k++)
        acc = __hfma(A[(long long)row * K + k], B[(long long)k * N + col], acc);
    C[(long long)row * N + col] = __half2float(acc);
}
