// wrong.cu - an example that compiles and runs but is wrong: it adds two
// elements per thread with __hadd2 and forgets the tail, so when N*N is odd
// (N = 127, the first test) the last element of C is never written and keeps
// the judge's NaN poison. The judge answers wrong_answer with the index.
//!kjudge leaderboard vectoradd
//!kjudge launch add grid=(ceil_div(N*N/2, 256)) block=(256)
#include <cuda_fp16.h>

extern "C" __global__ void add(const __half* A, const __half* B, __half* C, int N)
{
    const long long n2 = (long long)N * N / 2; // the bug: drops the last element when N*N is odd
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2)
        reinterpret_cast<__half2*>(C)[i] = __hadd2(reinterpret_cast<const __half2*>(A)[i],
                                                   reinterpret_cast<const __half2*>(B)[i]);
}
