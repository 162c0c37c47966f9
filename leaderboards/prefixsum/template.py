#!POPCORN leaderboard prefixsum
#!POPCORN gpu H200
# template.py - a correct, naive starting point for prefixsum in Python (GPU
# MODE KernelBot's form). Submit it as it is (`kjudge submit template.py`)
# to see the whole flow, then make it fast: PyTorch, Triton or Helion.
#
# custom_kernel receives the tuple `data` (x, y) on the GPU and returns
# (y). y is the judge's own tensor: fill it and
# return it (or return a new tensor of the same shape and dtype).
from task import input_t, output_t
import torch


def custom_kernel(data: input_t) -> output_t:
    x, y = data               # [N] float32 each; y[i] = x[0] + ... + x[i]
    # summed in float64 so the error stays far inside the tolerance
    y.copy_(torch.cumsum(x.double(), dim=0))
    return y
