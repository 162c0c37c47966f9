// broken/vectoradd.cu - vectoradd's reference.cu with one deliberate bug for
// the oracle to catch: the sum is rounded toward zero (__float2half_rz)
// instead of to the nearest fp16, so about half of the elements are one
// ulp small in magnitude.
//!kjudge leaderboard vectoradd
//!kjudge launch ref_add grid=(ceil_div(N*N, 256)) block=(256)
#include <cuda_fp16.h>

extern "C" __global__ void ref_add(const __half* A, const __half* B, __half* C, int N)
{
    const long long n = (long long)N * N;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const double a = (double)__half2float(A[i]);
    const double b = (double)__half2float(B[i]);
    C[i] = __float2half_rz((float)(a + b)); // the bug: round toward zero
}
