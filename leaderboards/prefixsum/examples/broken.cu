// broken.cu - an example that does not compile: line 11 shuffles a float4,
// which __shfl_up_sync does not take; NVRTC reports submission.cu(11).
//!kjudge leaderboard prefixsum
//!kjudge launch scan grid=(ceil_div(N, 1024)) block=(256)

extern "C" __global__ void scan(const float* x, float* y, int N)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float4 v = reinterpret_cast<const float4*>(x)[i];
    v.y += v.x; v.z += v.y; v.w += v.z;
    const float4 up = __shfl_up_sync(0xffffffffu, v, 1);
    reinterpret_cast<float4*>(y)[i] = up;
}
