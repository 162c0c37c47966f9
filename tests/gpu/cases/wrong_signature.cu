// expect: rejected  mode: test  why: the kernel takes five parameters, the leaderboard passes six
//!kjudge launch quant grid=(1) block=(32)
extern "C" __global__ void quant(const float* x, float* x_q, float* x_s, int T, int H) { }
