#!/usr/bin/env python3
"""test_oracle.py - the oracle's own tests, on synthetic dumps (CPU is
enough; needs PyTorch). Each dump is written here with PyTorch from the
problem's formulas, then oracle.py runs on it as a subprocess:

  - comparison rules: tolerance edges, NaN and Inf positions, integers;
  - fp8_quant: a correct dump passes, a perturbed output fails;
  - gated_deltanet_recompute_w_u: inputs built as the original problem
    builds them pass; a wrong A, a single (not double) cumsum for g, a
    non-zero upper triangle of A, or a wrong u fail; the _large board
    reuses the plugin;
  - unusable dumps (no plugin, a file of the wrong size) exit 2.
Prints "test_oracle: N passed, N failed, N skipped".
"""
import json
import os
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLE = os.path.join(HERE, "oracle.py")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
import oracle  # noqa: E402
import kjcheck  # noqa: E402
from kjcheck import check  # noqa: E402

kjcheck.Counts.limit = None  # an oracle failure's whole output


def write_dump(dirpath, board, cases):
    """cases: [(vars, [(name, role, tensor, atol, rtol)])] -> a dump in dirpath."""
    man = {"leaderboard": board, "mode": "test", "cases": []}
    for ci, (vars_, bufs) in enumerate(cases):
        sub = f"test{ci}"
        os.makedirs(os.path.join(dirpath, sub), exist_ok=True)
        entries = []
        for name, role, t, atol, rtol in bufs:
            rel = f"{sub}/{name}.bin"
            t = t.contiguous().cpu()
            with open(os.path.join(dirpath, rel), "wb") as f:
                f.write(bytes(t.reshape(-1).view(torch.uint8).tolist()))
            dt = {v: k for k, v in oracle.DTYPES.items()}[t.dtype]
            e = {"name": name, "dtype": dt, "shape": list(t.shape), "role": role, "file": rel}
            if role == "output":
                e["atol"], e["rtol"] = atol, rtol
            entries.append(e)
        man["cases"].append({"kind": "test", "index": ci, "vars": vars_, "seed": str(1000 + ci),
                             "buffers": entries})
    with open(os.path.join(dirpath, "manifest.json"), "w") as f:
        json.dump(man, f)


def run_oracle(dirpath):
    r = subprocess.run([sys.executable, ORACLE, dirpath], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def test_compare():
    f32 = "float32"
    e = torch.tensor([1.0, 0.0, float("nan"), float("inf"), -2.0], dtype=torch.float64)
    g = torch.tensor([1.0019, 0.0009, float("nan"), float("inf"), -2.0029], dtype=torch.float32)
    n, _, _, _ = oracle.compare(g, e, f32, 1e-3, 1e-3)
    check(n == 0, "values at the tolerance, NaN where NaN, the same Inf pass", n)
    g2 = torch.tensor([1.0021, 0.0, 0.0, float("-inf"), -2.0], dtype=torch.float32)
    n, _, _, first = oracle.compare(g2, e, f32, 1e-3, 1e-3)
    check(n == 3 and first == [(0,), (2,), (3,)], "past the tolerance, NaN missing, Inf sign", (n, first))
    g3 = torch.tensor([1.0, float("nan"), float("nan"), float("inf"), -2.0], dtype=torch.float32)
    n, _, _, first = oracle.compare(g3, e, f32, 1e-3, 1e-3)
    check(n == 1 and first == [(1,)], "an unexpected NaN fails", (n, first))
    n, mx, _, _ = oracle.compare(torch.tensor([3, 4], dtype=torch.int32),
                                 torch.tensor([3, 5], dtype=torch.int64), "int32", 0, 0)
    check(n == 1 and mx == 1.0, "integers compare exactly", (n, mx))
    n, _, _, _ = oracle.compare(torch.tensor([7], dtype=torch.uint8),
                                torch.tensor([7], dtype=torch.int64), "uint8", 0, 0)
    check(n == 0, "uint8 equal", n)


def fp8_case(T, H, GS, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(T, H, generator=gen)
    xg = x.reshape(T, H // GS, GS)
    s = torch.clamp(xg.abs().amax(-1, keepdim=True), min=1e-10) / 448.0
    xq = torch.clamp(xg / s, -448, 448).reshape(T, H)
    return {"T": T, "H": H, "GS": GS}, x, xq, s.reshape(T, H // GS)


def test_fp8(tmp):
    vars_, x, xq, xs = fp8_case(4, 512, 128, 1)
    good = os.path.join(tmp, "fp8_good")
    write_dump(good, "fp8_quant", [(vars_, [("x", "input", x, 0, 0), ("x_q", "output", xq, 1e-3, 1e-3),
                                            ("x_s", "output", xs, 1e-3, 1e-3)])])
    rc, out = run_oracle(good)
    check(rc == 0 and "oracle: 3 passed, 0 failed" in out, "fp8_quant: a correct dump passes", out)
    bad = os.path.join(tmp, "fp8_bad")
    xq2 = xq.clone()
    xq2[2, 300] += 0.01 + 1e-3 * abs(xq2[2, 300].item())
    write_dump(bad, "fp8_quant", [(vars_, [("x", "input", x, 0, 0), ("x_q", "output", xq2, 1e-3, 1e-3),
                                           ("x_s", "output", xs, 1e-3, 1e-3)])])
    rc, out = run_oracle(bad)
    check(rc == 1 and "mismatches=1/2048" in out and "[2, 300]" in out,
          "fp8_quant: one element past the tolerance fails and is named", out)


def gdn_inputs(B, T, H, K, V, seed, single_cumsum=False):
    """The original problem's input construction, in float64, rounded to float32."""
    gen = torch.Generator().manual_seed(seed)
    k = (torch.randn(B, T, H, K, generator=gen, dtype=torch.float64) / K ** 0.5).float()
    v = torch.randn(B, T, H, V, generator=gen, dtype=torch.float64).float()
    beta = torch.sigmoid(torch.randn(B, T, H, generator=gen, dtype=torch.float64)).float()
    ginc = -torch.randn(B, T, H, generator=gen, dtype=torch.float64).abs()
    g1 = ginc if single_cumsum else torch.cumsum(ginc, dim=1)
    g = torch.cumsum(g1.reshape(B, T // 64, 64, H), dim=2).reshape(B, T, H).float()
    Ac = gdn.rebuild_A(k, beta, g, B, T, H)                     # [B, H, N, 64, 64]
    A = Ac.permute(0, 2, 3, 1, 4).reshape(B, T, H, 64).float()
    return {"k": k, "v": v, "beta": beta, "A": A, "g": g}


def gdn_dump(path, board, vars_, inp, w=None, u=None):
    exp = gdn.expected(vars_, inp)
    w = exp["w"].float() if w is None else w
    u = exp["u"].float() if u is None else u
    bufs = [(n, "input", inp[n], 0, 0) for n in ("k", "v", "beta", "A", "g")]
    bufs += [("w", "output", w, 1e-3, 1e-3), ("u", "output", u, 1e-3, 1e-3)]
    write_dump(path, board, [(vars_, bufs)])
    return run_oracle(path)


def test_gdn(tmp):
    shape = dict(B=2, T=128, H=3, K=32, V=48)
    inp = gdn_inputs(**shape, seed=7)
    rc, out = gdn_dump(os.path.join(tmp, "gdn_good"), "gated_deltanet_recompute_w_u", shape, inp)
    check(rc == 0 and "oracle: 3 passed, 0 failed" in out, "gdn: inputs built as specified pass", out)
    rc, out = gdn_dump(os.path.join(tmp, "gdn_large"), "gated_deltanet_recompute_w_u_large", shape, inp)
    check(rc == 0 and "boards/gated_deltanet_recompute_w_u.py" in out, "gdn _large reuses the plugin", out)

    bad = dict(inp, A=inp["A"].clone())
    bad["A"][1, 70, 2, 3] += 1e-3          # row 70 = chunk 1, row 6: a lower entry
    rc, out = gdn_dump(os.path.join(tmp, "gdn_badA"), "gated_deltanet_recompute_w_u", shape, bad)
    check(rc == 1 and "inputs: A vs (I + Araw)^-1" in out and "1 elements off" in out,
          "gdn: a wrong entry of A is caught by the rebuild", out)

    up = dict(inp, A=inp["A"].clone())
    up[("A")][0, 5, 1, 9] = 1e-9           # row 5, column 9: above the diagonal
    rc, out = gdn_dump(os.path.join(tmp, "gdn_upper"), "gated_deltanet_recompute_w_u", shape, up)
    check(rc == 1 and "non-zero entries above the diagonal" in out, "gdn: a non-zero upper A fails", out)

    single = gdn_inputs(**shape, seed=7, single_cumsum=True)
    rc, out = gdn_dump(os.path.join(tmp, "gdn_single"), "gated_deltanet_recompute_w_u", shape, single)
    check(rc == 1 and "g1 (first differences" in out, "gdn: a single cumsum for g is caught", out)

    u = gdn.expected(shape, inp)["u"].float().clone()
    u[0, 63, 0, :] = 0                      # what a loop ending at j < 63 would leave
    rc, out = gdn_dump(os.path.join(tmp, "gdn_badu"), "gated_deltanet_recompute_w_u", shape, inp, u=u)
    check(rc == 1 and "FAIL" in out and " u: " in out and "oracle: 2 passed, 1 failed" in out,
          "gdn: a wrong u fails, w and the inputs still pass", out)

    sig = dict(inp, beta=inp["beta"].clone())
    sig["beta"][0, 0, 0] = 1.5
    rc, out = gdn_dump(os.path.join(tmp, "gdn_beta"), "gated_deltanet_recompute_w_u", shape, sig)
    check(rc == 1 and "beta outside (0, 1)" in out, "gdn: beta outside (0, 1) fails", out)


def test_unusable(tmp):
    vars_, x, xq, xs = fp8_case(1, 256, 64, 3)
    path = os.path.join(tmp, "noplugin")
    write_dump(path, "no_such_board", [(vars_, [("x", "input", x, 0, 0), ("x_q", "output", xq, 1e-3, 1e-3),
                                                ("x_s", "output", xs, 1e-3, 1e-3)])])
    rc, out = run_oracle(path)
    check(rc == 2 and "no plugin for 'no_such_board'" in out and "0 passed, 1 failed" in out,
          "a board without a plugin exits 2", out)
    path = os.path.join(tmp, "short")
    write_dump(path, "fp8_quant", [(vars_, [("x", "input", x, 0, 0), ("x_q", "output", xq, 1e-3, 1e-3),
                                            ("x_s", "output", xs, 1e-3, 1e-3)])])
    with open(os.path.join(path, "test0", "x_q.bin"), "r+b") as f:
        f.truncate(100)
    rc, out = run_oracle(path)
    check(rc == 2 and "100 bytes, expected 1024" in out, "a file of the wrong size exits 2", out)


import importlib.util  # noqa: E402
_spec = importlib.util.spec_from_file_location("gdn_plugin",
                                               os.path.join(HERE, "boards", "gated_deltanet_recompute_w_u.py"))
gdn = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gdn)

if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="kjoracle-test.") as tmp:
        test_compare()
        test_fp8(tmp)
        test_gdn(tmp)
        test_unusable(tmp)
    sys.exit(kjcheck.summary("test_oracle"))
