// template.cu - a correct, naive starting point for conv2d. Submit it as it
// is to see the whole flow, then make it fast.
//!kjudge leaderboard conv2d
//!kjudge launch conv grid=(ceil_div(S-K+1, 16), ceil_div(S-K+1, 16), B*C) block=(16, 16)
//
// The launch line above is the host side: one thread per output pixel, a
// 16x16 block per tile of one (batch, output channel) plane, blockIdx.z
// running over B*C planes. grid and block are integer expressions over B, C,
// S and K (with + - * / %, min, max, ceil_div, comparisons and ?:).
//
// Ideas for speed, roughly in order of payoff:
//  - this is compute-bound (up to 1.7 TFLOP a call) and every product here
//    costs two loads; reuse each loaded value many times from registers:
//    give each thread a small block of outputs (several pixels times several
//    output channels), which is a matrix multiplication in disguise
//    ("implicit GEMM": rows = output pixels, columns = output channels,
//    reduction = C*K*K, with x[b, ci, oy+kh, ox+kw] gathered on the fly);
//  - stage tiles of x and w through shared memory, double-buffered;
//  - keep float: TF32 tensor cores round the inputs to 10 bits and fail the
//    tolerance.

extern "C" __global__ void conv(const float* x, const float* w, float* y, int B, int C, int S, int K)
{
    const int O = S - K + 1;
    const int ox = blockIdx.x * blockDim.x + threadIdx.x;
    const int oy = blockIdx.y * blockDim.y + threadIdx.y;
    const int b = blockIdx.z / C, co = blockIdx.z % C;
    if (ox >= O || oy >= O)
        return;
    float acc = 0.0f;
    for (int ci = 0; ci < C; ci++)
        for (int kh = 0; kh < K; kh++)
            for (int kw = 0; kw < K; kw++)
                acc += x[(((long long)b * C + ci) * S + oy + kh) * S + ox + kw] *
                       w[(((long long)co * C + ci) * K + kh) * K + kw];
    y[(((long long)b * C + co) * O + oy) * O + ox] = acc;
}
