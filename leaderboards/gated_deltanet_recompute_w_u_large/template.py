#!POPCORN leaderboard gated_deltanet_recompute_w_u_large
#!POPCORN gpu H200
# template.py - a correct, naive starting point for gated_deltanet_recompute_w_u_large in Python (GPU
# MODE KernelBot's form). Submit it as it is (`kjudge submit template.py`)
# to see the whole flow, then make it fast: PyTorch, Triton or Helion.
#
# custom_kernel receives the tuple `data` (k, v, beta, A, g) on the GPU and returns
# (w, u). w and u are new tensors.
from task import input_t, output_t
import torch


def custom_kernel(data: input_t) -> output_t:
    k, v, beta, A, g = data   # [B,T,H,K], [B,T,H,V], [B,T,H], [B,T,H,64], [B,T,H]; float32
    B, T, H, K = k.shape
    V = v.shape[3]
    n = T // 64                # chunks of 64 steps; A holds each chunk's 64x64 matrix
    # per chunk (b, c, h): w = A @ (beta * exp(g) * k), u = A @ (beta * v)
    Ac = A.view(B, n, 64, H, 64).permute(0, 1, 3, 2, 4)          # [B,n,H,64(i),64(j)]
    bk = (beta * torch.exp(g)).unsqueeze(-1) * k                  # [B,T,H,K]
    bv = beta.unsqueeze(-1) * v                                   # [B,T,H,V]
    bk = bk.view(B, n, 64, H, K).permute(0, 1, 3, 2, 4)           # [B,n,H,64(j),K]
    bv = bv.view(B, n, 64, H, V).permute(0, 1, 3, 2, 4)
    w = torch.matmul(Ac, bk).permute(0, 1, 3, 2, 4).reshape(B, T, H, K)
    u = torch.matmul(Ac, bv).permute(0, 1, 3, 2, 4).reshape(B, T, H, V)
    return w.contiguous(), u.contiguous()
