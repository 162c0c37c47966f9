// compile_load_heavy.cu - the load of bench/compile_load.py: a correct
// fp8_quant submission (template.cu's kernel) that keeps NVRTC's front end
// busy for a few seconds, as a heavy but legal submission of another runner
// of the host would.
//!kjudge leaderboard fp8_quant
//!kjudge launch quant grid=(T*(H/GS)) block=(GS) smem=(GS*4)
//
// The weight: CL_LEAVES instantiations of a binary tree of templates (twice
// as many class templates in all), each computing a constant. The tree is
// only log2(CL_LEAVES) deep, far below the instantiation depth limit, so it
// compiles; its work grows faster than linearly with the leaves (4096: about
// 2.5 s, 6144: about 5 s, 8192: about 7 s on a 2-core VM; 16384 took 23 s,
// and the compile box stops at 60 s). The static_assert makes the compiler
// instantiate the whole tree; the kernel never uses it, so the machine code
// is template.cu's.

#define CL_LEAVES 6144

template <int V> struct ClLeaf {
    static constexpr unsigned long long value = (unsigned long long)V * 2654435761ull % 1000003ull;
};

template <int Lo, int Hi> struct ClTree {
    static constexpr int Mid = Lo + (Hi - Lo) / 2;
    static constexpr unsigned long long value = ClTree<Lo, Mid>::value + ClTree<Mid, Hi>::value;
};

template <int Lo> struct ClTree<Lo, Lo + 1> {
    static constexpr unsigned long long value = ClLeaf<Lo>::value;
};

static_assert(ClTree<0, CL_LEAVES>::value > 0, "the whole tree is instantiated");

extern "C" __global__ void quant(const float* x, float* x_q, float* x_s,
                                 int T, int H, int GS)
{
    extern __shared__ float red[];          // GS floats
    const long long g = blockIdx.x;         // group index over the matrix
    const int j = threadIdx.x;              // element within the group
    const long long i = g * GS + j;

    const float v = x[i];
    red[j] = fabsf(v);
    __syncthreads();
    for (int n = GS; n > 1;) {
        const int half = (n + 1) / 2;
        if (j < n - half)
            red[j] = fmaxf(red[j], red[j + half]);
        __syncthreads();
        n = half;
    }
    const float s = fmaxf(red[0], 1e-10f) / 448.0f;
    if (j == 0)
        x_s[g] = s;
    x_q[i] = fminf(fmaxf(v / s, -448.0f), 448.0f);
}
