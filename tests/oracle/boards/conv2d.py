"""Oracle plugin for conv2d: y = cross-correlation of x [B, C, S, S] with
w [C, C, K, K], stride 1, no padding (torch.nn.functional.conv2d), in float64."""
import torch
import torch.nn.functional as F


def expected(vars, inputs):
    x = inputs["x"].to(torch.float64)
    w = inputs["w"].to(torch.float64)
    return {"y": F.conv2d(x, w, stride=1, padding=0)}
