// expect: accepted  mode: benchmark  why: a 16 KiB per-thread local array; its first launch in each fresh process grows the context's local memory
//!kjudge launch quant grid=(T*(H/GS)) block=(GS) smem=(GS*4)
// The template's kernel, plus a volatile 4096-float frame per thread that the
// compiler must keep in local memory: each fresh box process of the timed
// protocol has to grow its context's local-memory reservation at this
// kernel's first launch, which must not happen behind the blocking kernel.
extern "C" __global__ void quant(const float* x, float* x_q, float* x_s,
                                 int T, int H, int GS)
{
    extern __shared__ float red[];
    volatile float frame[4096];
    const long long g = blockIdx.x;
    const int j = threadIdx.x;
    const long long i = g * GS + j;
    const float v = x[i];
    frame[(j * 7) & 4095] = v;
    frame[(j * 13 + 1) & 4095] = -v;
    red[j] = fabsf(frame[(j * 7) & 4095]);
    __syncthreads();
    for (int n = GS; n > 1;) {
        const int half = (n + 1) / 2;
        if (j < n - half)
            red[j] = fmaxf(red[j], red[j + half]);
        __syncthreads();
        n = half;
    }
    const float s = fmaxf(red[0], 1e-10f) / 448.0f;
    if (j == 0)
        x_s[g] = s;
    x_q[i] = fminf(fmaxf(v / s, -448.0f), 448.0f);
}
