// expect: rejected  mode: test  why: 2048 threads per block is over the device limit
//!kjudge launch quant grid=(1) block=(2048)
extern "C" __global__ void quant(const float* x, float* x_q, float* x_s, int T, int H, int GS) { }
