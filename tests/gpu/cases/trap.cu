// expect: runtime_error  mode: test  why: executes a trap instruction
//!kjudge launch quant grid=(1) block=(32)
extern "C" __global__ void quant(const float* x, float* x_q, float* x_s, int T, int H, int GS) {
    if (threadIdx.x == 0) asm volatile("trap;");
}
