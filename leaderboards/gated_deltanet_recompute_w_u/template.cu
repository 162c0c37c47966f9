// template.cu - a correct, naive starting point for
// gated_deltanet_recompute_w_u. Submit it as it is to see the whole flow,
// then make it fast.
//!kjudge leaderboard gated_deltanet_recompute_w_u
//!kjudge launch gdn_w grid=(ceil_div(B*T*H*K, 256)) block=(256)
//!kjudge launch gdn_u grid=(ceil_div(B*T*H*V, 256)) block=(256)
//
// The two launch lines above are the host side: both kernels receive the
// whole signature and run one after the other on one stream; one thread per
// output element, 256 threads per block. grid, block and smem are integer
// expressions over B, T, H, K and V, so one file can pick its configuration
// per shape.
//
// Ideas for speed, roughly in order of payoff:
//  - every thread here re-reads a row of A and 64 rows of k or v: give a
//    block one (chunk, head) and stage A and the k/v tile in shared memory,
//    so each element is read from memory once;
//  - let each thread compute a small tile of outputs (a few rows times four
//    columns) to reuse every shared-memory load in several FMAs, and use
//    float4 loads and stores;
//  - A is lower triangular (its upper part is exactly 0): row i only needs
//    time steps j <= i;
//  - compute w and u in the same block so A is read once.
// Inputs are fresh for every run and both outputs are poisoned first, so
// every element of w and u must be written every time.

// The chunk of time step t starts at t - t % 64; element e of a
// [B, T, H, D] tensor has column e % D and row e / D = (b*T + t)*H + h.
extern "C" __global__ void gdn_w(const float* k, const float* v, const float* beta,
                                 const float* A, const float* g, float* w, float* u,
                                 int B, int T, int H, int K, int V)
{
    const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= (long long)B * T * H * K)
        return;
    const int c = (int)(e % K);
    const long long row = e / K;
    const int h = (int)(row % H);
    const long long bt = row / H;
    const long long base = bt - (bt % T) % 64;

    float acc = 0.0f;
    for (int j = 0; j < 64; j++) {
        const long long rj = (base + j) * H + h;
        acc += A[row * 64 + j] * beta[rj] * expf(g[rj]) * k[rj * K + c];
    }
    w[e] = acc;
}

extern "C" __global__ void gdn_u(const float* k, const float* v, const float* beta,
                                 const float* A, const float* g, float* w, float* u,
                                 int B, int T, int H, int K, int V)
{
    const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= (long long)B * T * H * V)
        return;
    const int c = (int)(e % V);
    const long long row = e / V;
    const int h = (int)(row % H);
    const long long bt = row / H;
    const long long base = bt - (bt % T) % 64;

    float acc = 0.0f;
    for (int j = 0; j < 64; j++) {
        const long long rj = (base + j) * H + h;
        acc += A[row * 64 + j] * beta[rj] * v[rj * V + c];
    }
    u[e] = acc;
}
