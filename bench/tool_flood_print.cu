// tool_flood_print.cu - an fp8_quant submission whose kernel prints without
// end: under compute-sanitizer it runs until the tool's wall limit. The tool
// flood of bench/bench_queue.py (--tools) keeps sanitize jobs of it queued.
//!kjudge leaderboard fp8_quant
//!kjudge launch quant grid=(T*(H/GS)) block=(GS) smem=(GS*4)

extern "C" __global__ void quant(const float* x, float* x_q, float* x_s, int T, int H, int GS)
{
    for (long long k = 0;; k++)
        if (threadIdx.x == 0)
            printf("group %d line %lld %f\n", (int)blockIdx.x, k, x[0]);
}
