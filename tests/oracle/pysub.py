#!/usr/bin/env python3
"""pysub.py - run a Python submission in GPU MODE KernelBot's form on a
board's test shapes and check its outputs against the board's oracle
(tests/oracle/boards/NAME.py), with PyTorch alone: no kjudge server or
runner, no sandbox. For the boards' template.py files and the examples
(torch_naive.py, triton_kernel.py, helion_kernel.py).

    pysub.py FILE [--leaderboard NAME] [--device cpu|cuda] [--benchmarks]

The board comes from the file's "#!POPCORN leaderboard" line unless named.
The call is the board's "python" interface (leaderboard.json): the tuple
of args (buffers as tensors, variables as ints; outputs given as fresh
tensors filled with NaN, as the judge poisons them) and the tuple of
returns, checked like the judge: |got - oracle| <= atol + rtol*|oracle|
in float64 (integers exactly), shapes and dtypes as the board says. Inputs
come from torch's generator per the buffer's "init" (a "generated" input:
gated_deltanet's A is rebuilt from k, beta and g as the problem defines
it; histogram's data repeats one byte in contention % of the places). A module "task" with input_t and
output_t is provided. On a machine without a GPU, --device cpu runs the
plain PyTorch files; Triton files run there under TRITON_INTERPRET=1 and
Helion files under HELION_INTERPRET=1. One line per case, then
"pysub: N passed, N failed"; exit 0 only when nothing failed.
"""
import argparse
import importlib.util
import json
import math
import os
import re
import sys
import types

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
          "float64": torch.float64, "int8": torch.int8, "uint8": torch.uint8, "int32": torch.int32,
          "uint32": torch.uint32 if hasattr(torch, "uint32") else torch.int64, "int64": torch.int64}


def load_plugin(board):
    name = board if os.path.exists(os.path.join(HERE, "boards", board + ".py")) else re.sub(r"_large$", "", board)
    spec = importlib.util.spec_from_file_location("oracle_" + name, os.path.join(HERE, "boards", name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def load_submission(path):
    task = types.ModuleType("task")
    task.input_t = tuple
    task.output_t = tuple
    sys.modules["task"] = task
    spec = importlib.util.spec_from_file_location("submission", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def dims(shape, vars):
    return [int(eval(str(d), {"__builtins__": {}}, dict(vars, min=min, max=max))) for d in shape]


def make_inputs(board, spec, vars, seed, device):
    gen = torch.Generator(device="cpu").manual_seed(seed)
    out = {}
    for b in spec["buffers"]:
        if b["role"] != "input":
            continue
        shape, dt, init = dims(b["shape"], vars), DTYPES[b["dtype"]], b.get("init", {})
        if init.get("dist") == "normal":
            t = torch.randn(shape, generator=gen, dtype=torch.float64) * init.get("std", 1.0) + init.get("mean", 0.0)
        elif init.get("dist") == "uniform":
            t = torch.rand(shape, generator=gen, dtype=torch.float64) * (init["hi"] - init["lo"]) + init["lo"]
        elif init.get("dist") == "int":
            t = torch.randint(int(init["lo"]), int(init["hi"]) + 1, shape, generator=gen)
        else:
            t = None  # built below from the others
        out[b["name"]] = t.to(dt) if t is not None else None
    if board.startswith("histogram"):  # generate.cu: contention % of the bytes are one value
        d = out["data"]
        hot = torch.rand(list(d.shape), generator=gen) < vars["contention"] / 100.0
        d[hot] = int(torch.randint(0, 256, [1], generator=gen))
    if board.startswith("gated_deltanet"):
        B, T, H, K = (vars[n] for n in ("B", "T", "H", "K"))
        out["k"] = (out["k"].double() / math.sqrt(K)).float()
        out["beta"] = torch.sigmoid(out["beta"].double()).float()
        g1 = torch.cumsum(-out["g"].double().abs(), dim=1)                         # over the whole T
        out["g"] = torch.cumsum(g1.view(B, T // 64, 64, H), dim=2).view(B, T, H).float()  # chunk-local
        plugin = load_plugin(board)
        A = plugin.rebuild_A(out["k"], out["beta"], out["g"], B, T, H)         # [B, H, N, 64, 64]
        out["A"] = A.permute(0, 2, 3, 1, 4).reshape(B, T, H, 64).float()
    missing = [n for n, t in out.items() if t is None]
    if missing:
        raise SystemExit("pysub: no generator for %s of %s" % (", ".join(missing), board))
    return {n: t.to(device).contiguous() for n, t in out.items()}


def run_case(mod, plugin, board, spec, case, device):
    vars = {v: case[v] for v in spec["vars"]}
    inputs = make_inputs(board, spec, vars, case["seed"], device)
    bufs = {b["name"]: b for b in spec["buffers"]}
    given = {}
    args = []
    for name in spec["python"]["args"]:
        if name in spec["vars"]:
            args.append(vars[name])
        elif bufs[name]["role"] == "input":
            args.append(inputs[name])
        else:
            dt = DTYPES[bufs[name]["dtype"]]
            t = torch.empty(dims(bufs[name]["shape"], vars), dtype=dt, device=device)
            t.fill_(float("nan") if dt.is_floating_point else -1)
            given[name] = t
            args.append(t)
    saved = {n: t.clone() for n, t in inputs.items()}
    got = mod.custom_kernel(tuple(args))
    if device == "cuda":
        torch.cuda.synchronize()
    rets = spec["python"]["returns"]
    if len(rets) == 1 and isinstance(got, torch.Tensor):
        got = (got,)
    if not isinstance(got, (tuple, list)) or len(got) != len(rets):
        return ["returned %r, want a tuple of %d tensors (%s)" % (type(got).__name__, len(rets), ", ".join(rets))]
    problems = [n + " changed (an input)" for n, t in inputs.items() if not torch.equal(t, saved[n])]
    want = plugin.expected(vars, {n: t for n, t in inputs.items()})
    for name, t in zip(rets, got):
        b = bufs[name]
        shape = dims(b["shape"], vars)
        if not isinstance(t, torch.Tensor) or list(t.shape) != shape or t.dtype != DTYPES[b["dtype"]]:
            problems.append("%s: got %s, want %s %s" % (name, getattr(t, "dtype", type(t).__name__),
                                                       b["dtype"], shape))
            continue
        w = want[name].to(t.device)
        if not t.dtype.is_floating_point:
            bad = int((t.to(torch.int64) != w.to(torch.int64)).sum())
            if bad:
                problems.append("%s: %d of %d elements differ" % (name, bad, t.numel()))
            continue
        atol, rtol = b.get("atol", 0.0), b.get("rtol", 0.0)
        if isinstance(atol, str) or isinstance(rtol, str):
            env = dict(vars, sqrt=math.sqrt, max=max, min=min)
            atol = float(eval(str(atol), {"__builtins__": {}}, env))
            rtol = float(eval(str(rtol), {"__builtins__": {}}, env))
        g64, w64 = t.double(), w.double()
        err = (g64 - w64).abs()
        bad = ~(err <= atol + rtol * w64.abs())
        nbad = int(bad.sum())
        if nbad:
            problems.append("%s: %d of %d elements off (max abs err %.3g)" % (name, nbad, t.numel(),
                                                                             float(err.nan_to_num(float("inf")).max())))
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--leaderboard")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--benchmarks", action="store_true", help="also the benchmark shapes")
    a = ap.parse_args()
    board = a.leaderboard
    if board is None:
        m = re.search(r"^\s*#!POPCORN\s+leaderboard\s+(\S+)", open(a.file).read(), re.M)
        board = m.group(1) if m else None
    if board is None:
        sys.exit("pysub: name the board (--leaderboard NAME or a #!POPCORN leaderboard line)")
    spec = json.load(open(os.path.join(ROOT, "leaderboards", board, "leaderboard.json")))
    if "python" not in spec:
        sys.exit("pysub: %s has no python interface" % board)
    plugin = load_plugin(board)
    mod = load_submission(a.file)
    passed = failed = 0
    cases = [("test", i, c) for i, c in enumerate(spec["tests"])]
    if a.benchmarks:
        cases += [("benchmark", i, c) for i, c in enumerate(spec["benchmarks"])]
    for kind, i, c in cases:
        label = " ".join("%s=%s" % (v, c[v]) for v in spec["vars"])
        try:
            problems = run_case(mod, plugin, board, spec, c, a.device)
        except Exception as e:  # the submission's own failure is a failed case
            problems = ["raised %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")]
        if problems:
            failed += 1
            print("FAIL %s %s %d (%s): %s" % (board, kind, i, label, "; ".join(problems)))
        else:
            passed += 1
            print("ok   %s %s %d (%s)" % (board, kind, i, label))
    print("pysub: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
