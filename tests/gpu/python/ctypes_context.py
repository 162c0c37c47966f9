# expect: accepted  mode: test  why: takes the CUDA driver through ctypes and leaves another context current on the box's thread; the box restores its own and the entry is judged
#!POPCORN leaderboard fp8_quant
import ctypes
from task import input_t, output_t
import torch

_cu = ctypes.CDLL("libcuda.so.1")
_other = ctypes.c_void_p()


def custom_kernel(data: input_t) -> output_t:
    x, x_q, x_s = data
    T, H = x.shape
    G = x_s.shape[1]
    xg = x.view(T, G, H // G)
    s = xg.abs().amax(dim=2).clamp_min(1e-10) / 448.0
    x_s.copy_(s)
    x_q.copy_((xg / s.unsqueeze(2)).clamp(-448.0, 448.0).view(T, H))
    # Pop the box's context off this thread: the harness's next driver call
    # would fail (as the judge's error) if the box did not set it again.
    _cu.cuCtxPopCurrent_v2(ctypes.byref(_other))
    return x_q, x_s
