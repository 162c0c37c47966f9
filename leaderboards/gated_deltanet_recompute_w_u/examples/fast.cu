// fast.cu - an example gated_deltanet_recompute_w_u submission: one block per
// (column slab, chunk, batch*head) stages the chunk's A once in shared
// memory, computes w and u together as one product A * X where X is the
// chunk's [k | v] rows scaled by beta*exp(g) (k columns) or beta (v columns),
// and skips the upper triangle of A.
//!kjudge leaderboard gated_deltanet_recompute_w_u
//!kjudge launch gdn_fast grid=(ceil_div(K + V, B*(T/64)*H >= 512 ? 128 : 64), T/64, B*H) block=(B*(T/64)*H >= 512 ? 256 : 128) smem=(B*(T/64)*H >= 512 ? 50688 : 34304)
//
// Layout of one block (NT threads, NT = 128 or 256, picked per shape above):
//  - shared memory: A's 64x64 tile with row stride 68 floats (rows r and r+1
//    of a float4 column fall in different banks), the two coefficient vectors
//    beta_j and beta_j*exp(g_j), and a 64 x NC slab of X with NC = NT/2
//    columns: 17920 + NT*128 bytes, the smem expression above;
//  - the columns of [k | v] (K + V of them) are cut into slabs of NC; block x
//    takes slabs x, x + gridDim.x, ... (one each with the grid above);
//  - thread (ty, tx), ty = 0..7, tx = 0..NT/8-1, owns rows ty + 8q (q = 0..7)
//    and the four columns 4tx..4tx+3 of the slab: 32 accumulators, and every
//    float4 of A or X read from shared memory feeds 16 FMAs;
//  - A is lower triangular (its upper part is exactly 0; the tile is staged
//    with the upper part zeroed, so the kernel never depends on it): for the
//    8 time steps of block jb only rows of blocks q >= jb are updated, 36 of
//    64 row-block x step-block pairs.
// Small shapes use 128 threads and 64-column slabs so more blocks share the
// work; large shapes use 256 threads and 128-column slabs, so A is read
// once per chunk when K + V <= 128. The split point 512 is a guess, not a
// measurement.
//
// Numerics: fp32 throughout. X = coef * x is rounded once, each output is a
// sum of at most 64 products; the error is ~1e-6 relative, far inside
// atol = rtol = 1e-3. expf (not __expf) for exp(g).
//
// Any K, V and alignment works: with K and V multiples of 4 and 16-byte
// aligned buffers, loads and stores are float4; otherwise a scalar path.

#define FB_BT 64  // chunk length
#define FB_AS 68  // row stride of A in shared memory, floats

// One element of the scaled [k | v] row r, column c (0 past the end).
__device__ __forceinline__ float fb_x(const float* kc, const float* vc, const float* cb,
                                      const float* cg, int r, int c, long long HK,
                                      long long HV, int K, int V)
{
    if (c < K)
        return __ldg(kc + r * HK + c) * cg[r];
    if (c < K + V)
        return __ldg(vc + r * HV + (c - K)) * cb[r];
    return 0.0f;
}

__device__ __forceinline__ float4 fb_scale4(float4 x, float s)
{
    return make_float4(x.x * s, x.y * s, x.z * s, x.w * s);
}

// acc += a.x*x0 + a.y*x1 + a.z*x2 + a.w*x3, per column.
__device__ __forceinline__ void fb_fma4(float4& acc, float4 a, float4 x0, float4 x1, float4 x2,
                                        float4 x3)
{
    acc.x = fmaf(a.w, x3.x, fmaf(a.z, x2.x, fmaf(a.y, x1.x, fmaf(a.x, x0.x, acc.x))));
    acc.y = fmaf(a.w, x3.y, fmaf(a.z, x2.y, fmaf(a.y, x1.y, fmaf(a.x, x0.y, acc.y))));
    acc.z = fmaf(a.w, x3.z, fmaf(a.z, x2.z, fmaf(a.y, x1.z, fmaf(a.x, x0.z, acc.z))));
    acc.w = fmaf(a.w, x3.w, fmaf(a.z, x2.w, fmaf(a.y, x1.w, fmaf(a.x, x0.w, acc.w))));
}

extern "C" __global__ void __launch_bounds__(256, 3)
gdn_fast(const float* __restrict__ k, const float* __restrict__ v,
         const float* __restrict__ beta, const float* __restrict__ A,
         const float* __restrict__ g, float* __restrict__ w, float* __restrict__ u,
         int B, int T, int H, int K, int V)
{
    extern __shared__ float4 fb_smem[];
    float* As = reinterpret_cast<float*>(fb_smem); // [64][FB_AS]
    float* cb = As + FB_BT * FB_AS;                  // beta_j
    float* cg = cb + FB_BT;                          // beta_j * exp(g_j)
    float4* Xs = reinterpret_cast<float4*>(cg + FB_BT); // [64][CG] float4
    const float4* As4 = reinterpret_cast<const float4*>(As);

    const int NT = blockDim.x, CG = NT / 8, NC = 4 * CG;
    const int tid = threadIdx.x, tx = tid % CG, ty = tid / CG;
    const int h = blockIdx.z % H, b = blockIdx.z / H;
    const long long row0 = (long long)b * T + (long long)blockIdx.y * FB_BT; // b*T + t0
    const long long HK = (long long)H * K, HV = (long long)H * V, HA = (long long)H * FB_BT;
    const float* kc = k + (row0 * H + h) * K;        // time step r of the chunk: + r*HK
    const float* vc = v + (row0 * H + h) * V;
    const float* Ac = A + (row0 * H + h) * FB_BT;
    float* wc = w + (row0 * H + h) * K;
    float* uc = u + (row0 * H + h) * V;

    const unsigned long long addr = reinterpret_cast<unsigned long long>(k) |
        reinterpret_cast<unsigned long long>(v) | reinterpret_cast<unsigned long long>(A) |
        reinterpret_cast<unsigned long long>(w) | reinterpret_cast<unsigned long long>(u);
    const bool vec = (addr & 15) == 0 && (K & 3) == 0 && (V & 3) == 0; // block-uniform

    // A, lower triangle and diagonal only.
    for (int e = tid; e < FB_BT * 16; e += NT) {
        const int r = e >> 4, c = (e & 15) * 4;
        float4 a;
        if (vec) {
            a = __ldg(reinterpret_cast<const float4*>(Ac + r * HA + c));
        } else {
            a = make_float4(__ldg(Ac + r * HA + c), __ldg(Ac + r * HA + c + 1),
                            __ldg(Ac + r * HA + c + 2), __ldg(Ac + r * HA + c + 3));
        }
        a.x = c <= r ? a.x : 0.0f;
        a.y = c + 1 <= r ? a.y : 0.0f;
        a.z = c + 2 <= r ? a.z : 0.0f;
        a.w = c + 3 <= r ? a.w : 0.0f;
        *reinterpret_cast<float4*>(As + r * FB_AS + c) = a;
    }
    if (tid < FB_BT) {
        const long long idx = (row0 + tid) * H + h;
        const float bt = __ldg(beta + idx);
        cb[tid] = bt;
        cg[tid] = bt * expf(__ldg(g + idx));
    }

    const int nslab = (K + V + NC - 1) / NC;
    for (int p = blockIdx.x; p < nslab; p += gridDim.x) {
        // This thread stages and computes rows ty + 8q, columns c..c+3 of the
        // slab. On the float4 path the four columns lie all in k or all in v.
        const int c = p * NC + 4 * tx;
        const float* src = nullptr; // first column, time step 0
        const float* coef = cb;
        float* dst = nullptr;
        long long stride = 0;       // floats between time steps
        if (c < K)
            src = kc + c, coef = cg, dst = wc + c, stride = HK;
        else if (c < K + V)
            src = vc + (c - K), coef = cb, dst = uc + (c - K), stride = HV;
        __syncthreads(); // A and the coefficients are in; the last slab is done

        if (vec) { // eight float4 loads in flight
#pragma unroll
            for (int q = 0; q < 8; q++) {
                const int r = ty + 8 * q;
                float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                if (src != nullptr)
                    x = fb_scale4(__ldg(reinterpret_cast<const float4*>(src + r * stride)),
                                  coef[r]);
                Xs[r * CG + tx] = x;
            }
        } else { // rolled up, so this rare path does not raise the register count
#pragma unroll 1
            for (int q = 0; q < 8; q++) {
                const int r = ty + 8 * q;
                Xs[r * CG + tx] = make_float4(fb_x(kc, vc, cb, cg, r, c, HK, HV, K, V),
                                              fb_x(kc, vc, cb, cg, r, c + 1, HK, HV, K, V),
                                              fb_x(kc, vc, cb, cg, r, c + 2, HK, HV, K, V),
                                              fb_x(kc, vc, cb, cg, r, c + 3, HK, HV, K, V));
            }
        }
        __syncthreads();

        float4 acc[8];
#pragma unroll
        for (int q = 0; q < 8; q++)
            acc[q] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 1
        for (int j = 0; j < FB_BT; j += 4) {
            const int jb = j / 8;
            const float4 x0 = Xs[(j + 0) * CG + tx], x1 = Xs[(j + 1) * CG + tx];
            const float4 x2 = Xs[(j + 2) * CG + tx], x3 = Xs[(j + 3) * CG + tx];
#pragma unroll
            for (int q = 0; q < 8; q++) // rows ty + 8q >= j for q > jb; q == jb masked
                if (q >= jb)
                    fb_fma4(acc[q], As4[(ty + 8 * q) * (FB_AS / 4) + j / 4], x0, x1, x2, x3);
        }

#pragma unroll
        for (int q = 0; q < 8; q++) {
            const int r = ty + 8 * q;
            if (vec) {
                if (dst != nullptr)
                    *reinterpret_cast<float4*>(dst + r * stride) = acc[q];
            } else {
                const float o[4] = {acc[q].x, acc[q].y, acc[q].z, acc[q].w};
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    if (c + e < K)
                        wc[r * HK + c + e] = o[e];
                    else if (c + e < K + V)
                        uc[r * HV + (c + e - K)] = o[e];
                }
            }
        }
    }
}
