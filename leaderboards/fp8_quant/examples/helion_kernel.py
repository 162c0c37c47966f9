#!POPCORN leaderboard fp8_quant
#!POPCORN gpu H200
# helion_kernel.py - fp8_quant as a Helion kernel (GPU MODE KernelBot's form),
# with a fixed configuration so that nothing is autotuned at judge time.
# The input is seen as R = T * H / GS rows of GS contiguous elements (one row
# per group, views: nothing is copied); each tile of rows gets its absolute
# maxima, scales s = max(amax, 1e-10) / 448 and x / s clamped to
# [-448, 448], all in float32 like the board's reference. The kernel writes
# into the judge's own x_q and x_s.
from task import input_t, output_t
import torch
import helion
import helion.language as hl


@helion.kernel(config=helion.Config(block_sizes=[16], num_warps=4))
def quant_groups(xg: torch.Tensor, q: torch.Tensor, s: torch.Tensor) -> None:
    R, GS = xg.size()
    for tr in hl.tile(R):
        row = xg[tr, :]                                          # [tile, GS]
        a = torch.clamp_min(torch.amax(torch.abs(row), dim=1), 1e-10)
        sc = a / 448.0
        s[tr] = sc
        q[tr, :] = torch.clamp(row / sc[:, None], -448.0, 448.0)


def custom_kernel(data: input_t) -> output_t:
    x, x_q, x_s = data                 # [T, H], [T, H], [T, H // GS]; float32, contiguous
    T, H = x.shape
    G = x_s.shape[1]
    GS = H // G
    quant_groups(x.view(T * G, GS), x_q.view(T * G, GS), x_s.view(T * G))
    return x_q, x_s
