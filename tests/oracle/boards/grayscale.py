"""Oracle plugin for grayscale: gray = 0.2989 R + 0.5870 G + 0.1140 B per pixel."""
import torch


def expected(vars, inputs):
    rgb = inputs["rgb"].to(torch.float64)          # [S, S, 3]
    w = torch.tensor([0.2989, 0.5870, 0.1140], dtype=torch.float64, device=rgb.device)
    return {"gray": (rgb * w).sum(dim=-1)}         # [S, S]
