# expect: accepted  mode: benchmark  min_us: 1000  ranked: gpu_time  why: reads a few inputs back to the host (a copy, so the call waits for the GPU), spends 1 ms on the host, then computes on the GPU; ranked on GPU time the call's span runs from its copy to its last kernel, so the host's millisecond is in the score (kernel records alone would give the kernels' few us: work done on the host between a read and a write would be free)
#!POPCORN leaderboard fp8_quant
import time
from task import input_t, output_t
import torch


def custom_kernel(data: input_t) -> output_t:
    x, x_q, x_s = data
    T, H = x.shape
    G = x_s.shape[1]
    head = x[0, :8].cpu()              # a device-to-host copy: the host now has inputs
    t = time.perf_counter()
    while time.perf_counter() - t < 1e-3:  # the host's "work" on them
        pass
    if not torch.isfinite(head).all():
        raise RuntimeError("inputs are finite")
    xg = x.view(T, G, H // G)
    s = xg.abs().amax(dim=2).clamp_min(1e-10) / 448.0
    x_s.copy_(s)
    x_q.copy_((xg / s.unsqueeze(2)).clamp(-448.0, 448.0).view(T, H))
    return x_q, x_s
