// broken/grayscale.cu - grayscale's reference.cu with one deliberate bug for
// the oracle to catch: the green weight is 0.5807 instead of 0.5870 (two
// digits swapped), an error of up to 6.3e-3 per pixel.
//!kjudge leaderboard grayscale
//!kjudge launch ref_gray grid=(ceil_div(S*S, 256)) block=(256)

extern "C" __global__ void ref_gray(const float* rgb, float* gray, int S)
{
    const long long npix = (long long)S * S;
    const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= npix)
        return;
    const double r = rgb[3 * p + 0];
    const double g = rgb[3 * p + 1];
    const double b = rgb[3 * p + 2];
    gray[p] = (float)(0.2989 * r + 0.5807 * g + 0.1140 * b);
}
