# expect: accepted  mode: test  why: forks at import a child that leaves its process group (setsid) to outlive the job, and in custom_kernel a copy that returns like the box; the first is ended at teardown (cgroup.kill of the box's cgroup), the second in the harness
#!POPCORN leaderboard fp8_quant
import os
import time
from task import input_t, output_t
import torch

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:  # a grandchild, reparented away from the box
        while True:
            time.sleep(0.5)
    os._exit(0)
_forked = []


def custom_kernel(data: input_t) -> output_t:
    x, x_q, x_s = data
    if not _forked:
        _forked.append(os.fork())  # the child returns from here too
    T, H = x.shape
    G = x_s.shape[1]
    xg = x.view(T, G, H // G)
    s = xg.abs().amax(dim=2).clamp_min(1e-10) / 448.0
    x_s.copy_(s)
    x_q.copy_((xg / s.unsqueeze(2)).clamp(-448.0, 448.0).view(T, H))
    return x_q, x_s
