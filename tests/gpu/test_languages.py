#!/usr/bin/env python3
"""test_languages.py - CUTLASS/CuTe and PTX submissions on the GPU
(docs/languages-cuda.md); part of tests/gpu/test_gpu.py
(KJ_GPU_ONLY=languages_eval,languages_server runs only these).

1. Each example timed with `kjudge-runner eval --mode benchmark` beside the
   board's fast.cu: the CuTe wgmma matmuls (sm_90a: cp.async and TMA; the
   tcgen05 one on an sm_100a GPU), the CuTe fp8_quant and the PTX fp8_quant exported from
   Triton. Every one must be accepted. For the matmul, cuBLAS's time for the
   same shapes (torch.matmul on the device, fp16 in, fp32 out where this
   PyTorch can, an L2 flush before each call like the judge's) is measured
   in the same run and printed beside it, with each one's ratio on the
   largest shape (the goal is at least 0.70 of cuBLAS's throughput there;
   printed, not a pass/fail check, since it is a property of the kernel).
2. Through a real server and runner: the examples submitted over HTTP
   in benchmark mode, accepted and timed; the PTX one in leaderboard mode
   too, whose rankings row says lang "ptx".
The exploit verdicts of the new corpus files (tests/exploits/*.ptx,
cutlass_*.cu, cute_*.cu) come from test_exploits.py, which reads them all.
"""
import json
import os
import subprocess

import gpueval
from gpueval import ROOT, RUNNER, check, report, run
from kjhttp import http, submit
from kjservice import Service

TORCH_PY = os.environ.get("KJUDGE_PYTHON", "/opt/torch/.venv/bin/python3")
BOARDS = os.path.join(ROOT, "leaderboards")

# cuBLAS through PyTorch: median microseconds per (M, N, K), each call after an L2 flush.
CUBLAS = r"""
import json, sys, torch
shapes = json.loads(sys.argv[1])
flush = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
out, how = [], "fp16 out"
for M, N, K in shapes:
    a = torch.rand(M, K, dtype=torch.float16, device="cuda")
    b = torch.rand(K, N, dtype=torch.float16, device="cuda")
    def mm():
        try:
            return torch.mm(a, b, out_dtype=torch.float32)
        except TypeError:
            return torch.mm(a, b)
    try:
        torch.mm(a, b, out_dtype=torch.float32)
        how = "fp32 out"
    except TypeError:
        pass
    for _ in range(10):
        mm()
    ts = []
    for _ in range(100):
        flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); mm(); e.record(); torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) * 1e3)
    ts.sort()
    out.append(ts[len(ts) // 2])
print(json.dumps({"us": out, "how": how}))
"""


def probe_arch():
    rc, out, _ = run([RUNNER, "probe"], timeout=120)
    try:
        return json.loads(out).get("arch", "")
    except ValueError:
        return ""


def bench(board, rel):
    """eval in benchmark mode: (verdict, [median us per shape], message)."""
    p = subprocess.run([RUNNER, "eval", os.path.join(BOARDS, board, rel), "--leaderboard", board,
                        "--mode", "benchmark", "--json"], cwd=ROOT, capture_output=True, text=True,
                       timeout=900)
    try:
        res = json.loads(p.stdout)
    except ValueError:
        return None, [], (p.stderr or p.stdout)[-2000:]
    meds = [b.get("median_ns", 0) / 1e3 for b in res.get("benchmarks", [])]
    return res.get("verdict"), meds, res.get("message") or ""


def cublas(board):
    spec = json.load(open(os.path.join(BOARDS, board, "leaderboard.json")))
    shapes = [[b["M"], b["N"], b["K"]] for b in spec["benchmarks"]]
    if not os.access(TORCH_PY, os.X_OK):
        return None, "no PyTorch at %s" % TORCH_PY, shapes
    p = subprocess.run([TORCH_PY, "-c", CUBLAS, json.dumps(shapes)], cwd=ROOT, capture_output=True,
                       text=True, timeout=600)
    try:
        return json.loads(p.stdout.strip().splitlines()[-1]), "", shapes
    except (ValueError, IndexError):
        return None, (p.stderr or p.stdout)[-1000:], shapes


def matmul_examples(arch):
    """The CuTe matmul examples for this GPU: tcgen05 on sm_100, else the wgmma ones
    (cp.async, and TMA where that example exists)."""
    if arch.startswith("sm_100"):
        return ["examples/cute_tcgen05.cu"]
    return [rel for rel in ("examples/cute_wgmma.cu", "examples/cute_tma.cu")
            if os.path.exists(os.path.join(BOARDS, "matmul", rel))]


def test_languages_eval():
    mms = matmul_examples(probe_arch())
    rows = {}
    for board, rel in ([("matmul", m) for m in mms] + [("matmul", "examples/fast.cu"),
                       ("fp8_quant", "examples/cute_quant.cu"), ("fp8_quant", "examples/triton_ptx.ptx"),
                       ("fp8_quant", "examples/fast.cu")]):
        verdict, meds, msg = bench(board, rel)
        rows[(board, rel)] = meds
        report.setdefault("languages", {})["%s/%s" % (board, rel)] = {"verdict": verdict, "median_us": meds}
        check(verdict == "accepted", "%s/%s accepted in benchmark mode" % (board, rel), msg)
    cb, why, shapes = cublas("matmul")
    names = [m.split("/")[-1] for m in mms] + ["fast.cu"]
    cols = [rows[("matmul", m)] for m in mms] + [rows[("matmul", "examples/fast.cu")]]
    print("     matmul (median us per shape; cuBLAS = torch.mm %s)" % ((cb or {}).get("how", "")))
    print("     %-18s" % "M x N x K" + "".join(" %15s" % n for n in names) + " %12s" % "cuBLAS")
    for i, s in enumerate(shapes):
        line = "     %-18s" % ("%dx%dx%d" % tuple(s))
        for col in cols:
            line += " %15.2f" % (col[i] if i < len(col) else float("nan"))
        print(line + " %12.2f" % (cb["us"][i] if cb else float("nan")))
    if cb:
        for name, col in zip(names, cols):
            if col:
                ratio = cb["us"][-1] / col[-1]
                report["languages"]["matmul_cublas_ratio_largest/" + name] = ratio
                print("     NOTE %s reaches %.2f of cuBLAS's throughput on the largest shape (goal for the "
                      "CuTe example: 0.70)" % (name, ratio))
    else:
        print("     NOTE no cuBLAS comparison: " + why)
    q = ("cute_quant.cu", "triton_ptx.ptx", "fast.cu")
    print("     fp8_quant (median us per shape): " + "  ".join(
        "%s %s" % (n, ["%.2f" % m for m in rows[("fp8_quant", "examples/" + n)]]) for n in q))


def test_languages_server():
    arch = probe_arch()
    gpu = "B200" if arch.startswith("sm_100") else "H200"
    failed_before = gpueval.counts.failed
    with Service(runner="real", gpu=gpu, runner_name="gpu0", prefix="kjudge-lang-") as svc:
        user = svc.user("carol") or ""
        for board, rel, lang in ([("matmul", m, "cuda") for m in matmul_examples(arch)] +
                                 [("fp8_quant", "examples/cute_quant.cu", "cuda"),
                                  ("fp8_quant", "examples/triton_ptx.ptx", "ptx")]):
            st, sub = submit(svc.base, user, os.path.join(BOARDS, board, rel), "benchmark",
                             leaderboard=board, gpu=gpu)
            check(st == 202 and sub.get("lang") == lang, "%s submitted as %s" % (rel, lang), sub)
            st, res = http("GET", svc.base + "/api/v1/submissions/%d?wait=1&timeout=900" % sub.get("id", 0), user)
            timed = [b for b in (res or {}).get("result", {}).get("benchmarks", []) if b.get("median_ns")]
            check(res.get("verdict") == "accepted", "%s via the server -> accepted" % rel, json.dumps(res)[:2000])
            print("     server: %s/%s %s, %d timed shapes" % (board, rel, res.get("verdict"), len(timed)))
        st, sub = submit(svc.base, user, os.path.join(BOARDS, "fp8_quant", "examples", "triton_ptx.ptx"),
                         "leaderboard", leaderboard="fp8_quant", gpu=gpu)
        st, res = http("GET", svc.base + "/api/v1/submissions/%d?wait=1&timeout=900" % sub.get("id", 0), user)
        check(res.get("verdict") == "accepted", "triton_ptx.ptx leaderboard mode -> accepted", json.dumps(res)[:2000])
        st, rk = http("GET", svc.base + "/api/v1/leaderboards/fp8_quant/rankings?gpu=" + gpu)
        rows = (rk or {}).get("rankings", [])
        check(any(r.get("user") == "carol" and r.get("lang") == "ptx" for r in rows),
              "the rankings row of the PTX entry says lang ptx", json.dumps(rk)[:2000])
        if gpueval.counts.failed > failed_before:
            svc.print_logs()


TESTS = [test_languages_eval, test_languages_server]
