#!POPCORN leaderboard matmul
#!POPCORN gpu H200
# template.py - a correct, naive starting point for matmul in Python (GPU
# MODE KernelBot's form). Submit it as it is (`kjudge submit template.py`)
# to see the whole flow, then make it fast: PyTorch, Triton or Helion.
#
# custom_kernel receives the tuple `data` (A, B, C) on the GPU and returns
# (C). C is the judge's own tensor: fill it and
# return it (or return a new tensor of the same shape and dtype).
from task import input_t, output_t
import torch


def custom_kernel(data: input_t) -> output_t:
    A, B, C = data            # [M, K] and [K, N] float16, [M, N] float32
    # float32 products and sums (an fp16 accumulation or output is too coarse)
    torch.matmul(A.float(), B.float(), out=C)
    return C
