// reference.cu - the trusted reference kernels of histogram: plain and
// obviously correct, not fast. The first launch zeroes the 256 counts (the
// judge poisons outputs); the second is the textbook privatized histogram:
// each block counts its grid-stride share of the bytes into 256 shared
// counters with integer atomics, then adds its nonzero counters to the global
// ones. Integer addition is exact and order-free, so any interleaving gives
// the same counts.
//!kjudge leaderboard histogram
//!kjudge launch ref_zero grid=(1) block=(256)
//!kjudge launch ref_count grid=(min(ceil_div(N, 256), 1024)) block=(256)

extern "C" __global__ void ref_zero(const unsigned char* data, int* hist, int N, int contention)
{
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        hist[b] = 0;
}

extern "C" __global__ void ref_count(const unsigned char* data, int* hist, int N, int contention)
{
    __shared__ int local[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        local[b] = 0;
    __syncthreads();

    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < N; i += stride)
        atomicAdd(&local[data[i]], 1);
    __syncthreads();

    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        if (local[b] != 0)
            atomicAdd(&hist[b], local[b]);
}
