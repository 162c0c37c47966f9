// wrong.cu - an example that compiles and runs but is wrong: it counts into
// a shared-memory histogram with plain increments instead of atomics, so
// when two threads see the same byte value at once one increment is lost.
// With contention 90 most bytes are the same value and the counts come out
// far too low; the judge answers wrong_answer with the first wrong bins.
//!kjudge leaderboard histogram
//!kjudge launch zero grid=(1) block=(256)
//!kjudge launch count grid=(min(ceil_div(N, 256), 1024)) block=(256)

extern "C" __global__ void zero(const unsigned char* data, int* hist, int N, int contention)
{
    hist[threadIdx.x] = 0;
}

extern "C" __global__ void count(const unsigned char* data, int* hist, int N, int contention)
{
    __shared__ int local[256];
    local[threadIdx.x] = 0;
    __syncthreads();
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < N; i += stride)
        local[data[i]] += 1; // the bug: a data race, not an atomic
    __syncthreads();
    atomicAdd(&hist[threadIdx.x], local[threadIdx.x]);
}
