// template.cu - a correct, naive starting point for histogram. Submit it as
// it is to see the whole flow, then make it fast.
//!kjudge leaderboard histogram
//!kjudge launch zero grid=(1) block=(256)
//!kjudge launch count grid=(ceil_div(N, 256)) block=(256)
//
// Two launch lines: they run in this order on one stream and are timed
// together. The judge fills `hist` with garbage before every run, so the
// first kernel zeroes it; the second adds one per byte with a global atomic.
// grid and block are integer expressions over N and contention (with
// + - * / %, min, max, ceil_div, comparisons and ?:).
//
// Ideas for speed, roughly in order of payoff:
//  - every byte here is an atomic on one of only 256 global addresses, and
//    with contention 90 most of them hit the same one. Count into a private
//    copy in shared memory first (one per block, or better one per lane so
//    that lanes never collide), then add each block's counts to the global
//    histogram once;
//  - load 16 bytes per thread (a uint4) and take the bytes apart in
//    registers; give each thread several of them;
//  - a fixed grid of a few blocks per SM with a grid-stride loop;
//  - a `//!kjudge workspace BYTES` line gives every launch a zeroed scratch
//    buffer as a last `void*` argument: with it, one kernel can both count
//    and write the final result (the last block to finish does the write).

extern "C" __global__ void zero(const unsigned char* data, int* hist, int N, int contention)
{
    hist[threadIdx.x] = 0;
}

extern "C" __global__ void count(const unsigned char* data, int* hist, int N, int contention)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        atomicAdd(&hist[data[i]], 1);
}
