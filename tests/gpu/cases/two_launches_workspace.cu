// expect: accepted  mode: benchmark  why: a two-kernel pipeline passing scales through the workspace
//!kjudge workspace T*(H/GS)*4
//!kjudge launch scales grid=(ceil_div(T*(H/GS), 128)) block=(128)
//!kjudge launch apply grid=(ceil_div(T*H, 256)) block=(256)
extern "C" __global__ void scales(const float* x, float* x_q, float* x_s, int T, int H, int GS, void* ws) {
    long g = (long)blockIdx.x * blockDim.x + threadIdx.x, G = (long)T * (H / GS);
    if (g >= G) return;
    const float* p = x + g * GS; float a = 0.f;
    for (int j = 0; j < GS; j++) a = fmaxf(a, fabsf(p[j]));
    float s = fmaxf(a, 1e-10f) / 448.f;
    ((float*)ws)[g] = s; x_s[g] = s;
}
extern "C" __global__ void apply(const float* x, float* x_q, float* x_s, int T, int H, int GS, void* ws) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long)T * H) return;
    float s = ((const float*)ws)[i / GS];
    x_q[i] = fminf(fmaxf(x[i] / s, -448.f), 448.f);
}
