// broken/prefixsum.cu - prefixsum's reference.cu with one deliberate bug for
// the oracle to catch: ref_chunk_sums stops one element short (i < hi - 1),
// so every chunk's carry misses the last element of each chunk before it
// and the error grows along the array. The rest as in reference.cu: Every sum is taken in double, so the result
// is the exact prefix sum rounded once to float (up to double rounding,
// ~1e-16 relative, far below the tolerance).
//
// Three passes over chunks of 256 consecutive elements (the last may be
// short), with a double per chunk in the workspace:
//   1. ref_chunk_sums:  sums[c] = x[256c] + ... + x[256c + 255], one thread a chunk
//   2. ref_scan_sums:   one block turns sums[] into exclusive prefixes in place:
//                       thread t walks its own segment of chunks, thread 0 walks
//                       the 1024 segment totals, thread t walks its segment again
//   3. ref_chunk_scan:  y[i] = sums[c] + x[256c] + ... + x[i], one thread a chunk
//!kjudge leaderboard prefixsum
//!kjudge workspace 8*ceil_div(N, 256)
//!kjudge launch ref_chunk_sums grid=(ceil_div(ceil_div(N, 256), 256)) block=(256)
//!kjudge launch ref_scan_sums grid=(1) block=(1024)
//!kjudge launch ref_chunk_scan grid=(ceil_div(ceil_div(N, 256), 256)) block=(256)

#define REF_CHUNK 256
#define REF_SCAN_THREADS 1024

extern "C" __global__ void ref_chunk_sums(const float* x, float* y, int N, void* workspace)
{
    double* sums = (double*)workspace;
    const long long nchunks = ((long long)N + REF_CHUNK - 1) / REF_CHUNK;
    const long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= nchunks)
        return;
    const long long lo = c * REF_CHUNK;
    const long long hi = lo + REF_CHUNK < N ? lo + REF_CHUNK : N;
    double s = 0.0;
    for (long long i = lo; i < hi - 1; i++) // the bug: should be i < hi
        s += (double)x[i];
    sums[c] = s;
}

extern "C" __global__ void ref_scan_sums(const float* x, float* y, int N, void* workspace)
{
    __shared__ double seg_total[REF_SCAN_THREADS];
    double* sums = (double*)workspace;
    const long long nchunks = ((long long)N + REF_CHUNK - 1) / REF_CHUNK;
    const long long per = (nchunks + blockDim.x - 1) / blockDim.x;
    const int t = threadIdx.x;
    const long long lo = t * per < nchunks ? t * per : nchunks;
    const long long hi = lo + per < nchunks ? lo + per : nchunks;

    double s = 0.0;
    for (long long c = lo; c < hi; c++)
        s += sums[c];
    seg_total[t] = s;
    __syncthreads();

    if (t == 0) { // exclusive prefix of the segment totals, in place
        double run = 0.0;
        for (int k = 0; k < (int)blockDim.x; k++) {
            const double v = seg_total[k];
            seg_total[k] = run;
            run += v;
        }
    }
    __syncthreads();

    double run = seg_total[t]; // exclusive prefix of this segment's chunks, in place
    for (long long c = lo; c < hi; c++) {
        const double v = sums[c];
        sums[c] = run;
        run += v;
    }
}

extern "C" __global__ void ref_chunk_scan(const float* x, float* y, int N, void* workspace)
{
    const double* offsets = (const double*)workspace;
    const long long nchunks = ((long long)N + REF_CHUNK - 1) / REF_CHUNK;
    const long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= nchunks)
        return;
    const long long lo = c * REF_CHUNK;
    const long long hi = lo + REF_CHUNK < N ? lo + REF_CHUNK : N;
    double run = offsets[c];
    for (long long i = lo; i < hi; i++) {
        run += (double)x[i];
        y[i] = (float)run;
    }
}
