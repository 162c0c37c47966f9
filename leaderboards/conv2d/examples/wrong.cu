// wrong.cu - an example that compiles and runs but is wrong: it flips the
// kernel (w[co, ci, K-1-kh, K-1-kw]), the textbook convolution, where this
// board (like PyTorch's conv2d) computes the cross-correlation with the
// kernel as stored. The judge answers wrong_answer with the first
// mismatching indices.
//!kjudge leaderboard conv2d
//!kjudge launch conv grid=(ceil_div(S-K+1, 16), ceil_div(S-K+1, 16), B*C) block=(16, 16)

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
            for (int kw = 0; kw < K; kw++) // the bug: a flipped kernel
                acc += x[(((long long)b * C + ci) * S + oy + kh) * S + ox + kw] *
                       w[(((long long)co * C + ci) * K + (K - 1 - kh)) * K + (K - 1 - kw)];
    y[(((long long)b * C + co) * O + oy) * O + ox] = acc;
}
