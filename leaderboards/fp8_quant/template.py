#!POPCORN leaderboard fp8_quant
#!POPCORN gpu H200
# template.py - a correct, naive starting point for fp8_quant in Python (GPU
# MODE KernelBot's form). Submit it as it is (`kjudge submit template.py`)
# to see the whole flow, then make it fast: PyTorch, Triton or Helion.
#
# custom_kernel receives the tuple `data` (x, x_q, x_s) on the GPU and returns
# (x_q, x_s). x_q and x_s are the judge's own
# tensors: fill them and return them (or return new tensors of the same
# shapes and dtypes).
from task import input_t, output_t
import torch


def custom_kernel(data: input_t) -> output_t:
    x, x_q, x_s = data                    # [T, H], [T, H], [T, H // GS]; float32
    T, H = x.shape
    G = x_s.shape[1]                       # groups per row; GS = H // G
    xg = x.view(T, G, H // G)
    # per row t and group g: a = max(max |x|, 1e-10); s = a / 448 (float32)
    a = xg.abs().amax(dim=2).clamp_min(1e-10)
    s = a / 448.0
    x_s.copy_(s)
    # x_q = clamp(x / s, -448, 448), kept in float32
    x_q.view(T, G, H // G).copy_((xg / s.unsqueeze(2)).clamp(-448.0, 448.0))
    return x_q, x_s
