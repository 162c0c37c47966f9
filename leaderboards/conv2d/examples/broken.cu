// broken.cu - an example that does not compile: line 12 indexes a pointer
// with a pointer; NVRTC reports submission.cu(12).
//!kjudge leaderboard conv2d
//!kjudge launch conv grid=(ceil_div(S-K+1, 16), ceil_div(S-K+1, 16), B*C) block=(16, 16)

extern "C" __global__ void conv(const float* x, const float* w, float* y, int B, int C, int S, int K)
{
    const int ox = blockIdx.x * blockDim.x + threadIdx.x;
    const int oy = blockIdx.y * blockDim.y + threadIdx.y;
    float acc = 0.0f;
    for (int k = 0; k < K * K; k++)
        acc += x[w + k] * w[k];
    y[oy * (S - K + 1) + ox] = acc;
}
