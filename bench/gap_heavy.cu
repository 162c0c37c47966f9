// gap_heavy.cu - the heaviest test-mode job bench/bench_gap_load.py puts in the
// gaps of a timed job: every SM of the GPU busy with dependent FMAs for
// about a second (its first test call), then a wrong answer. It stands for
// a participant who tries to heat the GPU between the rounds of someone
// else's leaderboard run. Not a solution of fp8_quant. 264 blocks of 1024
// threads: one wave on an H200 (132 SMs, two such blocks each).
//!kjudge leaderboard fp8_quant
//!kjudge launch quant grid=(264) block=(1024)

#define SPIN_CYCLES 2000000000LL /* about 1 s at 1.98 GHz */

extern "C" __global__ void quant(const float* x, float* x_q, float* x_s,
                                 int T, int H, int GS)
{
    const long long t0 = clock64();
    float a = threadIdx.x * 1e-3f, b = blockIdx.x * 1e-3f, c = 0.5f, d = 0.25f;
    while (clock64() - t0 < SPIN_CYCLES) {
#pragma unroll 64
        for (int k = 0; k < 256; k++) {
            a = fmaf(a, 0.9999f, 1e-4f);
            b = fmaf(b, 0.9999f, 1e-4f);
            c = fmaf(c, 0.9999f, 1e-4f);
            d = fmaf(d, 0.9999f, 1e-4f);
        }
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) /* keeps the loop; wrong on purpose */
        x_s[0] = a + b + c + d + x[0] + (float)(T + H + GS);
    (void)x_q;
}
