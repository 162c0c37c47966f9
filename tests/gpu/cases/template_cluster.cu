// expect: accepted  mode: test  why: a template kernel named in the launch line, launched in clusters of 2
//!kjudge launch quant<128> grid=(ceil_div(T*(H/GS), 128) * 2) block=(128) cluster=(2)
template <int THREADS>
__global__ void quant(const float* x, float* x_q, float* x_s, int T, int H, int GS) {
    if (blockIdx.x % 2 == 1) return;          // odd blocks of each cluster idle
    long g = (long)(blockIdx.x / 2) * THREADS + threadIdx.x, G = (long)T * (H / GS);
    if (g >= G) return;
    const float* p = x + g * GS; float a = 0.f;
    for (int j = 0; j < GS; j++) a = fmaxf(a, fabsf(p[j]));
    float s = fmaxf(a, 1e-10f) / 448.f; x_s[g] = s;
    for (int j = 0; j < GS; j++) x_q[g * GS + j] = fminf(fmaxf(p[j] / s, -448.f), 448.f);
}
