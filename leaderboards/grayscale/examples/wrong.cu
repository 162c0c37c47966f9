// wrong.cu - an example that compiles and runs but is wrong: it reads the
// image as if it were stored planar ([3, S, S]: all reds, then all greens,
// then all blues) instead of interleaved ([S, S, 3]). The judge answers
// wrong_answer with the first mismatching indices.
//!kjudge leaderboard grayscale
//!kjudge launch gray grid=(ceil_div(S*S, 256)) block=(256)

extern "C" __global__ void gray(const float* rgb, float* out, int S)
{
    const long long npix = (long long)S * S;
    const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p < npix) // the bug: planar indexing
        out[p] = 0.2989f * rgb[p] + 0.5870f * rgb[npix + p] + 0.1140f * rgb[2 * npix + p];
}
