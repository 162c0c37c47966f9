// wrong.cu - an example that compiles and runs but is wrong: each block of
// 1024 scans its own elements and nothing carries the totals from block to
// block, so every element from index 1024 on misses the sum of everything
// before its block. N = 1023 and 1024 pass; N = 1025 (the third test) fails
// at index 1024, and the judge answers wrong_answer with that index.
//!kjudge leaderboard prefixsum
//!kjudge launch scan_blocks grid=(ceil_div(N, 1024)) block=(1024)

extern "C" __global__ void scan_blocks(const float* x, float* y, int N)
{
    __shared__ float s[1024];
    const int t = threadIdx.x;
    const long long i = (long long)blockIdx.x * 1024 + t;
    s[t] = i < N ? x[i] : 0.0f;
    __syncthreads();
    for (int off = 1; off < 1024; off *= 2) {
        const float add = t >= off ? s[t - off] : 0.0f;
        __syncthreads();
        s[t] += add;
        __syncthreads();
    }
    if (i < N)
        y[i] = s[t]; // the bug: no carry from the blocks before
}
