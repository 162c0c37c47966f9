/*
 * cudaemu.h - just enough of CUDA to run plain leaderboard kernels on the
 * CPU, for testing the oracle and the boards without a GPU. emu.py includes
 * a board's .cu file after this header and launches its kernels.
 *
 * Every thread of a block is a std::thread; __syncthreads() is a
 * std::barrier (a thread that returns drops out of it, as on a GPU). Blocks
 * run one after another, so a function-scope `static` stands for __shared__
 * memory; emu.py rewrites `extern __shared__ T name[];` into a pointer to
 * the launch's dynamic shared memory. Not emulated: warp shuffles and
 * votes, atomics, cooperative groups, half types, tensor cores.
 */
#ifndef KJ_CUDAEMU_H
#define KJ_CUDAEMU_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <barrier>
#include <thread>
#include <vector>

struct emu_dim3 { unsigned x = 1, y = 1, z = 1; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) float2 { float x, y; };
static inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
static inline float2 make_float2(float a, float b) { return {a, b}; }

static thread_local emu_dim3 threadIdx, blockIdx;
static emu_dim3 blockDim, gridDim;
static std::barrier<> *emu_bar;
static unsigned char *emu_smem;

static inline void __syncthreads() { emu_bar->arrive_and_wait(); }
template <class T> static inline T __ldg(const T *p) { return *p; }

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__ static

static inline long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }
static inline long long emu_min(long long a, long long b) { return a < b ? a : b; }
static inline long long emu_max(long long a, long long b) { return a > b ? a : b; }

/* Run f(args...) on a grid of blocks with smem bytes of dynamic shared memory. */
template <class F, class... Args>
static void emu_launch(long long gx, long long gy, long long gz, long long bx, long long by,
                       long long bz, long long smem, F f, Args... args)
{
    const long long nt = bx * by * bz;
    if (gx < 1 || gy < 1 || gz < 1 || nt < 1 || nt > 1024 || smem < 0) {
        fprintf(stderr, "emu: bad launch grid=(%lld,%lld,%lld) block=(%lld,%lld,%lld) smem=%lld\n",
                gx, gy, gz, bx, by, bz, smem);
        exit(2);
    }
    gridDim = {(unsigned)gx, (unsigned)gy, (unsigned)gz};
    blockDim = {(unsigned)bx, (unsigned)by, (unsigned)bz};
    std::vector<unsigned char> dyn((size_t)smem + 64);
    emu_smem = dyn.data() + (64 - (reinterpret_cast<uintptr_t>(dyn.data()) & 63));
    for (unsigned z = 0; z < gz; z++)
        for (unsigned y = 0; y < gy; y++)
            for (unsigned x = 0; x < gx; x++) {
                std::barrier<> bar(nt);
                emu_bar = &bar;
                std::vector<std::thread> th;
                for (unsigned tz = 0; tz < bz; tz++)
                    for (unsigned ty = 0; ty < by; ty++)
                        for (unsigned tx = 0; tx < bx; tx++)
                            th.emplace_back([&, x, y, z, tx, ty, tz] {
                                blockIdx = {x, y, z};
                                threadIdx = {tx, ty, tz};
                                f(args...);
                                bar.arrive_and_drop();
                            });
                for (auto &t : th)
                    t.join();
            }
}

#endif
