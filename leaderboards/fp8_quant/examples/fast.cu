// fast.cu - an example fp8_quant submission tuned for memory bandwidth: 16-byte
// loads through the read-only path and 16-byte stores, warp-shuffle
// reductions, several independent loads in flight per thread, and a grid
// sized from the shape.
//!kjudge leaderboard fp8_quant
//!kjudge launch quant_fast grid=(ceil_div(T*H, (GS % 4 == 0 && 128 % GS == 0 ? 128 : GS) * 8 * (T*H >= 8388608 ? 4 : 1))) block=(256)
//
// The work is cut into warp steps. A step is a "tile" of 128 contiguous
// elements (one float4 per lane) when GS is 4, 8, ..., 128: a group then
// covers GS/4 aligned lanes and its absolute maximum takes log2(GS/4)
// shuffles (GS=128: one group per warp, GS=64: two). For other GS a step is
// one whole group: a multiple of 4 up to 1024 is held in registers as up to
// eight float4 per lane; anything else (and unaligned buffers) goes through
// a scalar two-pass loop. Groups are contiguous over the whole matrix
// because H % GS == 0, so group g starts at element g*GS and its scale is
// x_s[g].
//
// Every path is a grid-stride loop, so the kernel is correct for any grid;
// the launch line only picks the speed: 8 warps per block, and for large
// shapes each warp takes QF_UNROLL consecutive tiles (2 KB) whose loads are
// all issued before the first reduction (64 bytes in flight per thread).
// The block size must stay a multiple of 32 (shuffles use the full mask)
// and at most 256.
//
// Measured on an H200 (CUDA events, L2 flushed before each run): T=4096,
// H=7168, GS=128 in about 62.5 us, 3.77 TB/s, against 59 us for a plain
// device-to-device copy of x. Choices the measurements made: consecutive
// tiles per warp beat tiles strided by the grid (62.5 vs 64.4 us); __ldg
// and plain stores beat the streaming hints __ldcs/__stcs (64.4 vs 68 us);
// four tiles per warp beat one, two or eight; more blocks per SM through
// __launch_bounds__ did not help.
//
// The math matches the reference bit for bit: fp32 absmax, max with 1e-10,
// s = a / 448, x_q = clamp(x / s) with a true division.

#define QF_UNROLL 4
#define QF_FULL 0xffffffffu

__device__ __forceinline__ float qf_scale(float absmax)
{
    return fmaxf(absmax, 1e-10f) / 448.0f;
}

__device__ __forceinline__ float qf_one(float v, float s)
{
    return fminf(fmaxf(v / s, -448.0f), 448.0f);
}

__device__ __forceinline__ float qf_absmax4(float4 v)
{
    return fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
}

__device__ __forceinline__ float4 qf_quant4(float4 v, float s)
{
    return make_float4(qf_one(v.x, s), qf_one(v.y, s), qf_one(v.z, s), qf_one(v.w, s));
}

__device__ __forceinline__ float qf_warp_max(float a)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        a = fmaxf(a, __shfl_xor_sync(QF_FULL, a, off));
    return a;
}

// GS = 4*L with L in {1, 2, 4, 8, 16, 32}: one float4 per lane per tile, a
// group spans L aligned lanes. n = T*H elements (a multiple of GS, so a tile
// ends inside the matrix at a group boundary).
template <int L>
__device__ __forceinline__ void qf_tiles(const float* x, float* x_q, float* x_s, long long n)
{
    const long long n4 = n / 4; // float4s in the matrix
    const long long ntiles = (n4 + 31) / 32;
    const int lane = threadIdx.x & 31;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* q4 = reinterpret_cast<float4*>(x_q);

    for (long long t0 = warp * QF_UNROLL; t0 < ntiles; t0 += QF_UNROLL * nwarps) {
        float4 v[QF_UNROLL];
#pragma unroll
        for (int u = 0; u < QF_UNROLL; u++) {
            const long long e = (t0 + u) * 32 + lane;
            v[u] = e < n4 ? __ldg(x4 + e) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (int u = 0; u < QF_UNROLL; u++) {
            if (t0 + u >= ntiles) // warp-uniform: no work left in this step
                break;
            const long long e = (t0 + u) * 32 + lane;
            float a = qf_absmax4(v[u]);
#pragma unroll
            for (int off = L / 2; off > 0; off >>= 1) // every lane takes part
                a = fmaxf(a, __shfl_xor_sync(QF_FULL, a, off));
            if (e < n4) {
                const float s = qf_scale(a);
                q4[e] = qf_quant4(v[u], s);
                if ((lane & (L - 1)) == 0)
                    x_s[e / L] = s; // e / L = element e*4 / GS
            }
        }
    }
}

// GS a multiple of 4, at most 1024: one warp per group, the group held in
// registers (at most 8 float4 per lane), read once.
__device__ __forceinline__ void qf_groups_vec(const float* x, float* x_q, float* x_s,
                                              long long ngroups, int GS)
{
    const int nv = GS / 4;
    const int lane = threadIdx.x & 31;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;

    for (long long g = warp; g < ngroups; g += nwarps) {
        const float4* in = reinterpret_cast<const float4*>(x) + g * nv;
        float4* out = reinterpret_cast<float4*>(x_q) + g * nv;
        float4 v[8];
        float a = 0.0f;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const int c = lane + 32 * i;
            v[i] = c < nv ? __ldg(in + c) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            a = fmaxf(a, qf_absmax4(v[i]));
        }
        const float s = qf_scale(qf_warp_max(a));
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const int c = lane + 32 * i;
            if (c < nv)
                out[c] = qf_quant4(v[i], s);
        }
        if (lane == 0)
            x_s[g] = s;
    }
}

// Any GS, any alignment: one warp per group, scalar, reads the group twice.
__device__ __forceinline__ void qf_groups_scalar(const float* x, float* x_q, float* x_s,
                                                 long long ngroups, int GS)
{
    const int lane = threadIdx.x & 31;
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;

    for (long long g = warp; g < ngroups; g += nwarps) {
        const long long base = g * GS;
        float a = 0.0f;
        for (int j = lane; j < GS; j += 32)
            a = fmaxf(a, fabsf(x[base + j]));
        const float s = qf_scale(qf_warp_max(a));
        for (int j = lane; j < GS; j += 32)
            x_q[base + j] = qf_one(x[base + j], s);
        if (lane == 0)
            x_s[g] = s;
    }
}

extern "C" __global__ void __launch_bounds__(256)
quant_fast(const float* x, float* x_q, float* x_s, int T, int H, int GS)
{
    const long long n = (long long)T * H;
    const bool aligned =
        ((reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(x_q)) &
         15) == 0;

    if (aligned) {
        switch (GS) { // warp-uniform: every thread takes the same branch
        case 128: qf_tiles<32>(x, x_q, x_s, n); return;
        case 64: qf_tiles<16>(x, x_q, x_s, n); return;
        case 32: qf_tiles<8>(x, x_q, x_s, n); return;
        case 16: qf_tiles<4>(x, x_q, x_s, n); return;
        case 8: qf_tiles<2>(x, x_q, x_s, n); return;
        case 4: qf_tiles<1>(x, x_q, x_s, n); return;
        default: break;
        }
        if (GS % 4 == 0 && GS <= 1024) {
            qf_groups_vec(x, x_q, x_s, n / GS, GS);
            return;
        }
    }
    qf_groups_scalar(x, x_q, x_s, n / GS, GS);
}
