// oob_read.cu - the template, but every thread also reads the element after
// its own, so the last thread of the last group reads 4 bytes past x. The
// value never changes the output (test mode accepts it); memcheck must
// report an invalid global read of size 4 at the marked line.
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
    const float next = x[i + 1]; // OOB
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
    x_q[i] = next == 1e30f ? 0.0f : fminf(fmaxf(v / s, -448.0f), 448.0f);
}
