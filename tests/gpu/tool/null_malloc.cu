// null_malloc.cu - the template, but every thread first stores through the
// pointer a failed device-side malloc returned (NULL: 1 TiB cannot be had
// from the 8 MiB heap). Test mode gives runtime_error (an illegal address);
// every sanitizer tool must give the same verdict in seconds, not run into
// the tool's wall limit.
//!kjudge leaderboard fp8_quant
//!kjudge launch quant grid=(T*(H/GS)) block=(GS) smem=(GS*4)
extern "C" __global__ void quant(const float* x, float* x_q, float* x_s,
                                 int T, int H, int GS)
{
    extern __shared__ float red[];
    float* lost = (float*)malloc((size_t)1 << 40);
    lost[threadIdx.x] = 1.0f;                 // the fault
    const long long g = blockIdx.x;
    const int j = threadIdx.x;
    const long long i = g * GS + j;
    const float v = x[i];
    red[j] = fabsf(v);
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
