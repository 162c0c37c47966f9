#!/usr/bin/env python3
"""test_compile_load.py - the harness of bench/bench_compile_load.py, without a GPU.

Runs the bench with --fake (a stand-in for kjudge-runner: `eval` gives a
seeded score, shifted by $KJ_FAKE_LOAD_SHIFT_PCT % while the bench's compile
workers are alive; `compile` sleeps briefly) for three rounds beside two
workers, and checks: the CSV, the results and the table; compiles counted in
the loaded runs and none in the quiet ones; a 3 % shift found significant and
larger than the resolution, no shift not significant; no worker or compile
left running after the bench (by the tag in their command lines), also after
a failure; --merge of two calls; the budget stopping after one round; the bad
inputs (a runner printing no JSON, a wrong answer, a load that never
compiles, --load 0 or not a number, a CSV without the columns) exit 1 with a
message; the load's source compiles with the real NVRTC in seconds. Then
the pure parts: t quantiles, the Welch and paired intervals and
the verdict words. Python 3 standard library only; ends with
"test_compile_load: N passed, N failed, N skipped".
"""
import csv
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "bench"))
from kjcheck import check, run_groups, skip  # noqa: E402
from kjservice import ROOT, RUNNER  # noqa: E402
import bench_compile_load as cl  # noqa: E402

BENCH = os.path.join(ROOT, "bench", "bench_compile_load.py")


def strays(pid):
    """Processes still carrying the tag of the bench that ran as pid."""
    return cl.cmdlines_with("kjcload-%d" % pid)


def run_bench(out, *extra, env=None, runs="3"):
    """(exit status, stdout, stderr, the processes left with the bench's tag)."""
    p = subprocess.Popen([sys.executable, BENCH, "--fake", "--runs", runs, "--load", "2", "--budget", "300",
                          "--out", out] + list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, **(env or {})))
    so, se = p.communicate(timeout=300)
    return p.returncode, so, se, strays(p.pid)


def test_shift_found():
    with tempfile.TemporaryDirectory(prefix="kjudge-cl-") as out:
        rc, so, se, left = run_bench(out, env={"KJ_FAKE_LOAD_SHIFT_PCT": "3"})
        check(rc == 0, "the bench with a stand-in runner exits 0", (rc, so[-1500:], se[-800:]))
        check(left == [], "no worker or compile of the bench is left running", left)
        rows = list(csv.DictReader(open(os.path.join(out, "compile_load.csv"))))
        check([(r["round"], r["variant"]) for r in rows] ==
              [("1", "quiet"), ("1", "loaded"), ("2", "loaded"), ("2", "quiet"), ("3", "quiet"), ("3", "loaded")],
              "three rounds, one quiet and one loaded run each, the order alternating", rows)
        need = {"round", "variant", "score_ns", "raw_score_ns", "offset_ns", "eval_wall_s", "compiles",
                "load_before", "load_after", "cpu_busy_pct"}
        check(rows and need <= set(rows[0]), "the CSV's columns", rows[0].keys() if rows else None)
        check(sorted(os.listdir(os.path.join(out, "runs"))) ==
              sorted("r%02d-%s.json" % (int(r["round"]), r["variant"]) for r in rows), "one result file per run")
        loaded = [r for r in rows if r["variant"] == "loaded"]
        quiet = [r for r in rows if r["variant"] == "quiet"]
        check(all(int(r["compiles"]) > 0 and r["workers"] == "2" and r["compile_fails"] == "0" for r in loaded),
              "each loaded run counted the compiles its two workers finished during it", loaded)
        check(all(r["compiles"] == "0" and r["workers"] == "0" for r in quiet), "no compiles in a quiet run", quiet)
        check(all(float(r["score_ns"]) > 7100 for r in loaded) and all(float(r["score_ns"]) < 7050 for r in quiet),
              "the stand-in saw the workers alive in the loaded runs only", rows)
        table = open(os.path.join(out, "table.md")).read()
        check(table in so, "table.md is what was printed")
        rx = r"^\| (?:mean score \(Welch t\)|paired within 3 rounds) \| ([-+.0-9]+) \|"
        diffs = [float(x) for x in re.findall(rx, table, re.M)]
        check("| quiet | 3 |" in table and "| loaded | 3 |" in table and "| 0.65 |" in table and
              "published resolution_pct (H200)" in table and len(diffs) == 2 and all(2.7 < x < 3.3 for x in diffs),
              "per variant rows, both differences near +3 % beside the resolution", table)
        verdicts = [ln for ln in table.splitlines() if ln.startswith("verdict")]
        check(len(verdicts) == 2 and all(": significant; larger than the resolution 0.65 % (the whole interval "
                                         "beyond it)" in v for v in verdicts),
              "a 3 % shift is significant and larger than the resolution, both ways", verdicts)


def test_no_shift_and_merge():
    with tempfile.TemporaryDirectory(prefix="kjudge-cl-") as tmp:
        a, m = os.path.join(tmp, "a"), os.path.join(tmp, "m")
        rc, so, se, left = run_bench(a)
        check(rc == 0 and left == [], "a run without a shift", (rc, so[-800:], se[-400:], left))
        check("verdict (Welch)" in so and "verdict (Welch): loaded - quiet" in so and
              all(": not significant;" in ln for ln in so.splitlines() if ln.startswith("verdict")),
              "no shift: not significant (both ways)", so[-600:])
        csvp = os.path.join(a, "compile_load.csv")
        p = subprocess.run([sys.executable, BENCH, "--out", m, "--merge", csvp, csvp], capture_output=True, text=True,
                           timeout=60)
        check(p.returncode == 0 and "| quiet | 6 |" in p.stdout and "| paired within 6 rounds |" in p.stdout and
              "round  1" not in p.stdout, "--merge: one table of both files' runs, their rounds kept apart",
              p.stdout[-1500:])
        check(os.path.exists(os.path.join(m, "table.md")) and not os.path.exists(os.path.join(m, "compile_load.csv")),
              "--merge writes the table, not a CSV of its own")


def test_budget():
    with tempfile.TemporaryDirectory(prefix="kjudge-cl-") as out:
        rc, so, _, left = run_bench(out, "--budget", "1", runs="5")
        rows = list(csv.DictReader(open(os.path.join(out, "compile_load.csv"))))
        check(rc == 1 and len(rows) == 2 and "stopping after 1 rounds" in so and left == [],
              "a budget smaller than a round: one round, then the table (too few runs: exit 1)", (rc, so[-800:]))
        check("verdict (Welch): not enough runs" in so, "one run per variant gives no interval", so[-400:])


def test_bad_input():
    with tempfile.TemporaryDirectory(prefix="kjudge-cl-") as out:
        rc, _, se, _ = run_bench(out, env={"KJ_FAKE_EVAL": "nojson"})
        check(rc == 1 and "the runner printed no JSON (exit 2): kjudge-runner: cuInit failed" in se,
              "a runner that prints no JSON: exit 1, its stderr named", (rc, se[-500:]))
        rc, _, se, _ = run_bench(out, env={"KJ_FAKE_EVAL": "wrong"})
        check(rc == 1 and "verdict wrong_answer, not accepted: fake mismatch" in se, "a wrong answer: exit 1",
              (rc, se[-500:]))
        rc, so, se, left = run_bench(out, env={"KJ_FAKE_COMPILE": "fail"})
        check(rc == 1 and "no load compile finished during the eval" in se and "fake: too heavy" in se,
              "a load that never compiles is no load: exit 1 with the compiler's message", (rc, se[-500:]))
        check(left == [], "no worker left after a failure in a loaded run", left)
        check("| quiet | 1 |" in so, "the runs before the failure are still tabled", so[-800:])
        for bad in ("0", "x", "-3", "2.5"):
            rc, _, se, _ = run_bench(out, "--load", bad)
            check(rc == 1 and "--load must be a whole number of at least 1, not '%s'" % bad in se,
                  "--load %s: exit 1 with a message" % bad, (rc, se[-300:]))
        wrongcsv = os.path.join(out, "other.csv")
        with open(wrongcsv, "w") as f:
            f.write("kernel,protocol,score_ns\nx,v2,1000\n")
        p = subprocess.run([sys.executable, BENCH, "--out", out, "--merge", wrongcsv], capture_output=True,
                           text=True, timeout=60)
        check(p.returncode == 1 and "lacks the columns" in p.stderr and "compiles" in p.stderr,
              "--merge of a CSV without the columns: exit 1", (p.returncode, p.stderr[-300:]))
        p = subprocess.run([sys.executable, BENCH, "--merge", os.path.join(out, "none.csv")], capture_output=True,
                           text=True, timeout=60)
        check(p.returncode == 1 and "none.csv: No such file" in p.stderr, "--merge of a missing file: exit 1",
              p.stderr[-300:])


def test_heavy_source_compiles():
    """The load's source is legal and stays well inside the compile box's 60 s."""
    if not os.access(RUNNER, os.X_OK):
        skip("the load source compiles", "no bin/kjudge-runner (make bin/kjudge-runner)")
        return
    with tempfile.TemporaryDirectory(prefix="kjudge-cl-src-") as tmp:
        src = cl.load_source(tmp)
        p = subprocess.run([RUNNER, "compile", src, "--leaderboard", cl.LOAD_BOARD], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    try:
        r = json.loads(p.stdout)
    except ValueError:
        r = {}
    check(p.returncode == 0 and r.get("ok") is True and [k["name"] for k in r.get("kernels", [])] == ["quant"],
          "template.cu with bench/compile_load_heavy.cuh compiles (NVRTC in the compile box) to one kernel",
          (p.returncode, p.stdout[-400:], p.stderr[-400:]))
    check(isinstance(r.get("seconds"), (int, float)) and 0.5 < r["seconds"] < 30,
          "and keeps NVRTC busy for seconds, far below the 60 s limit", r.get("seconds"))


def test_pure():
    for df, want in ((1, 12.706), (2, 4.303), (5, 2.571), (10, 2.228), (30, 2.042)):
        got = cl.t_quantile(0.975, df)
        check(abs(got - want) < 0.002, "t quantile 0.975 with %d df" % df, got)
    d, hw, df = cl.welch([10.0, 12.0, 11.0], [1.0, 2.0, 3.0])
    check(abs(d - 9.0) < 1e-9 and abs(df - 4.0) < 1e-9 and abs(hw - 2.776 * (2 / 3) ** 0.5) < 0.01,
          "Welch: difference, df and half-width (equal variances: df n1+n2-2)", (d, hw, df))
    check(cl.welch([1.0], [1.0, 2.0]) is None and cl.paired([1.0]) is None, "fewer than two runs: no interval")
    m, hw, df = cl.paired([1.0, 2.0, 3.0])
    check(m == 2.0 and df == 2 and abs(hw - 4.303 / 3 ** 0.5) < 0.01, "paired: mean, half-width, df", (m, hw, df))
    check(cl.judge(0.1, 0.2, 0.65).startswith("not significant; smaller than the resolution") and
          cl.judge(2.0, 0.5, 0.65).startswith("significant; larger than the resolution 0.65 % (the whole") and
          cl.judge(-0.8, 0.3, 0.65).startswith("significant; larger than the resolution 0.65 %, but") and
          cl.judge(0.5, 0.3, 0.65).startswith("significant; within the resolution") and
          "no resolution" in cl.judge(1.0, 0.1, None), "the verdict words")


if __name__ == "__main__":
    sys.exit(run_groups("test_compile_load", globals()))
