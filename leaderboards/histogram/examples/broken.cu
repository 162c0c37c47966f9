// broken.cu - an example that does not compile: line 12 calls atomicAdd on
// an unsigned char, for which CUDA has no overload; NVRTC reports the line
// as submission.cu(12).
//!kjudge leaderboard histogram
//!kjudge launch count grid=(ceil_div(N, 256)) block=(256)

extern "C" __global__ void count(const unsigned char* data, int* hist, int N, int contention)
{
    __shared__ unsigned char local[256];
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        atomicAdd(&local[data[i]], (unsigned char)1);
    hist[threadIdx.x] = local[threadIdx.x];
}
