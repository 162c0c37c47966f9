// fast.cu - an example conv2d submission: the convolution as an implicit
// matrix multiplication in float32, 256 x 64 block tiles, 8 x 8 outputs per
// thread from registers, double-buffered shared memory with the next tile
// prefetched into registers while the current one is multiplied.
//!kjudge leaderboard conv2d
//!kjudge launch conv_fast grid=(ceil_div(B*(S-K+1)*(S-K+1), 256), ceil_div(C, 64)) block=(256)
//
// The GEMM. With O = S-K+1, row m of the product is an output pixel
// (b, oy, ox), m = (b*O + oy)*O + ox; column n is an output channel; the
// reduction index is k = (ci*K + kh)*K + kw over C*K*K. The A operand
// A[m, k] = x[b, ci, oy+kh, ox+kw] is never stored: its address splits into
// a part of m, abase(m) = b*C*S*S + oy*S + ox, and a part of k,
// ci*S*S + roff[kh*K + kw] with roff[r] = (r / K)*S + r % K, a table of K*K
// ints built once per block. The B operand is w itself, read as a
// [C, C*K*K] row-major matrix (B[k, n] = w[n*C*K*K + k]).
//
// Tiles. A block computes 256 pixels x 64 channels; a K-step is 16 values
// of k. When K*K is a multiple of 16 (K = 4, 8, 16, 32: every shape of this
// board) a K-step never crosses an input channel, so it needs one ci and 16
// consecutive roff entries and no division. Each thread loads one pixel's 16
// A values (coalesced along the pixels) and 4 B values per step into
// registers, stores them into the other half of the double buffer after
// computing on this half, and one barrier per step separates the two.
// Thread (tm, tn) = (t % 32, t / 32) keeps 8 x 8 accumulators: pixels
// 4tm..4tm+3 and 128+4tm..128+4tm+3, channels 8tn..8tn+7. Per k it reads two
// float4 of A (the warp reads 512 contiguous bytes: no bank conflict) and two
// float4 of B (the same address for the whole warp: a broadcast), then does
// 64 FMAs.
//
// Other K (K*K not a multiple of 16, or above 32) take a plain grid-stride
// loop over the outputs with the same launch, so every shape is correct.
//
// Precision: each output is one float accumulator over the C*K*K products
// in order, like the template: the rounding the tolerance allows for.
// Index arithmetic is 32-bit: x, w and y of this board's shapes have fewer
// than 2^31 elements.

#define CF_THREADS 256
#define CF_BM 256
#define CF_BN 64
#define CF_BK 16
#define CF_LDB (CF_BN + 4)
#define CF_MAXKK 1024

// Any shape: one output per thread per step of a grid-stride loop.
__device__ void cf_direct(const float* x, const float* w, float* y, int B, int C, int S, int K)
{
    const int O = S - K + 1;
    const long long total = (long long)B * C * O * O;
    const long long stride = (long long)gridDim.x * gridDim.y * blockDim.x;
    for (long long i = ((long long)blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x;
         i < total; i += stride) {
        const int ox = (int)(i % O), oy = (int)(i / O % O);
        const int co = (int)(i / ((long long)O * O) % C), b = (int)(i / ((long long)O * O * C));
        float acc = 0.0f;
        for (int ci = 0; ci < C; ci++)
            for (int kh = 0; kh < K; kh++)
                for (int kw = 0; kw < K; kw++)
                    acc += x[(((long long)b * C + ci) * S + oy + kh) * S + ox + kw] *
                           w[(((long long)co * C + ci) * K + kh) * K + kw];
        y[i] = acc;
    }
}

extern "C" __global__ void __launch_bounds__(CF_THREADS)
conv_fast(const float* x, const float* w, float* y, int B, int C, int S, int K)
{
    const int O = S - K + 1, OO = O * O, KK = K * K, SS = S * S;
    if (KK % CF_BK != 0 || KK > CF_MAXKK) { // block-uniform
        cf_direct(x, w, y, B, C, S, K);
        return;
    }
    const int Mdim = B * OO, Kdim = C * KK;

    __shared__ __align__(16) float As[2][CF_BK][CF_BM];
    __shared__ __align__(16) float Bs[2][CF_BK][CF_LDB];
    __shared__ int roff[CF_MAXKK];

    const int t = threadIdx.x;
    const int m0 = blockIdx.x * CF_BM, n0 = blockIdx.y * CF_BN;
    for (int r = t; r < KK; r += CF_THREADS)
        roff[r] = (r / K) * S + r % K;

    // The pixel whose A values this thread loads.
    const int am = m0 + t;
    const bool am_ok = am < Mdim;
    int abase = 0;
    if (am_ok) {
        const int b = am / OO, rem = am - b * OO, oy = rem / O, ox = rem - oy * O;
        abase = b * C * SS + oy * S + ox;
    }
    // The B values this thread loads: k offset bk, channels bc + 16i.
    const int bk = t & 15, bc = t >> 4;
    const int tm = t & 31, tn = t >> 5;

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++)
            acc[i][j] = 0.0f;

    float ra[CF_BK], rb[4];
    int ci = 0, r0 = 0; // the next K-step to load starts at k = ci*KK + r0
    __syncthreads();    // roff is ready

#define CF_LOAD()                                                                        \
    do {                                                                                 \
        const float* xs = x + abase + ci * SS;                                           \
        _Pragma("unroll") for (int j = 0; j < CF_BK; j++)                                \
            ra[j] = am_ok ? __ldg(xs + roff[r0 + j]) : 0.0f;                             \
        const int k = ci * KK + r0 + bk;                                                 \
        _Pragma("unroll") for (int i = 0; i < 4; i++) {                                  \
            const int co = n0 + bc + 16 * i;                                             \
            rb[i] = co < C ? __ldg(w + co * Kdim + k) : 0.0f;                            \
        }                                                                                \
        r0 += CF_BK;                                                                     \
        if (r0 == KK) {                                                                  \
            r0 = 0;                                                                      \
            ci++;                                                                        \
        }                                                                                \
    } while (0)

#define CF_STORE(buf)                                                                    \
    do {                                                                                 \
        _Pragma("unroll") for (int j = 0; j < CF_BK; j++) As[buf][j][t] = ra[j];         \
        _Pragma("unroll") for (int i = 0; i < 4; i++) Bs[buf][bk][bc + 16 * i] = rb[i];  \
    } while (0)

    const int nk = Kdim / CF_BK;
    CF_LOAD();
    CF_STORE(0);
    __syncthreads();

    for (int kt = 0; kt < nk; kt++) {
        const int cur = kt & 1;
        const bool more = kt + 1 < nk;
        if (more)
            CF_LOAD(); // global loads in flight during the FMAs below
#pragma unroll
        for (int kk = 0; kk < CF_BK; kk++) {
            const float4 a0 = *reinterpret_cast<const float4*>(&As[cur][kk][tm * 4]);
            const float4 a1 = *reinterpret_cast<const float4*>(&As[cur][kk][128 + tm * 4]);
            const float4 b0 = *reinterpret_cast<const float4*>(&Bs[cur][kk][tn * 8]);
            const float4 b1 = *reinterpret_cast<const float4*>(&Bs[cur][kk][tn * 8 + 4]);
            const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++)
                    acc[i][j] = fmaf(a[i], bv[j], acc[i][j]);
        }
        if (more)
            CF_STORE(cur ^ 1); // that half was last read before the previous barrier
        __syncthreads();
    }
#undef CF_LOAD
#undef CF_STORE

#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int m = m0 + (i < 4 ? tm * 4 + i : 128 + tm * 4 + i - 4);
        if (m >= Mdim)
            continue;
        const int b = m / OO, rem = m - b * OO, oy = rem / O, ox = rem - oy * O;
        float* yp = y + b * C * OO + oy * O + ox;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const int co = n0 + tn * 8 + j;
            if (co < C)
                yp[co * OO] = acc[i][j];
        }
    }
}
