#!/usr/bin/env python3
"""bench/bench_compile_load: does heavy compiling on the same host move a ranked score?

The runners of a host share its CPUs: one runner's compiles (NVRTC in compile
boxes) may run while another takes ranked timing (protocol v2, docs/timing.md
section 4). This bench judges --kernel on --leaderboard in interleaved rounds,
each one `quiet` and one `loaded` run in alternating order, every run a fresh
`kjudge-runner eval KERNEL --leaderboard B --mode leaderboard --json`. For a
loaded run, --load N workers (default: the host's CPUs less 2, at least 1)
start 2 s before the eval and are stopped right after it; each loops
`kjudge-runner compile` on fp8_quant's template.cu with
bench/compile_load_heavy.cuh appended (a legal submission whose templates keep
NVRTC busy for a few seconds) with
KJUDGE_COMPILE_SLOT_DIR in a private folder and KJUDGE_COMPILE_SLOTS=N, so the
load never holds a slot the eval's own compile needs (`compile` takes no slot
today; this keeps it so). Each run records the compiles the workers completed
during the eval (proof that the load was real), /proc/loadavg before and after
it and the share of CPU time busy during it. Stops after --runs rounds or
before the next round would overrun --budget seconds (at least one round).

OUT (--out, else $OUT, else build/compile_load) gets each run's result
(runs/rNN-VARIANT.json), the runs as compile_load.csv and the table as
table.md: per variant the runs, mean score, CV, range, offset, wall time,
compiles and CPU busy; the loaded - quiet difference of the mean score in %
with a 95 % interval (Welch t) and the same for the paired difference within
rounds; the board's published resolution_pct beside it and a verdict: whether
the difference is significant and whether it is larger than the resolution.
--merge CSV... runs nothing and prints the table of earlier calls' runs.

--fake runs a stand-in for kjudge-runner (this script with --fake-runner):
`eval` prints a seeded score, shifted by $KJ_FAKE_LOAD_SHIFT_PCT % while
this bench's load workers are alive (found by their tag in /proc/*/cmdline);
$KJ_FAKE_EVAL=nojson|wrong makes it print no JSON or a wrong answer;
`compile` sleeps 0.1 s and fails with $KJ_FAKE_COMPILE=fail
(tests/api/test_compile_load.py). --smoke is --fake --runs 2 --load 1, a
few seconds (tests/api/test_benches.py).
Bad input (a runner that prints no JSON, a verdict other than accepted, a
--merge CSV without the needed columns, a bad --load) exits 1 with a message.

Sizing: a v2 leaderboard run of fast.cu takes about 6-10 s on an H200
(bench/bench_score_stability.py), a round with the load's lead and stop about
20-25 s: --runs 12 fit in about 5 minutes. Python 3 standard library only.
"""
import ctypes, json, math, os, random, shutil, signal, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import (BenchError, eval_accepted, paired_checks, paired_parser, read_csv_rows, run_to_csv,  # noqa: E402
                    runner_env, score_cells)
from bench_score_stability import gpu_type, resolution_of  # noqa: E402

LOAD_WEIGHT = os.path.join(ROOT, "bench", "compile_load_heavy.cuh")
LOAD_BOARD = "fp8_quant"     # the board whose template.cu carries the weight
LEAD_S = 2.0                 # the load runs this long before a loaded eval starts
EVAL_TIMEOUT = 180           # a leaderboard run takes 5-20 s, longer on a loaded host
COMPILE_TIMEOUT = 90         # the compile box's own wall limit is 60 s
FIELDS = ["round", "variant", "seq", "board", "kernel", "verdict", "score_ns", "raw_score_ns", "offset_ns",
          "eval_wall_s", "workers", "compiles", "compile_fails", "load_before", "load_after", "cpu_busy_pct",
          "gpu", "driver"]
NEEDED = {"round", "variant", "score_ns", "eval_wall_s", "compiles", "board", "gpu"}


Bad = BenchError  # input the bench cannot measure with: message to print, exit 1


log = lambda msg: print(msg, flush=True)  # noqa: E731


# ------------------------------------------------------------------ host readings

def host():
    """(1-minute load average, busy jiffies of all CPUs, all jiffies) from /proc."""
    with open("/proc/loadavg") as f, open("/proc/stat") as g:
        la, v = float(f.read().split()[0]), [int(x) for x in g.readline().split()[1:9]]
    return la, sum(v) - v[3] - v[4], sum(v)


def default_load():
    return max(1, len(os.sched_getaffinity(0)) - 2)


def cmdlines_with(*words):
    """Pids of processes (not this one) whose command line holds every word."""
    out = []
    for d in (d for d in os.listdir("/proc") if d.isdigit() and int(d) != os.getpid()):
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cl = f.read().decode(errors="replace").split("\0")
            if all(w in cl for w in words):
                out.append(int(d))
        except OSError:
            pass
    return out


# ------------------------------------------------------------------ the load

def runner_cmd(args, seq, *rest):
    if args.fake:
        return [sys.executable, os.path.abspath(__file__), "--fake-runner", args.tag, str(seq)] + list(rest)
    return [args.runner] + list(rest)


def load_source(folder):
    """Write the load's source into folder and return its path: LOAD_BOARD's
    template.cu (a correct submission) with compile_load_heavy.cuh after it."""
    path = os.path.join(folder, "load.cu")
    try:
        with open(os.path.join(ROOT, "leaderboards", LOAD_BOARD, "template.cu")) as t, open(LOAD_WEIGHT) as w, \
                open(path, "w") as out:
            out.write(t.read() + "\n" + w.read())
    except OSError as e:
        raise Bad("the load's source: %s" % e)
    return path


class Load:
    """N compile workers (this script with --load-worker TAG LOG CMD), each its own
    process writing one line per finished compile: start end ok."""

    def __init__(self, args, tmp):
        self.args, self.tmp, self.procs, self.logs = args, tmp, [], []
        self.slots = os.path.join(tmp, "slots")
        os.makedirs(self.slots, exist_ok=True)
        self.source = load_source(tmp)

    def start(self, rnd):
        env = runner_env()
        env["KJUDGE_COMPILE_SLOT_DIR"] = self.slots
        env["KJUDGE_COMPILE_SLOTS"] = str(self.args.load)
        cmd = runner_cmd(self.args, 0, "compile", self.source, "--leaderboard", LOAD_BOARD)
        self.logs = [os.path.join(self.tmp, "r%02d-w%02d.log" % (rnd, i)) for i in range(self.args.load)]
        libc = ctypes.CDLL(None)  # a worker gets SIGTERM when the bench dies (PR_SET_PDEATHSIG)
        self.procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--load-worker", self.args.tag, lg,
                                        json.dumps(cmd)], cwd=ROOT, env=env, preexec_fn=lambda: libc.prctl(1, 15),
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for lg in self.logs]

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []

    def count(self, t0, t1):
        """(compiles finished within [t0, t1], failed ones, the first failure's message)."""
        lines = [ln for lg in self.logs if os.path.exists(lg) for ln in open(lg).read().splitlines()]
        msg = next((ln[1:].strip() for ln in lines if ln.startswith("#")), "")
        ends = [ln.split()[1:] for ln in lines if not ln.startswith("#")]
        within = [good for end, good in ends if t0 <= float(end) <= t1]
        return within.count("1"), within.count("0"), msg


def load_worker(tag, logpath, cmd_json):
    """Compile again and again until SIGTERM (tag: only in this command line)."""
    cmd = json.loads(cmd_json)
    parent = os.getppid()
    child = [None]

    def on_term(signum, frame):
        if child[0] is not None and child[0].poll() is None:
            try:
                os.killpg(child[0].pid, signal.SIGKILL)  # the runner; its compile box dies with it
            except ProcessLookupError:
                pass
            child[0].wait()
        raise SystemExit(0)
    signal.signal(signal.SIGTERM, on_term)
    term = {signal.SIGTERM}
    with open(logpath, "a") as out:
        while os.getppid() == parent:
            t0 = time.time()
            signal.pthread_sigmask(signal.SIG_BLOCK, term)  # no SIGTERM between the fork and child[0]
            child[0] = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        start_new_session=True,
                                        preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_UNBLOCK, term))
            signal.pthread_sigmask(signal.SIG_UNBLOCK, term)
            try:
                so, se = child[0].communicate(timeout=COMPILE_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(child[0].pid, signal.SIGKILL)
                so, se = child[0].communicate()
            try:
                good = child[0].returncode == 0 and json.loads(so).get("ok") is True
            except ValueError:
                good = False
            if not good:
                out.write("# compile exit %s: %s\n" % (child[0].returncode, " ".join((se or so).split())[-300:]))
            out.write("%.3f %.3f %d\n" % (t0, time.time(), good))
            out.flush()
    return 0


# ------------------------------------------------------------------ the runs

def run_eval(args, seq):
    """One eval in a fresh process: (result dict, stdout) or Bad."""
    cmd = runner_cmd(args, seq, "eval", args.kernel, "--leaderboard", args.leaderboard, "--mode", "leaderboard",
                     "--json")
    r, p = eval_accepted(cmd, EVAL_TIMEOUT)
    return r, p.stdout


def one_run(args, load, rnd, variant, seq):
    if variant == "loaded":
        load.start(rnd)
        time.sleep(LEAD_S)
    try:
        (la0, b0, n0), t0 = host(), time.time()
        r, text = run_eval(args, seq)
        t1, (la1, b1, n1) = time.time(), host()
    finally:
        if variant == "loaded":
            load.stop()
    with open(os.path.join(args.out, "runs", "r%02d-%s.json" % (rnd, variant)), "w") as f:
        f.write(text)
    ok, bad, msg = load.count(t0, t1) if variant == "loaded" else (0, 0, "")
    if variant == "loaded" and ok == 0:
        raise Bad("no load compile finished during the eval (%d failed)%s" % (bad, ": " + msg if msg else ""))
    t, sysj = r.get("timing") or {}, r.get("system") or {}
    return {"round": rnd, "variant": variant, "seq": seq, "board": args.leaderboard,
            "kernel": os.path.relpath(args.kernel, ROOT), "verdict": r["verdict"], "score_ns": r["score_ns"],
            "raw_score_ns": t.get("raw_score_ns", r["score_ns"]), "offset_ns": t.get("offset_ns"),
            "eval_wall_s": round(t1 - t0, 3), "workers": args.load if variant == "loaded" else 0,
            "compiles": ok, "compile_fails": bad, "load_before": la0, "load_after": la1,
            "cpu_busy_pct": round(100.0 * (b1 - b0) / max(1, n1 - n0), 1),
            "gpu": sysj.get("gpu", ""), "driver": sysj.get("driver", "")}


def run_all(args, writer, rows):
    t_start = time.time()
    tmp = tempfile.mkdtemp(prefix="kjudge-cload-")
    load = Load(args, tmp)
    seq, longest = 0, 0.0
    try:
        for rnd in range(1, args.runs + 1):
            el = time.time() - t_start
            if rnd > 1 and el + longest > args.budget:
                log("budget: %.0f s used, a round takes up to %.0f s: stopping after %d rounds"
                    % (el, longest, rnd - 1))
                break
            t_round = time.time()
            for variant in (("quiet", "loaded") if rnd % 2 else ("loaded", "quiet")):
                seq += 1
                row = one_run(args, load, rnd, variant, seq)
                rows.append(row)
                writer.writerow(row)
                log("[%4.0f s] round %2d %-6s %10.3f us (raw %.3f, offset %+.0f ns)  %5.1f s  load %.1f->%.1f  busy "
                    "%3.0f %%  %d compiles" % (time.time() - t_start, rnd, variant, row["score_ns"] / 1e3,
                                               row["raw_score_ns"] / 1e3, row["offset_ns"] or 0, row["eval_wall_s"],
                                               row["load_before"], row["load_after"], row["cpu_busy_pct"],
                                               row["compiles"]))
            longest = max(longest, time.time() - t_round)
    finally:
        load.stop()
        shutil.rmtree(tmp, ignore_errors=True)


# ------------------------------------------------------------------ the analysis

def t_quantile(p, df):
    """The p quantile (p > 0.5) of Student's t with df degrees of freedom: the
    density integrated by Simpson's rule, the bound found by bisection."""
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)

    def cdf(x, n=400):
        h = x / n
        f = [c * (1 + (i * h) ** 2 / df) ** (-(df + 1) / 2) for i in range(n + 1)]
        return 0.5 + h / 3 * (f[0] + f[-1] + 4 * sum(f[1:-1:2]) + 2 * sum(f[2:-1:2]))
    lo, hi = 0.0, 1.0
    while cdf(hi) < p:
        lo, hi = hi, hi * 2
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < p else (lo, mid)
    return (lo + hi) / 2


def welch(a, b):
    """(mean(a) - mean(b), half-width of its 95 % interval, df); None when a side has < 2."""
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    d = statistics.mean(a) - statistics.mean(b)
    if va + vb == 0:
        return d, 0.0, float(len(a) + len(b) - 2)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return d, t_quantile(0.975, df) * math.sqrt(va + vb), df


def paired(ds):
    """(mean of ds, half-width of its 95 % interval, df); None with fewer than 2."""
    if len(ds) < 2:
        return None
    return statistics.mean(ds), t_quantile(0.975, len(ds) - 1) * statistics.stdev(ds) / math.sqrt(len(ds)), len(ds) - 1


def judge(d, hw, res):
    """The verdict words for a difference d +- hw (in %) against the resolution res."""
    sig = "significant" if abs(d) > hw else "not significant"
    if res is None:
        return sig + "; the board publishes no resolution for this GPU"
    if abs(d) - hw > res:
        return sig + "; larger than the resolution %.2f %% (the whole interval beyond it)" % res
    if abs(d) + hw < res:
        return sig + "; smaller than the resolution %.2f %% (the whole interval within it)" % res
    if abs(d) > res:
        return sig + "; larger than the resolution %.2f %%, but the interval reaches within it" % res
    return sig + "; within the resolution %.2f %%, but the interval reaches past it (more rounds)" % res


def report(rows, out_dir):
    """Print the tables and verdicts of rows, also into out_dir/table.md; 0 when both
    variants have at least two runs."""
    lines = []
    emit = lines.append
    first = rows[0] if rows else {"kernel": "?", "board": "", "gpu": "", "driver": ""}
    gpu, board = gpu_type(first["gpu"]), first["board"]
    res = resolution_of(board, gpu) if board else None
    emit("compile load on %s, board %s, GPU %s (%s), driver %s" % (first["kernel"], board or "?", gpu or "?",
                                                                   first["gpu"], first.get("driver") or "?"))
    emit("")
    emit("| variant | runs | mean score us | CV % | range % | mean offset ns | s per run | workers "
         "| compiles per run (min) | CPU busy % | load before -> after |")
    emit("|---|---|---|---|---|---|---|---|---|---|---|")
    by = {v: [r for r in rows if r["variant"] == v] for v in ("quiet", "loaded")}
    mean = lambda rs, k: statistics.mean(r.get(k) or 0 for r in rs)  # noqa: E731
    for v, rs in by.items():
        s = [r["score_ns"] for r in rs]
        if not s:
            emit("| %s | 0 |%s" % (v, " - |" * 9))
            continue
        emit("| %s | %s | %.1f | %d | %.1f (%d) | %.0f | %.2f -> %.2f |" % (
            v, score_cells(rs), mean(rs, "eval_wall_s"),
            max(r.get("workers") or 0 for r in rs), mean(rs, "compiles"), min(r["compiles"] for r in rs),
            mean(rs, "cpu_busy_pct"), mean(rs, "load_before"), mean(rs, "load_after")))
    q, ld = [r["score_ns"] for r in by["quiet"]], [r["score_ns"] for r in by["loaded"]]
    pairs = {}
    for r in rows:
        pairs.setdefault((r.get("_src", 0), r["round"]), {})[r["variant"]] = r["score_ns"]
    ds = [100 * (p["loaded"] - p["quiet"]) / p["quiet"] for p in pairs.values() if len(p) == 2]
    w, pw = welch(ld, q), paired(ds)
    if w:  # in % of the quiet mean
        w = (100 * w[0] / statistics.mean(q), 100 * w[1] / statistics.mean(q), w[2])
    found = [("Welch", "mean score (Welch t)", w), ("paired", "paired within %d rounds" % len(ds), pw)]
    emit("")
    emit("| loaded - quiet | difference %% | 95 %% interval %% | df | published resolution_pct (%s) |" % (gpu or "?"))
    emit("|---|---|---|---|---|")
    ress = "%.2f" % res if res is not None else "none"
    for _, label, x in found:
        emit("| %s | %s | %s | %s | %s |" % ((label, "%+.3f" % x[0], "%+.3f .. %+.3f" % (x[0] - x[1], x[0] + x[1]),
                                             "%.1f" % x[2], ress) if x else (label, "-", "-", "-", ress)))
    emit("")
    for name, _, x in found:
        emit("verdict (%s): loaded - quiet %+.3f %% +- %.3f %%: %s" % (name, x[0], x[1], judge(x[0], x[1], res))
             if x else "verdict (%s): not enough runs (at least 2 of each variant, in 2 rounds)" % name)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "table.md"), "w") as f:
        f.write(text)
    return 0 if w else 1


def read_rows(paths):
    """The runs of earlier calls' compile_load.csv files, typed; Bad when one lacks columns."""
    rows = read_csv_rows(paths, NEEDED, ("score_ns", "raw_score_ns", "offset_ns", "eval_wall_s", "load_before",
                                         "load_after", "cpu_busy_pct", "round", "compiles", "workers"),
                         "compile_load.csv")
    for r in rows:
        if r["variant"] not in ("quiet", "loaded") or r["score_ns"] is None or r["round"] is None:
            raise Bad("%s: variant %r, or no score or round" % (r["_line"], r["variant"]))
        r["compiles"] = int(r["compiles"] or 0)
    return rows


def main(argv=None):
    ap = paired_parser("compile_load", __doc__, "rounds of one quiet and one loaded run (default 8)")
    ap.add_argument("--load", default=str(default_load()),
                    help="compile workers beside a loaded run (default: CPUs less 2, here %d)" % default_load())
    args = ap.parse_args(argv)
    try:
        if args.merge:
            return report(read_rows(args.merge), args.out)
        if args.smoke:
            args.load = "1"
        paired_checks(args, ("runs", "load", "budget"))
        args.tag = "kjcload-%d" % os.getpid()
        os.makedirs(os.path.join(args.out, "runs"), exist_ok=True)
        log("compile_load: %s on %s, up to %d rounds, %d compile workers beside each loaded run, budget %d s%s"
            % (os.path.relpath(args.kernel, ROOT), args.leaderboard, args.runs, args.load, args.budget,
               " (fake runner)" if args.fake else ""))
        return run_to_csv(os.path.join(args.out, "compile_load.csv"), FIELDS, lambda w, rows: run_all(args, w, rows), report,
                          args.out)
    except Bad as e:
        print("compile_load: %s" % e, file=sys.stderr, flush=True)
        return 1


# ------------------------------------------------------------------ the stand-in runner

def fake_runner(tag, seq, argv):
    """kjudge-runner eval/compile as the bench calls them, without a GPU."""
    if argv[0] == "compile":
        time.sleep(0.1)
        bad = os.environ.get("KJ_FAKE_COMPILE") == "fail"
        print(json.dumps({"ok": not bad, "log": "fake: too heavy" if bad else "", "seconds": 0.1, "kernels": []}))
        return 1 if bad else 0
    how = os.environ.get("KJ_FAKE_EVAL", "")
    if how == "nojson":
        print("kjudge-runner: cuInit failed", file=sys.stderr)
        return 2
    if how == "wrong":
        print(json.dumps({"verdict": "wrong_answer", "message": "fake mismatch", "score_ns": None}))
        return 1
    time.sleep(0.6)
    loaded = bool(cmdlines_with("--load-worker", tag))
    rnd = random.Random(seq * 7919 + 17)
    shift = float(os.environ.get("KJ_FAKE_LOAD_SHIFT_PCT", "0")) if loaded else 0.0
    off = rnd.gauss(0, 10) + (25 if loaded else 0)
    score = 7000.0 * (1 + rnd.gauss(0, 0.001)) * (1 + shift / 100)
    print(json.dumps({"verdict": "accepted", "message": "fake", "score_ns": score, "mode": "leaderboard",
                      "timing": {"protocol": "v2", "corrected": True, "offset_ns": off, "raw_score_ns": score + off},
                      "system": {"gpu": "NVIDIA H200", "driver": "580.159.04"}}))
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "--fake-runner":
        sys.exit(fake_runner(sys.argv[2], int(sys.argv[3]), sys.argv[4:]))
    if len(sys.argv) == 5 and sys.argv[1] == "--load-worker":
        sys.exit(load_worker(*sys.argv[2:5]))
    sys.exit(main())
