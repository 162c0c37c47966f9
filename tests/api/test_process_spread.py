#!/usr/bin/env python3
"""test_process_spread.py - bench/bench_process_spread.py without a GPU.

Runs the bench with --fake (a stand-in for kjudge-runner that writes a
synthetic v2 trace, with a seeded offset per process that its empties
follow, a fixed shift per buffer set and sample noise, and the result the
runner gives for it) for four rounds of 2 and 4 processes, and checks: the
trace and result of every run, one progress line each, the tables; that
the traces recomputed at the results' weight give their scores; that the
analysis recovers the fake's process offsets (their sd, within a run too),
the slope of the kernels on their process's empties and the set pattern;
a failed run, the budget and a second call into the same folder; then bad
input to --analyze (no traces, a bad header or line, a result that is not
an accepted v2 leaderboard result, a trace without its result, a result
that does not match its trace) and the trimmed mean of runner/stats.c.
Python 3 standard library only; ends with
"test_process_spread: N passed, N failed, N skipped".
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from kjcheck import check, summary  # noqa: E402
import bench_process_spread as ps  # noqa: E402

BENCH = os.path.join(ROOT, "bench", "bench_process_spread.py")


def bench(*args, env=None):
    p = subprocess.run([sys.executable, BENCH] + list(args), capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, **(env or {})))
    return p.returncode, p.stdout, p.stderr


def truth(procs, runs):
    """What the fake drew for these runs: sd of the processes' kernel offsets, their within-run sd,
    and the within-run slope of the kernel offset on the empty-kernel offset."""
    offs = [ps.fake_offsets(procs, r) for r in runs]
    wu, wt, df = [], [], 0
    for run in offs:
        mu, mt = statistics.mean(o[0] for o in run), statistics.mean(o[1] for o in run)
        wu += [o[0] - mu for o in run]
        wt += [o[1] - mt for o in run]
        df += len(run) - 1
    return (statistics.stdev(o[1] for run in offs for o in run), (sum(x * x for x in wt) / df) ** 0.5,
            statistics.linear_regression(wu, wt).slope)


def test_fake_run(out):
    rc, stdout, err = bench("--fake", "--runs", "4", "--processes", "2,4", "--out", out)
    check(rc == 0, "the bench with a stand-in runner exits 0", (rc, stdout[-1500:], err[-1500:]))
    want = {"%s-p%d-r%d.%s" % (k, p, r, e) for p in (2, 4) for r in range(1, 5)
            for k, e in (("trace", "csv"), ("result", "json"))}
    check(want <= set(os.listdir(out)) and os.path.exists(os.path.join(out, "table.md")),
          "a trace and a result per run, and table.md", sorted(os.listdir(out)))
    rounds = re.findall(r"round +(\d) +(\d) processes +[0-9.]+ us", stdout)
    check(rounds == [("1", "2"), ("1", "4"), ("2", "4"), ("2", "2"), ("3", "2"), ("3", "4"), ("4", "4"),
                     ("4", "2")], "one progress line per run, the order alternating between rounds", rounds)
    table = open(os.path.join(out, "table.md")).read()
    check(table in stdout, "table.md is what was printed")
    check("| p2 | 4 | 2 |" in table and "| p4 | 4 | 4 |" in table and "CV at w=0.75 %" in table and
          "| within-run r (dev, own empties) |" in table and "| set 7 ns | r same run |" in table,
          "the three tables, a row per variant", table)
    check("within 0.01 % in 8 of 8 runs" in table, "the traces give every result's score", table)
    check(len([ln for ln in table.splitlines() if ln and not ln.startswith(("|", "check:", "process_spread:"))]) == 3,
          "one line under each table says what it shows", table)

    variants = ps.load_dir(out)
    check(list(variants) == ["p2", "p4"] and all(len(v) == 4 for v in variants.values()), "both variants read back",
          list(variants))
    for name, runs in variants.items():
        procs = int(name[1:])
        s, p, sets = ps.score_stats(runs), ps.process_stats(runs), ps.set_stats(runs)
        check(abs(s["cv_w"][1] - s["cv"]) < 1e-6 and s["cv_w"][0] != s["cv"],
              "%s: the CV recomputed at the fake runner's weight 0.25 is the results' CV" % name, (s["cv_w"], s["cv"]))
        check(abs(s["cv_w"][0] - s["raw_cv"]) < 1e-3, "%s: at weight 0 it is the raw scores' CV" % name,
              (s["cv_w"][0], s["raw_cv"]))
        sd, within, slope = truth(procs, [r["run"] for r in runs])
        check(abs(p["sd"] - sd) < 3 and abs(p["within"] - within) < 3,
              "%s: the processes' deviation sd and within-run sd are the fake's offsets' (within 3 ns)" % name,
              (p["sd"], sd, p["within"], within))
        check(abs(p["predicted"] - p["within"] / procs ** 0.5) < 1e-9 and p["procs"] == procs,
              "%s: independent processes predict within-run sd / sqrt(%d)" % (name, procs), p)
        check(abs(p["slope"] - slope) < 0.05 and abs(p["slope"] - ps.FAKE_SLOPE) < 0.1 and p["r"] > 0.95,
              "%s: the slope on the process's own empties is the fake's (within 0.05 of its draws)" % name,
              (p["slope"], slope, p["r"]))
        m, fm = statistics.mean(sets["pattern"]), statistics.mean(ps.FAKE_SETS)
        diff = [a - m - (b - fm) for a, b in zip(sets["pattern"], ps.FAKE_SETS)]
        check(len(diff) == 8 and max(abs(x) for x in diff) < 4,
              "%s: the set pattern is the fake's, up to a constant (within 4 ns)" % name, diff)
        check(sets["r_same"] > 0.95 and sets["r_other"] > 0.95 and sets["n_same"] == 4 * procs * (procs - 1) // 2,
              "%s: the set vectors of any two processes correlate" % name, sets)


def test_runs(tmp):
    out = os.path.join(tmp, "f")
    rc, stdout, _ = bench("--fake", "--runs", "3", "--processes", "2,4", "--out", out, env={"KJ_FAKE_FAIL": "4:2"})
    names = set(os.listdir(out))
    check(rc == 1 and "round  2  4 processes  FAILED: verdict compile_error" in stdout and "1 runs failed:" in stdout
          and "failed-p4-r2.json" in names and "trace-p4-r2.csv" not in names and "result-p4-r2.json" not in names and
          "| p4 | 2 | 4 |" in stdout, "a failed run is reported, kept apart, and the others analysed; exit 1",
          (rc, stdout[-1500:], sorted(names)))
    rc, stdout, _ = bench("--fake", "--runs", "1", "--processes", "2", "--out", out)
    check(rc == 0 and sorted(os.listdir(out)) == ["result-p2-r1.json", "table.md", "trace-p2-r1.csv"] and
          "| p2 | 1 | 2 |" in stdout, "a second call clears the first's runs; one run gives no CV but a table",
          (rc, stdout[-800:], os.listdir(out)))
    rc, stdout, _ = bench("--fake", "--runs", "5", "--processes", "1,8", "--budget", "0", "--out", out)
    check(rc == 0 and "budget: " in stdout and "stopping before round 1, 8 processes" in stdout and
          len(re.findall(r"round +\d +\d processes", stdout)) == 1, "the budget stops the next run", stdout[-800:])
    rc, stdout, err = bench("--kernel", BENCH, "--leaderboard", "x", "--runner", "/bin/false", "--runs", "1",
                            "--processes", "2", "--out", out)
    check(rc == 1 and "FAILED: exit 1, no JSON" in stdout and os.listdir(out) == ["failed-p2-r1.json"] and
          "no traces" in err, "a runner that prints no result: the run failed, nothing to analyse, exit 1",
          (rc, stdout[-500:], err[-300:], os.listdir(out)))
    for bad, what in ((["--processes", "9", "--fake"], "--processes"), (["--processes", "2,2", "--fake"], "--processes"),
                      (["--leaderboard", "histogram"], "--kernel and --leaderboard"),
                      (["--kernel", "/nonexistent.cu", "--leaderboard", "histogram"], "no such file")):
        rc, _, err = bench(*bad, "--out", out)
        check(rc == 2 and what in err, "usage error: %s" % " ".join(bad), err[-300:])


def test_bad_input(src, tmp):
    def case(edit, want, what):
        d = tempfile.mkdtemp(dir=tmp)
        for n in ("trace-p2-r1.csv", "result-p2-r1.json", "trace-p2-r3.csv", "result-p2-r3.json"):
            shutil.copy(os.path.join(src, n), d)
        if edit:
            edit(d)
        rc, stdout, err = bench("--analyze", d)
        check(rc == 1 and all(w in err + stdout for w in want), "--analyze: %s" % what, (rc, err[-400:], stdout[-400:]))

    def rewrite(name, fn):
        def edit(d):
            path = os.path.join(d, name)
            text = open(path).read()
            open(path, "w").write(fn(text))
        return edit

    def line(n, new):
        return lambda t: "\n".join(new if i == n - 1 else x for i, x in enumerate(t.split("\n")))

    case(lambda d: [os.remove(os.path.join(d, n)) for n in os.listdir(d)], ["no traces"], "a folder with no traces")
    case(rewrite("trace-p2-r3.csv", lambda t: t.replace("shape,process", "shape,proc", 1)),
         ["trace-p2-r3.csv line 1: the header"], "a bad header, named with its file")
    case(rewrite("trace-p2-r3.csv", line(5, "0,0,0,0,3,3,0,timed,abc")), ["trace-p2-r3.csv line 5: malformed"],
         "a bad sample, named with its file and line")
    case(rewrite("trace-p2-r1.csv", line(7, "0,0,0,0,3,3,0,timed")), ["trace-p2-r1.csv line 7: malformed"],
         "a line with a field missing")
    case(rewrite("trace-p2-r1.csv", line(3, "0,0,0,0,3,3,0,sleep,7000.0")), ["trace-p2-r1.csv line 3: malformed"],
         "an unknown kind")
    case(rewrite("result-p2-r1.json", lambda t: t.replace('"accepted"', '"wrong_answer"')),
         ["result-p2-r1.json: not an accepted v2 leaderboard result (verdict wrong_answer"], "a result not accepted")
    case(rewrite("result-p2-r3.json", lambda t: t.replace('"protocol": "v2"', '"protocol": "v1"')),
         ["result-p2-r3.json: not an accepted v2 leaderboard result (timing protocol v1)"], "a v1 result")
    case(rewrite("result-p2-r3.json", lambda t: t[:50]), ["result-p2-r3.json: not JSON"], "a result cut short")
    case(lambda d: os.remove(os.path.join(d, "result-p2-r3.json")),
         ["trace-p2-r3.csv without its result-p2-r3.json"], "a trace without its result")

    def off(d):
        path = os.path.join(d, "result-p2-r3.json")
        r = json.load(open(path))
        r["score_ns"] *= 1.001
        json.dump(r, open(path, "w"))
    case(off, ["within 0.01 % in 1 of 2 runs", "; not: p2 r3 (trace"], "a score its trace does not give is named")
    rc, _, err = bench("--analyze", os.path.join(tmp, "nonexistent"))
    check(rc == 1 and "nonexistent" in err, "--analyze on a missing folder", err[-300:])


def test_trimmed_mean():
    xs = [float(x) for x in range(1, 26)]
    xs[0], xs[-1] = -1000.0, 1000.0
    check(ps.trimmed_mean(xs) == statistics.mean(range(3, 24)), "25 samples: two dropped at each end (stats.c)")
    check(ps.trimmed_mean([1.0] * 8 + [100.0]) == 108 / 9, "9 samples: none dropped")
    check(ps.trimmed_mean([0.0] + [5.0] * 8 + [90.0]) == 5.0, "10 samples: one dropped at each end")
    check(ps.median([3.0, 1.0, 2.0, 10.0]) == 2.5, "the median of an even count is the mean of the middle two")


def main():
    with tempfile.TemporaryDirectory(prefix="kjudge-spread-") as tmp:
        src = os.path.join(tmp, "fake")
        test_fake_run(src)
        test_runs(tmp)
        test_bad_input(src, tmp)
    test_trimmed_mean()
    return summary("test_process_spread")


if __name__ == "__main__":
    sys.exit(main())
