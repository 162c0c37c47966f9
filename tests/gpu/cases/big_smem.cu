// expect: accepted  mode: test  why: 100 KB of dynamic shared memory (over the 48 KB default)
//!kjudge launch quant grid=(T*(H/GS)) block=(128) smem=100*1024
extern "C" __global__ void quant(const float* x, float* x_q, float* x_s, int T, int H, int GS) {
    extern __shared__ float buf[];            // 25600 floats; the group is staged in it
    __shared__ float red[128];
    long g = blockIdx.x;
    const float* p = x + g * GS;
    float a = 0.f;
    for (int j = threadIdx.x; j < GS; j += blockDim.x) { buf[j + 20000] = p[j]; a = fmaxf(a, fabsf(p[j])); }
    red[threadIdx.x] = a; __syncthreads();
    for (int s = 64; s > 0; s >>= 1) { if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]); __syncthreads(); }
    float sc = fmaxf(red[0], 1e-10f) / 448.f;
    if (threadIdx.x == 0) x_s[g] = sc;
    for (int j = threadIdx.x; j < GS; j += blockDim.x) x_q[g * GS + j] = fminf(fmaxf(buf[j + 20000] / sc, -448.f), 448.f);
}
