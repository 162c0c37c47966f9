#!/usr/bin/env python3
"""test_gap_load.py - the harness of bench/bench_gap_load.py, without a GPU.

Runs the bench with --fake (a stand-in for kjudge-runner: `eval` gives a
seeded score, shifted by $KJ_FAKE_GAP_SHIFT_PCT % when given --gap, and
prints one line per gap job) and checks: the CSV, the results and the
table; the order of the variants rotating over rounds; gap jobs counted in
the gap runs and none in the quiet ones; a 3 % shift found significant and
larger than the resolution, no shift not significant; --merge of two calls;
the bad inputs (a runner printing no JSON, a gap run with no gap job, bad
--gaps, --runs 0, a CSV without the columns) exit 1 with a message; the
heavy gap kernel compiles with the real NVRTC and launches one wave of
blocks on an H200. Python 3 standard library only; ends with
"test_gap_load: N passed, N failed, N skipped".
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
from kjcheck import check, run_groups, skip  # noqa: E402
from kjservice import ROOT, RUNNER  # noqa: E402

BENCH = os.path.join(ROOT, "bench", "bench_gap_load.py")


def run_bench(out, *extra, env=None, runs="3"):
    p = subprocess.run([sys.executable, BENCH, "--fake", "--runs", runs, "--budget", "300", "--out", out] +
                       list(extra), capture_output=True, text=True, timeout=300, env=dict(os.environ, **(env or {})))
    return p.returncode, p.stdout, p.stderr


def test_shift_found():
    with tempfile.TemporaryDirectory(prefix="kjudge-gl-") as out:
        rc, so, se = run_bench(out, env={"KJ_FAKE_GAP_SHIFT_PCT": "3"})
        check(rc == 0, "the bench with a stand-in runner exits 0", (rc, so[-1500:], se[-800:]))
        rows = list(csv.DictReader(open(os.path.join(out, "gap_load.csv"))))
        check([(r["round"], r["variant"]) for r in rows] ==
              [("1", "quiet"), ("1", "template"), ("1", "heavy"), ("2", "template"), ("2", "heavy"),
               ("2", "quiet"), ("3", "heavy"), ("3", "quiet"), ("3", "template")],
              "three rounds of quiet and the two default gap kinds, the order rotating", rows)
        check(all((r["gap_jobs"] == "0") == (r["variant"] == "quiet") for r in rows) and
              all(r["gap_jobs"] == "7" for r in rows if r["variant"] != "quiet"),
              "gap jobs counted in the gap runs (7 each), none in the quiet ones", rows)
        check(all(r["gap_file"].endswith(("template.cu", "gap_heavy.cu")) for r in rows if r["variant"] != "quiet"),
              "each gap run names its gap file", rows)
        check(sorted(os.listdir(os.path.join(out, "runs"))) ==
              sorted("r%02d-%s.json" % (k, v) for k in (1, 2, 3) for v in ("quiet", "template", "heavy")),
              "each run's result is kept", os.listdir(os.path.join(out, "runs")))
        r = json.load(open(os.path.join(out, "runs", "r01-quiet.json")))
        check(r.get("verdict") == "accepted", "a kept result is the runner's JSON", r)
        table = open(os.path.join(out, "table.md")).read()
        check(table in so and "| template, mean score (Welch t) | +3." in table and
              "| heavy, paired within 3 rounds | +3." in table,
              "the table (also in table.md) shows both differences near +3 %", so[-1500:])
        check("verdict (template, Welch): gap - quiet +3." in so and
              "significant; larger than the resolution 0.65 %" in so and "not significant" not in so,
              "a 3 % shift is significant and larger than the board's resolution", so[-1200:])


def test_no_shift():
    with tempfile.TemporaryDirectory(prefix="kjudge-gl-") as out:
        rc, so, se = run_bench(out, runs="4")
        check(rc == 0 and so.count("not significant; smaller than the resolution 0.65 %") == 4,
              "no shift: not significant and within the resolution, for both kinds and both tests",
              (rc, so[-1500:], se[-500:]))


def test_merge():
    with tempfile.TemporaryDirectory(prefix="kjudge-gl-") as a, tempfile.TemporaryDirectory(prefix="kjudge-gl-") as b:
        run_bench(a, runs="2")
        run_bench(b, runs="2", env={"KJ_FAKE_GAP_SHIFT_PCT": "0"})
        with tempfile.TemporaryDirectory(prefix="kjudge-gl-") as out:
            p = subprocess.run([sys.executable, BENCH, "--out", out, "--merge", os.path.join(a, "gap_load.csv"),
                                os.path.join(b, "gap_load.csv")], capture_output=True, text=True, timeout=60)
            check(p.returncode == 0 and "| quiet | 4 |" in p.stdout and "paired within 4 rounds" in p.stdout,
                  "--merge of two calls: four runs of each, the rounds of both paired", (p.returncode, p.stdout[-1200:],
                                                                                       p.stderr[-300:]))


def test_bad_input():
    with tempfile.TemporaryDirectory(prefix="kjudge-gl-") as out:
        for env, extra, want in (({"KJ_FAKE_GAP": "nojson"}, [], "printed no JSON"),
                                 ({"KJ_FAKE_GAP": "none"}, [], "no gap job ran"),
                                 ({}, ["--gaps", "quiet=bench/gap_heavy.cu"], "--gaps wants NAME=FILE"),
                                 ({}, ["--gaps", "a=bench/none.cu"], "no file"),
                                 ({}, ["--gaps", "a=bench/gap_heavy.cu,a=bench/gap_heavy.cu"], "names a twice"),
                                 ({}, ["--gaps", "Heavy"], "--gaps wants NAME=FILE"),
                                 ({}, ["--runs", "0"], "--runs must be a whole number"),
                                 ({}, ["--budget", "x"], "--budget must be a whole number")):
            p = subprocess.run([sys.executable, BENCH, "--fake", "--runs", "1", "--out", out] + extra,
                               capture_output=True, text=True, timeout=60, env=dict(os.environ, **env))
            check(p.returncode == 1 and want in p.stderr, "bad input %s %s: exit 1, %r" % (env, extra, want),
                  (p.returncode, p.stderr[-400:]))
        bad = os.path.join(out, "bad.csv")
        with open(bad, "w") as f:
            f.write("round,variant\n1,quiet\n")
        p = subprocess.run([sys.executable, BENCH, "--merge", bad, "--out", out], capture_output=True, text=True,
                           timeout=60)
        check(p.returncode == 1 and "lacks the columns" in p.stderr, "a CSV without the columns: exit 1",
              (p.returncode, p.stderr))


def test_heavy_compiles():
    if not os.access(RUNNER, os.X_OK):
        skip("bin/kjudge-runner is not built")
        return
    p = subprocess.run([RUNNER, "compile", os.path.join(ROOT, "bench", "gap_heavy.cu"), "--leaderboard",
                        "fp8_quant"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    try:
        d = json.loads(p.stdout)
    except ValueError:
        d = {}
    check(d.get("ok") is True and [k.get("name") for k in d.get("kernels", [])] == ["quant"],
          "the heavy gap kernel compiles with the real NVRTC", (p.returncode, p.stdout[-600:], p.stderr[-300:]))
    src = open(os.path.join(ROOT, "bench", "gap_heavy.cu")).read()
    check("grid=(264) block=(1024)" in src, "it launches one wave of 1024-thread blocks on 132 SMs", src[:600])


if __name__ == "__main__":
    sys.exit(run_groups("test_gap_load", globals()))
