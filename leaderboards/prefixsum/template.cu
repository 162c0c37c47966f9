// template.cu - a correct, naive starting point for prefixsum. Submit it as
// it is to see the whole flow, then make it fast.
//!kjudge leaderboard prefixsum
//!kjudge workspace 4*ceil_div(N, 1024)
//!kjudge launch scan_blocks grid=(ceil_div(N, 1024)) block=(1024)
//!kjudge launch scan_sums grid=(1) block=(1024)
//!kjudge launch add_offsets grid=(ceil_div(N, 1024)) block=(1024)
//
// Three launches, run in this order on one stream and timed together. The
// workspace line gives every launch a zeroed scratch buffer as a last
// `void*` argument: here one float per block of 1024 elements.
//   1. scan_blocks: each block scans its 1024 elements in shared memory
//      (Hillis-Steele: log2(1024) = 10 steps) and stores its total;
//   2. scan_sums:   one block turns the block totals into exclusive prefixes;
//   3. add_offsets: each block adds its prefix to its elements.
// Expressions in the launch lines may use N (with + - * / %, min, max,
// ceil_div, comparisons and ?:).
//
// Ideas for speed, roughly in order of payoff:
//  - this reads x once and y three times; a single-pass scan reads x once
//    and writes y once: each block scans a tile, publishes its total, and
//    takes its predecessors' totals from the workspace ("decoupled
//    look-back"; take tile numbers from an atomic counter so a block only
//    waits for blocks that already run);
//  - scan in registers and warp shuffles (__shfl_up_sync), not in shared
//    memory with a barrier per step; float4 loads and stores;
//  - mind the tolerance: a long chain of float additions (one carry per
//    tile over 65536 tiles) drifts by several hundredths at N = 2^28, close
//    to the atol there; carry the running total in double, or keep chains
//    short (this template's longest chain is about 1300 additions).

#define TPB 1024

extern "C" __global__ void scan_blocks(const float* x, float* y, int N, void* workspace)
{
    __shared__ float s[TPB];
    float* block_sums = (float*)workspace;
    const int t = threadIdx.x;
    const long long i = (long long)blockIdx.x * TPB + t;
    s[t] = i < N ? x[i] : 0.0f;
    __syncthreads();
    for (int off = 1; off < TPB; off *= 2) {
        const float add = t >= off ? s[t - off] : 0.0f;
        __syncthreads();
        s[t] += add;
        __syncthreads();
    }
    if (i < N)
        y[i] = s[t];
    if (t == TPB - 1)
        block_sums[blockIdx.x] = s[t];
}

extern "C" __global__ void scan_sums(const float* x, float* y, int N, void* workspace)
{
    __shared__ float seg[TPB];
    float* block_sums = (float*)workspace;
    const long long nb = ((long long)N + TPB - 1) / TPB;
    const long long per = (nb + TPB - 1) / TPB;
    const int t = threadIdx.x;
    const long long lo = t * per < nb ? t * per : nb;
    const long long hi = lo + per < nb ? lo + per : nb;
    float s = 0.0f;
    for (long long b = lo; b < hi; b++)
        s += block_sums[b];
    seg[t] = s;
    __syncthreads();
    if (t == 0) {
        float run = 0.0f;
        for (int k = 0; k < TPB; k++) {
            const float v = seg[k];
            seg[k] = run;
            run += v;
        }
    }
    __syncthreads();
    float run = seg[t];
    for (long long b = lo; b < hi; b++) {
        const float v = block_sums[b];
        block_sums[b] = run;
        run += v;
    }
}

extern "C" __global__ void add_offsets(const float* x, float* y, int N, void* workspace)
{
    const float* block_sums = (const float*)workspace;
    const long long i = (long long)blockIdx.x * TPB + threadIdx.x;
    if (i < N)
        y[i] += block_sums[blockIdx.x];
}
