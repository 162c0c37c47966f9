// template.cu - a correct, naive starting point for vectoradd. Submit it as
// it is to see the whole flow, then make it fast.
//!kjudge leaderboard vectoradd
//!kjudge launch add grid=(ceil_div(N*N, 256)) block=(256)
//
// The launch line above is the host side: one thread per element, 256
// threads per block. grid and block are integer expressions over N (with
// + - * / %, min, max, ceil_div, comparisons and ?:).
//
// Ideas for speed: the kernel is bound by memory bandwidth, and this one
// moves 2 bytes per thread per load. Load 16 bytes at a time (a uint4 is
// eight halves, added with four __hadd2), give each thread several
// independent loads in flight, and size the grid from N. N*N need not be a
// multiple of 8 (N = 127 is a test), so keep a scalar path for the tail.
#include <cuda_fp16.h>

extern "C" __global__ void add(const __half* A, const __half* B, __half* C, int N)
{
    const long long n = (long long)N * N;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        C[i] = __hadd(A[i], B[i]);
}
