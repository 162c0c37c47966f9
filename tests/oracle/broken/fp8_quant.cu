// broken/fp8_quant.cu - the board's reference.cu with one deliberate bug,
// for tests/oracle/run.sh: the absolute maximum skips the last element of
// each group, so a group whose largest |x| is its last element gets too
// small a scale (about one group in GS). The oracle must reject its dump.
//!kjudge leaderboard fp8_quant
//!kjudge launch ref_quant grid=(ceil_div(T*(H/GS), 256)) block=(256)

extern "C" __global__ void ref_quant(const float* x, float* x_q, float* x_s,
                                     int T, int H, int GS)
{
    const long long ngroups = (long long)T * (H / GS);
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= ngroups)
        return;

    const long long base = g * GS;
    float a = 0.0f;
    for (int j = 0; j < GS - 1; j++) // the bug: should be j < GS
        a = fmaxf(a, fabsf(x[base + j]));
    a = fmaxf(a, 1e-10f);
    const float s = a / 448.0f;

    x_s[g] = s;
    for (int j = 0; j < GS; j++)
        x_q[base + j] = fminf(fmaxf(x[base + j] / s, -448.0f), 448.0f);
}
