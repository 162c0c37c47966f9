// expect: runtime_error  mode: test  why: stores far outside its buffers (illegal address)
//!kjudge launch quant grid=(1) block=(32)
extern "C" __global__ void quant(const float* x, float* x_q, float* x_s, int T, int H, int GS) {
    x_q[(1L << 40) + threadIdx.x] = 1.0f;
}
