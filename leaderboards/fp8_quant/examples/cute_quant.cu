// cute_quant.cu - fp8_quant with CuTe tensors: one warp per group of GS.
//!kjudge leaderboard fp8_quant
//!kjudge launch quant_cute grid=(ceil_div(T * (H / GS), 8)) block=(256)
//
// The input is viewed as a (groups x GS) CuTe tensor; each warp takes one
// group, its lanes stride over the group's elements, a warp shuffle finds
// the absolute maximum, and the scale s = max(amax, 1e-10) / 448 divides the
// group, clamped to [-448, 448] (float32, like the reference). Written to
// show CuTe's layouts under NVRTC, not for speed (see fast.cu).
#include <cute/tensor.hpp>

using namespace cute;

extern "C" __global__ void quant_cute(const float* x, float* x_q, float* x_s, int T, int H, int GS)
{
    const long groups = (long)T * (H / GS);
    auto layout = make_layout(make_shape(groups, GS), LayoutRight{}); // row-major
    Tensor gx = make_tensor(make_gmem_ptr(x), layout);
    Tensor gq = make_tensor(make_gmem_ptr(x_q), layout);
    Tensor gs = make_tensor(make_gmem_ptr(x_s), make_shape(groups));
    const long g = (long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (g >= groups)
        return;
    float amax = 0.0f;
    for (int i = lane; i < GS; i += 32)
        amax = fmaxf(amax, fabsf(gx(g, i)));
    for (int o = 16; o > 0; o /= 2)
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const float s = fmaxf(amax, 1e-10f) / 448.0f;
    if (lane == 0)
        gs(g) = s;
    for (int i = lane; i < GS; i += 32)
        gq(g, i) = fminf(fmaxf(gx(g, i) / s, -448.0f), 448.0f);
}
