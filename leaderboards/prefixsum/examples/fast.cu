// fast.cu - an example prefixsum submission: a single-pass scan with
// decoupled look-back (one read of x, one write of y), float4 loads and
// stores, warp-shuffle scans, and the carry between tiles kept in double.
//!kjudge leaderboard prefixsum
//!kjudge workspace 128 + 8*ceil_div(N, 4096)
//!kjudge launch scan_fast grid=(ceil_div(N, 4096)) block=(256)
//
// Tiles. A block scans one tile of 4096 elements: four rounds of 1024, in
// round r thread t holds the float4 at tile + 1024r + 4t (coalesced). The
// block takes its tile number from an atomic counter in the workspace, not
// from blockIdx, so tile i-1 always belongs to a block that is already
// running: waiting for it cannot deadlock whatever order blocks start in.
//
// In-tile scan. Each thread scans its four values in registers; the warps
// scan their lanes' totals with __shfl_up_sync (the four rounds at once);
// lane 31 of each warp puts the warp's total per round in shared memory, and
// after one barrier every thread adds up the totals before it.
//
// Look-back. Tile i has a status word in the workspace (zeroed by the judge
// before every run): flag X (nothing yet), A (its own total is known) or P
// (its inclusive prefix is known), and a double value, packed in one 64-bit
// word (the flag in the two lowest mantissa bits) so flag and value are
// written and read together. As soon as the tile's total is known, warp 0
// publishes A; then it reads the 32 statuses before its tile at once, waits
// while any is X, adds up the values back to the nearest P (all 32 when
// there is none, then the next 32), and publishes P = that sum + its total.
//
// Precision. The carry from tile to tile is a double: 65536 float additions
// of values near 1e4 (N = 2^28) would drift by about 0.1, the size of the
// tolerance there. Each output is then hi + (lo + local), where hi + lo is
// the tile's carry split into two floats and local the in-tile prefix, so
// the per-element work stays in float.
//
// The block size must be 256 (the tile layout). The tail of the last tile
// and unaligned buffers take scalar loads and stores.

#define PS_THREADS 256
#define PS_WARPS (PS_THREADS / 32)
#define PS_ROUNDS 4
#define PS_ROUND (PS_THREADS * 4)          /* 1024 elements */
#define PS_TILE (PS_ROUND * PS_ROUNDS)     /* 4096 elements */
#define PS_FULL 0xffffffffu
#define PS_X 0ull
#define PS_A 1ull
#define PS_P 2ull

__device__ __forceinline__ unsigned long long ps_pack(double v, unsigned long long flag)
{
    return ((unsigned long long)__double_as_longlong(v) & ~3ull) | flag;
}

__device__ __forceinline__ double ps_value(unsigned long long w)
{
    return __longlong_as_double((long long)(w & ~3ull));
}

__device__ __forceinline__ unsigned long long ps_load(const unsigned long long* p)
{
    return *(const volatile unsigned long long*)p;
}

__device__ __forceinline__ void ps_store(unsigned long long* p, unsigned long long w)
{
    *(volatile unsigned long long*)p = w;
}

// Warp 0: publish A, look back to the nearest P, publish P; returns the
// tile's exclusive prefix (the same value in every lane).
__device__ __forceinline__ double ps_lookback(unsigned long long* status, long long tile, double agg)
{
    const int lane = threadIdx.x & 31;
    if (tile == 0) {
        if (lane == 0)
            ps_store(&status[0], ps_pack(agg, PS_P));
        return 0.0;
    }
    if (lane == 0)
        ps_store(&status[tile], ps_pack(agg, PS_A));

    double excl = 0.0;
    long long pred = tile - 1;
    for (;;) {
        const long long idx = pred - lane; // lane 0 is the nearest predecessor
        const unsigned long long w = idx >= 0 ? ps_load(&status[idx]) : ps_pack(0.0, PS_P);
        const unsigned long long flag = w & 3ull;
        if (__any_sync(PS_FULL, flag == PS_X)) {
            __nanosleep(32);
            continue; // read the same window again
        }
        const unsigned int pmask = __ballot_sync(PS_FULL, flag == PS_P);
        const int first = pmask ? __ffs(pmask) - 1 : 31;
        double part = lane <= first ? ps_value(w) : 0.0;
#pragma unroll
        for (int off = 16; off > 0; off >>= 1)
            part += __shfl_xor_sync(PS_FULL, part, off);
        excl += part;
        if (pmask)
            break;
        pred -= 32;
    }
    if (lane == 0)
        ps_store(&status[tile], ps_pack(excl + agg, PS_P));
    return excl;
}

extern "C" __global__ void __launch_bounds__(PS_THREADS)
scan_fast(const float* x, float* y, int N, void* workspace)
{
    __shared__ float s_wsum[PS_ROUNDS][PS_WARPS];
    __shared__ unsigned int s_tile;
    __shared__ float s_hi, s_lo;
    unsigned int* counter = (unsigned int*)workspace;
    unsigned long long* status = (unsigned long long*)((char*)workspace + 128);
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;

    if (t == 0)
        s_tile = atomicAdd(counter, 1u);
    __syncthreads();
    const long long tile = s_tile;
    const long long base = tile * PS_TILE;
    const bool vec =
        ((reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y)) & 15) == 0;

    float v[PS_ROUNDS][4];
#pragma unroll
    for (int r = 0; r < PS_ROUNDS; r++) {
        const long long e = base + r * PS_ROUND + 4 * t;
        if (vec && e + 4 <= N) {
            const float4 q = __ldg(reinterpret_cast<const float4*>(x + e));
            v[r][0] = q.x; v[r][1] = q.y; v[r][2] = q.z; v[r][3] = q.w;
        } else {
#pragma unroll
            for (int k = 0; k < 4; k++)
                v[r][k] = e + k < N ? x[e + k] : 0.0f;
        }
    }

    // Scan each thread's four values, then the lanes' totals per warp.
    float inc[PS_ROUNDS], wex[PS_ROUNDS];
#pragma unroll
    for (int r = 0; r < PS_ROUNDS; r++) {
        v[r][1] += v[r][0];
        v[r][2] += v[r][1];
        v[r][3] += v[r][2];
        inc[r] = v[r][3];
    }
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
#pragma unroll
        for (int r = 0; r < PS_ROUNDS; r++) {
            const float n = __shfl_up_sync(PS_FULL, inc[r], off);
            if (lane >= off)
                inc[r] += n;
        }
    }
#pragma unroll
    for (int r = 0; r < PS_ROUNDS; r++) {
        wex[r] = __shfl_up_sync(PS_FULL, inc[r], 1);
        if (lane == 0)
            wex[r] = 0.0f;
        if (lane == 31)
            s_wsum[r][warp] = inc[r];
    }
    __syncthreads();

    // Prefix of this thread's values within the tile: every earlier round,
    // every earlier warp of this round, every earlier lane of this warp.
    float pre[PS_ROUNDS];
    float rounds_before = 0.0f;
#pragma unroll
    for (int r = 0; r < PS_ROUNDS; r++) {
        float warps_before = 0.0f, round_total = 0.0f;
#pragma unroll
        for (int w = 0; w < PS_WARPS; w++) {
            const float s = s_wsum[r][w];
            round_total += s;
            if (w < warp)
                warps_before += s;
        }
        pre[r] = rounds_before + warps_before + wex[r];
        rounds_before += round_total;
    }

    if (warp == 0) {
        double agg = 0.0;
        for (int r = 0; r < PS_ROUNDS; r++)
            for (int w = 0; w < PS_WARPS; w++)
                agg += (double)s_wsum[r][w];
        const double excl = ps_lookback(status, tile, agg);
        if (lane == 0) {
            const float hi = (float)excl;
            s_hi = hi;
            s_lo = (float)(excl - (double)hi);
        }
    }
    __syncthreads();
    const float hi = s_hi, lo = s_lo;

#pragma unroll
    for (int r = 0; r < PS_ROUNDS; r++) {
        const long long e = base + r * PS_ROUND + 4 * t;
        float o[4];
#pragma unroll
        for (int k = 0; k < 4; k++)
            o[k] = hi + (lo + (pre[r] + v[r][k]));
        if (vec && e + 4 <= N) {
            *reinterpret_cast<float4*>(y + e) = make_float4(o[0], o[1], o[2], o[3]);
        } else {
#pragma unroll
            for (int k = 0; k < 4; k++)
                if (e + k < N)
                    y[e + k] = o[k];
        }
    }
}
