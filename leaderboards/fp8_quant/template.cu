// template.cu - a correct, naive starting point for fp8_quant. Submit it as
// it is to see the whole flow, then make it fast.
//!kjudge leaderboard fp8_quant
//!kjudge launch quant grid=(T*(H/GS)) block=(GS) smem=(GS*4)
//
// The launch line above is the host side: one block per group of GS
// elements, one thread per element (so GS <= 1024), GS*4 bytes of dynamic
// shared memory.
// grid, block and smem are integer expressions over T, H and GS (with + - *
// / %, min, max, ceil_div, comparisons and ?:), so one file can pick a
// different configuration for each shape. You may add `//!kjudge nvrtc`
// options such as --use_fast_math (check the tolerance first).
//
// Ideas for speed, roughly in order of payoff:
//  - this kernel moves only 4 bytes per thread per load; use float4 loads
//    and stores (16 bytes per thread) and let one warp own a whole group;
//  - replace the shared-memory tree with warp shuffles (__shfl_xor_sync);
//  - give each thread several independent loads so more bytes are in
//    flight, and size the grid from the shape in the launch line;
//  - let each warp own a few consecutive 512-byte tiles, and try the cache
//    hints (__ldg, __ldcs, __stcs) and measure: on an H200, __ldg with plain
//    stores beat the streaming hints for this kernel.
// The input is fresh for every run and both outputs are poisoned first, so
// every element of x_q and x_s must be written every time.

extern "C" __global__ void quant(const float* x, float* x_q, float* x_s,
                                 int T, int H, int GS)
{
    extern __shared__ float red[];          // GS floats (smem=(GS*4) above)
    const long long g = blockIdx.x;         // group index over the matrix
    const int j = threadIdx.x;              // element within the group
    const long long i = g * GS + j;         // groups are contiguous: H % GS == 0

    const float v = x[i];
    red[j] = fabsf(v);
    __syncthreads();

    // Tree reduction of the absolute maximum; works for any GS, not only
    // powers of two (an odd count keeps its middle element for the next step).
    for (int n = GS; n > 1;) {
        const int half = (n + 1) / 2;
        if (j < n - half)
            red[j] = fmaxf(red[j], red[j + half]);
        __syncthreads();
        n = half;
    }

    const float s = fmaxf(red[0], 1e-10f) / 448.0f;
    if (j == 0)
        x_s[g] = s;
    x_q[i] = fminf(fmaxf(v / s, -448.0f), 448.0f);
}
