// reference.cu - the trusted reference kernel of fp8_quant: plain and
// obviously correct, not fast. One thread per group of GS contiguous
// elements; groups never straddle rows because H is a multiple of GS, so
// group g of the whole matrix starts at element g*GS and its scale goes to
// x_s[g]. True division x/s (not x * (1/s)) keeps it bit-exact with the
// formula in description.md.
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
    for (int j = 0; j < GS; j++)
        a = fmaxf(a, fabsf(x[base + j]));
    a = fmaxf(a, 1e-10f);
    const float s = a / 448.0f;

    x_s[g] = s;
    for (int j = 0; j < GS; j++)
        x_q[base + j] = fminf(fmaxf(x[base + j] / s, -448.0f), 448.0f);
}
