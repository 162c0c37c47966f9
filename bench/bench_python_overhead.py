#!/usr/bin/env python3
"""bench_python_overhead.py - does a Python entry pay for its interpreter?

The same kernel judged twice in leaderboard mode on one GPU: as a CUDA file
(fp8_quant's examples/fast.cu) and wrapped in a KernelBot-form Python file
that loads that very kernel's machine code (fast.cu compiled here to a
cubin by nvcc for this GPU, embedded in the file) with the CUDA driver
through ctypes and launches it on PyTorch's current stream (the box's),
with fast.cu's own launch line. The Python call costs tens of
microseconds of host time (the interpreter, the ctypes launch); the
blocking kernel must hide all of it, so the two scores should differ by
less than the board's published resolution. Also the Triton and
plain-PyTorch examples beside them, and each run's wall time (where a
Python box's start goes). Prints a table; --runs N repeats each
(interleaved), --smoke writes and checks the wrapper only (no GPU; the
cubin is built for sm_90 when nvcc is here, else a placeholder).

Needs a GPU, nvcc (on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin; or
--cubin FILE, fast.cu built elsewhere with the launch lines taken out),
and KJUDGE_PYTHON (or --python) naming an environment with PyTorch (e.g.
/opt/torch/.venv/bin/python3).
"""
import argparse
import base64
import json
import os
import shutil
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
# fast.cu's kernel as machine code (nvcc -cubin, built by
# bench/bench_python_overhead.py), loaded with the CUDA driver through ctypes
# at the first call and launched on PyTorch's current stream with fast.cu's
# own launch line.
from task import input_t, output_t
import base64
import ctypes
import torch

CUBIN = base64.b64decode(%r)
_k = []


def _load():
    cu = ctypes.CDLL("libcuda.so.1")
    ctx, mod, fn = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    if cu.cuCtxGetCurrent(ctypes.byref(ctx)) != 0 or not ctx.value:
        dev = ctypes.c_int()
        if cu.cuDeviceGet(ctypes.byref(dev), torch.cuda.current_device()) != 0 or \\
                cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) != 0 or cu.cuCtxSetCurrent(ctx) != 0:
            raise RuntimeError("no CUDA context for the cubin")
    image = ctypes.create_string_buffer(CUBIN, len(CUBIN))
    rc = cu.cuModuleLoadData(ctypes.byref(mod), image)
    if rc != 0:
        raise RuntimeError("cuModuleLoadData: CUresult %%d" %% rc)
    rc = cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"quant_fast")
    if rc != 0:
        raise RuntimeError("cuModuleGetFunction: CUresult %%d" %% rc)
    cu.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    _k.extend([cu, fn, image, mod])


def custom_kernel(data: input_t) -> output_t:
    x, x_q, x_s = data
    T, H = x.shape
    GS = H // x_s.shape[1]
    if not _k:
        _load()
    cu, fn = _k[0], _k[1]
    step = 128 if GS %% 4 == 0 and 128 %% GS == 0 else GS
    per_block = step * 8 * (4 if T * H >= 8388608 else 1)
    grid = (T * H + per_block - 1) // per_block
    args = [ctypes.c_void_p(x.data_ptr()), ctypes.c_void_p(x_q.data_ptr()), ctypes.c_void_p(x_s.data_ptr()),
            ctypes.c_int(T), ctypes.c_int(H), ctypes.c_int(GS)]
    params = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args])
    rc = cu.cuLaunchKernel(fn, grid, 1, 1, 256, 1, 1, 0, torch.cuda.current_stream().cuda_stream,
                           ctypes.cast(params, ctypes.c_void_p), None)
    if rc != 0:
        raise RuntimeError("cuLaunchKernel: CUresult %%d" %% rc)
    return x_q, x_s
'''


def find_nvcc():
    """nvcc on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin; None without one."""
    for c in (shutil.which("nvcc"), os.path.join(os.environ.get("CUDA_HOME", "/nonexistent"), "bin", "nvcc"),
              "/usr/local/cuda/bin/nvcc"):
        if c and os.access(c, os.X_OK):
            return c
    return None


def build_cubin(tmp, arch):
    """fast.cu (its //!kjudge lines out: they mean nothing to nvcc) as a cubin for
    arch ("native": this host's GPU); its bytes. SystemExit with nvcc's words on failure."""
    nvcc = find_nvcc()
    if nvcc is None:
        sys.exit("no nvcc (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin): give --cubin FILE")
    src, out = os.path.join(tmp, "fast_plain.cu"), os.path.join(tmp, "fast.cubin")
    with open(FAST) as f, open(src, "w") as g:
        g.write("".join(line for line in f if not line.startswith("//!kjudge")))
    p = subprocess.run([nvcc, "-cubin", "-O3", "-arch=%s" % arch, "-o", out, src], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("nvcc -cubin -arch=%s failed: %s" % (arch, (p.stderr or p.stdout)[-1500:]))
    with open(out, "rb") as f:
        return f.read()


def wrapper_source(cubin):
    return WRAPPER % base64.b64encode(cubin).decode()


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
    ap.add_argument("--cubin", help="fast.cu built elsewhere (nvcc -cubin for this GPU), instead of nvcc here")
    ap.add_argument("--entries", type=int, default=4,
                    help="judge the first N entries only (2: the CUDA file and its Python wrapper)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kjudge-pyover-") as tmp:
        if a.cubin:
            with open(a.cubin, "rb") as f:
                cubin = f.read()
        elif a.smoke:
            cubin = build_cubin(tmp, "sm_90") if find_nvcc() else b"placeholder: no nvcc here"
        else:
            cubin = build_cubin(tmp, "native")
        wrapped = os.path.join(tmp, "fast_ctypes.py")
        with open(wrapped, "w") as f:
            f.write(wrapper_source(cubin))
        compile(open(wrapped).read(), wrapped, "exec")
        if a.smoke:
            print("| entry | wrapper written and compiled |")
            print("| fast.cu via ctypes | %d bytes (cubin %d bytes%s) |" % (
                os.path.getsize(wrapped), len(cubin), ", nvcc" if cubin.startswith(b"\x7fELF") else ", placeholder"))
            return 0
        entries = [("fast.cu (CUDA)", FAST, None), ("fast.cu via ctypes (Python)", wrapped, a.python),
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
        c, p = got["fast.cu (CUDA)"], got.get("fast.cu via ctypes (Python)", [])
        if c and p:
            sc, sp = statistics.median(r[-1] for r in c), statistics.median(r[-1] for r in p)
            diff = 100.0 * (sp - sc) / sc
            ok = resolution is not None and abs(diff) <= resolution
            print("\nPython wrapper vs CUDA file, same kernel: score %+.2f %% (board resolution on H200: %s %%) "
                  "-> %s" % (diff, resolution, "within" if ok else "NOT within"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
