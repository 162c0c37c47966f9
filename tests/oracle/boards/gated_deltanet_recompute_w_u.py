"""Oracle plugin for gated_deltanet_recompute_w_u (and its _large board),
from the problem's formulas in float64 with PyTorch. Per batch, head and
chunk of 64 time steps:

    u = A @ (beta[:, None] * v)
    w = A @ ((beta * exp(g))[:, None] * k)

check_inputs() rebuilds A from the dumped k, beta and g as the original
problem defines it, A = (I + Araw)^-1 with
Araw[i, j] = (k_i . k_j) * beta_i * exp(g_i - g_j) for i > j (else 0),
solved with torch.linalg.solve_triangular, and checks the generated A
against it; it also checks what the other generated inputs must satisfy.
"""
import torch

BT = 64                 # chunk length
A_ATOL, A_RTOL = 1e-6, 1e-5  # generated A vs the rebuilt one (A is rounded to float32)


def _chunked(x, B, T, H):
    """[B, T, H, ...] -> [B, H, T/64, 64, ...] (a view, float64)."""
    x = x.to(torch.float64)
    rest = list(x.shape[3:])
    x = x.reshape([B, T // BT, BT, H] + rest)
    return x.permute([0, 3, 1, 2] + list(range(4, 4 + len(rest))))


def _unchunked(x, B, T, H):
    """[B, H, T/64, 64, D] -> [B, T, H, D]."""
    return x.permute(0, 2, 3, 1, 4).reshape(B, T, H, x.shape[-1])


def expected(vars, inputs):
    B, T, H = vars["B"], vars["T"], vars["H"]
    k = _chunked(inputs["k"], B, T, H)          # [B, H, N, 64, K]
    v = _chunked(inputs["v"], B, T, H)          # [B, H, N, 64, V]
    beta = _chunked(inputs["beta"], B, T, H)    # [B, H, N, 64]
    g = _chunked(inputs["g"], B, T, H)
    A = _chunked(inputs["A"], B, T, H)          # [B, H, N, 64, 64]: row i, column j
    u = torch.matmul(A, beta.unsqueeze(-1) * v)
    w = torch.matmul(A, (beta * torch.exp(g)).unsqueeze(-1) * k)
    return {"w": _unchunked(w, B, T, H), "u": _unchunked(u, B, T, H)}


def rebuild_A(k, beta, g, B, T, H):
    """The A of the original problem, [B, H, N, 64, 64] float64."""
    k = _chunked(k, B, T, H)
    beta = _chunked(beta, B, T, H)
    g = _chunked(g, B, T, H)
    strict = torch.ones(BT, BT, dtype=torch.bool, device=k.device).tril(-1)
    gdiff = g.unsqueeze(-1) - g.unsqueeze(-2)              # g_i - g_j
    gdiff = torch.where(strict, gdiff, torch.zeros_like(gdiff))  # never exp a positive gap
    araw = torch.matmul(k, k.transpose(-1, -2)) * beta.unsqueeze(-1) * torch.exp(gdiff)
    araw = torch.where(strict, araw, torch.zeros_like(araw))
    eye = torch.eye(BT, dtype=torch.float64, device=k.device).expand_as(araw)
    return torch.linalg.solve_triangular(eye + araw, eye, upper=False)


def _close(problems, what, got, want, atol, rtol):
    err = (got - want).abs()
    bad = int((err > atol + rtol * want.abs()).sum().item())
    if bad:
        problems.append(f"{what}: {bad} elements off (max abs err {err.max().item():.3g})")
    else:
        problems.append(f"info: {what}: max abs err {err.max().item():.3g}")


def check_inputs(vars, inputs):
    B, T, H, K, V = (vars[n] for n in ("B", "T", "H", "K", "V"))
    problems = []
    if T % BT:
        return [f"T={T} is not a multiple of {BT}"]
    for name, t in inputs.items():
        if not torch.isfinite(t).all():
            problems.append(f"{name} has NaN or Inf")
    if problems:
        return problems
    beta, g, A = inputs["beta"], inputs["g"], inputs["A"]

    # beta = sigmoid(randn): strictly inside (0, 1).
    if not ((beta > 0) & (beta < 1)).all():
        problems.append("beta outside (0, 1)")

    # g: a double cumulative sum of non-positive steps. Inside a chunk g
    # never increases; its first differences (with g at the chunk's first
    # step) give back g1, the sequence-wide cumsum of -|x|, which is <= 0 and
    # never increases over the whole sequence (up to float32 rounding of g).
    gc = _chunked(g, B, T, H)                              # [B, H, N, 64]
    if (gc > 0).any():
        problems.append("g has positive values")
    if (gc[..., 1:] > gc[..., :-1]).any():
        problems.append("g increases inside a chunk")
    g1 = torch.cat([gc[..., :1], gc[..., 1:] - gc[..., :-1]], dim=-1).reshape(B, H, T)
    slack = 4 * torch.finfo(torch.float32).eps * gc.abs().amax(dim=(-1, -2)).reshape(B, H, 1)
    if (g1[..., 1:] > g1[..., :-1] + slack).any():
        problems.append("g1 (first differences of g per chunk) increases: g is not a "
                        "chunk-local cumsum of a sequence-wide cumsum of non-positive steps")

    # k = randn / sqrt(K), v = randn: loose moment checks on large enough samples.
    for name, scale in (("k", K), ("v", 1)):
        x = inputs[name].to(torch.float64) * scale ** 0.5
        n = x.numel()
        if n >= 4096:
            if abs(x.mean().item()) > 6 / n ** 0.5:
                problems.append(f"{name}: mean {x.mean().item() / scale ** 0.5:.4g} is not ~0")
            if abs(x.var().item() - 1) > 6 * (2 / n) ** 0.5:
                problems.append(f"{name}: variance {x.var().item() / scale:.4g} is not ~1/{scale}")

    # A: unit lower triangular and equal to the rebuilt inverse.
    Ac = _chunked(A, B, T, H)
    upper = torch.ones(BT, BT, dtype=torch.bool, device=A.device).triu(1)
    if (Ac.masked_select(upper) != 0).any():
        problems.append("A has non-zero entries above the diagonal")
    if (torch.diagonal(Ac, dim1=-2, dim2=-1) != 1).any():
        problems.append("A's diagonal is not exactly 1")
    _close(problems, "A vs (I + Araw)^-1 rebuilt from k, beta, g", Ac,
           rebuild_A(inputs["k"], beta, g, B, T, H), A_ATOL, A_RTOL)
    return problems
