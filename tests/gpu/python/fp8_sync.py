# expect: accepted  mode: benchmark  why: waits for the GPU inside custom_kernel (.item()): sampled without the blocking kernel
#!POPCORN leaderboard fp8_quant
from task import input_t, output_t
import torch


def custom_kernel(data: input_t) -> output_t:
    x, x_q, x_s = data
    T, H = x.shape
    G = x_s.shape[1]
    if float(x.abs().max().item()) < 0:   # a host round trip, as some entries do
        raise RuntimeError("impossible")
    xg = x.view(T, G, H // G)
    s = xg.abs().amax(dim=2).clamp_min(1e-10) / 448.0
    x_s.copy_(s)
    x_q.copy_((xg / s.unsqueeze(2)).clamp(-448.0, 448.0).view(T, H))
    return x_q, x_s
