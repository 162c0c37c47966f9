// broken.cu - an example that does not compile: line 14 gives load_matrix_sync
// a float pointer for an fp16 fragment; NVRTC reports submission.cu(14).
//!kjudge leaderboard matmul
//!kjudge launch matmul grid=(ceil_div(N, 16), ceil_div(M, 16)) block=(32)
#include <cuda_fp16.h>
#include <mma.h>
using namespace nvcuda;

extern "C" __global__ void matmul(const __half* A, const __half* B, float* C, int M, int N, int K)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    wmma::load_matrix_sync(a, C, K);
    wmma::store_matrix_sync(C, acc, N, wmma::mem_row_major);
}
