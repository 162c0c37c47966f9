// fast.cu - an example histogram submission: one launch, 16-byte loads, a
// per-lane privatized histogram in shared memory that no amount of
// contention can serialize, and a last-block finish through the workspace.
//!kjudge leaderboard histogram
//!kjudge workspace 2048
//!kjudge launch hist_fast grid=(max(1, min(528, ceil_div(N, 256*16*2)))) block=(256)
//
// Counting. Each block keeps 32 copies of the 256 bins in shared memory,
// one per lane, laid out hs[bin*32 + lane] (32 KB): a lane always counts
// into its own column, so the 32 lanes of a warp hit 32 different banks
// whatever the bytes are, and a warp never conflicts with itself even when
// every byte is the same value (contention 90). The 8 warps of a block share
// the columns through shared-memory atomics, which only serialize across
// instructions, not within one. Bytes come 16 at a time as uint4 loads in a
// grid-stride loop; the N % 16 last bytes are counted one by one.
//
// Finishing. Thread t then owns bin t and sums its 32 copies; reading them
// at a rotated column ((j + t) % 32) keeps the warp on 32 banks. Each block
// adds its nonzero sums to 256 int counters in the workspace (zeroed by the
// judge before every run) with global atomics, fences, and takes a ticket;
// the block that draws the last ticket copies the 256 totals into `hist`.
// So `hist` (poisoned by the judge) is written exactly once, by one block,
// after every count is in, and the kernel needs no zeroing launch.
//
// The grid is about two blocks per 16 KB of input, at most 528 (four per SM
// on an H200); the block size must be 256 (one bin per thread).
//
// Workspace layout: int counts[256], then unsigned int ticket.

#define HF_BINS 256
#define HF_LANES 32

extern "C" __global__ void __launch_bounds__(256)
hist_fast(const unsigned char* data, int* hist, int N, int contention, void* workspace)
{
    __shared__ int hs[HF_BINS * HF_LANES];
    __shared__ int is_last;
    int* counts = reinterpret_cast<int*>(workspace);
    unsigned int* ticket = reinterpret_cast<unsigned int*>(counts + HF_BINS);
    const int t = threadIdx.x;
    const int lane = t & 31;

    int4* hs4 = reinterpret_cast<int4*>(hs);
    for (int k = t; k < HF_BINS * HF_LANES / 4; k += blockDim.x)
        hs4[k] = make_int4(0, 0, 0, 0);
    __syncthreads();

    const long long tid = (long long)blockIdx.x * blockDim.x + t;
    const long long nthreads = (long long)gridDim.x * blockDim.x;
    const bool aligned = (reinterpret_cast<unsigned long long>(data) & 15) == 0;
    const long long n16 = aligned ? N / 16 : 0;
    const uint4* d16 = reinterpret_cast<const uint4*>(data);

    for (long long v = tid; v < n16; v += nthreads) {
        const uint4 w = __ldg(d16 + v);
        const unsigned int words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
        for (int k = 0; k < 4; k++) {
#pragma unroll
            for (int s = 0; s < 32; s += 8)
                atomicAdd(&hs[((words[k] >> s) & 0xff) * HF_LANES + lane], 1);
        }
    }
    for (long long i = n16 * 16 + tid; i < N; i += nthreads) // the tail (or everything, unaligned)
        atomicAdd(&hs[data[i] * HF_LANES + lane], 1);
    __syncthreads();

    int sum = 0;
#pragma unroll 8
    for (int j = 0; j < HF_LANES; j++)
        sum += hs[t * HF_LANES + ((j + t) & (HF_LANES - 1))];
    if (sum != 0)
        atomicAdd(&counts[t], sum);
    __threadfence();
    __syncthreads();
    if (t == 0) {
        is_last = atomicAdd(ticket, 1u) == gridDim.x - 1;
        __threadfence();
    }
    __syncthreads();
    if (is_last) {
        __threadfence();
        hist[t] = __ldcg(&counts[t]);
    }
}
