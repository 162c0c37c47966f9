// compile_load_heavy.cuh - the weight of bench/bench_compile_load.py's load: the
// bench appends it to the board's template.cu (a correct submission), so the
// load is a legal submission that keeps NVRTC's front end busy for a few
// seconds, as a heavy submission of another runner of the host would.
//
// CL_LEAVES instantiations of a binary tree of templates (twice as many
// class templates in all), each computing a constant. The tree is only
// log2(CL_LEAVES) deep, far below the instantiation depth limit, so it
// compiles; its work grows faster than linearly with the leaves (4096: about
// 2.5 s, 6144: about 5 s, 8192: about 7 s on a 2-core VM; 16384 took 23 s,
// and the compile box stops at 60 s). The static_assert makes the compiler
// instantiate the whole tree; no kernel uses it, so the machine code is the
// template's.

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
