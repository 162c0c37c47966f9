#!/usr/bin/env python3
"""test_score_stability.py - the harness of bench/bench_score_stability.py, without a GPU.

Runs the bench with --fake (a stand-in for kjudge-runner: a fresh process
per run whose scores carry a made-up per-process launch offset, which the
v2 correction removes) for three rounds, and checks: one CSV row per run
with the columns the analysis needs, every kernel under both protocols,
the table and the goal lines (v2 below 0.3 %, v1 not), a failing kernel
reported and the exit status 1; two calls' CSVs combined by --merge into
one table; then the pure parts: the sizing of the
rounds within the budget, the spread of v1 rounds, the pair check (a swap
within the resolution is fine, one above it is not), the suggested
resolution and the GPU type of a device name. Python 3 standard library
only; ends with "test_score_stability: N passed, N failed, N skipped".
"""
import csv
import io
import os
import subprocess
import sys
import tempfile
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "bench"))
from kjcheck import Counts, check  # noqa: E402
from kjservice import ROOT  # noqa: E402
import bench_score_stability as ss  # noqa: E402

BENCH = os.path.join(ROOT, "bench", "bench_score_stability.py")


def run_bench(out, *extra, env=None):
    p = subprocess.run([sys.executable, BENCH, "--fake", "--runs", "3", "--budget", "300", "--out", out] + list(extra),
                       capture_output=True, text=True, timeout=300, env=dict(os.environ, **(env or {})))
    return p.returncode, p.stdout, p.stderr


def test_fake_run():
    with tempfile.TemporaryDirectory(prefix="kjudge-ss-") as out:
        rc, stdout, err = run_bench(out)
        check(rc == 0, "the bench with a stand-in runner exits 0", (rc, stdout[-2000:], err[-2000:]))
        rows = list(csv.DictReader(open(os.path.join(out, "score_stability.csv"))))
        kinds = {(r["kernel"], r["protocol"]) for r in rows}
        check(len(rows) == 3 * 2 * len(ss.KERNELS) and len(kinds) == 2 * len(ss.KERNELS),
              "three runs of every kernel under v1 and v2, one CSV row each", (len(rows), sorted(kinds)))
        check(len({k[1] for k in ss.KERNELS}) >= 4 and len(ss.KERNELS) >= 8, "eight kernels over four boards")
        need = {"round", "kernel", "board", "protocol", "score_ns", "raw_score_ns", "offset_ns", "empty_run_ns",
                "eval_wall_s", "medians"}
        check(rows and need <= set(rows[0].keys()), "the CSV's columns", rows[0].keys() if rows else None)
        v2 = [r for r in rows if r["protocol"] == "v2"]
        check(all(r["corrected"] == "True" and r["corrected_medians"] for r in v2), "v2 runs are corrected")
        check(all(float(r["gpu_score_ns"]) > 0 and len(r["gpu_medians"].split()) == 3 for r in v2) and
              all(r["gpu_score_ns"] == "" for r in rows if r["protocol"] == "v1"),
              "v2 runs carry their GPU-time score and medians, v1 runs none", v2[:1])
        table = open(os.path.join(out, "table.md")).read()
        check(table in stdout, "table.md is what was printed")
        check("GPU-time CV % (goal < 0.2) |" in table and "goal: v2 GPU-time CV below 0.2 % for every kernel: PASS"
              in table and " ok |" in table, "the GPU-time score's CV beside the events', its goal marked",
              table[-900:])
        check("goal: v2 CV below 0.3 % for every kernel: PASS" in table and
              "goal: no v2 ranked pair swapped with a gap above the published resolution: PASS" in table,
              "the goals are judged", table[-600:])
        check("| fp8 fast | fp8_quant | v1 |" in table and "| fp8_quant | 0.85 |" in table and
              "published gpu_time_resolution_pct (H200)" in table,
              "v1 beside v2, the published resolution of what v2 ranked (GPU time, the default) beside the "
              "suggested one", table)
        check("sizing: round 1 took" in stdout and "[" in stdout.splitlines()[1], "progress lines and the sizing",
              stdout[:400])

        rc, stdout, _ = run_bench(out, "--kernels", "fp8 fast,histogram fast", env={"KJ_FAKE_WRONG": "fp8_quant/examples/fast.cu"})
        check(rc == 1 and "runs failed" in stdout and "verdict wrong_answer: fake mismatch" in stdout,
              "a kernel whose runs fail is reported, exit 1", (rc, stdout[-800:]))
        check("round 1 had 2 failed runs: stopping here" in stdout and "round  2" not in stdout and
              "| histogram fast | histogram | v2 | 1 |" in stdout,
              "failures in round 1 stop the bench before it spends its budget", stdout[-1500:])
        rc, stdout, _ = run_bench(out, "--kernels", "fp8 fast,fp8 template", "--old", "v2-1p")
        rows = list(csv.DictReader(open(os.path.join(out, "score_stability.csv"))))
        check(rc == 0 and {r["protocol"] for r in rows} == {"v2", "v2-1p"} and
              "| fp8 fast | fp8_quant | v2-1p |" in stdout and "Ranked pairs under v2-1p" in stdout,
              "--old v2-1p: v2 in one box beside v2, its own table rows and pairs", stdout[-1500:])
        rc, _, err = run_bench(out, "--kernels", "nope")
        check(rc == 2 and "unknown kernel" in err, "an unknown kernel label is a usage error", err[-300:])


def summary_of(scores, board="b"):
    m = sum(scores) / len(scores)
    return {"board": board, "scores": scores, "mean": m, "n": len(scores),
            "cv": 100 * (sum((x - m) ** 2 for x in scores) / (len(scores) - 1)) ** 0.5 / m}


def test_gpu_goals():
    """The GPU-time goal lines: a CV above 0.2 % fails (named), runs without GPU time say why,
    and the fp8_quant fast wall time with fewer processes is judged against 5 s."""
    def summ(gcv, gn=3, wall=4.0):
        return dict(summary_of([1.0, 1.0]), gpu_n=gn, gpu_cv=gcv, gpu_mean=1000.0, wall=wall)
    lines = []
    summary = {("fp8 fast", "v2"): summ(0.1, wall=8.0), ("hist", "v2"): summ(0.35),
               ("fp8 fast", "v2-2p"): summ(0.15, wall=4.2)}
    ss.gpu_goals(summary, [], lines.append)
    check("goal: v2 GPU-time CV below 0.2 % for every kernel: FAIL (hist 0.350)" in lines and
          "goal: v2-2p GPU-time CV below 0.2 % for every kernel: PASS" in lines and
          "goal: fp8_quant fast leaderboard run under 5 s with v2-2p: PASS (4.2 s per run, v2 with eight "
          "processes 8.0 s)" in lines, "GPU-time goals judged per protocol", lines)
    lines = []
    ss.gpu_goals({("fp8 fast", "v2"): summ(float("nan"), gn=0)},
                 [{"protocol": "v2", "gpu_note": "cannot load CUPTI (libcupti.so.13): not found"}], lines.append)
    check(lines == ["goal: v2 GPU-time CV below 0.2 % for every kernel: NO GPU TIME (cannot load CUPTI "
                    "(libcupti.so.13): not found)"], "no GPU time: the runs' note says why", lines)
    check(ss.gpu_mark(summ(0.1)) == "0.100 ok" and ss.gpu_mark(summ(0.3)) == "0.300 MISSED" and
          ss.gpu_mark(summ(0.1, gn=1)) == "-", "the table's GPU-time CV marks")


def test_merge():
    """Two calls' CSVs give one table with the runs of both; --merge runs nothing."""
    with tempfile.TemporaryDirectory(prefix="kjudge-ss-") as tmp:
        a, b, m = (os.path.join(tmp, x) for x in ("a", "b", "m"))
        ra, _, _ = run_bench(a, "--kernels", "fp8 fast,fp8 template")
        rb, _, _ = run_bench(b, "--kernels", "fp8 fast,fp8 template")
        check(ra == 0 and rb == 0, "two calls of the bench", (ra, rb))
        p = subprocess.run([sys.executable, BENCH, "--out", m, "--merge", os.path.join(a, "score_stability.csv"),
                            os.path.join(b, "score_stability.csv")], capture_output=True, text=True, timeout=120)
        check(p.returncode == 0 and "| fp8 fast | fp8_quant | v2 | 6 |" in p.stdout and
              "| fp8 template | fp8_quant | v2 | 6 |" in p.stdout and "round  1" not in p.stdout,
              "--merge: one table of both calls' runs (3 + 3 v2 runs per kernel), nothing run", p.stdout[-1500:])
        check(os.path.exists(os.path.join(m, "table.md")) and not os.path.exists(os.path.join(m, "score_stability.csv")),
              "--merge writes the table, not a CSV of its own")
        rows = ss.read_rows(os.path.join(a, "score_stability.csv"))
        check(rows and isinstance(rows[0]["score_ns"], float) and rows[0]["corrected"] in (True, False),
              "the CSV reads back typed", rows[:1])
        # --weight: the same runs scored again; weight 0 leaves the raw medians, whose
        # geometric mean is the raw score (the CSV keeps medians to 0.1 ns); weight 1
        # subtracts the run's whole deviation.
        v2 = [r for r in rows if r["protocol"] == "v2"]
        w0, w1 = ss.reweigh(v2, 0.0), ss.reweigh(v2, 1.0)
        check(v2 and all(abs(x["score_ns"] - x["raw_score_ns"]) < 1e-5 * x["raw_score_ns"] for x in w0) and
              all(abs(y["offset_ns"] - (y["empty_run_ns"] - y["empty_gpu_ns"])) < 1e-9 for y in w1) and
              all(y["score_ns"] < x["score_ns"] for x, y in zip(w0, w1) if y["offset_ns"] > 1),
              "reweigh: weight 0 gives the raw score, weight 1 subtracts the whole deviation")
        p = subprocess.run([sys.executable, BENCH, "--out", m, "--weight", "0.5", "--merge",
                            os.path.join(a, "score_stability.csv")], capture_output=True, text=True, timeout=120)
        check(p.returncode == 0 and "recomputed with 0.50" in p.stderr + p.stdout and "| fp8 fast | fp8_quant | v2 | 3 |" in p.stdout,
              "--merge --weight 0.5 prints the table of the runs scored again", (p.stdout[-800:], p.stderr[-300:]))
        p = subprocess.run([sys.executable, BENCH, "--weight", "0.5"], capture_output=True, text=True, timeout=60)
        check(p.returncode == 2 and "--weight recomputes the runs of --merge" in p.stderr,
              "--weight without --merge is a usage error", p.stderr[-300:])


def test_pure():
    check(ss.plan_rounds({"v2": [2.0, 3.0], "v1": [4.0, 5.0]}, 10, 100) == (9, 6),
          "sizing: v2 rounds first, v1 in what is left", ss.plan_rounds({"v2": [2.0, 3.0], "v1": [4.0, 5.0]}, 10, 100))
    check(ss.plan_rounds({"v2": [20.0], "v1": [20.0]}, 10, 100) == (5, 0), "a tight budget cuts v2 rounds, no v1")
    check(ss.plan_rounds({"v2": [1.0], "v1": [1.0]}, 10, 1e6) == (9, 9), "at most runs - 1 more")
    check(ss.spread(3, 9) == {0, 3, 6} and ss.spread(0, 9) == set() and ss.spread(9, 9) == set(range(9)),
          "v1 rounds spread evenly", ss.spread(3, 9))
    summ = {("a", "v2"): summary_of([100.0, 100.2, 100.1]), ("b", "v2"): summary_of([100.3, 100.15, 100.4]),
            ("c", "v2"): summary_of([101.0, 101.2, 100.05]), ("d", "v2"): summary_of([50.0, 50.1], board="other")}
    got = {(f, s): (round(g, 3), sw, v) for _, f, s, g, _, sw, v in ss.pairs(summ, "v2", {"b": 0.5})}
    check(set(got) == {("a", "b"), ("a", "c"), ("b", "c")}, "the board's three pairs, faster first", got)
    check(got[("a", "b")][1] and got[("a", "b")][2] == "ok (within the resolution)",
          "a swap with a gap below the resolution is fine", got)
    check(got[("a", "c")][1] and got[("a", "c")][2] == "SWAPPED above the resolution" and got[("a", "c")][0] > 0.5,
          "a swap above the resolution is flagged", got)
    check(not any("d" in k for k in got), "pairs only within a board", got)
    got = {(f, s): v for _, f, s, _, _, _, v in ss.pairs(summ, "v2", {"b": None})}
    check(got[("a", "b")] == "SWAPPED above the resolution", "no resolution published: any swap is flagged", got)
    summ = {("a", "v2"): dict(summary_of([1.0, 1.0]), cv=0.19), ("b", "v2"): dict(summary_of([1.0, 1.0]), cv=0.08)}
    check(abs(ss.suggested_resolution(summ, "b") - 0.55) < 1e-9, "suggested: 2.77 x 0.19 % rounded up to 0.55",
          ss.suggested_resolution(summ, "b"))
    check(ss.suggested_resolution(summ, "x") is None, "no runs on a board: no suggestion")
    check(ss.gpu_type("NVIDIA H200") == "H200" and ss.gpu_type("NVIDIA B200 (fake)") == "B200" and
          ss.gpu_type("") == "", "GPU type of a device name")
    with tempfile.TemporaryDirectory() as out, redirect_stdout(io.StringIO()) as buf:
        rc = ss.report([], ["x failed"], out)
    check(rc == 1 and "no accepted runs" in buf.getvalue(), "no runs at all: exit 1", buf.getvalue())


def main():
    test_fake_run()
    test_merge()
    test_pure()
    test_gpu_goals()
    print("test_score_stability: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
