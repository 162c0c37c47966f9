// generate.cu - the trusted input generator of histogram. The judge first
// fills `data` with uniform integers 0..255 from its Philox stream, then runs
// this kernel, which gives each element, independently with probability
// contention/100, one repeated value chosen by the seed: the "contention"
// that makes many threads count into the same bin.
//
// Integer hashing only, so every GPU model produces the same bytes for a
// seed: the hash is the 64-bit finalizer of the SplitMix generator (xor-shift
// and multiply by two odd constants). key = hash(seed); the repeated value is
// the low byte of hash(key ^ 0x68697374); element i is replaced when
// hash(key + i) (top 32 bits) mod 100 < contention.
//!kjudge leaderboard histogram
//!kjudge launch gen_contention grid=(ceil_div(N, 256)) block=(256)

__device__ __forceinline__ unsigned long long gen_mix(unsigned long long z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

extern "C" __global__ void gen_contention(unsigned char* data, int* hist, int N, int contention,
                                          unsigned long long seed)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N)
        return;
    const unsigned long long key = gen_mix(seed);
    const unsigned char value = (unsigned char)(gen_mix(key ^ 0x68697374ull) & 0xff);
    const unsigned int pick = (unsigned int)(gen_mix(key + (unsigned long long)i) >> 32);
    if ((int)(pick % 100u) < contention)
        data[i] = value;
}
