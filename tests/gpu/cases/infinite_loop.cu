// expect: time_limit  mode: test  time_limit: 8  why: never returns (sleeps in a loop forever)
//!kjudge launch quant grid=(1) block=(32)
extern "C" __global__ void quant(const float* x, float* x_q, float* x_s, int T, int H, int GS) {
    for (;;)
        __nanosleep(1000);   // a side effect each turn, so the loop cannot be optimised away
}
