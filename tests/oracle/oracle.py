#!/usr/bin/env python3
"""oracle.py - check a leaderboard's dumped outputs against an independent
PyTorch recomputation.

    oracle.py DUMPDIR

DUMPDIR is what `kjudge-runner eval FILE --leaderboard NAME --dump DIR`
writes: DIR/manifest.json lists the cases (kind, index, vars, effective
seed) and each case's buffers (name, dtype, shape, role, file, and for
outputs atol/rtol); every file is a raw little-endian array in C order.
Inputs hold what the kernels saw (after generate.cu), outputs what FILE
wrote. Run it on the board's reference.cu to prove the reference.

The recomputation lives in tests/oracle/boards/<leaderboard>.py (a board
NAME_large without its own plugin uses NAME's). A plugin defines

    expected(vars, inputs) -> {output name: tensor}
        float64 tensors for floating outputs, int64 for integer ones,
        computed with PyTorch from the problem's formulas, never from our
        CUDA code; vars maps variable -> int, inputs maps buffer name ->
        tensor in its own dtype (on CUDA when available);
    check_inputs(vars, inputs) -> [problem, ...]     (optional)
        what is wrong with the inputs themselves (e.g. a generated buffer
        that does not follow from the others); an empty list passes, and
        entries starting with "info: " are printed but do not fail.

A floating element passes when |dumped - oracle| <= atol + rtol*|oracle|
in float64, or when both are NaN, or both the same infinity; integers must
be equal. The relative error printed is the largest over the elements
whose oracle value exceeds atol in magnitude. One line per case and output (or input check), then
"oracle: N passed, N failed"; the exit status is 0 only when nothing
failed, 2 when the dump or the plugin cannot be used at all.
"""
import argparse
import importlib.util
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))

DTYPES = {
    "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "float64": torch.float64, "int8": torch.int8, "uint8": torch.uint8,
    "int32": torch.int32, "uint32": torch.uint32, "int64": torch.int64,
}
FLOATS = {"float32", "float16", "bfloat16", "float64"}
SHOW_MISMATCHES = 5


class DumpError(Exception):
    """The dump or the plugin cannot be used (exit 2)."""


def load_plugin(board):
    """The plugin module for board (NAME_large falls back to NAME)."""
    names = [board]
    if board.endswith("_large"):
        names.append(board[: -len("_large")])
    for name in names:
        path = os.path.join(HERE, "boards", name + ".py")
        if os.path.exists(path):
            spec = importlib.util.spec_from_file_location("oracle_board_" + name, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            if not callable(getattr(mod, "expected", None)):
                raise DumpError(f"{path}: no expected(vars, inputs)")
            return mod, path
    raise DumpError(f"no plugin for '{board}' in {os.path.join(HERE, 'boards')} "
                    f"(looked for {', '.join(n + '.py' for n in names)})")


def read_buffer(dump, buf, device):
    """The tensor of one manifest buffer entry, in its dtype, on device."""
    dt = DTYPES.get(buf.get("dtype"))
    if dt is None:
        raise DumpError(f"{buf.get('name')}: unknown dtype {buf.get('dtype')!r}")
    shape = [int(s) for s in buf["shape"]]
    n = 1
    for s in shape:
        n *= s
    path = os.path.join(dump, buf["file"])
    with open(path, "rb") as f:
        data = bytearray(f.read())
    want = n * torch.empty((), dtype=dt).element_size()
    if len(data) != want:
        raise DumpError(f"{path}: {len(data)} bytes, expected {want} for {buf['dtype']} {shape}")
    if sys.byteorder != "little":
        raise DumpError("this host is big-endian; the dump is little-endian")
    t = torch.frombuffer(data, dtype=dt) if n > 0 else torch.empty(0, dtype=dt)
    return t.reshape(shape).to(device)


def compare(got, exp, dtype, atol, rtol):
    """(mismatches, max abs err, max rel err, first mismatching indices)."""
    if dtype in FLOATS:
        g = got.to(torch.float64)
        e = exp.to(torch.float64)
        gn, en = torch.isnan(g), torch.isnan(e)
        gi, ei = torch.isinf(g), torch.isinf(e)
        both_finite = ~(gn | en | gi | ei)
        diff = torch.where(both_finite, (g - e).abs(), torch.zeros_like(g))
        ok = both_finite & (diff <= atol + rtol * e.abs())
        ok |= gn & en                      # NaN where NaN is expected
        ok |= gi & ei & (g == e)           # the same infinity
        # relative error where it means something: |oracle| above atol (or non-zero)
        big = e.abs() > atol if atol > 0 else e != 0
        rel = torch.where(both_finite & big, diff / e.abs(), torch.zeros_like(g))
        max_abs = diff.max().item() if diff.numel() else 0.0
        max_rel = rel.max().item() if rel.numel() else 0.0
    else:
        g = got.to(torch.int64)
        e = exp.to(torch.int64)
        ok = g == e
        diff = (g - e).abs()
        max_abs = float(diff.max().item()) if diff.numel() else 0.0
        max_rel = 0.0
    bad = (~ok).nonzero()
    first = [tuple(int(i) for i in row) for row in bad[:SHOW_MISMATCHES].tolist()]
    return int(bad.shape[0]), max_abs, max_rel, first


def run_case(dump, case, plugin, device):
    """Check one case; returns a list of (label, passed, detail)."""
    vars_ = {k: int(v) for k, v in case["vars"].items()}
    inputs, outputs = {}, {}
    for buf in case["buffers"]:
        t = read_buffer(dump, buf, device)
        (inputs if buf["role"] == "input" else outputs)[buf["name"]] = (t, buf)
    inp = {name: t for name, (t, _) in inputs.items()}
    results = []
    check = getattr(plugin, "check_inputs", None)
    if callable(check):
        notes = [str(p) for p in (check(dict(vars_), dict(inp)) or [])]
        problems = [p for p in notes if not p.startswith("info: ")]
        info = [p[len("info: "):] for p in notes if p.startswith("info: ")]
        results.append(("inputs", not problems, "; ".join(problems + info) or "ok"))
    exp = plugin.expected(dict(vars_), dict(inp))
    for name, (got, buf) in outputs.items():
        if name not in exp:
            results.append((name, False, "the plugin computed no such output"))
            continue
        e = exp[name]
        if tuple(e.shape) != tuple(got.shape):
            results.append((name, False, f"oracle shape {list(e.shape)} != dumped {list(got.shape)}"))
            continue
        atol, rtol = float(buf.get("atol", 0)), float(buf.get("rtol", 0))
        n, max_abs, max_rel, first = compare(got, e.to(got.device), buf["dtype"], atol, rtol)
        detail = (f"max_abs_err={max_abs:.3g} max_rel_err={max_rel:.3g} "
                  f"mismatches={n}/{got.numel()} (atol={atol:g} rtol={rtol:g})")
        if n:
            shown = ", ".join(f"{list(i)}: got {got[i].item():.6g} want {e[i].item():.6g}"
                              for i in first)
            detail += " first: " + shown
        results.append((name, n == 0, detail))
    for name in exp:
        if name not in outputs:
            results.append((name, False, "computed by the plugin but not in the dump"))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dump")
    o = ap.parse_args()
    passed = failed = 0
    try:
        with open(os.path.join(o.dump, "manifest.json")) as f:
            man = json.load(f)
        board = man["leaderboard"]
        plugin, ppath = load_plugin(board)
        device = "cuda" if torch.cuda.is_available() else "cpu"
        print(f"oracle: {board}, {len(man['cases'])} cases, plugin {os.path.relpath(ppath)}, "
              f"device {device}")
        if not man["cases"]:
            raise DumpError("the manifest has no cases")
        for case in man["cases"]:
            label = f"{case['kind']} {case['index']} " + " ".join(
                f"{k}={v}" for k, v in case["vars"].items()) + f" seed={case['seed']}"
            for what, ok, detail in run_case(o.dump, case, plugin, device):
                passed += ok
                failed += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {label} {what}: {detail}")
    except (DumpError, OSError, KeyError, ValueError) as e:
        print(f"oracle: cannot check {o.dump}: {type(e).__name__}: {e}", file=sys.stderr)
        print(f"oracle: {passed} passed, {failed + 1} failed")
        return 2
    print(f"oracle: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
