# expect: accepted  mode: benchmark  why: plain PyTorch, returns new tensors w and u
#!POPCORN leaderboard gated_deltanet_recompute_w_u
from task import input_t, output_t
import torch


def custom_kernel(data: input_t) -> output_t:
    k, v, beta, A, g = data
    B, T, H, K = k.shape
    V = v.shape[-1]
    C = 64
    N = T // C
    a = A.view(B, N, C, H, C).permute(0, 1, 3, 2, 4)
    kb = (k * (beta * torch.exp(g)).unsqueeze(-1)).view(B, N, C, H, K).permute(0, 1, 3, 2, 4)
    vb = (v * beta.unsqueeze(-1)).view(B, N, C, H, V).permute(0, 1, 3, 2, 4)
    w = (a @ kb).permute(0, 1, 3, 2, 4).reshape(B, T, H, K)
    u = (a @ vb).permute(0, 1, 3, 2, 4).reshape(B, T, H, V)
    return w, u
