// template.cu - a correct, naive starting point for grayscale. Submit it as
// it is to see the whole flow, then make it fast.
//!kjudge leaderboard grayscale
//!kjudge launch gray_naive grid=(ceil_div(S, 16), ceil_div(S, 16)) block=(16, 16)
//
// The launch line above is the host side: a 2D grid of 16x16 blocks, one
// thread per pixel (x = column, y = row). grid and block are integer
// expressions over S (with + - * / %, min, max, ceil_div, comparisons and ?:).
//
// Ideas for speed: the kernel is bound by memory bandwidth. Here each thread
// loads three 4-byte values 12 bytes apart. Four consecutive pixels are 48
// bytes, three aligned float4 loads, and their four results one float4
// store; give each thread a few such groups and size a 1D grid from S*S.
// Keep a scalar path for S*S not a multiple of 4.

extern "C" __global__ void gray_naive(const float* rgb, float* gray, int S)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= S || y >= S)
        return;
    const long long p = (long long)y * S + x;
    const float r = rgb[3 * p + 0], g = rgb[3 * p + 1], b = rgb[3 * p + 2];
    gray[p] = 0.2989f * r + 0.5870f * g + 0.1140f * b;
}
