#!POPCORN leaderboard fp8_quant
#!POPCORN gpu H200
# triton_kernel.py - fp8_quant as one Triton kernel (GPU MODE KernelBot's form).
# The input is seen as R = T * H / GS rows of GS contiguous elements (one row
# per group); each program quantizes BLOCK_R groups: the group's absolute
# maximum, its scale s = max(amax, 1e-10) / 448, and x / s clamped to
# [-448, 448], all in float32 like the board's reference.
from task import input_t, output_t
import torch
import triton
import triton.language as tl


@triton.jit
def _quant_groups(x_ptr, q_ptr, s_ptr, R, GS, GS_P2: tl.constexpr, BLOCK_R: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid.to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)      # group indices
    cols = tl.arange(0, GS_P2)                                       # within a group
    row_ok = rows < R
    mask = row_ok[:, None] & (cols[None, :] < GS)
    offs = rows[:, None] * GS + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    a = tl.maximum(tl.max(tl.abs(x), axis=1), 1e-10)
    s = a / 448.0
    tl.store(s_ptr + rows, s, mask=row_ok)
    q = tl.minimum(tl.maximum(x / s[:, None], -448.0), 448.0)
    tl.store(q_ptr + offs, q, mask=mask)


def custom_kernel(data: input_t) -> output_t:
    x, x_q, x_s = data                 # [T, H], [T, H], [T, H // GS]; float32, contiguous
    T, H = x.shape
    G = x_s.shape[1]
    GS = H // G
    R = T * G
    gs_p2 = triton.next_power_of_2(GS)
    block_r = max(1, min(64, 4096 // gs_p2))   # about 4096 elements per program
    grid = (triton.cdiv(R, block_r),)
    _quant_groups[grid](x, x_q, x_s, R, GS, GS_P2=gs_p2, BLOCK_R=block_r, num_warps=4)
    return x_q, x_s
