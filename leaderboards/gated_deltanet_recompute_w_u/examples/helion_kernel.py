#!POPCORN leaderboard gated_deltanet_recompute_w_u
#!POPCORN gpu H200
# helion_kernel.py - gated_deltanet_recompute_w_u as a Helion kernel (GPU
# MODE KernelBot's form), with a fixed configuration so that nothing is
# autotuned at judge time. The [B, T, H, .] tensors are viewed (not copied)
# as [B, n, 64, H, .]: chunk n, step i of it. For each (b, n, h) the
# chunk's 64x64 matrix A[b, n, :, h, :] multiplies
#   beta * exp(g) * k  -> w,   beta * v -> u
# one BK-wide slice of K (BV of V) at a time, as float32 matrix products
# (dot_precision "ieee": TF32 is too coarse for the tolerance).
# w and u are new tensors.
from task import input_t, output_t
import torch
import helion
import helion.language as hl


@helion.kernel(config=helion.Config(block_sizes=[64, 64], num_warps=4), dot_precision="ieee")
def recompute_w_u(k5: torch.Tensor, v5: torch.Tensor, beta4: torch.Tensor, A5: torch.Tensor,
                  g4: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    B, n, C, H, K = k5.size()
    V = v5.size(4)
    w = torch.empty_like(k5)
    u = torch.empty_like(v5)
    for b, c, h in hl.grid([B, n, H]):
        a = A5[b, c, :, h, :]                                   # [64 (i), 64 (j)]
        be = beta4[b, c, :, h]                                  # [64]
        bg = be * torch.exp(g4[b, c, :, h])
        for tk in hl.tile(K):
            w[b, c, :, h, tk] = torch.matmul(a, k5[b, c, :, h, tk] * bg[:, None])
        for tv in hl.tile(V):
            u[b, c, :, h, tv] = torch.matmul(a, v5[b, c, :, h, tv] * be[:, None])
    return w, u


def custom_kernel(data: input_t) -> output_t:
    k, v, beta, A, g = data     # [B,T,H,K], [B,T,H,V], [B,T,H], [B,T,H,64], [B,T,H]; float32
    B, T, H, K = k.shape
    V = v.shape[3]
    n = T // 64
    w, u = recompute_w_u(k.view(B, n, 64, H, K), v.view(B, n, 64, H, V),
                         beta.view(B, n, 64, H), A.view(B, n, 64, H, 64), g.view(B, n, 64, H))
    return w.view(B, T, H, K), u.view(B, T, H, V)
