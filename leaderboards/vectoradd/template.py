#!POPCORN leaderboard vectoradd
#!POPCORN gpu H200
# template.py - a correct, naive starting point for vectoradd in Python (GPU
# MODE KernelBot's form). Submit it as it is (`kjudge submit template.py`)
# to see the whole flow, then make it fast: PyTorch, Triton or Helion.
#
# custom_kernel receives the tuple `data` (A, B, C) on the GPU and returns
# (C). C is the judge's own tensor: fill it and
# return it (or return a new tensor of the same shape and dtype).
from task import input_t, output_t
import torch


def custom_kernel(data: input_t) -> output_t:
    A, B, C = data            # [N, N] float16 each
    torch.add(A, B, out=C)
    return C
