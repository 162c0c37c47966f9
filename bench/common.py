"""Helpers shared by the benchmarks: paths, running the runner, and the
tests' own harness (tests/lib: the HTTP client and a real server with a
real runner on GPU 0)."""
import csv, json, math, os, statistics, subprocess, sys

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


def evaluate(path, mode, *extra, env=None):
    p = subprocess.run([RUNNER, "eval", path, "--leaderboard", "fp8_quant", "--mode", mode, "--json", *extra],
                       cwd=ROOT, capture_output=True, text=True, env=env)
    if p.returncode not in (0, 1):
        raise RuntimeError("eval failed: " + p.stderr[-2000:])
    return json.loads(p.stdout)


class Service(_Service):
    """A real kjudge-server on a free loopback port plus one runner on GPU 0
    (tests/lib's Service); .user is the token of the user "bench"."""

    def __init__(self):
        super().__init__(runner="real", gpu="H200", runner_name="bench-gpu0", prefix="kjudge-bench-")

    def __enter__(self):
        super().__enter__()
        self.user = self.server.user("bench")
        return self
