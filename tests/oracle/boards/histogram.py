"""Oracle plugin for histogram: hist[v] = number of bytes equal to v, v = 0..255.

Also checks that the generated input looks as described: about
contention % of the bytes share one value (a loose bound, so that a seed
never trips it by chance).
"""
import torch


def expected(vars, inputs):
    data = inputs["data"].to(torch.int64)
    hist = torch.bincount(data, minlength=256)
    n, contention = vars["N"], vars["contention"]
    top = int(hist.max())
    share = top / n
    want = contention / 100 + (1 - contention / 100) / 256
    assert abs(share - want) < 0.05 + 5 / n ** 0.5, \
        "generated input: the most common byte is %.3f of the data, expected about %.3f" % (share, want)
    return {"hist": hist}
