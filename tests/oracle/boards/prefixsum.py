"""Oracle plugin for prefixsum: y = inclusive cumulative sum of x, in float64."""
import torch


def expected(vars, inputs):
    return {"y": torch.cumsum(inputs["x"].to(torch.float64), dim=0)}
