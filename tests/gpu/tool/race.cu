// race.cu - the template with one __syncthreads() missing: every thread
// writes its |x| to shared memory and the reduction reads its neighbours'
// without waiting for them. racecheck must report the hazard at the marked
// line (RACE_READ_LINE in profile_round.sh).
//!kjudge leaderboard fp8_quant
//!kjudge launch quant grid=(T*(H/GS)) block=(GS) smem=(GS*4)
extern "C" __global__ void quant(const float* x, float* x_q, float* x_s,
                                 int T, int H, int GS)
{
    extern __shared__ float red[];
    const long long g = blockIdx.x;
    const int j = threadIdx.x;
    const long long i = g * GS + j;
    const float v = x[i];
    red[j] = fabsf(v);
    for (int n = GS; n > 1;) {
        const int half = (n + 1) / 2;
        if (j < n - half)
            red[j] = fmaxf(red[j], red[j + half]); // RACE
        __syncthreads();
        n = half;
    }
    const float s = fmaxf(red[0], 1e-10f) / 448.0f;
    if (j == 0)
        x_s[g] = s;
    x_q[i] = fminf(fmaxf(v / s, -448.0f), 448.0f);
}
