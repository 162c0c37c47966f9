// expect: accepted  mode: benchmark  why: heavy register spills (-maxrregcount=32 over a 64-value working set kept live)
//!kjudge launch quant grid=(ceil_div(T*(H/GS), 4)) block=(128)
//!kjudge nvrtc -maxrregcount=32
// One warp per group; each lane keeps 64 values live across the reduction,
// far more than 32 registers hold, so ptxas spills them to local memory.
extern "C" __global__ void quant(const float* x, float* x_q, float* x_s,
                                 int T, int H, int GS)
{
    const long long ngroups = (long long)T * (H / GS);
    const long long g = (long long)blockIdx.x * 4 + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (g >= ngroups)
        return;
    const float* xg = x + g * GS;
    float keep[64];
    float m = 0.0f;
#pragma unroll
    for (int k = 0; k < 64; k++) {
        const int e = lane + 32 * k;
        keep[k] = e < GS ? xg[e] : 0.0f;
        m = fmaxf(m, fabsf(keep[k]));
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    const float s = fmaxf(m, 1e-10f) / 448.0f;
    if (lane == 0)
        x_s[g] = s;
#pragma unroll
    for (int k = 0; k < 64; k++) {
        const int e = lane + 32 * k;
        if (e < GS)
            x_q[g * GS + e] = fminf(fmaxf(keep[k] / s, -448.0f), 448.0f);
    }
}
