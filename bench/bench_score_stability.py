#!/usr/bin/env python3
"""bench/bench_score_stability: how reproducible a leaderboard score is, protocol v1
beside v2 (docs/timing.md).

Judges each kernel below again and again in leaderboard mode through
`kjudge-runner eval --json` (a fresh process per run, as a runner judges a
job), in interleaved rounds: every round runs every kernel once under v2 and
(while the time budget allows) once under v1, kernels and protocols in a
rotating order. Prints one line per run, then a table per kernel and
protocol (runs, mean score, CV, range, the launch-path offset), the ranked
pairs of each board (gap, the board's published resolution_pct, whether
the two swapped places in any pair of runs), a suggested resolution_pct
per board and the GPU's empty-kernel constant, and the goals: CV below
0.3 % for every kernel under v2, and no pair swapped with a gap above the
resolution. Raw results go to OUT/score_stability.csv, the tables to
OUT/table.md (OUT: --out, else $OUT, else build/score_stability).

--old v2-1p puts v2 in one submission box beside v2 instead of v1 (v2 as
it was before its rounds were spread over fresh processes, docs/timing.md
4a), to measure what the processes bring; --old v2-2p two boxes, the
fewer processes a GPU-time score could rank with (docs/timing.md 8).

GPU time (docs/timing.md 8): every v2 run also carries the GPU-time score
(timing.gpu_score_ns, CUPTI's kernel spans); the table gives its CV beside
the event score's over the same runs, with the goal CV < 0.2 % for every
kernel, and the fp8_quant fast leaderboard run's wall time under --old
v2-2p against the goal of 5 s. The H200 command (one device call, < 9 min):
  python3 bench/bench_score_stability.py --old v2-2p --runs 4 --budget 450 --out build/ss_gpu_a

Sizing (one device call): round 1 measures each run's wall time; the
remaining rounds are fitted into --budget seconds, v2 first (--runs
rounds), v1 in as many rounds as are left (spread evenly, at least 3 when
possible). On an H200 a v2 run of these kernels takes about 6-15 s (eight
fresh processes each), a v1 run 3-15 s: about 50 s per v2 round and 45 s
per v1 round.

--fake runs a stand-in for kjudge-runner (this script with --fake-eval:
a fresh process with a made-up per-process launch offset; KJ_FAKE_WRONG=
PATH makes the runs of the file whose path ends so fail) so the harness is testable without a
GPU (tests/api/test_score_stability.py). --smoke is --fake --runs 2 with
three kernels of two boards (unless --kernels), a few seconds
(tests/api/test_benches.py).

Ten rounds of the six kernels take longer than one device call on an H200
(about 50 s per v2 round): run it in several calls (each its own --out)
and combine them with --merge OUT1/score_stability.csv OUT2/... , which
runs nothing and prints the table of all their runs; --merge ... --weight W
scores those runs again with W x their empty-kernel deviation subtracted
(the runner's weight is TPLAN_CORRECT_WEIGHT), to compare weights without a
GPU.
"""
import argparse
import csv
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import geomean, runner_env  # noqa: E402

# (label, board, file): at least eight kernels over at least four boards.
KERNELS = [
    ("fp8 template", "fp8_quant", "leaderboards/fp8_quant/template.cu"),
    ("fp8 fast", "fp8_quant", "leaderboards/fp8_quant/examples/fast.cu"),
    ("fp8 two-kernel", "fp8_quant", "tests/gpu/cases/two_launches_workspace.cu"),
    ("histogram fast", "histogram", "leaderboards/histogram/examples/fast.cu"),
    ("matmul fast", "matmul", "leaderboards/matmul/examples/fast.cu"),
    ("gdn fast", "gated_deltanet_recompute_w_u", "leaderboards/gated_deltanet_recompute_w_u/examples/fast.cu"),
    ("grayscale fast", "grayscale", "leaderboards/grayscale/examples/fast.cu"),
    ("conv2d fast", "conv2d", "leaderboards/conv2d/examples/fast.cu"),
]
GOAL_CV = 0.3                 # percent
GOAL_GPU_CV = 0.2             # percent, the GPU-time score (docs/timing.md 8)
GOAL_FP8_WALL = 5.0           # seconds, a fp8_quant leaderboard run with fewer processes
RES_FACTOR = 1.96 * math.sqrt(2)  # 95 % of the difference of two runs, in CVs
EVAL_TIMEOUT = 90            # a normal run takes 2-20 s; a stuck one must not eat the call


def log(msg):
    print(msg, flush=True)


# ------------------------------------------------------------------ the runs

def eval_cmd(args, path, board, proto, seq):
    if args.fake:
        return [sys.executable, os.path.abspath(__file__), "--fake-eval", path, board, proto, str(seq)]
    if proto in ("v2-1p", "v2-2p"):  # v2 in one (the protocol before TPLAN_PROCESSES) or two boxes
        return [args.runner, "eval", path, "--leaderboard", board, "--mode", "leaderboard", "--protocol", "v2",
                "--processes", proto[3], "--json"]
    return [args.runner, "eval", path, "--leaderboard", board, "--mode", "leaderboard", "--protocol", proto,
            "--json"]


def run_one(args, label, board, path, proto, seq):
    """One eval in a fresh process: (row dict, error text or None)."""
    env = runner_env()
    t0 = time.time()
    try:
        p = subprocess.run(eval_cmd(args, os.path.join(ROOT, path), board, proto, seq), cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=EVAL_TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, "timed out after %d s" % EVAL_TIMEOUT
    wall = time.time() - t0
    try:
        r = json.loads(p.stdout)
    except ValueError:
        return None, "exit %d, no JSON: %s" % (p.returncode, p.stderr.strip()[-400:])
    if r.get("verdict") != "accepted" or not isinstance(r.get("score_ns"), (int, float)):
        return None, "verdict %s: %s" % (r.get("verdict"), str(r.get("message"))[:300])
    t = r.get("timing") or {}
    sysj = r.get("system") or {}
    benches = r.get("benchmarks") or []
    row = {
        "kernel": label, "board": board, "file": path, "protocol": proto, "verdict": r["verdict"],
        "score_ns": r["score_ns"], "raw_score_ns": t.get("raw_score_ns", r["score_ns"]),
        "corrected": bool(t.get("corrected")), "offset_ns": t.get("offset_ns"),
        "empty_run_ns": t.get("empty_kernel_run_ns"), "empty_gpu_ns": t.get("empty_kernel_gpu_ns"),
        "empty_samples": t.get("empty_kernel_samples"), "bench_wall_s": t.get("wall_s"),
        "processes": t.get("processes", ""),
        "eval_wall_s": round(wall, 3), "gpu": sysj.get("gpu", ""), "driver": sysj.get("driver", ""),
        "sm_clock_before": sysj.get("sm_clock_mhz_before"), "sm_clock_after": sysj.get("sm_clock_mhz_after"),
        "medians": " ".join("%.1f" % b.get("median_ns", float("nan")) for b in benches),
        "corrected_medians": " ".join("%.1f" % b["corrected_median_ns"] for b in benches
                                      if "corrected_median_ns" in b),
        "gpu_score_ns": t.get("gpu_score_ns") if t.get("gpu_time") else None,
        "gpu_note": t.get("gpu_time_note", ""),
        "gpu_medians": " ".join("%.1f" % b["gpu_median_ns"] for b in benches if "gpu_median_ns" in b),
        "ranked": t.get("ranked", "events"),
    }
    return row, None


def plan_rounds(walls, runs, budget_left, old="v1"):
    """After round 1: (v2 rounds, old-protocol rounds) still to run within budget_left
    seconds, from the measured wall time of one run of each kernel under each protocol."""
    c2 = sum(walls.get("v2", [])) or 1e-9
    c1 = sum(walls.get(old, [])) or 1e-9
    n2 = max(0, min(runs - 1, int(budget_left // c2)))
    left = budget_left - n2 * c2
    n1 = max(0, min(runs - 1, int(left // c1)))
    return n2, n1


def spread(n, total):
    """n round numbers spread evenly over rounds 0..total-1."""
    if n <= 0 or total <= 0:
        return set()
    return {int(i * total / n) for i in range(n)}


def run_all(args, kernels, writer, rows):
    t_start = time.time()
    seq = 0
    errors = []

    def one(rnd, label, board, path, proto):
        nonlocal seq
        seq += 1
        row, err = run_one(args, label, board, path, proto, seq)
        el = time.time() - t_start
        if err is not None:
            errors.append("%s %s round %d: %s" % (label, proto, rnd + 1, err))
            log("[%4.0f s] round %2d %s %-15s FAILED: %s" % (el, rnd + 1, proto, label, err))
            return None
        row["round"] = rnd + 1
        rows.append(row)
        writer.writerow(row)
        extra = ""
        if row["corrected"]:
            extra = " (raw %.3f us, offset %+.0f ns)" % (row["raw_score_ns"] / 1e3, row["offset_ns"])
        log("[%4.0f s] round %2d %s %-15s %9.3f us%s  %.1f s" % (el, rnd + 1, proto, label,
                                                               row["score_ns"] / 1e3, extra, row["eval_wall_s"]))
        return row["eval_wall_s"]

    # Round 1: every kernel under both protocols, measuring what a run costs.
    protocols = ("v2", args.old)
    walls = {args.old: [], "v2": []}
    for i, (label, board, path) in enumerate(kernels):
        for proto in (protocols if i % 2 == 0 else protocols[::-1]):
            w = one(0, label, board, path, proto)
            walls[proto].append(w if w is not None else 0.0)
    used = time.time() - t_start
    if errors:
        log("round 1 had %d failed runs: stopping here (the rest would fail the same way)" % len(errors))
        return errors
    n2, n1 = plan_rounds(walls, args.runs, args.budget - used, args.old)
    log("sizing: round 1 took %.0f s (v2 %.1f s, %s %.1f s per round); budget %.0f s: %d more v2 rounds, "
        "%d more %s rounds (%d kernels)" % (used, sum(walls["v2"]), args.old, sum(walls[args.old]), args.budget,
                                            n2, n1, args.old, len(kernels)))
    if n2 < args.runs - 1:
        log("WARNING: only %d v2 runs per kernel fit the budget (asked for %d)" % (n2 + 1, args.runs))
    v1_rounds = spread(n1, n2)
    for rnd in range(1, n2 + 1):
        order = kernels[rnd % len(kernels):] + kernels[:rnd % len(kernels)]
        for i, (label, board, path) in enumerate(order):
            protos = ["v2"] + ([args.old] if (rnd - 1) in v1_rounds else [])
            if (rnd + i) % 2 == 1:
                protos.reverse()
            for proto in protos:
                if time.time() - t_start > args.budget + 30:
                    log("out of time: stopping")
                    return errors
                one(rnd, label, board, path, proto)
    return errors


# ------------------------------------------------------------------ the analysis

def gpu_type(device):
    """'NVIDIA H200' -> 'H200' (the board's GPU type names)."""
    words = [w for w in device.replace("NVIDIA", "").split() if w]
    return words[0] if words else ""


def resolution_key(rows):
    """The leaderboard.json key of the resolution for what the v2 runs ranked:
    gpu_time_resolution_pct when every one ranked GPU time, else resolution_pct."""
    v2 = [r for r in rows if r["protocol"] == "v2"]
    return "gpu_time_resolution_pct" if v2 and all(r["ranked"] == "gpu_time" for r in v2) else "resolution_pct"


def resolution_of(board, gpu, key="resolution_pct"):
    try:
        spec = json.load(open(os.path.join(ROOT, "leaderboards", board, "leaderboard.json")))
    except (OSError, ValueError):
        return None
    return (spec.get(key) or {}).get(gpu)


def summarize(rows):
    """{(kernel, protocol): dict of n, mean, cv, range, ...} over accepted runs."""
    out = {}
    for key in sorted({(r["kernel"], r["protocol"]) for r in rows}):
        rs = [r for r in rows if (r["kernel"], r["protocol"]) == key]
        s = [r["score_ns"] for r in rs]
        raw = [r["raw_score_ns"] for r in rs]
        m = statistics.mean(s)
        offs = [r["offset_ns"] for r in rs if r["corrected"] and r["offset_ns"] is not None]
        erun = [r["empty_run_ns"] for r in rs if isinstance(r.get("empty_run_ns"), (int, float))]
        g = [r["gpu_score_ns"] for r in rs if isinstance(r.get("gpu_score_ns"), (int, float))]
        gm = statistics.mean(g) if g else float("nan")
        out[key] = {
            "board": rs[0]["board"], "n": len(s), "scores": s, "mean": m,
            "cv": 100 * statistics.stdev(s) / m if len(s) > 1 else float("nan"),
            "range": 100 * (max(s) - min(s)) / m,
            "raw_cv": 100 * statistics.stdev(raw) / statistics.mean(raw) if len(raw) > 1 else float("nan"),
            "offset_sd": statistics.stdev(offs) if len(offs) > 1 else float("nan"),
            "empty_run": statistics.mean(erun) if erun else float("nan"),
            "wall": statistics.mean(r["eval_wall_s"] for r in rs),
            "corrected": sum(1 for r in rs if r["corrected"]),
            "gpu_n": len(g), "gpu_mean": gm,
            "gpu_cv": 100 * statistics.stdev(g) / gm if len(g) > 1 else float("nan"),
        }
    return out


def pairs(summary, proto, resolution):
    """The ranked pairs of each board under proto: (board, faster, slower, gap %, resolution,
    swapped, verdict). swapped: some run of the faster kernel was slower than some run of
    the slower one."""
    out = []
    kernels = sorted({k for (k, p) in summary if p == proto})
    for i, a in enumerate(kernels):
        for b in kernels[i + 1:]:
            sa, sb = summary[(a, proto)], summary[(b, proto)]
            if sa["board"] != sb["board"]:
                continue
            fast, slow = (sa, sb) if sa["mean"] <= sb["mean"] else (sb, sa)
            names = (a, b) if fast is sa else (b, a)
            gap = 100 * (slow["mean"] - fast["mean"]) / fast["mean"]
            swapped = max(fast["scores"]) > min(slow["scores"])
            res = resolution.get(sa["board"])
            if not swapped:
                verdict = "ok"
            elif res is not None and gap <= res:
                verdict = "ok (within the resolution)"
            else:
                verdict = "SWAPPED above the resolution"
            out.append((sa["board"], names[0], names[1], gap, res, swapped, verdict))
    return out


def suggested_resolution(summary, board):
    cvs = [s["cv"] for (k, p), s in summary.items() if p == "v2" and s["board"] == board and s["n"] > 1]
    if not cvs:
        return None
    return math.ceil(RES_FACTOR * max(cvs) / 0.05 - 1e-9) * 0.05


def gpu_mark(s):
    """The GPU-time CV with the goal marked: '0.123 ok', '0.345 MISSED', '-' without one."""
    if s["gpu_n"] < 2 or s["gpu_cv"] != s["gpu_cv"]:
        return "-"
    return "%.3f %s" % (s["gpu_cv"], "ok" if s["gpu_cv"] < GOAL_GPU_CV else "MISSED")


def gpu_goals(summary, rows, emit):
    """The GPU-time goal lines: CV under GOAL_GPU_CV for every kernel under each v2 protocol
    that has GPU time, and the fp8_quant fast run's wall time with fewer processes."""
    for proto in sorted({p for (_, p) in summary if p.startswith("v2")}):
        ss = {k: s for (k, p), s in summary.items() if p == proto}
        if not any(s["gpu_n"] for s in ss.values()):
            notes = sorted({r.get("gpu_note") or "" for r in rows if r["protocol"] == proto} - {""})
            emit("goal: %s GPU-time CV below %.1f %% for every kernel: NO GPU TIME (%s)" % (
                proto, GOAL_GPU_CV, "; ".join(notes)[:300] or "no gpu_score_ns in the results"))
            continue
        bad = [(k, s["gpu_cv"]) for k, s in sorted(ss.items()) if not (s["gpu_n"] > 1 and s["gpu_cv"] < GOAL_GPU_CV)]
        emit("goal: %s GPU-time CV below %.1f %% for every kernel: %s%s" % (
            proto, GOAL_GPU_CV, "PASS" if not bad else "FAIL",
            "" if not bad else " (%s)" % ", ".join("%s %.3f" % kv for kv in bad)))
    for proto in sorted({p for (_, p) in summary if p in ("v2-1p", "v2-2p")}):
        s = summary.get(("fp8 fast", proto))
        if s:
            emit("goal: fp8_quant fast leaderboard run under %.0f s with %s: %s (%.1f s per run, v2 with eight "
                 "processes %s)" % (GOAL_FP8_WALL, proto, "PASS" if s["wall"] < GOAL_FP8_WALL else "FAIL", s["wall"],
                                    "%.1f s" % summary[("fp8 fast", "v2")]["wall"]
                                    if ("fp8 fast", "v2") in summary else "not run"))


def report(rows, errors, out_dir):
    lines = []
    emit = lambda s="": lines.append(s)
    if not rows:
        emit("no accepted runs")
    summary = summarize(rows) if rows else {}
    gpu = gpu_type(rows[0]["gpu"]) if rows else ""
    boards = sorted({s["board"] for s in summary.values()})
    rkey = resolution_key(rows)
    resolution = {b: resolution_of(b, gpu, rkey) for b in boards}
    if rows:
        emit("GPU %s (%s), driver %s" % (gpu, rows[0]["gpu"], rows[0]["driver"] or "?"))
    emit()
    emit("| kernel | board | protocol | runs | mean score us | CV % | range % | CV raw % | offset sd ns "
         "| corrected runs | s per run | GPU-time runs | GPU-time score us | GPU-time CV % (goal < " +
         "%.1f) |" % GOAL_GPU_CV)
    emit("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (k, p), s in sorted(summary.items(), key=lambda kv: (kv[0][0], kv[0][1] != "v2")):
        emit("| %s | %s | %s | %d | %.4f | %.3f | %.3f | %s | %s | %d | %.1f | %d | %s | %s |" % (
            k, s["board"], p, s["n"], s["mean"] / 1e3, s["cv"], s["range"],
            "%.3f" % s["raw_cv"] if p.startswith("v2") else "-",
            "%.1f" % s["offset_sd"] if s["offset_sd"] == s["offset_sd"] else "-", s["corrected"], s["wall"],
            s["gpu_n"], "%.4f" % (s["gpu_mean"] / 1e3) if s["gpu_n"] else "-", gpu_mark(s)))
    for proto in ["v2"] + sorted({p for (_, p) in summary} - {"v2"}):
        ps = pairs(summary, proto, resolution)
        if not ps:
            continue
        emit()
        emit("Ranked pairs under %s (swapped: some run of the faster was slower than some run of the other):" % proto)
        emit()
        emit("| board | faster | slower | gap % | resolution % | swapped | verdict |")
        emit("|---|---|---|---|---|---|---|")
        for b, f, sl, gap, res, sw, v in ps:
            emit("| %s | %s | %s | %.3f | %s | %s | %s |" % (b, f, sl, gap, "%.2f" % res if res else "none", 
                                                          "yes" if sw else "no", v))
    emit()
    emit("| board | published %s (%s) | suggested from v2 (%.2f x largest CV, rounded up to 0.05) |" %
         (rkey, gpu, RES_FACTOR))
    emit("|---|---|---|")
    for b in boards:
        sug = suggested_resolution(summary, b)
        emit("| %s | %s | %s |" % (b, resolution[b] if resolution[b] is not None else "none",
                                   "%.2f" % sug if sug is not None else "-"))
    e = [r["empty_run_ns"] for r in rows if r["protocol"] == "v2" and isinstance(r.get("empty_run_ns"), (int, float))]
    if e:
        gpu_ns = next((r["empty_gpu_ns"] for r in rows if isinstance(r.get("empty_gpu_ns"), (int, float))), None)
        emit()
        emit("empty-kernel estimate E_run over %d v2 runs: mean %.1f ns, sd %.1f ns; the GPU constant in use: %s "
             "(runner/tplan.c; a new GPU model gets the mean)" % (len(e), statistics.mean(e),
                                                                 statistics.stdev(e) if len(e) > 1 else 0,
                                                                 "%.1f ns" % gpu_ns if gpu_ns else "none"))
    v2 = {k: s for (k, p), s in summary.items() if p == "v2"}
    cv_ok = bool(v2) and all(s["cv"] < GOAL_CV for s in v2.values())
    swaps = [x for x in pairs(summary, "v2", resolution) if x[6].startswith("SWAPPED")]
    emit()
    emit("goal: v2 CV below %.1f %% for every kernel: %s%s" % (
        GOAL_CV, "PASS" if cv_ok else "FAIL",
        "" if cv_ok else " (%s)" % ", ".join("%s %.3f" % (k, s["cv"]) for k, s in sorted(v2.items())
                                              if not s["cv"] < GOAL_CV)))
    emit("goal: no v2 ranked pair swapped with a gap above the published resolution: %s" %
         ("PASS" if not swaps else "FAIL (%d pairs)" % len(swaps)))
    gpu_goals(summary, rows, emit)
    if errors:
        emit()
        emit("%d runs failed:" % len(errors))
        for e in errors:
            emit("  " + e)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(os.path.join(out_dir, "table.md"), "w") as f:
        f.write(text)
    return 0 if rows and not errors else 1


FIELDS = ["round", "kernel", "board", "file", "protocol", "verdict", "score_ns", "raw_score_ns", "corrected",
          "offset_ns", "empty_run_ns", "empty_gpu_ns", "empty_samples", "bench_wall_s", "eval_wall_s", "gpu",
          "driver", "sm_clock_before", "sm_clock_after", "medians", "corrected_medians", "processes",
          "gpu_score_ns", "gpu_note", "gpu_medians", "ranked"]


def read_rows(path):
    """The accepted runs of an earlier call's score_stability.csv, typed as run_one makes them."""
    def num(v):
        try:
            return float(v)
        except (TypeError, ValueError):
            return None
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r.get("verdict") != "accepted" or num(r.get("score_ns")) is None:
                continue
            for k in ("score_ns", "raw_score_ns", "offset_ns", "empty_run_ns", "empty_gpu_ns", "empty_samples",
                      "bench_wall_s", "eval_wall_s", "sm_clock_before", "sm_clock_after", "gpu_score_ns"):
                r[k] = num(r.get(k))
            r["raw_score_ns"] = r["raw_score_ns"] if r["raw_score_ns"] is not None else r["score_ns"]
            r["eval_wall_s"] = r["eval_wall_s"] or 0.0
            r["corrected"] = r.get("corrected") == "True"
            if r.get("ranked") not in ("events", "gpu_time"):  # a CSV from before the column
                r["ranked"] = ("gpu_time" if r["gpu_score_ns"] is not None and
                               abs(r["gpu_score_ns"] - r["score_ns"]) < 1e-6 else "events")
            rows.append(r)
    return rows


def reweigh(rows, weight):
    """Each corrected run's score again, with weight x (E_run - E_gpu) subtracted from
    its raw medians instead of what the run subtracted: the same runs under another
    correction weight (docs/timing.md 4.10), by arithmetic, no new measurement."""
    out = []
    for r in rows:
        meds = [float(x) for x in (r.get("medians") or "").split()]
        if r.get("corrected") and meds and r.get("empty_run_ns") is not None and r.get("empty_gpu_ns"):
            off = weight * (r["empty_run_ns"] - r["empty_gpu_ns"])
            r = dict(r, score_ns=geomean([m - off for m in meds]), offset_ns=off)
        out.append(r)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="v2 runs per kernel (default 10)")
    ap.add_argument("--budget", type=float, default=450, help="seconds for all runs (default 450)")
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(ROOT, "build", "score_stability"))
    ap.add_argument("--runner", default=os.path.join(ROOT, "bin", "kjudge-runner"))
    ap.add_argument("--kernels", help="comma-separated labels to run (default: all)")
    ap.add_argument("--old", choices=("v1", "v2-1p", "v2-2p"), default="v1",
                    help="the protocol beside v2: v1, v2-1p (v2 in one submission box, before "
                         "the rounds were spread over fresh processes) or v2-2p (two boxes: what a "
                         "GPU-time score could rank with)")
    ap.add_argument("--fake", action="store_true", help="a stand-in runner, no GPU (tests)")
    ap.add_argument("--smoke", action="store_true",
                    help="a run of seconds for make test: --fake --runs 2, three kernels unless --kernels")
    ap.add_argument("--merge", nargs="+", metavar="CSV",
                    help="run nothing: the table of the runs in these score_stability.csv files "
                         "(several device calls of the same binaries, one table)")
    ap.add_argument("--weight", type=float,
                    help="with --merge: score the v2 runs again with this share of their empty-kernel "
                         "deviation subtracted (the runner's is runner/tplan.h's TPLAN_CORRECT_WEIGHT)")
    args = ap.parse_args(argv)
    if args.weight is not None and not args.merge:
        ap.error("--weight recomputes the runs of --merge; it changes nothing the runner does")
    if args.merge:
        os.makedirs(args.out, exist_ok=True)
        rows = []
        for path in args.merge:
            got = read_rows(path)
            log("%s: %d accepted runs" % (path, len(got)))
            rows.extend(got)
        if args.weight is not None:
            rows = reweigh(rows, args.weight)
            log("scores recomputed with %.2f x (E_run - E_gpu) subtracted from each corrected run's medians"
                % args.weight)
        return report(rows, [], args.out)
    if args.smoke:
        args.fake, args.runs = True, 2
        args.kernels = args.kernels or "fp8 fast,fp8 template,histogram fast"
    kernels = KERNELS
    if args.kernels:
        want = [k.strip() for k in args.kernels.split(",")]
        kernels = [k for k in KERNELS if k[0] in want]
        if len(kernels) != len(want):
            ap.error("unknown kernel in --kernels; known: %s" % ", ".join(k[0] for k in KERNELS))
    if not args.fake and not os.access(args.runner, os.X_OK):
        ap.error("%s is not built (make bin/kjudge-runner)" % args.runner)
    os.makedirs(args.out, exist_ok=True)
    log("score_stability: %d kernels over %d boards, %d v2 runs each (v1 as the budget allows), budget %.0f s%s"
        % (len(kernels), len({k[1] for k in kernels}), args.runs, args.budget, " (fake runner)" if args.fake else ""))
    rows = []
    with open(os.path.join(args.out, "score_stability.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        writer.writeheader()
        errors = run_all(args, kernels, writer, rows)
    return report(rows, errors, args.out)


# ------------------------------------------------------------------ the stand-in runner

FAKE_MEDIANS = {"template.cu": (10000.0, 15700.0, 168000.0), "fast.cu": (6950.0, 8460.0, 60000.0),
                "two_launches_workspace.cu": (9000.0, 12000.0, 95000.0)}


def fake_eval(path, board, proto, seq):
    """Print a result as `kjudge-runner eval --json` would, with a per-process launch offset
    (sd 70 ns, common to every shape) that the v2 correction removes."""
    if os.environ.get("KJ_FAKE_WRONG") and path.endswith(os.environ["KJ_FAKE_WRONG"]):
        print(json.dumps({"verdict": "wrong_answer", "message": "fake mismatch", "score_ns": None}))
        return 1
    rnd = random.Random(zlib.crc32(("%s|%s|%s|%d" % (os.path.basename(path), board, proto, seq)).encode()))
    name = os.path.basename(path)
    base = FAKE_MEDIANS.get(name, (7000.0, 8000.0, 11000.0))
    if board != "fp8_quant":
        base = tuple(b * (1.0 + 0.1 * (len(board) % 3)) for b in base)
    # One launch offset per process: v2 spreads its rounds over eight.
    off = sum(rnd.gauss(0, 70) for _ in range(8)) / 8 if proto == "v2" else rnd.gauss(0, 70)
    raw = [b + off + rnd.gauss(0, 8) for b in base]
    r = {"verdict": "accepted", "message": "fake", "mode": "leaderboard", "leaderboard": board,
         "system": {"gpu": "NVIDIA H200", "driver": "580.159.04", "sm_clock_mhz_before": 1980,
                    "sm_clock_mhz_after": 1980}}
    benches = [{"index": i, "median_ns": m} for i, m in enumerate(raw)]
    if proto.startswith("v2"):
        gpu = 2897.0
        erun = gpu + 0.95 * off + rnd.gauss(0, 6)
        cor = [m - (erun - gpu) for m in raw]
        for b, c in zip(benches, cor):
            b["corrected_median_ns"] = c
        r["timing"] = {"protocol": "v2", "rounds": 8, "processes": 8 if proto == "v2" else int(proto[3]), "lanes": 4,
                       "empty_every": 8, "empty_kernel_samples": 600,
                       "empty_kernel_run_ns": erun, "empty_kernel_gpu_ns": gpu, "corrected": True,
                       "offset_ns": erun - gpu, "raw_score_ns": geomean(raw), "wall_s": 1.5}
        r["score_ns"] = geomean(cor)
        # GPU time: no launch path in it, so no per-process offset; a little sampling noise.
        gmed = [b - 1800.0 + rnd.gauss(0, 4) for b in base]
        for b, g in zip(benches, gmed):
            b["gpu_median_ns"] = g
        ranked = "events" if os.environ.get("KJUDGE_SCORE") == "events" else "gpu_time"  # the default
        r["timing"].update({"gpu_time": True, "gpu_time_note": "fake CUPTI", "gpu_score_ns": geomean(gmed),
                            "ranked": ranked})
        if ranked == "gpu_time":
            r["score_ns"] = geomean(gmed)
    else:
        r["timing"] = {"protocol": "v1", "raw_score_ns": geomean(raw), "wall_s": 2.5}
        r["score_ns"] = geomean(raw)
    r["benchmarks"] = benches
    print(json.dumps(r))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--fake-eval":
        sys.exit(fake_eval(*sys.argv[2:5], int(sys.argv[5])))
    sys.exit(main())
