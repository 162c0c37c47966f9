#!POPCORN leaderboard gated_deltanet_recompute_w_u
#!POPCORN gpu H200
# torch_naive.py - gated_deltanet_recompute_w_u in plain PyTorch (GPU MODE
# KernelBot's form). T is cut into chunks of 64 steps; A holds each chunk's
# 64x64 lower-triangular matrix (A[b, 64n+i, h, j] = row i, column j of
# chunk n). For each chunk n, head h and step i of it:
#   w[b,64n+i,h,:] = sum_j A[b,64n+i,h,j] * beta[b,64n+j,h] * exp(g[b,64n+j,h]) * k[b,64n+j,h,:]
#   u[b,64n+i,h,:] = sum_j A[b,64n+i,h,j] * beta[b,64n+j,h] * v[b,64n+j,h,:]
# i.e. w = A @ (beta * exp(g) * k) and u = A @ (beta * v) per chunk and
# head, as batched float32 matrix products. w and u are new tensors.
from task import input_t, output_t
import torch


def custom_kernel(data: input_t) -> output_t:
    k, v, beta, A, g = data     # [B,T,H,K], [B,T,H,V], [B,T,H], [B,T,H,64], [B,T,H]; float32
    B, T, H, K = k.shape
    V = v.shape[3]
    n = T // 64
    Ac = A.view(B, n, 64, H, 64).permute(0, 1, 3, 2, 4)            # [B, n, H, i, j]
    kb = (beta * torch.exp(g)).unsqueeze(-1) * k                    # [B, T, H, K]
    vb = beta.unsqueeze(-1) * v                                     # [B, T, H, V]
    kb = kb.view(B, n, 64, H, K).permute(0, 1, 3, 2, 4)             # [B, n, H, j, K]
    vb = vb.view(B, n, 64, H, V).permute(0, 1, 3, 2, 4)
    w = torch.matmul(Ac, kb).permute(0, 1, 3, 2, 4).reshape(B, T, H, K)
    u = torch.matmul(Ac, vb).permute(0, 1, 3, 2, 4).reshape(B, T, H, V)
    return w, u
