// broken.cu - an example that does not compile: line 14 stores a float4
// into a float, a type error NVRTC reports as submission.cu(14).
//!kjudge leaderboard fp8_quant
//!kjudge launch quant grid=(ceil_div(T*H, 1024)) block=(256)

extern "C" __global__ void quant(const float* x, float* x_q, float* x_s,
                                 int T, int H, int GS)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    if (i * 4 >= (long long)T * H)
        return;
    // A float4 is four floats; it does not convert to one float.
    float v = x4[i];
    x_q[i] = v;
    if (i == 0)
        x_s[0] = 0.0f;
}
