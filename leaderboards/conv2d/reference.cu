// reference.cu - the trusted reference kernel of conv2d: plain and obviously
// correct, not fast. One thread per output element, the C*K*K products summed
// in double (each product of two floats is exact in double), rounded once to
// float. A block covers 32 x 8 output pixels of one (batch, output channel)
// plane: consecutive threads take consecutive columns (coalesced loads of x)
// and share every weight (broadcast loads of w).
//!kjudge leaderboard conv2d
//!kjudge launch ref_conv grid=(ceil_div(S-K+1, 32), ceil_div(S-K+1, 8), B*C) block=(32, 8)

extern "C" __global__ void ref_conv(const float* x, const float* w, float* y,
                                    int B, int C, int S, int K)
{
    const int O = S - K + 1;               // output height and width
    const int ox = blockIdx.x * blockDim.x + threadIdx.x;
    const int oy = blockIdx.y * blockDim.y + threadIdx.y;
    const int b = blockIdx.z / C, co = blockIdx.z % C;
    if (ox >= O || oy >= O)
        return;

    double acc = 0.0;
    for (int ci = 0; ci < C; ci++) {
        const float* xp = x + ((long long)b * C + ci) * S * S;     // x[b, ci, :, :]
        const float* wp = w + ((long long)co * C + ci) * K * K;    // w[co, ci, :, :]
        for (int kh = 0; kh < K; kh++)
            for (int kw = 0; kw < K; kw++)
                acc += (double)xp[(long long)(oy + kh) * S + (ox + kw)] * (double)wp[kh * K + kw];
    }
    y[(((long long)b * C + co) * O + oy) * O + ox] = (float)acc;
}
