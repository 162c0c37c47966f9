// reference.cu - the trusted reference of gated_deltanet_recompute_w_u:
// plain and obviously correct, not fast. One thread per output element,
// the formula of description.md summed over all 64 time steps of the chunk
// in fp64 (float inputs, one rounding to float at the end):
//
//   w[b, t, h, c] = sum_j A[b, t, h, j] * beta[b, t0+j, h] * exp(g[b, t0+j, h]) * k[b, t0+j, h, c]
//   u[b, t, h, c] = sum_j A[b, t, h, j] * beta[b, t0+j, h] * v[b, t0+j, h, c]
//
// where t0 = t - t % 64 is the first time step of t's chunk (T % 64 == 0).
//!kjudge leaderboard gated_deltanet_recompute_w_u_large
//!kjudge launch ref_w grid=(ceil_div(B*T*H*K, 256)) block=(256)
//!kjudge launch ref_u grid=(ceil_div(B*T*H*V, 256)) block=(256)

// Output element e of a [B, T, H, D] tensor -> the sum over its chunk, with
// exp(g) as a factor when gated (w) and without it (u).
__device__ double ref_chunk_sum(const float* x, const float* beta, const float* A,
                                const float* g, long long e, int T, int H, int D, bool gated)
{
    const int c = (int)(e % D);
    const long long row = e / D;          // (b*T + t)*H + h
    const int h = (int)(row % H);
    const long long bt = row / H;         // b*T + t
    const int t = (int)(bt % T);
    const long long base = bt - t % 64;   // b*T + t0
    double acc = 0.0;

    for (int j = 0; j < 64; j++) {
        const long long rj = (base + j) * H + h;
        double coef = (double)beta[rj];
        if (gated)
            coef *= exp((double)g[rj]);
        acc += (double)A[row * 64 + j] * coef * (double)x[rj * D + c];
    }
    return acc;
}

extern "C" __global__ void ref_w(const float* k, const float* v, const float* beta,
                                 const float* A, const float* g, float* w, float* u,
                                 int B, int T, int H, int K, int V)
{
    const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (e < (long long)B * T * H * K)
        w[e] = (float)ref_chunk_sum(k, beta, A, g, e, T, H, K, true);
}

extern "C" __global__ void ref_u(const float* k, const float* v, const float* beta,
                                 const float* A, const float* g, float* w, float* u,
                                 int B, int T, int H, int K, int V)
{
    const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (e < (long long)B * T * H * V)
        u[e] = (float)ref_chunk_sum(v, beta, A, g, e, T, H, V, false);
}
