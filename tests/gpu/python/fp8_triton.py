# expect: accepted  mode: benchmark  why: a Triton kernel, compiled at its first call (ptxas in the box)
#!POPCORN leaderboard fp8_quant
from task import input_t, output_t
import triton
import triton.language as tl


@triton.jit
def _quant(x_ptr, q_ptr, s_ptr, GS: tl.constexpr):
    g = tl.program_id(0)
    offs = g.to(tl.int64) * GS + tl.arange(0, GS)
    v = tl.load(x_ptr + offs)
    s = tl.maximum(tl.max(tl.abs(v), axis=0), 1e-10) / 448.0
    tl.store(s_ptr + g, s)
    tl.store(q_ptr + offs, tl.minimum(tl.maximum(v / s, -448.0), 448.0))


def custom_kernel(data: input_t) -> output_t:
    x, x_q, x_s = data
    T, H = x.shape
    G = x_s.shape[1]
    _quant[(T * G,)](x, x_q, x_s, GS=H // G)
    return x_q, x_s
