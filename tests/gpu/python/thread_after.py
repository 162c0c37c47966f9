# expect: runtime_error  mode: test  why: returns at once and fills the outputs from a thread after the call, outside the timed span; the harness refuses a thread left running
#!POPCORN leaderboard fp8_quant
import threading
import time
from task import input_t, output_t
import torch


def _fill(x, x_q, x_s):
    time.sleep(0.002)
    T, H = x.shape
    G = x_s.shape[1]
    xg = x.view(T, G, H // G)
    s = xg.abs().amax(dim=2).clamp_min(1e-10) / 448.0
    x_s.copy_(s)
    x_q.copy_((xg / s.unsqueeze(2)).clamp(-448.0, 448.0).view(T, H))


def custom_kernel(data: input_t) -> output_t:
    x, x_q, x_s = data
    threading.Thread(target=_fill, args=(x, x_q, x_s), daemon=True).start()
    return x_q, x_s
