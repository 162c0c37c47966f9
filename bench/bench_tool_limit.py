#!/usr/bin/env python3
"""bench_tool_limit.py - how long real sanitize and profile runs of the boards' examples take.

Picks the default tool limit (runner/judge.c's JUDGE_TOOL_LIMIT_S, a board's
time_limits_s.tools: docs/operator-tools.md) from measurement: every CUDA
example of every board (leaderboards/*/examples/*.cu and template.cu) is
judged once with `kjudge-runner eval --mode sanitize` (memcheck) and once
with `--mode profile` on GPU 0, under a generous limit (--limit, default 600
s), and its wall time and verdict are printed, then per board and mode the
slowest run and the limit that gives it a margin (--margin, default 2x,
rounded up to 10 s). A file whose `//!kjudge gpu` line names another GPU
type than this host's (the tcgen05 matmul on an H200) is listed and not run:
the server would never send it here, and on the wrong GPU it only measures
a fault (a device-side assert under memcheck runs to the limit). A run that ends time_limit names an example that cannot
finish under a tool at all (a hang), not a slow tool: it is listed, not
counted. --boards a,b limits the boards; --smoke lists what it would run
(no GPU).

Needs a GPU, compute-sanitizer and ncu (CUDA_HOME or KJUDGE_NCU /
KJUDGE_COMPUTE_SANITIZER), bin/kjudge-runner; shared libraries a GPU host
lacks in .gpulibs/ (bench_common.runner_env).
"""
import argparse
import glob
import json
import math
import os
import subprocess
import sys
import time

from bench_common import ROOT, RUNNER, runner_env
from kjcorpus import gpu_line  # tests/lib, on the path through bench_common


def examples(boards):
    out = []
    for d in sorted(glob.glob(os.path.join(ROOT, "leaderboards", "*", "leaderboard.json"))):
        board = os.path.basename(os.path.dirname(d))
        if boards and board not in boards:
            continue
        files = sorted(glob.glob(os.path.join(os.path.dirname(d), "examples", "*.cu")))
        files.append(os.path.join(os.path.dirname(d), "template.cu"))
        out += [(board, f) for f in files if os.path.exists(f)]
    return out


def host_gpu():
    """This host's GPU name from `kjudge-runner probe` ("" when it does not answer)."""
    p = subprocess.run([RUNNER, "probe"], cwd=ROOT, env=runner_env(), capture_output=True, text=True,
                       timeout=120)
    try:
        return json.loads(p.stdout).get("gpu", "")
    except ValueError:
        return ""


def run(board, path, mode, limit):
    """(wall seconds, verdict) of one eval."""
    cmd = [RUNNER, "eval", path, "--leaderboard", board, "--mode", mode, "--json",
           "--leaderboards", os.path.join(ROOT, "leaderboards")]
    env = dict(runner_env(), KJUDGE_TOOL_LIMIT_S="%g" % limit)
    t0 = time.time()
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=limit + 120)
    except subprocess.TimeoutExpired:
        return time.time() - t0, "killed (no answer %g s after the limit)" % 120
    wall = time.time() - t0
    try:
        v = json.loads(p.stdout).get("verdict")
    except (ValueError, AttributeError):
        v = "no JSON (exit %d): %s" % (p.returncode, (p.stderr or "").strip()[-160:])
    return wall, v


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=float, default=600, help="the tool limit of each run (s)")
    ap.add_argument("--margin", type=float, default=2.0, help="the suggested limit: slowest x this")
    ap.add_argument("--boards", default="", help="comma-separated board names (default: all)")
    ap.add_argument("--smoke", action="store_true", help="list the runs, run nothing")
    a = ap.parse_args()
    todo = examples([b for b in a.boards.split(",") if b])
    if a.smoke:
        for board, path in todo:
            print("%s %s: sanitize, profile" % (board, os.path.relpath(path, ROOT)))
        return 0
    if not os.access(RUNNER, os.X_OK):
        sys.exit("%s is not built" % RUNNER)
    here = host_gpu()
    print("| board | file | mode | wall s | verdict |\n|---|---|---|---|---|", flush=True)
    worst = {}
    for board, path in todo:
        want = gpu_line(path)
        if want is not None and want not in here:
            print("| %s | %s | - | - | not run: written for %s, this GPU is %s |"
                  % (board, os.path.basename(path), want, here or "unknown"), flush=True)
            continue
        for mode in ("sanitize", "profile"):
            wall, v = run(board, path, mode, a.limit)
            print("| %s | %s | %s | %.1f | %s |" % (board, os.path.basename(path), mode, wall, v), flush=True)
            if v != "time_limit" and not str(v).startswith(("killed", "no JSON")):
                key = (board, mode)
                worst[key] = max(worst.get(key, 0.0), wall)
    print("\n| board | mode | slowest run s | limit with %.1fx margin |\n|---|---|---|---|" % a.margin)
    for (board, mode), w in sorted(worst.items()):
        print("| %s | %s | %.1f | %d |" % (board, mode, w, int(math.ceil(w * a.margin / 10.0) * 10)))
    if worst:
        w = max(worst.values())
        print("\nall boards: slowest %.1f s; a default of %d s gives it %.1fx" % (
            w, int(math.ceil(w * a.margin / 10.0) * 10), a.margin))
    return 0


if __name__ == "__main__":
    sys.exit(main())
