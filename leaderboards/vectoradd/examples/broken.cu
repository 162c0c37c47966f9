// broken.cu - an example that does not compile: line 12 passes a __half2 to
// __hadd, which takes two __half; NVRTC reports the line as submission.cu(12).
//!kjudge leaderboard vectoradd
//!kjudge launch add grid=(ceil_div(N*N, 512)) block=(256)
#include <cuda_fp16.h>

extern "C" __global__ void add(const __half* A, const __half* B, __half* C, int N)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const __half2* a2 = reinterpret_cast<const __half2*>(A);
    const __half2* b2 = reinterpret_cast<const __half2*>(B);
    C[i] = __hadd(a2[i], b2[i]);
}
