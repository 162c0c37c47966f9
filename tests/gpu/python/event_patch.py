# expect: accepted  mode: benchmark  min_us: 120  why: does four times the work and patches torch.cuda.Event, torch.cuda.synchronize and time.perf_counter to report almost nothing; the box times with its own driver events, so the score stays that of the work
#!POPCORN leaderboard fp8_quant
import time
from task import input_t, output_t
import torch


class _Event:
    def __init__(self, *a, **k):
        pass

    def record(self, *a, **k):
        pass

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return 1e-6


torch.cuda.Event = _Event
torch.cuda.synchronize = lambda *a, **k: None
_t = [0.0]


def _fake_clock():
    _t[0] += 1e-9
    return _t[0]


time.perf_counter = _fake_clock
time.perf_counter_ns = lambda: int(_fake_clock() * 1e9)


def custom_kernel(data: input_t) -> output_t:
    x, x_q, x_s = data
    T, H = x.shape
    G = x_s.shape[1]
    for _ in range(4):
        xg = x.view(T, G, H // G)
        s = xg.abs().amax(dim=2).clamp_min(1e-10) / 448.0
        x_s.copy_(s)
        x_q.copy_((xg / s.unsqueeze(2)).clamp(-448.0, 448.0).view(T, H))
    return x_q, x_s
