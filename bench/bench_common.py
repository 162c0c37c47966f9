"""Helpers shared by the benchmarks: paths, running the runner, and the
tests' own harness (tests/lib: the HTTP client and a real server with a
real runner on GPU 0)."""
import argparse, csv, json, math, os, statistics, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "lib"))
from kjhttp import free_port, http, submit, wait_runner  # noqa: E402,F401  (shared with the tests)
from kjservice import ROOT, RUNNER, BIN as SERVER, Service as _Service  # noqa: E402,F401

LB = os.path.join(ROOT, "leaderboards", "fp8_quant")


def runner_env():
    """The environment for a kjudge-runner started here: this one, with the
    checkout's .gpulibs (libcjson and libmicrohttpd for a GPU host without
    them, ../shared/tools/gpu-host-libs.sh) first on LD_LIBRARY_PATH when
    it exists."""
    env = dict(os.environ)
    libs = os.path.join(ROOT, ".gpulibs")
    if os.path.isdir(libs):
        env["LD_LIBRARY_PATH"] = libs + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def geomean(xs):
    """The geometric mean of positive xs, as a score is (runner/stats.c)."""
    return math.exp(math.fsum(math.log(x) for x in xs) / len(xs))


class BenchError(Exception):
    """Input a bench cannot measure with: its message is printed, and the bench exits 1."""


def eval_accepted(cmd, timeout):
    """Run one `kjudge-runner eval ... --json` (cmd, with runner_env()) in a fresh
    process: (its result, the completed process). BenchError unless it printed
    an accepted result with a score within timeout seconds."""
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=runner_env(), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError("the eval took longer than %d s" % timeout)
    try:
        r = json.loads(p.stdout)
        r.get("verdict")
    except (ValueError, AttributeError):
        raise BenchError("the runner printed no JSON (exit %d): %s" % (p.returncode,
                                                                       (p.stderr or p.stdout).strip()[-400:]))
    if r.get("verdict") != "accepted" or not isinstance(r.get("score_ns"), (int, float)):
        raise BenchError("verdict %s, not accepted: %s" % (r.get("verdict"), str(r.get("message"))[:300]))
    return r, p


def read_csv_rows(paths, needed, numeric, what):
    """The rows of earlier calls' CSV files (what: their name, for messages):
    the columns in numeric as floats (None when empty), each row's "_src" the
    index of its file and "_line" its line. BenchError when a file cannot be
    read, lacks a column of needed, or holds something else than a number."""
    rows = []
    for i, path in enumerate(paths):
        try:
            with open(path, newline="") as f:
                rd = csv.DictReader(f)
                missing, body = set(needed) - set(rd.fieldnames or []), list(rd)
        except OSError as e:
            raise BenchError("%s: %s" % (path, e.strerror))
        if missing:
            raise BenchError("%s lacks the columns %s (not a %s?)" % (path, ", ".join(sorted(missing)), what))
        for n, r in enumerate(body, 2):
            for k in numeric:
                try:
                    r[k] = float(r[k]) if r.get(k) not in (None, "") else None
                except ValueError:
                    raise BenchError("%s line %d: %s is not a number" % (path, n, k))
            r["_src"], r["_line"] = i, "%s line %d" % (path, n)
            rows.append(r)
    return rows


def score_cells(rs):
    """A table's cells for runs rs (at least one, each with score_ns and
    offset_ns): "runs | mean score us | CV % | range % | mean offset ns"."""
    s = [r["score_ns"] for r in rs]
    m = statistics.mean(s)
    offs = [r["offset_ns"] for r in rs if r.get("offset_ns") is not None]
    return "%d | %.4f | %s | %.3f | %s" % (len(s), m / 1e3, "%.3f" % (100 * statistics.stdev(s) / m) if len(s) > 1
                                           else "-", 100 * (max(s) - min(s)) / m,
                                           "%+.1f" % statistics.mean(offs) if offs else "-")


def run_to_csv(path, fields, run, report, out_dir):
    """run(writer, rows) with each row written to the CSV at path as it comes;
    then report(rows, out_dir)'s exit status. When run raises BenchError, the
    rows it had are reported first and the error is raised again."""
    rows = []
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        try:
            run(writer, rows)
        except BenchError:
            if rows:
                report(rows, out_dir)
            raise
    return report(rows, out_dir)


def evaluate(path, mode, *extra, env=None, board="fp8_quant"):
    """`kjudge-runner eval path --leaderboard board --mode mode --json extra...`: its result."""
    p = subprocess.run([RUNNER, "eval", path, "--leaderboard", board, "--mode", mode, "--json", *extra],
                       cwd=ROOT, capture_output=True, text=True, env=env)
    if p.returncode not in (0, 1):
        raise RuntimeError("eval failed: " + p.stderr[-2000:])
    return json.loads(p.stdout)


class Service(_Service):
    """A real kjudge-server on a free loopback port plus one runner on GPU 0
    (tests/lib's Service); .user is the token of the user "bench". fake: the
    fake-GPU runner (build/kjudge-runner-fakegpu, each job judged in
    fake_judge_s seconds) instead, for a bench's --smoke without a GPU."""

    def __init__(self, fake=False, fake_judge_s=0.05):
        super().__init__(runner="fake" if fake else "real", gpu="H200", runner_name="bench-gpu0",
                         prefix="kjudge-bench-",
                         runner_env={"KJUDGE_FAKE_JUDGE_S": str(fake_judge_s)} if fake else None)

    def __enter__(self):
        super().__enter__()
        self.user = self.server.user("bench")
        return self


def paired_parser(name, doc, runs_help):
    """The command line the paired load benches (gap_load, compile_load) share:
    the kernel and its board, --runs and --budget, where the runs go, the
    runner (or --fake), and --merge of earlier CSVs; a usage error exits 1
    with "name: message". The caller adds its own options."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.error = lambda msg: (ap.print_usage(sys.stderr), sys.exit("%s: %s" % (name, msg)))  # exit 1
    ap.add_argument("--kernel", default=os.path.join(ROOT, "leaderboards", "fp8_quant", "examples", "fast.cu"))
    ap.add_argument("--leaderboard", default="fp8_quant")
    ap.add_argument("--runs", default="8", help=runs_help)
    ap.add_argument("--budget", default="540", help="seconds for all rounds (default 540; at least one round)")
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(ROOT, "build", name))
    ap.add_argument("--runner", default=os.path.join(ROOT, "bin", "kjudge-runner"))
    ap.add_argument("--fake", action="store_true", help="a stand-in runner, no GPU (tests)")
    ap.add_argument("--smoke", action="store_true",
                    help="a run of seconds for make test (tests/api/test_benches.py): --fake --runs 2")
    ap.add_argument("--merge", nargs="+", metavar="CSV", help="run nothing: the table of these %s.csv" % name)
    return ap


def paired_checks(args, whole):
    """Check what paired_parser read: each option named in whole a whole number
    of at least 1 (made an int), the kernel a file (made absolute), the runner
    built unless --fake. BenchError saying which otherwise. --smoke sets
    --fake and --runs 2 first (the fewest rounds the tables compare)."""
    if args.smoke:
        args.fake, args.runs = True, "2"
    for name in whole:
        v = getattr(args, name)
        if not v.isdigit() or int(v) < 1:
            raise BenchError("--%s must be a whole number of at least 1, not %r" % (name, v))
        setattr(args, name, int(v))
    args.kernel = os.path.abspath(args.kernel)
    if not os.path.isfile(args.kernel):
        raise BenchError("no kernel file %s" % args.kernel)
    if not args.fake and not os.access(args.runner, os.X_OK):
        raise BenchError("%s is not built (make bin/kjudge-runner)" % args.runner)
