// expect: wrong_answer  mode: test  why: never writes the last group of each row
//!kjudge leaderboard fp8_quant
//!kjudge launch quant grid=(ceil_div(T*(H/GS), 128)) block=(128)
extern "C" __global__ void quant(const float* x, float* x_q, float* x_s, int T, int H, int GS) {
    long g = (long)blockIdx.x * blockDim.x + threadIdx.x, G = (long)T * (H / GS);
    if (g >= G || g % (H / GS) == (H / GS) - 1) return;
    const float* p = x + g * GS; float a = 0.f;
    for (int j = 0; j < GS; j++) a = fmaxf(a, fabsf(p[j]));
    float s = fmaxf(a, 1e-10f) / 448.f; x_s[g] = s;
    for (int j = 0; j < GS; j++) x_q[g * GS + j] = fminf(fmaxf(p[j] / s, -448.f), 448.f);
}
