# expect: accepted  mode: benchmark  why: plain PyTorch, fills the given outputs
#!POPCORN leaderboard fp8_quant
#!POPCORN gpu H200
from task import input_t, output_t
import torch


def custom_kernel(data: input_t) -> output_t:
    x, x_q, x_s = data
    T, H = x.shape
    G = x_s.shape[1]
    xg = x.view(T, G, H // G)
    s = xg.abs().amax(dim=2).clamp_min(1e-10) / 448.0
    x_s.copy_(s)
    x_q.copy_((xg / s.unsqueeze(2)).clamp(-448.0, 448.0).view(T, H))
    return x_q, x_s
