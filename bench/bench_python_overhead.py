#!/usr/bin/env python3
"""bench_python_overhead.py - does a Python entry pay for its interpreter?

The same kernel judged twice in leaderboard mode on one GPU: as a CUDA file
(fp8_quant's examples/fast.cu) and wrapped in a KernelBot-form Python file
that compiles that very source with CuPy's RawKernel and launches it on
PyTorch's current stream (the box's), with the same launch configuration.
The Python call costs tens of microseconds of host time (dispatch, the
CuPy launch); the blocking kernel must hide all of it, so the two scores
should differ by less than the board's published resolution. Also the
Triton and plain-PyTorch examples beside them, and each run's wall time
(where a Python box's start goes). Prints a table; --runs N repeats each
(interleaved), --smoke writes and checks the wrapper only (no GPU).

Needs a GPU, and KJUDGE_PYTHON (or --python) naming an environment with
PyTorch and CuPy (e.g. /opt/torch/.venv/bin/python3).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNNER = os.path.join(ROOT, "bin", "kjudge-runner")
LB = os.path.join(ROOT, "leaderboards", "fp8_quant")
FAST = os.path.join(LB, "examples", "fast.cu")

WRAPPER = '''#!POPCORN leaderboard fp8_quant
# fast.cu's kernel, compiled by CuPy (NVRTC) at the first call and launched
# on PyTorch's current stream with fast.cu's own launch line.
from task import input_t, output_t
import cupy
import torch

SRC = %r
_kernel = []


def custom_kernel(data: input_t) -> output_t:
    x, x_q, x_s = data
    T, H = x.shape
    GS = H // x_s.shape[1]
    if not _kernel:
        _kernel.append(cupy.RawKernel(SRC, "quant_fast", options=("--std=c++17",)))
    step = 128 if GS %% 4 == 0 and 128 %% GS == 0 else GS
    per_block = step * 8 * (4 if T * H >= 8388608 else 1)
    grid = (T * H + per_block - 1) // per_block
    stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    _kernel[0]((grid,), (256,), (cupy.uint64(x.data_ptr()), cupy.uint64(x_q.data_ptr()),
                                 cupy.uint64(x_s.data_ptr()), cupy.int32(T), cupy.int32(H),
                                 cupy.int32(GS)), stream=stream)
    return x_q, x_s
'''


def wrapper_source():
    with open(FAST) as f:
        src = f.read()
    # the //!kjudge lines mean nothing to CuPy; the launch line is above
    return WRAPPER % "".join(line for line in src.splitlines(True) if not line.startswith("//!kjudge"))


def judge(path, python, mode="leaderboard"):
    env = dict(os.environ, KJUDGE_PYTHON=python) if python else dict(os.environ)
    t0 = time.time()
    p = subprocess.run([RUNNER, "eval", path, "--leaderboard", "fp8_quant", "--mode", mode, "--json"],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    wall = time.time() - t0
    try:
        res = json.loads(p.stdout)
    except ValueError:
        res = {"verdict": None, "message": p.stderr[-600:]}
    return res, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--python", default=os.environ.get("KJUDGE_PYTHON", "/opt/torch/.venv/bin/python3"))
    ap.add_argument("--smoke", action="store_true", help="write and compile the wrapper only (no GPU)")
    ap.add_argument("--entries", type=int, default=4,
                    help="judge the first N entries only (2: the CUDA file and its Python wrapper)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kjudge-pyover-") as tmp:
        wrapped = os.path.join(tmp, "fast_cupy.py")
        with open(wrapped, "w") as f:
            f.write(wrapper_source())
        compile(open(wrapped).read(), wrapped, "exec")
        if a.smoke:
            print("| entry | wrapper written and compiled |")
            print("| fast.cu via CuPy | %d bytes |" % os.path.getsize(wrapped))
            return 0
        entries = [("fast.cu (CUDA)", FAST, None), ("fast.cu via CuPy (Python)", wrapped, a.python),
                   ("triton_kernel.py", os.path.join(LB, "examples", "triton_kernel.py"), a.python),
                   ("torch_naive.py", os.path.join(LB, "examples", "torch_naive.py"), a.python)][:max(1, a.entries)]
        got = {name: [] for name, _, _ in entries}
        steps = {name: [] for name, _, _ in entries}
        walls = {name: [] for name, _, _ in entries}
        for _ in range(a.runs):
            for name, path, py in entries:
                res, wall = judge(path, py)
                walls[name].append(wall)
                if res.get("verdict") != "accepted":
                    print("%s: %s: %s" % (name, res.get("verdict"), (res.get("message") or "")[:400]))
                    continue
                got[name].append([b["median_ns"] for b in res["benchmarks"]] + [res["score_ns"]])
                steps[name].append(res.get("steps_s") or {})
        with open(os.path.join(LB, "leaderboard.json")) as f:
            resolution = json.load(f).get("resolution_pct", {}).get("H200")
        shapes = ["T=256 H=4096", "T=256 H=8192", "T=4096 H=7168", "score"]
        print("| entry | runs | " + " | ".join(shapes) + " (median of runs, us) | wall s (median) |")
        print("|---|---|" + "---|" * len(shapes) + "---|")
        for name, _, _ in entries:
            rows = got[name]
            if not rows:
                print("| %s | 0 | %s | |" % (name, " | ".join("-" for _ in shapes)))
                continue
            med = [statistics.median(r[i] for r in rows) / 1e3 for i in range(len(shapes))]
            print("| %s | %d | %s | %.1f |" % (name, len(rows), " | ".join("%.3f" % m for m in med),
                                              statistics.median(walls[name])))
        keys = ["boxes", "compile", "load", "tests", "benchmarks", "restarts", "total"]
        print("\nWhere the time goes (result's steps_s, median of runs, s):\n")
        print("| entry | " + " | ".join(keys) + " |")
        print("|---|" + "---|" * len(keys))
        for name, _, _ in entries:
            if steps[name]:
                print("| %s | %s |" % (name, " | ".join(
                    "%.2f" % statistics.median(st.get(k, 0) for st in steps[name]) for k in keys)))
        c, p = got["fast.cu (CUDA)"], got.get("fast.cu via CuPy (Python)", [])
        if c and p:
            sc, sp = statistics.median(r[-1] for r in c), statistics.median(r[-1] for r in p)
            diff = 100.0 * (sp - sc) / sc
            ok = resolution is not None and abs(diff) <= resolution
            print("\nPython wrapper vs CUDA file, same kernel: score %+.2f %% (board resolution on H200: %s %%) "
                  "-> %s" % (diff, resolution, "within" if ok else "NOT within"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
