#!POPCORN leaderboard histogram
#!POPCORN gpu H200
# template.py - a correct, naive starting point for histogram in Python (GPU
# MODE KernelBot's form). Submit it as it is (`kjudge submit template.py`)
# to see the whole flow, then make it fast: PyTorch, Triton or Helion.
#
# custom_kernel receives the tuple `data` (data, hist) on the GPU and returns
# (hist). hist is the judge's own tensor (poisoned:
# every bin must be written): fill it and return it.
from task import input_t, output_t
import torch


def custom_kernel(data: input_t) -> output_t:
    x, hist = data            # [N] uint8, [256] int32
    counts = torch.bincount(x.long(), minlength=256)
    hist.copy_(counts.to(torch.int32))
    return hist
