// bench/bench_queue's slow compile: thirty-two thousand dependent statements,
// unrolled by the preprocessor, that NVRTC does not finish within the
// compile box's 60 s (a compile_error at the limit). It stands for a
// template or unrolling bomb that holds a compiler for the whole limit,
// unlike tests/exploits/template_bomb.cu, which NVRTC stops at once.
//!kjudge launch quant grid=(ceil_div(T*H/GS, 8)) block=(32, 8)
#define R1 a = a * x[(int)a & 255] + 1.0f;
#define R8 R1 R1 R1 R1 R1 R1 R1 R1
#define R64 R8 R8 R8 R8 R8 R8 R8 R8
#define R512 R64 R64 R64 R64 R64 R64 R64 R64
#define R4K R512 R512 R512 R512 R512 R512 R512 R512
#define R32K R4K R4K R4K R4K R4K R4K R4K R4K
extern "C" __global__ void quant(const float* x, float* x_q, float* x_s, int T, int H, int GS) {
    float a = x[threadIdx.x];
    R32K
    x_q[threadIdx.x] = a;
}
