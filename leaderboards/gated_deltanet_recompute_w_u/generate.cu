// generate.cu - the trusted input generator of gated_deltanet_recompute_w_u.
// The judge first fills k, v, beta and g with N(0, 1) from its Philox
// generator and zero-fills A; these launches then turn them, in place, into
// the inputs of the original problem (description.md, "Inputs"):
//
//   k    <- k / sqrt(K)
//   beta <- sigmoid(beta)
//   g    <- double cumulative sum: g1 = cumsum over the whole sequence of
//           -|g|, then g = the cumulative sum of g1 inside each chunk of 64
//   A    <- per chunk, (I + Araw)^-1 with Araw strictly lower triangular,
//           Araw[i][j] = (k_i . k_j) * beta_i * exp(g_i - g_j) for i > j
//
// v keeps its N(0, 1) values. Everything is computed in fp64 from the float
// values the kernels will see (A from the already rounded k, beta and g),
// in a fixed order with no atomics, and --fmad=false keeps the compiler from
// contracting multiply-adds differently on different architectures, so every
// GPU produces the same bytes. exp and sqrt are the IEEE double functions.
// The seed argument is unused: the random part comes from the judge's fill.
//!kjudge leaderboard gated_deltanet_recompute_w_u
//!kjudge nvrtc --fmad=false
//!kjudge launch gen_g grid=(B*H) block=(64)
//!kjudge launch gen_A grid=(T/64, H, B) block=(256)

#define GEN_BT 64  // chunk length (time steps)
#define GEN_KT 32  // k columns staged in shared memory at a time

// g, one block per (b, h), one thread per time step of the current chunk.
// Thread 0 runs both cumulative sums sequentially in fp64; the running sum
// of the first one (over the whole sequence) is carried across chunks.
extern "C" __global__ void gen_g(float* k, float* v, float* beta, float* A, float* g,
                                 float* w, float* u, int B, int T, int H, int K, int V,
                                 unsigned long long seed)
{
    __shared__ double s[GEN_BT];
    const int b = blockIdx.x / H, h = blockIdx.x % H, t = threadIdx.x;
    double g1 = 0.0; // thread 0 only: cumsum over the sequence so far

    for (int t0 = 0; t0 < T; t0 += GEN_BT) {
        const long long idx = ((long long)b * T + t0 + t) * H + h;
        s[t] = -fabs((double)g[idx]);
        __syncthreads();
        if (t == 0) {
            double local = 0.0;
            for (int i = 0; i < GEN_BT; i++) {
                g1 += s[i];
                local += g1;
                s[i] = local;
            }
        }
        __syncthreads();
        g[idx] = (float)s[t];
        __syncthreads();
    }
}

// k, beta and A, one block of 256 threads per (chunk n, head h, batch b).
// The block owns the 64 rows of its chunk for its head: it scales them, and
// builds A from the scaled values.
extern "C" __global__ void gen_A(float* k, float* v, float* beta, float* A, float* g,
                                 float* w, float* u, int B, int T, int H, int K, int V,
                                 unsigned long long seed)
{
    __shared__ float kt[GEN_BT][GEN_KT + 1];   // a 64 x 32 tile of scaled k
    __shared__ double L[GEN_BT][GEN_BT + 1];   // Araw (strictly lower)
    __shared__ double sb[GEN_BT], sg[GEN_BT];  // beta and g of the chunk

    const int n = blockIdx.x, h = blockIdx.y, b = blockIdx.z, tid = threadIdx.x;
    const long long row0 = (long long)b * T + (long long)n * GEN_BT; // (b, t) of row 0
    const double rsK = sqrt((double)K);

    if (tid < GEN_BT) {
        const long long idx = (row0 + tid) * H + h;
        const float bf = (float)(1.0 / (1.0 + exp(-(double)beta[idx])));
        beta[idx] = bf;
        sb[tid] = (double)bf;
        sg[tid] = (double)g[idx];
    }

    // Gram matrix: thread (i, q) owns entries (i, q + 4m), m = 0..15, and sums
    // over the columns of k in ascending order, tile by tile.
    const int i = tid / 4, q = tid % 4;
    double dot[16];
#pragma unroll
    for (int m = 0; m < 16; m++)
        dot[m] = 0.0;
    for (int c0 = 0; c0 < K; c0 += GEN_KT) {
        for (int e = tid; e < GEN_BT * GEN_KT; e += blockDim.x) {
            const int r = e / GEN_KT, c = c0 + e % GEN_KT;
            float val = 0.0f;
            if (c < K) {
                const long long at = ((row0 + r) * H + h) * K + c;
                val = (float)((double)k[at] / rsK);
                k[at] = val;
            }
            kt[r][e % GEN_KT] = val;
        }
        __syncthreads();
        for (int c = 0; c < GEN_KT; c++) {
            const double ki = (double)kt[i][c];
#pragma unroll
            for (int m = 0; m < 16; m++)
                dot[m] += ki * (double)kt[q + 4 * m][c];
        }
        __syncthreads();
    }
#pragma unroll
    for (int m = 0; m < 16; m++) {
        const int j = q + 4 * m;
        // j >= i is never passed to exp: g_i - g_j > 0 there and could overflow.
        L[i][j] = j < i ? dot[m] * sb[i] * exp(sg[i] - sg[j]) : 0.0;
    }
    __syncthreads();

    // (I + L) X = I by forward substitution, thread c solving column c:
    // X[r][c] = [r == c] - sum_{c <= j < r} L[r][j] X[j][c].
    if (tid < GEN_BT) {
        const int c = tid;
        double x[GEN_BT];
        for (int r = 0; r < GEN_BT; r++) {
            double val = 0.0;
            if (r == c) {
                val = 1.0;
            } else if (r > c) {
                double acc = 0.0;
                for (int j = c; j < r; j++)
                    acc += L[r][j] * x[j];
                val = -acc;
            }
            x[r] = val;
            A[((row0 + r) * H + h) * GEN_BT + c] = (float)val;
        }
    }
}
