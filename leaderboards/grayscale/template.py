#!POPCORN leaderboard grayscale
#!POPCORN gpu H200
# template.py - a correct, naive starting point for grayscale in Python (GPU
# MODE KernelBot's form). Submit it as it is (`kjudge submit template.py`)
# to see the whole flow, then make it fast: PyTorch, Triton or Helion.
#
# custom_kernel receives the tuple `data` (rgb, gray) on the GPU and returns
# (gray). gray is the judge's own tensor: fill it
# and return it (or return a new tensor of the same shape and dtype).
from task import input_t, output_t
import torch


def custom_kernel(data: input_t) -> output_t:
    rgb, gray = data          # [S, S, 3] and [S, S], float32
    # computed in float64 and rounded once, as the reference does
    w = torch.tensor([0.2989, 0.5870, 0.1140], dtype=torch.float64, device=rgb.device)
    gray.copy_((rgb.double() * w).sum(dim=2))
    return gray
