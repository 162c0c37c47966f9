# expect: wrong_answer  mode: benchmark  why: returns the first call's outputs for every later call of a shape
#!POPCORN leaderboard fp8_quant
from task import input_t, output_t
import torch
_seen = {}


def custom_kernel(data: input_t) -> output_t:
    x, x_q, x_s = data
    key = tuple(x.shape)
    if key in _seen:
        q, s = _seen[key]
        return q, s
    T, H = x.shape
    G = x_s.shape[1]
    xg = x.view(T, G, H // G)
    s = xg.abs().amax(dim=2).clamp_min(1e-10) / 448.0
    q = (xg / s.unsqueeze(2)).clamp(-448.0, 448.0).view(T, H)
    _seen[key] = (q.clone(), s.clone())
    return q, s
