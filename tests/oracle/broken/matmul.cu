// broken/matmul.cu - matmul's reference.cu with one deliberate bug for the
// oracle to catch: the loop over k stops one short (k < K - 1), so every
// element misses its last product (about 1/K relative). The rest as in
// reference.cu: One thread per element of C. The product of two fp16
// values is exact in double and K such products sum in double with a
// relative error below K * 2^-53, so C is the exact result rounded once to
// float. Threads along x take consecutive columns (coalesced loads of B, one
// broadcast load of A per warp).
//!kjudge leaderboard matmul
//!kjudge launch ref_matmul grid=(ceil_div(N, 32), ceil_div(M, 8)) block=(32, 8)
#include <cuda_fp16.h>

extern "C" __global__ void ref_matmul(const __half* A, const __half* B, float* C,
                                      int M, int N, int K)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N)
        return;
    double acc = 0.0;
    for (int k = 0; k < K - 1; k++) // the bug: should be k < K
        acc += (double)__half2float(A[(long long)row * K + k]) *
               (double)__half2float(B[(long long)k * N + col]);
    C[(long long)row * N + col] = (float)acc;
}
