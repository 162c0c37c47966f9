#!POPCORN leaderboard conv2d
#!POPCORN gpu H200
# template.py - a correct, naive starting point for conv2d in Python (GPU
# MODE KernelBot's form). Submit it as it is (`kjudge submit template.py`)
# to see the whole flow, then make it fast: PyTorch, Triton or Helion.
#
# custom_kernel receives the tuple `data` (x, w, y) on the GPU and returns
# (y). y is the judge's own tensor: fill it and
# return it (or return a new tensor of the same shape and dtype).
from task import input_t, output_t
import torch
import torch.nn.functional as F


def custom_kernel(data: input_t) -> output_t:
    x, w, y = data            # [B, C, S, S], [C, C, K, K], [B, C, S-K+1, S-K+1]; float32
    # stride 1, no padding, cross-correlation (as torch's conv2d); float64 sums
    y.copy_(F.conv2d(x.double(), w.double()))
    return y
