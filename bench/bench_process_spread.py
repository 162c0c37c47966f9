#!/usr/bin/env python3
"""bench/bench_process_spread: where one kernel's score spread between leaderboard
runs comes from, from the samples of timing protocol v2 (docs/timing.md
sections 3.8, 4 and 7.2).

GPU mode judges --kernel on --leaderboard again and again, each run a fresh
`kjudge-runner eval --mode leaderboard --json --processes P --trace`: every
P of --processes once per round, the order alternating between rounds, for
--runs rounds or until the next run would overrun --budget seconds. A run
leaves OUT/trace-pP-rR.csv and OUT/result-pP-rR.json, a failed one
OUT/failed-pP-rR.json; then OUT is analysed as by --analyze. OUT: --out,
else $OUT, else build/process_spread (the bench's files of an earlier call
there are removed first).

--analyze DIR (no GPU) reads each trace-V-rR.csv with its result-V-rR.json
(V: any label; the runs of one V are a variant) and prints, into
DIR/table.md too: the scores (the results' CVs, the CVs recomputed from the
traces at correction weights 0 to 1, and a check that the traces give each
result's score), the processes (how far each sits from the others, within a
run and between runs, and how it follows its own empty-kernel samples) and
the buffer sets (each set's medians against its process's).

--fake runs a stand-in for kjudge-runner (this script with --fake-eval) that
writes a synthetic trace (a seeded offset per process, its empties
following it, a fixed shift per set, sample noise) and the result the
runner would give for it (tests/api/test_process_spread.py). --smoke is
--fake --runs 2 --processes 2, a few seconds (tests/api/test_benches.py).
Python 3 standard library only.
"""
import argparse
import csv
import itertools
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import time
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import geomean, runner_env  # noqa: E402
HEADER = ["shape", "process", "visit", "batch", "slot", "set", "lane", "kind", "ns"]
TRACE_RE = re.compile(r"^trace-([A-Za-z0-9_.]+)-r([0-9]+)\.csv$")
RESULT_RE = re.compile(r"^result-([A-Za-z0-9_.]+)-r([0-9]+)\.json$")
OWN_FILES = re.compile(r"^((trace|result|failed)-[A-Za-z0-9_.]+-r[0-9]+\.(csv|json)|table\.md)$")
WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
AGREE = 1e-4                 # a recomputed score agrees within 0.01 %
EMPTY_TRIM = 0.1             # E_run: the 10 % trimmed mean (runner/tplan.h TPLAN_EMPTY_TRIM)
EVAL_TIMEOUT = 180           # a leaderboard run takes 5-12 s on an H200; a stuck one must not eat the call
NAN = float("nan")


class BadInput(Exception):
    """Input the analysis cannot use; the message names the file (and line)."""


def log(msg):
    print(msg, flush=True)


# ------------------------------------------------------------------ statistics

def trimmed_mean(xs, trim=EMPTY_TRIM):
    """runner/stats.c's stats_trimmed_mean: floor(trim x n) values dropped at each end."""
    s = sorted(xs)
    cut = math.floor(trim * len(s))
    kept = s[cut:len(s) - cut]
    return math.fsum(kept) / len(kept)


def median(xs):
    """runner/stats.c's median (type 7 quantile at 0.5: the middle value, or the mean of the two)."""
    return statistics.median(xs)


def cv(xs):
    return 100 * statistics.stdev(xs) / statistics.mean(xs) if len(xs) > 1 else NAN


def corr(a, b):
    return statistics.correlation(a, b) if len(a) > 2 and len(set(a)) > 1 and len(set(b)) > 1 else NAN


def slope(x, y):
    return statistics.linear_regression(x, y).slope if len(x) > 2 and len(set(x)) > 1 else NAN


def num(x, fmt="%.1f"):
    return "-" if x is None or x != x else fmt % x


# ------------------------------------------------------------------ reading a folder

def read_trace(path):
    """One run's trace: per (process, shape) median, per (process, shape, set) median, per process
    the trimmed mean of its empties, per shape the pooled median, E_run of all its empties."""
    timed, by_set, empties, pooled = {}, {}, {}, {}
    try:
        with open(path, newline="", errors="replace") as f:
            rows = csv.reader(f)
            if next(rows, None) != HEADER:
                raise BadInput("%s line 1: the header is not %s" % (path, ",".join(HEADER)))
            for n, row in enumerate(rows, start=2):
                try:
                    if len(row) != len(HEADER):
                        raise ValueError("%d fields, not %d" % (len(row), len(HEADER)))
                    shape, proc, _visit, _batch, _slot, bset, _lane = (int(x) for x in row[:7])
                    ns = float(row[8])
                    if row[7] not in ("timed", "empty") or not (0 < ns < 1e12) or min(shape, proc) < 0 or \
                            bset < (0 if row[7] == "timed" else -1):
                        raise ValueError("bad kind, sample or index")
                except ValueError as e:
                    why = "".join(c if c.isprintable() else "?" for c in "(%s): %s" % (e, ",".join(row)))
                    raise BadInput("%s line %d: malformed sample %s" % (path, n, why[:300]))
                if row[7] == "empty":
                    empties.setdefault(proc, []).append(ns)
                else:
                    timed.setdefault((proc, shape), []).append(ns)
                    by_set.setdefault((proc, shape, bset), []).append(ns)
                    pooled.setdefault(shape, []).append(ns)
    except OSError as e:
        raise BadInput("%s: %s" % (path, e.strerror))
    except csv.Error as e:
        raise BadInput("%s line %d: %s" % (path, rows.line_num, e))
    if not timed or not empties:
        raise BadInput("%s: no %s samples" % (path, "timed" if not timed else "empty-kernel"))
    return {
        "procs": sorted({p for p, _ in timed}),
        "med": {k: median(v) for k, v in timed.items()},
        "setmed": {k: median(v) for k, v in by_set.items()},
        "emp": {p: trimmed_mean(v) for p, v in empties.items()},
        "pooled": {s: median(v) for s, v in pooled.items()},
        "e_run": trimmed_mean([x for v in empties.values() for x in v]),
    }


def check_result(r):
    """None if r is an accepted v2 leaderboard result with what the analysis reads; else why not."""
    if not isinstance(r, dict):
        return "not a JSON object"
    t = r.get("timing")
    if r.get("verdict") != "accepted" or r.get("mode") != "leaderboard":
        return "verdict %s in mode %s" % (r.get("verdict"), r.get("mode"))
    if not isinstance(t, dict) or t.get("protocol") != "v2":
        return "timing protocol %s" % (t.get("protocol") if isinstance(t, dict) else None)
    for k, v in (("score_ns", r.get("score_ns")), ("timing.raw_score_ns", t.get("raw_score_ns")),
                 ("timing.empty_kernel_run_ns", t.get("empty_kernel_run_ns")),
                 ("timing.offset_ns", t.get("offset_ns"))):
        if not isinstance(v, (int, float)) or isinstance(v, bool) or v != v:
            return "no number %s" % k
    if not isinstance(t.get("corrected"), bool) or (t["corrected"] and not isinstance(
            t.get("empty_kernel_gpu_ns"), (int, float))):
        return "timing.corrected / empty_kernel_gpu_ns missing"
    return None


def read_result(path):
    try:
        with open(path) as f:
            r = json.load(f)
    except (OSError, ValueError) as e:
        raise BadInput("%s: not JSON (%s)" % (path, e))
    why = check_result(r)
    if why:
        raise BadInput("%s: not an accepted v2 leaderboard result (%s)" % (path, why))
    t = r["timing"]
    gpu = t.get("empty_kernel_gpu_ns")
    dev = t["empty_kernel_run_ns"] - gpu if isinstance(gpu, (int, float)) else 0.0
    return {"score": float(r["score_ns"]), "raw": float(t["raw_score_ns"]), "corrected": t["corrected"],
            "e_gpu": float(gpu) if isinstance(gpu, (int, float)) and gpu > 0 else None,
            "weight": t["offset_ns"] / dev if t["corrected"] and dev else 0.0,
            "processes": t.get("processes")}


def natural(s):
    return [int(x) if x.isdigit() else x for x in re.split(r"([0-9]+)", s)]


def load_dir(d):
    """{variant: [run, ...] by run number}; each run a dict of its trace's and result's figures."""
    try:
        names = os.listdir(d)
    except OSError as e:
        raise BadInput("%s: %s" % (d, e.strerror))
    traces = {m.groups(): n for n in names for m in [TRACE_RE.match(n)] if m}
    results = {m.groups(): n for n in names for m in [RESULT_RE.match(n)] if m}
    if not traces:
        raise BadInput("%s: no traces (trace-V-rN.csv with result-V-rN.json)" % d)
    for key in sorted(set(traces) ^ set(results))[:1]:
        raise BadInput("%s: %s without its %s" % (d, traces.get(key) or results[key], "result-%s-r%s.json" % key
                                                  if key in traces else "trace-%s-r%s.csv" % key))
    out = {}
    for key in sorted(traces, key=lambda k: (natural(k[0]), int(k[1]))):
        run = read_trace(os.path.join(d, traces[key]))
        run.update(read_result(os.path.join(d, results[key])))
        run["variant"], run["run"] = key[0], int(key[1])
        out.setdefault(key[0], []).append(run)
    return out


# ------------------------------------------------------------------ the analysis

def run_score(run, w):
    """The run's score from its trace: each shape's median over all its samples, w x (E_run - E_gpu)
    subtracted (the runner's limits on the correction not applied), geometric mean."""
    off = w * (run["e_run"] - run["e_gpu"]) if w else 0.0
    return geomean([m - off for _, m in sorted(run["pooled"].items())])


def score_stats(runs):
    s = {"n": len(runs), "mean": statistics.mean(r["score"] for r in runs),
         "cv": cv([r["score"] for r in runs]), "raw_cv": cv([r["raw"] for r in runs])}
    s["cv_w"] = [cv([run_score(r, w) for r in runs]) if w == 0 or all(r["e_gpu"] for r in runs) else NAN
                 for w in WEIGHTS]
    s["diff"] = [(r, run_score(r, r["weight"])) for r in runs]
    return s


def process_stats(runs):
    """The processes of a variant: deviation = mean over shapes of (process median - the shape's mean
    over all processes of all runs)."""
    units = [(i, p) for i, r in enumerate(runs) for p in r["procs"]]
    shapes = sorted({s for r in runs for (_, s) in r["med"]})
    gm = {s: statistics.mean(r["med"][(p, s)] for i, r in enumerate(runs) for p in r["procs"]
                             if (p, s) in r["med"]) for s in shapes}
    dev = {(i, p): statistics.mean(runs[i]["med"][(p, s)] - gm[s] for s in shapes if (p, s) in runs[i]["med"])
           for i, p in units}
    emp = {(i, p): runs[i]["emp"][p] for i, p in units if p in runs[i]["emp"]}
    by_run = [[u for u in units if u[0] == i] for i in range(len(runs))]
    run_mean = [statistics.mean(dev[u] for u in us) for us in by_run]
    df = sum(len(us) - 1 for us in by_run)
    within = math.sqrt(sum((dev[u] - run_mean[u[0]]) ** 2 for u in units) / df) if df > 0 else NAN
    procs = statistics.mean(len(us) for us in by_run)
    wd, we, rd, re_ = [], [], [], []   # within-run (centred) and run-level deviations and empties
    for us in by_run:
        us = [u for u in us if u in emp]
        if not us:
            continue
        md, me = statistics.mean(dev[u] for u in us), statistics.mean(emp[u] for u in us)
        wd += [dev[u] - md for u in us]
        we += [emp[u] - me for u in us]
        rd.append(md)
        re_.append(me)
    return {"procs": procs, "sd": statistics.stdev(dev.values()) if len(dev) > 1 else NAN,
            "within": within, "run_sd": statistics.stdev(run_mean) if len(runs) > 1 else NAN,
            "predicted": within / math.sqrt(procs), "r": corr(we, wd), "slope": slope(we, wd),
            "run_r": corr(re_, rd)}


def set_stats(runs):
    """Per set: mean over (run, process) of the mean over shapes of (set median - process median);
    mean correlation of those set vectors between processes of one run and of different runs."""
    nsets = 1 + max(k for r in runs for (_, _, k) in r["setmed"])
    vecs = {}
    for i, r in enumerate(runs):
        for p in r["procs"]:
            v = []
            for k in range(nsets):
                d = [m - r["med"][(q, s)] for (q, s, kk), m in r["setmed"].items() if q == p and kk == k]
                v.append(statistics.mean(d) if d else None)
            vecs[(i, p)] = v
    pattern = [statistics.mean(v[k] for v in vecs.values() if v[k] is not None) if
               any(v[k] is not None for v in vecs.values()) else NAN for k in range(nsets)]
    same, other = [], []
    full = sorted(u for u, v in vecs.items() if None not in v)
    for a, b in itertools.combinations(full, 2):
        c = corr(vecs[a], vecs[b])
        if c == c:
            (same if a[0] == b[0] else other).append(c)
    return {"pattern": pattern, "r_same": statistics.mean(same) if same else NAN,
            "r_other": statistics.mean(other) if other else NAN, "n_same": len(same), "n_other": len(other)}


def report(variants, out_dir):
    lines = []
    emit = lines.append
    nruns = sum(len(v) for v in variants.values())
    emit("process_spread: %s, %d variants, %d runs" % (out_dir, len(variants), nruns))
    emit("")
    emit("| variant | runs | processes | mean score us | score CV % | raw CV % | " +
         " | ".join("CV at w=%g %%" % w for w in WEIGHTS) + " |")
    emit("|---" * (6 + len(WEIGHTS)) + "|")
    bad, agree, worst = [], 0, 0.0
    for v, runs in variants.items():
        s = score_stats(runs)
        procs = sorted({str(r["processes"] if r["processes"] is not None else len(r["procs"])) for r in runs})
        emit("| %s | %d | %s | %.4f | %s | %s | %s |" % (
            v, s["n"], ",".join(procs), s["mean"] / 1e3, num(s["cv"], "%.3f"), num(s["raw_cv"], "%.3f"),
            " | ".join(num(x, "%.3f") for x in s["cv_w"])))
        for r, rec in s["diff"]:
            rel = abs(rec - r["score"]) / r["score"]
            worst = max(worst, rel)
            if rel <= AGREE:
                agree += 1
            else:
                bad.append("%s r%d (trace %.1f ns, result %.1f ns)" % (v, r["run"], rec, r["score"]))
    emit("Score and raw CV from the results; then the CV of the scores recomputed from the traces, each shape's "
         "median over all its samples less w x (E_run - E_gpu).")
    emit("")
    emit("check: the traces at each result's own weight give its score_ns within %.2f %% in %d of %d runs "
         "(largest difference %.1e %%)%s" % (100 * AGREE, agree, nruns, 100 * worst,
                                             "; not: " + ", ".join(bad) if bad else ""))
    emit("")
    emit("| variant | process deviation sd ns | within-run sd ns | sd of run means ns | independent processes "
         "predict ns | within-run r (dev, own empties) | within-run slope | run-level r |")
    emit("|---" * 8 + "|")
    for v, runs in variants.items():
        p = process_stats(runs)
        emit("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            v, num(p["sd"]), num(p["within"]), num(p["run_sd"]), num(p["predicted"]), num(p["r"], "%.2f"),
            num(p["slope"], "%.2f"), num(p["run_r"], "%.2f")))
    emit("A process's deviation is the mean over shapes of its median less the shape's mean over every process; "
         "within-run: about its run's mean (pooled), predicted run-mean sd = within-run sd / sqrt(processes); "
         "r and slope: the deviation on the 10 % trimmed mean of the process's own empties, both centred per run; "
         "run-level r: the run means of the two.")
    emit("")
    sets = {v: set_stats(runs) for v, runs in variants.items()}
    nsets = max(len(s["pattern"]) for s in sets.values())
    emit("| variant | " + " | ".join("set %d ns" % k for k in range(nsets)) + " | r same run | r different runs |")
    emit("|---" * (nsets + 3) + "|")
    for v, s in sets.items():
        pat = s["pattern"] + [NAN] * (nsets - len(s["pattern"]))
        emit("| %s | %s | %s | %s |" % (v, " | ".join(num(x, "%+.0f") for x in pat), num(s["r_same"], "%.2f"),
                                        num(s["r_other"], "%.2f")))
    emit("Per set: the mean over (run, process) of the mean over shapes of the set's median less the process's "
         "median of the shape; r: the mean correlation of these set vectors between two processes of one run, "
         "and of different runs.")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(os.path.join(out_dir, "table.md"), "w") as f:
        f.write(text)
    return 0 if not bad else 1


def analyze(d):
    try:
        return report(load_dir(d), d)
    except BadInput as e:
        print("process_spread: %s" % e, file=sys.stderr)
        return 1


# ------------------------------------------------------------------ the runs

def eval_cmd(args, procs, run, trace):
    if args.fake:
        return [sys.executable, os.path.abspath(__file__), "--fake-eval", str(procs), str(run), trace]
    return [args.runner, "eval", args.kernel, "--leaderboard", args.leaderboard, "--mode", "leaderboard", "--json",
            "--processes", str(procs), "--trace", trace]


def run_one(args, procs, run):
    """One eval in a fresh process: (result dict, None), or (None, why) with its output in failed-pP-rR.*."""
    name = os.path.join(args.out, "%s-p%d-r%d.%s")
    trace = name % ("trace", procs, run, "csv")
    env = runner_env()
    r, out = None, ""
    try:
        p = subprocess.run(eval_cmd(args, procs, run, trace), cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=EVAL_TIMEOUT)
        out = p.stdout
        r = json.loads(out)
        why = check_result(r) or (None if os.path.exists(trace) else "no trace written")
    except subprocess.TimeoutExpired:
        why = "timed out after %d s" % EVAL_TIMEOUT
    except ValueError:
        why = "exit %d, no JSON: %s" % (p.returncode, p.stderr.strip()[-300:])
    with open(name % ("result" if why is None else "failed", procs, run, "json"), "w") as f:
        f.write(out if r is not None else json.dumps({"error": why}))
    if why is not None and os.path.exists(trace):
        os.replace(trace, name % ("failed", procs, run, "csv"))
    return (r, None) if why is None else (None, why)


def run_all(args, variants):
    """Interleaved rounds until --runs or the budget; returns the failed runs' descriptions."""
    t0, walls, errors = time.time(), [], []
    for run in range(1, args.runs + 1):
        for procs in (variants if run % 2 else variants[::-1]):
            el = time.time() - t0
            est = statistics.mean(walls) if walls else 0.0
            if walls and el + est > args.budget:  # at least one run
                log("budget: %.0f s used, a run takes about %.1f s: stopping before round %d, %d processes"
                    % (el, est, run, procs))
                return errors
            t1 = time.time()
            r, why = run_one(args, procs, run)
            walls.append(time.time() - t1)
            head = "[%4.0f s] round %2d  %d processes" % (time.time() - t0, run, procs)
            if why is not None:
                errors.append("round %d, %d processes: %s" % (run, procs, why))
                log("%s  FAILED: %s" % (head, why))
                continue
            t = r["timing"]
            log("%s  %9.3f us (raw %.3f us, E_run %.0f ns, offset %+.1f ns)  %.1f s" % (
                head, r["score_ns"] / 1e3, t["raw_score_ns"] / 1e3, t["empty_kernel_run_ns"], t["offset_ns"],
                walls[-1]))
    return errors


# ------------------------------------------------------------------ the stand-in runner

FAKE_BASE = (7500.0, 9100.0, 11700.0, 13100.0)     # the shapes' medians, ns
FAKE_SETS = (-37, -33, -39, -33, -39, 37, 104, 99)  # a fixed shift per buffer set, ns
FAKE_E_GPU = 2931.0
FAKE_WEIGHT = 0.25
FAKE_E_SD = 60.0       # sd of a process's empty-kernel offset
FAKE_SLOPE = 0.85      # the process's kernels move this share of it ...
FAKE_OWN_SD = 10.0     # ... plus an offset of their own
FAKE_NOISE = 15.0      # sd of one timed sample
FAKE_EMPTY_NOISE = 12.0
FAKE_ROUNDS, FAKE_BATCHES = 8, 2   # rounds of the job; batches of 8 per visit


def fake_offsets(procs, run):
    """[(empty-kernel offset, kernels' offset)] of each process of run `run` of the fake with `procs`
    processes (the tests compare the analysis against these)."""
    rnd = random.Random(zlib.crc32(b"offsets|%d|%d" % (procs, run)))
    out = []
    for _ in range(procs):
        u = rnd.gauss(0, FAKE_E_SD)
        out.append((u, FAKE_SLOPE * u + rnd.gauss(0, FAKE_OWN_SD)))
    return out


def fake_eval(procs, run, trace):
    """Write a trace as `eval --trace` would and print the result the runner gives for it."""
    if os.environ.get("KJ_FAKE_FAIL") == "%d:%d" % (procs, run):
        print(json.dumps({"verdict": "compile_error", "mode": "leaderboard", "message": "fake", "score_ns": None}))
        return 1
    rnd = random.Random(zlib.crc32(b"samples|%d|%d" % (procs, run)))
    offs = fake_offsets(procs, run)
    timed, empties, lines = {}, [], []
    batch = {s: 0 for s in range(len(FAKE_BASE))}
    for rd in range(FAKE_ROUNDS):
        p = rd * procs // FAKE_ROUNDS
        u, o = offs[p]
        box_batch = 0
        for s in rnd.sample(range(len(FAKE_BASE)), len(FAKE_BASE)):
            for _ in range(FAKE_BATCHES):
                lane = box_batch % 4
                for k in range(len(FAKE_SETS)):
                    ns = round(FAKE_BASE[s] + o + FAKE_SETS[k] + rnd.gauss(0, FAKE_NOISE), 1)
                    timed.setdefault(s, []).append(ns)
                    lines.append("%d,%d,%d,%d,%d,%d,%d,timed,%.1f" % (s, p, rd, batch[s], k, k, lane, ns))
                ns = round(FAKE_E_GPU + u + rnd.gauss(0, FAKE_EMPTY_NOISE), 1)
                empties.append(ns)
                lines.append("%d,%d,%d,%d,0,-1,%d,empty,%.1f" % (s, p, rd, batch[s], lane, ns))
                batch[s] += 1
                box_batch += 1
    with open(trace, "w") as f:
        f.write(",".join(HEADER) + "\n" + "\n".join(lines) + "\n")
    meds = [median(timed[s]) for s in sorted(timed)]
    e_run = trimmed_mean(empties)
    off = FAKE_WEIGHT * (e_run - FAKE_E_GPU)
    print(json.dumps({
        "verdict": "accepted", "message": "fake", "mode": "leaderboard", "leaderboard": "fake",
        "system": {"gpu": "NVIDIA H200 (fake)"}, "score_ns": geomean([m - off for m in meds]),
        "benchmarks": [{"index": s, "median_ns": m, "corrected_median_ns": m - off} for s, m in enumerate(meds)],
        "timing": {"protocol": "v2", "rounds": FAKE_ROUNDS, "processes": procs, "lanes": 4, "empty_every": 8,
                   "empty_kernel_samples": len(empties), "empty_kernel_run_ns": e_run,
                   "empty_kernel_gpu_ns": FAKE_E_GPU, "corrected": True, "offset_ns": off,
                   "raw_score_ns": geomean(meds), "wall_s": 0.1}}))
    return 0


# ------------------------------------------------------------------ main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernel", help="the kernel file to judge (GPU mode)")
    ap.add_argument("--leaderboard", help="its board (GPU mode)")
    ap.add_argument("--runs", type=int, default=10, help="rounds: runs per variant (default 10)")
    ap.add_argument("--processes", default="4,8",
                    help="comma-separated process counts, 1 to 8: one variant each (default 4,8)")
    ap.add_argument("--budget", type=float, default=500, help="seconds for all runs (default 500)")
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(ROOT, "build", "process_spread"),
                    help="where the runs and table.md go (default $OUT, else build/process_spread)")
    ap.add_argument("--runner", default=os.path.join(ROOT, "bin", "kjudge-runner"), help="default bin/kjudge-runner")
    ap.add_argument("--fake", action="store_true", help="a stand-in runner with a synthetic trace, no GPU (tests)")
    ap.add_argument("--smoke", action="store_true",
                    help="a run of seconds for make test: --fake --runs 2 --processes 2")
    ap.add_argument("--analyze", metavar="DIR", help="run nothing: analyse the traces and results in DIR")
    args = ap.parse_args(argv)
    if args.analyze:
        return analyze(args.analyze)
    if args.smoke:
        args.fake, args.runs, args.processes = True, 2, "2"
    try:
        variants = [int(x) for x in args.processes.split(",")]
    except ValueError:
        variants = []
    if not variants or any(not 1 <= v <= 8 for v in variants) or len(set(variants)) != len(variants):
        ap.error("--processes: distinct numbers from 1 to 8, comma-separated")
    if args.runs < 1:
        ap.error("--runs: at least 1")
    if not args.fake:
        if not args.kernel or not args.leaderboard:
            ap.error("--kernel and --leaderboard are needed (or --analyze DIR, or --fake)")
        if not os.path.isfile(args.kernel):
            ap.error("--kernel %s: no such file" % args.kernel)
        if not os.access(args.runner, os.X_OK):
            ap.error("%s is not built (make bin/kjudge-runner)" % args.runner)
        args.kernel, args.runner = os.path.abspath(args.kernel), os.path.abspath(args.runner)
    args.out = os.path.abspath(args.out)  # the runner runs in ROOT
    os.makedirs(args.out, exist_ok=True)
    for name in os.listdir(args.out):
        if OWN_FILES.match(name):
            os.remove(os.path.join(args.out, name))
    log("process_spread: %s on %s, %d rounds of %s processes, budget %.0f s%s" % (
        args.kernel or "-", args.leaderboard or "-", args.runs, args.processes, args.budget,
        " (fake runner)" if args.fake else ""))
    errors = run_all(args, variants)
    rc = analyze(args.out)
    if errors:
        log("%d runs failed:" % len(errors))
        for e in errors:
            log("  " + e)
    return 1 if errors else rc


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--fake-eval":
        sys.exit(fake_eval(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]))
    sys.exit(main())
