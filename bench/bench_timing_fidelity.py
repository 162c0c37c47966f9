#!/usr/bin/env python3
"""bench/bench_timing_fidelity: how far kjudge's timings are from Nsight Compute's.

1. For fp8_quant's template.cu and examples/fast.cu, each benchmark shape's
   median from a normal `kjudge-runner eval --mode benchmark`, next to the
   median gpu__time_duration that ncu (--clock-control none, caches flushed
   before each kernel, like our cold protocol) measures for the same kernel
   launches with the same grid, and the ratio. The empty kernel: our
   baseline against ncu's time for the same kj_empty launches.
2. The coefficient of variation of the score over back-to-back leaderboard
   runs of examples/fast.cu.
   Next to the ranked median (events around one launch, raw) the table shows
   the secondary figures of TIMING.md items 7 and 11: the median less the
   empty event pair's overhead ("adjusted"), and for shapes under 20 us the
   CUDA-graph measurement (many launches over rotating buffers, per launch).
Goals: within 2% of ncu above 20 us, within 0.5 us below; score CV < 0.5%.
KJ_BENCH_RUNS sets the runs of part 2 (0: none), $NCU the ncu to run.

--gpu-time (docs/timing.md 8) adds, for the same files: each shape's
GPU-time median (CUPTI's kernel spans in the run box) beside ncu's median
and beside CUPTI measured by a consumer of its own (build/cupti_ref.so,
bench/cupti_ref.c, injected into a plain eval with the box's recording
off), goal within 0.2 us or 2 % of that reference; in part 2 the CV of the
GPU-time score beside the event score's (goal < 0.2 %); and the wall time
of a fp8_quant leaderboard run with two processes (goal < 5 s). Needs
`make build/cupti_ref.so` (carry it and libcupti.so.13 in .gpulibs/ to a
host without a compiler). The H200 command (one device call, < 9 min):
  KJ_BENCH_RUNS=8 python3 bench/bench_timing_fidelity.py --gpu-time

--smoke (make test, tests/api/test_benches.py) needs no GPU and measures
nothing (it includes --gpu-time, whose CUPTI reference is then this script
with --fake-cupti): the runner's results are made up (fake_result) and ncu is this
script with --fake-ncu, which writes those launches as ncu's raw CSV to
its --log-file; so the ncu command line, the report's parsing, the
matching of launches and both tables run, with two runs in part 2.
"""
import argparse, csv, io, json, os, statistics, subprocess, sys, tempfile, time
from bench_common import LB, ROOT, RUNNER, evaluate

RUNS = int(os.environ.get("KJ_BENCH_RUNS", "10"))
NCU = [os.environ.get("NCU", "ncu")]
CUPTI_REF = os.path.join(ROOT, "build", "cupti_ref.so")
REF_CMD = None          # None: RUNNER under CUPTI_REF; --smoke: this script with --fake-cupti
GOAL_REF_US, GOAL_REF_REL = 0.2, 0.02   # GPU-time median against the separate CUPTI reference
GOAL_GPU_CV = 0.2       # percent
GOAL_FEW_WALL = 5.0     # seconds, a fp8_quant leaderboard run with two processes
SEEN = {}               # path: (benchmark-mode result, ncu's times) of fidelity()


def grid_size(launch):
    g = launch["grid"]
    return g[0] * g[1] * g[2]


def ncu_times(path):
    """{(kernel name, grid size): [ns, ...]} for the launches of one eval under ncu."""
    log = tempfile.mktemp(suffix=".csv")
    # ncu follows the run box through environment variables and files of its
    # own, so the profiled run (only it; our medians come from normal runs in
    # the full box) keeps the environment and leaves the box's walls down.
    env = dict(os.environ, KJUDGE_NO_BLOCKER="1", KJUDGE_RBOX_SKIP="ns,fs,creds,seccomp,cgroup,env")
    cmd = NCU + ["--clock-control", "none", "--cache-control", "all", "--target-processes", "all",
           "-k", "regex:^(quant|quant_fast|kj_empty)$", "--metrics", "gpu__time_duration.sum,launch__grid_size",
           "--csv", "--page", "raw", "--print-units", "base", "--log-file", log,
           RUNNER, "eval", path, "--leaderboard", "fp8_quant", "--mode", "benchmark", "--samples", "30", "--compile-unboxed",
           "--warmup", "0", "--json"]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    text = open(log).read() if os.path.exists(log) else ""
    start = text.find('"ID"')
    if start < 0:
        try:
            r = json.loads(p.stdout)
            why = "verdict %s: %s\n%s" % (r.get("verdict"), r.get("message"),
                                          (r.get("compile") or {}).get("log", "")[:2000])
        except ValueError:
            why = p.stdout[-2000:]
        sys.exit("ncu produced no report (exit %d):\n%s\n%s\n%s" % (p.returncode, text[-3000:], p.stderr[-2000:], why))
    rows = list(csv.DictReader(io.StringIO(text[start:])))
    out = {}
    for r in rows:
        try:  # ncu may print thousands separators
            ns = float(r["gpu__time_duration.sum"].replace(",", ""))
            grid = int(float(r["launch__grid_size"].replace(",", "")))
        except (KeyError, ValueError, AttributeError):
            continue  # the units row
        name = r.get("Kernel Name", "").split("(")[0].strip()
        out.setdefault((name, grid), []).append(ns)
    if not out:
        sys.exit("could not read ncu's report; columns: %s; first row: %s" % (list(rows[0].keys()) if rows else [],
                                                                        rows[:2]))
    return out


def fidelity(evaluate=evaluate):
    print("| file | shape | kjudge median us | adjusted us | graph us | ncu median us | ratio | diff us | adjusted diff us | graph diff us | n ncu |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    empty = None
    ours = None
    for name in ("template.cu", "examples/fast.cu"):
        path = os.path.join(LB, name)
        ours = evaluate(path, "benchmark")
        theirs = ncu_times(path)
        SEEN[path] = (ours, theirs)  # --gpu-time reads the same runs again
        for b in ours["benchmarks"]:
            la = b["launches"][0]
            key = (la["kernel"], grid_size(la))
            t = theirs.get(key)
            if not t:
                print("| %s | %s | %.3f | | | (no ncu sample for %s; ncu saw %s) | | | | | |" % (
                    name, b["shape"], b["median_ns"] / 1e3, key, sorted(theirs)[:6]))
                continue
            m = statistics.median(t)
            adj = b.get("adjusted_median_ns")
            g = (b.get("graph") or {}).get("ns")
            fmt = lambda v: "%.3f" % (v / 1e3) if v is not None else "-"
            dif = lambda v: "%+.3f" % ((v - m) / 1e3) if v is not None else "-"
            print("| %s | %s | %.3f | %s | %s | %.3f | %.4f | %+.3f | %s | %s | %d |" % (
                name, " ".join("%s=%d" % kv for kv in b["shape"].items()), b["median_ns"] / 1e3,
                fmt(adj), fmt(g), m / 1e3, b["median_ns"] / m, (b["median_ns"] - m) / 1e3,
                dif(adj), dif(g), len(t)))
        e = theirs.get(("kj_empty", 1))
        if e:
            empty = (ours["baseline_empty_kernel_ns"], statistics.median(e), len(e))
    if empty:
        print("| empty kernel | 1x1 | %.3f | | | %.3f | %.4f | %+.3f | | | %d |" % (
            empty[0] / 1e3, empty[1] / 1e3, empty[0] / empty[1], (empty[0] - empty[1]) / 1e3, empty[2]))
    if ours is not None:
        print("empty event pair (the events' own overhead): %.3f us" %
              (ours.get("baseline_event_pair_ns", 0) / 1e3))


def stability(evaluate=evaluate, gpu_time=False):
    scores, gscores = [], []
    for _ in range(RUNS):
        r = evaluate(os.path.join(LB, "examples", "fast.cu"), "leaderboard")
        if r.get("verdict") != "accepted":
            sys.exit("fast.cu not accepted: %s" % r.get("message"))
        scores.append(r["score_ns"])
        t = r.get("timing") or {}
        if t.get("gpu_time") and isinstance(t.get("gpu_score_ns"), (int, float)):
            gscores.append(t["gpu_score_ns"])
    mean = statistics.mean(scores)
    cv = statistics.stdev(scores) / mean if len(scores) > 1 else 0.0
    print("\n| runs | score mean us | min us | max us | CV |\n|---|---|---|---|---|")
    print("| %d | %.4f | %.4f | %.4f | %.3f%% |" % (len(scores), mean / 1e3, min(scores) / 1e3,
                                                   max(scores) / 1e3, 100 * cv))
    print("scores (us): " + " ".join("%.4f" % (s / 1e3) for s in scores))
    if not gpu_time:
        return
    if len(gscores) != len(scores) or len(gscores) < 2:
        print("GPU-time score: in %d of %d runs: no CV" % (len(gscores), len(scores)))
        return
    gm = statistics.mean(gscores)
    gcv = 100 * statistics.stdev(gscores) / gm
    print("\n| score | runs | mean us | CV %% | goal CV < %.1f %% |\n|---|---|---|---|---|" % GOAL_GPU_CV)
    print("| events (ranked) | %d | %.4f | %.3f | - |" % (len(scores), mean / 1e3, 100 * cv))
    print("| GPU time | %d | %.4f | %.3f | %s |" % (len(gscores), gm / 1e3, gcv, "PASS" if gcv < GOAL_GPU_CV else "FAIL"))
    print("GPU-time scores (us): " + " ".join("%.4f" % (s / 1e3) for s in gscores))


def cupti_times(path):
    """{(kernel name, grid size): [ns, ...]} from CUPTI in a consumer of its own (bench/cupti_ref.c)
    injected into a plain benchmark-mode eval of path; the box's own recording off."""
    log = tempfile.mktemp(suffix=".csv")
    env = dict(os.environ, KJUDGE_GPU_TIME="0", KJ_CUPTI_REF_OUT=log, CUDA_INJECTION64_PATH=CUPTI_REF,
               KJUDGE_RBOX_SKIP="ns,fs,creds,seccomp,cgroup,env")
    args = ["eval", path, "--leaderboard", "fp8_quant", "--mode", "benchmark", "--samples", "30",
            "--compile-unboxed", "--warmup", "0", "--json"]
    if REF_CMD is None and not os.path.exists(CUPTI_REF):
        sys.exit("%s is missing: make build/cupti_ref.so (here, or carry it)" % CUPTI_REF)
    cmd = (REF_CMD or [RUNNER]) + args
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    out = {}
    try:
        lines = open(log).read().splitlines()
    except OSError:
        sys.exit("the CUPTI reference wrote nothing (exit %d): %s" % (p.returncode, p.stderr[-1500:]))
    for ln in lines:
        parts = ln.rsplit(",", 3)
        if len(parts) != 4:
            continue
        try:
            grid, start, end = int(parts[1]), int(parts[2]), int(parts[3])
        except ValueError:
            continue
        out.setdefault((parts[0].split("(")[0].strip(), grid), []).append(float(end - start))
    os.unlink(log)
    return out


def gpu_fidelity(evaluate=evaluate):
    """The GPU-time medians of a normal benchmark-mode eval beside ncu's and beside the
    separate CUPTI reference's, per shape, with the goal marked."""
    print("\n| file | shape | event median us | GPU-time median us | ncu median us | GPU - ncu us | "
          "CUPTI ref median us | GPU - ref us | goal: within %.1f us or %.0f %% of ref |" % (
              GOAL_REF_US, 100 * GOAL_REF_REL))
    print("|---|---|---|---|---|---|---|---|---|")
    fails = 0
    for name in ("template.cu", "examples/fast.cu"):
        path = os.path.join(LB, name)
        ours, ncu = SEEN.get(path) or (evaluate(path, "benchmark"), None)
        t = ours.get("timing") or {}
        if not t.get("gpu_time"):
            print("| %s | no GPU time: %s | | | | | | | FAIL |" % (name, t.get("gpu_time_note", "?")))
            fails += 1
            continue
        ncu = ncu if ncu is not None else ncu_times(path)
        ref = cupti_times(path)
        for b in ours["benchmarks"]:
            la = b["launches"][0]
            key = (la["kernel"], grid_size(la))
            g = b.get("gpu_median_ns")
            n = statistics.median(ncu[key]) if ncu.get(key) else None
            r = statistics.median(ref[key]) if ref.get(key) else None
            ok = g is not None and r is not None and (abs(g - r) <= GOAL_REF_US * 1e3 or abs(g - r) <= GOAL_REF_REL * r)
            fails += not ok
            f = lambda v: "%.3f" % (v / 1e3) if v is not None else "-"
            d = lambda v: "%+.3f" % ((g - v) / 1e3) if v is not None and g is not None else "-"
            print("| %s | %s | %.3f | %s | %s | %s | %s | %s | %s |" % (
                name, " ".join("%s=%d" % kv for kv in b["shape"].items()), b["median_ns"] / 1e3, f(g), f(n), d(n),
                f(r), d(r), "PASS" if ok else "FAIL"))
    print("goal: GPU-time medians within %.1f us or %.0f %% of the separate CUPTI reference: %s" % (
        GOAL_REF_US, 100 * GOAL_REF_REL, "PASS" if not fails else "FAIL (%d shapes)" % fails))


def few_processes(evaluate=evaluate):
    """Wall time of a fp8_quant fast leaderboard run with eight and with two processes."""
    print("\n| processes | wall s | score us | GPU-time score us |\n|---|---|---|---|")
    walls = {}
    for procs in ("8", "2"):
        t0 = time.time()
        r = evaluate(os.path.join(LB, "examples", "fast.cu"), "leaderboard", "--processes", procs)
        walls[procs] = time.time() - t0
        t = r.get("timing") or {}
        print("| %s | %.2f | %.4f | %s |" % (procs, walls[procs], r.get("score_ns", float("nan")) / 1e3,
                                            "%.4f" % (t["gpu_score_ns"] / 1e3)
                                            if isinstance(t.get("gpu_score_ns"), (int, float)) else "-"))
    print("goal: fp8_quant leaderboard run under %.0f s with two processes: %s (%.2f s; eight: %.2f s)" % (
        GOAL_FEW_WALL, "PASS" if walls["2"] < GOAL_FEW_WALL else "FAIL", walls["2"], walls["8"]))


# ------------------------------------------------------------------ the --smoke stand-ins

SMOKE_SHAPES = ((256, 4096), (256, 8192), (4096, 7168))  # (T, H), GS=128: fp8_quant's benchmark shapes


def fake_result(path, mode, *extra, env=None):
    """A made-up result of `kjudge-runner eval path --mode mode --json` (no GPU):
    benchmark mode one entry per shape with one launch of quant (quant_fast for
    examples/fast.cu), leaderboard mode a score."""
    fast = path.endswith("fast.cu")
    if mode == "leaderboard":
        FAKE_RUNS.append(1)  # the GPU-time score moves a little from run to run
        return {"verdict": "accepted", "score_ns": 15574.0 + len(extra),
                "timing": {"gpu_time": True, "gpu_score_ns": 13800.0 + len(extra) + 2 * len(FAKE_RUNS),
                           "gpu_time_note": "fake"}}
    benchmarks = []
    for t, h in SMOKE_SHAPES:
        ns = (1.0 if fast else 2.0) * (2000.0 + t * h / 200.0)
        benchmarks.append({"shape": {"T": t, "H": h, "GS": 128}, "median_ns": ns, "adjusted_median_ns": ns - 1280.0,
                           "graph": {"ns": ns - 1500.0} if ns < 20000 else None,
                           "launches": [{"kernel": "quant_fast" if fast else "quant",
                                         "grid": [t * h // 128 // 8, 1, 1]}]})
    for b in benchmarks:
        b["gpu_median_ns"] = 0.9 * b["median_ns"] + 50.0  # beside ncu's 0.9 x, the reference's
    return {"verdict": "accepted", "benchmarks": benchmarks, "baseline_empty_kernel_ns": 2912.0,
            "baseline_event_pair_ns": 1280.0, "timing": {"gpu_time": True, "gpu_time_note": "fake"}}


FAKE_RUNS = []


def fake_cupti(argv):
    """The CUPTI reference as cupti_times() runs it, without a GPU: the launches of
    fake_result, each 0.9 x its median, five samples, appended to $KJ_CUPTI_REF_OUT."""
    path = argv[argv.index("eval") + 1]
    with open(os.environ["KJ_CUPTI_REF_OUT"], "a") as f:
        for b in fake_result(path, "benchmark")["benchmarks"]:
            la = b["launches"][0]
            for k in range(5):
                f.write("%s,%d,%d,%d\n" % (la["kernel"], grid_size(la), 1000, 1000 + int(0.9 * b["median_ns"]) + k))
    print(json.dumps({"verdict": "accepted"}))
    return 0


def fake_ncu(argv):
    """ncu as ncu_times() runs it, without a GPU: the launches of fake_result
    (each 0.9 x its median, three samples) and three empty kernels, written
    to --log-file as ncu's raw CSV page with its units row."""
    log, path = argv[argv.index("--log-file") + 1], argv[argv.index("eval") + 1]
    w = io.StringIO()
    out = csv.writer(w, quoting=csv.QUOTE_ALL)
    out.writerow(["ID", "Kernel Name", "gpu__time_duration.sum", "launch__grid_size"])
    out.writerow(["", "", "nsecond", ""])
    n = 0
    for b in fake_result(path, "benchmark")["benchmarks"]:
        la = b["launches"][0]
        for k in range(3):
            out.writerow([n, "%s(const float *, float *, float *, int, int, int)" % la["kernel"],
                          "%.0f" % (0.9 * b["median_ns"] + k), "{:,}".format(grid_size(la))])
            n += 1
    for k in range(3):
        out.writerow([n, "kj_empty()", "%d" % (1632 + k), "1"])
        n += 1
    with open(log, "w") as f:
        f.write("==PROF== Connected to process 1\n" + w.getvalue())
    print(json.dumps({"verdict": "accepted"}))
    return 0


def main():
    global RUNS, NCU
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true", help="made-up results and a stand-in ncu, no GPU (make test)")
    ap.add_argument("--gpu-time", action="store_true",
                    help="also the GPU-time medians against ncu and a separate CUPTI consumer, the GPU-time "
                         "score's CV, and the wall time with two processes (docs/timing.md 8)")
    args = ap.parse_args()
    global REF_CMD
    ev = evaluate
    if args.smoke:  # the --gpu-time parts too: every table runs
        args.gpu_time = True
        RUNS, NCU, ev = 2, [sys.executable, os.path.abspath(__file__), "--fake-ncu"], fake_result
        REF_CMD = [sys.executable, os.path.abspath(__file__), "--fake-cupti"]
        print("smoke run: made-up results and a stand-in ncu; nothing here is measured")
    fidelity(ev)
    if RUNS > 0:
        stability(ev, args.gpu_time)
    if args.gpu_time:
        gpu_fidelity(ev)
        few_processes(ev)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--fake-ncu":
        sys.exit(fake_ncu(sys.argv[2:]))
    if len(sys.argv) > 1 and sys.argv[1] == "--fake-cupti":
        sys.exit(fake_cupti(sys.argv[2:]))
    main()
