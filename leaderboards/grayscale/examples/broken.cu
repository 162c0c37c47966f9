// broken.cu - an example that does not compile: line 12 uses a name that is
// declared nowhere; NVRTC reports it as submission.cu(12).
//!kjudge leaderboard grayscale
//!kjudge launch gray grid=(ceil_div(S*S, 256)) block=(256)

extern "C" __global__ void gray(const float* rgb, float* out, int S)
{
    const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const float3 c = reinterpret_cast<const float3*>(rgb)[p];
    if (p >= (long long)S * S)
        return;
    out[p] = 0.2989f * c.x + 0.5870f * c.y + 0.1140f * c.z + bias;
}
