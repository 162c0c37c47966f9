#!/usr/bin/env python3
"""test_benches.py - every benchmark under bench/ still runs, so none rots unseen.

Group names: a bench runs with bench/ first on sys.path, so a file there
named like a module shadows it (bench/queue.py once hid the standard
library's queue and broke `make bench-http`). Every Python file of bench/
is named bench_*.py and none is a standard-library module
(sys.stdlib_module_names) or one of tests/lib and tests/api, which the
benches and their tests import; a Python with bench/ first on its path
still imports concurrent.futures; every bench/FILE that the Makefile,
bench/run.sh, README.md, docs/ and tests/api name exists.

Group smoke: each bench compiles (py_compile), answers --help and runs its
--smoke as a subprocess (seconds each, no GPU: stand-in runners, the
fake-GPU runner build/kjudge-runner-fakegpu, real servers on loopback;
four at a time), one check per bench: exit 0 and its table printed. A
bench whose measurement runs here (HTTP load and attacks, the queue with
fake runners) passes; one whose real measurement needs a GPU (`make bench`
on a GPU host) is counted as skipped when its smoke ran and failed when it
did not, and the output says which. Every bench_*.py but bench_common.py
must have a row in BENCHES. Python 3 standard library only; ends with
"test_benches: N passed, N failed, N skipped".
"""
import concurrent.futures
import os
import py_compile
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
from kjcheck import check, run_groups, skip  # noqa: E402
from kjservice import BIN, FAKE, ROOT  # noqa: E402

BENCH_DIR = os.path.join(ROOT, "bench")
SMOKE_TIMEOUT_S = 150  # one bench's smoke; each takes 1-20 s on an idle 2-core host

# (file, needs a GPU for its real measurement, takes --out, lines its output must hold (regexes))
BENCHES = [
    ("bench_http_load.py", False, False,
     [r"^\| measure \(median of 1 rounds, 1 s each, wrk -t2\) \| kjudge-server \| nginx",
      r"^\| GET rankings, 5 rows \(\d+ bytes\), -c8: requests/s \| \d+ \| \d+ \| \d+\.\d\d \| >= 0\.50 \|$",
      r"^\| POST /submissions -c16: accepted/s \| \d+ \|"]),
    ("bench_attack_http.py", False, False,
     [r"^\| attack \| inputs \| crashes \| 5xx \|",
      r"^\| multipart \(unnamed parts, mutations\) \| 21 \|", r"^\| slowloris \(20 slow heads\) \|",
      r"^\| user names \. \.\. \.\.\. \| 3 \|", r"^\| lenient parsing \|", r"^\| source with a BOM \| 1 \|"]),
    ("bench_abuse_streams.py", False, False,
     [r"^\| # \| attack \| result \|$"] + [r"^\| %d \| " % k for k in range(1, 6)]),
    ("bench_queue.py", False, False,
     [r"^\| part \| measure \| value \|$",
      r"^\| warm test latency, idle \(1 GPU, n=1, median\) \| result stored, the user's verdict \(from POST\) \| \d",
      r"^\| throughput \(1 GPU, 3 test jobs at once\) \| test jobs/min/GPU \| \d",
      r"^\| flood 2 s, --queue-rule fifo, no gap jobs \(1 GPU\) \| light test p50 / p99 \(1 of 1 done\) \| \d",
      r"^\| scaling \| 2 GPUs / 1 GPU \(jobs per minute, all GPUs\) \| \d+\.\d\dx \|$"]),
    ("bench_e2e_latency.py", True, False,
     [r"^\| mode \| file \| n \| median s \|", r"^\| test \| template\.cu \| 2 \| \d",
      r"^\| leaderboard \| examples/fast\.cu \| 2 \| \d"]),
    ("bench_timing_fidelity.py", True, False,
     [r"^\| file \| shape \| kjudge median us \|",
      r"^\| examples/fast\.cu \| T=4096 H=7168 GS=128 \| [\d.]+ \| [\d.]+ \| - \| [\d.]+ \| 1\.1\d+ \|",
      r"^\| empty kernel \| 1x1 \| 2\.912 \|", r"^\| 2 \| 15\.5740 \|",
      r"^\| GPU time \| 2 \| [\d.]+ \| [\d.]+ \| PASS \|$",
      r"^\| fp8 fast \| T=256 H=4096 GS=128 \| 7\.243 \| 6\.569 \| 6\.520 \| \+0\.049 \| 6\.520 \| \+0\.049 \| PASS \|$",
      r"^goal: GPU-time medians within 0\.2 us or 2 % of the separate CUPTI reference, 2 kernels over 1 boards, "
      r"6 shapes: PASS$",
      r"^goal: fp8_quant leaderboard run under 5 s ranked on GPU time: PASS",
      r"^\| ranked on GPU time \| 2 \| [\d.]+ \| [\d.]+ \| [\d.]+ \| gpu_time \|$",
      r"^\| 2\.5 \| 2 \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| PASS \|$"]),
    ("bench_score_stability.py", True, True,
     [r"^\| kernel \| board \| protocol \| runs \|", r"^\| fp8 fast \| fp8_quant \| v2 \| 2 \| \d",
      r"^goal: v2 GPU-time CV below 0\.2 % for every kernel: ",
      r"^\| histogram fast \| histogram \| v1 \| 2 \| \d", r"^goal: v2 CV below 0\.3 % for every kernel: ",
      r"^\| board \| published gpu_time_resolution_pct \(H200\) \| suggested from v2 "]),
    ("bench_process_spread.py", True, True,
     [r"^\| variant \| runs \| processes \| mean score us \|", r"^\| p2 \| 2 \| 2 \| \d",
      r"^\| variant \| set 0 ns \|", r"^\| p2 \| [-+]\d+ \|"]),
    ("bench_compile_load.py", True, True,
     [r"^\| quiet \| 2 \| \d", r"^\| loaded \| 2 \| \d", r"^\| paired within 2 rounds \| [-+]\d",
      r"^verdict \(Welch\): loaded - quiet [-+]\d"]),
    ("bench_python_overhead.py", True, False,
     [r"^\| entry \| wrapper written and compiled \|$", r"^\| fast\.cu via ctypes \| \d+ bytes \(cubin \d+ bytes, (nvcc|placeholder)\) \|$"]),
    ("bench_tool_limit.py", True, False,
     [r"^fp8_quant leaderboards/fp8_quant/examples/fast\.cu: sanitize, profile$"]),
    ("bench_gap_load.py", True, True,
     [r"^\| quiet \| 2 \| \d", r"^\| heavy \| 2 \| \d", r"^\| template, paired within 2 rounds \| [-+]\d",
      r"^verdict \(heavy, Welch\): gap - quiet [-+]\d"]),
]


def bench_files():
    return sorted(f for f in os.listdir(BENCH_DIR) if f.endswith(".py"))


def module_names(folder):
    return {f[:-3] for f in os.listdir(folder) if f.endswith(".py")}


def test_names():
    stdlib = getattr(sys, "stdlib_module_names", None)
    check(stdlib is not None and "queue" in stdlib, "this Python lists its standard-library modules (3.10+)")
    helpers = module_names(os.path.join(ROOT, "tests", "lib")) | module_names(HERE)
    entries = os.listdir(BENCH_DIR)
    mods = [e[:-3] if e.endswith(".py") else e for e in entries if e != "__pycache__" and
            (e.endswith(".py") or os.path.isdir(os.path.join(BENCH_DIR, e)))]
    check(all(m.startswith("bench_") for m in mods),
          "every Python file (and package) of bench/ is named bench_*", [m for m in mods if not m.startswith("bench_")])
    check(not [m for m in mods if m in (stdlib or ())],
          "no file of bench/ shadows a standard-library module", [m for m in mods if m in (stdlib or ())])
    check(not [m for m in mods if m in helpers],
          "no file of bench/ shadows a module of tests/lib or tests/api", [m for m in mods if m in helpers])
    # What failed: concurrent.futures (it imports queue) with bench/ first on the path.
    p = subprocess.run([sys.executable, "-c", "import concurrent.futures, queue; queue.SimpleQueue()"],
                       cwd=BENCH_DIR, capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=BENCH_DIR))
    check(p.returncode == 0, "a Python with bench/ first on its path imports concurrent.futures", p.stderr[-600:])
    # The documents by path (bench/X.py); the tests by what they run or import
    # (the joined path ROOT, "bench", FILE; import bench_X), as some name a missing file on purpose.
    missing = []
    docs = [os.path.join(ROOT, f) for f in ("Makefile", "README.md", os.path.join("bench", "run.sh"))]
    docs += [os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md")]
    tests = [os.path.join(HERE, f) for f in os.listdir(HERE) if f.endswith(".py")]
    for path in docs + tests:
        with open(path, errors="replace") as f:
            text = f.read()
        names = set(re.findall(r"\"bench\", \"([A-Za-z0-9_]+\.(?:py|cuh?|sh))\"", text))
        names |= {m + ".py" for m in re.findall(r"^\s*(?:import|from) (bench_\w+)", text, re.M)}
        if path in docs:
            names |= set(re.findall(r"\bbench/([A-Za-z0-9_]+\.(?:py|cuh?|sh))\b", text))
        missing += ["%s: bench/%s" % (os.path.relpath(path, ROOT), n) for n in sorted(names)
                    if not os.path.exists(os.path.join(BENCH_DIR, n))]
    check(not missing, "every bench/FILE the Makefile, bench/run.sh, README.md, docs/ and tests/api name exists",
          missing)


def test_fidelity_matching():
    """bench_timing_fidelity's GPU-time table (its H200 run compares eight
    kernels over six boards; --smoke only fp8_quant's): shapes whose calls
    launch the same kernels with the same grids (histogram's three of one
    size) go to separate profiled runs, and a multi-kernel call's reference
    is its span, found where the records hold its kernels back to back."""
    sys.path.insert(0, BENCH_DIR)
    import bench_timing_fidelity as tf
    la = lambda k, g: {"kernel": k, "grid": [g, 1, 1]}
    benches = [{"launches": [la("hist", 160)]}, {"launches": [la("hist", 320)]}, {"launches": [la("hist", 320)]},
               {"launches": [la("hist", 320)]}, {"launches": [la("hist", 528)]}]
    got = tf.shape_groups(benches)
    check(got == [[0, 1, 4], [2], [3]], "shapes of one launch sequence are profiled in separate runs", got)
    two = [{"launches": [la("scales", 8), la("apply", 64)]}, {"launches": [la("scales", 16), la("apply", 128)]}]
    check(tf.shape_groups(two) == [[0, 1]], "distinct multi-kernel sequences share a run", tf.shape_groups(two))
    a, b, e = ("scales", 8), ("apply", 64), ("kj_empty", 1)
    recs = [(5000, 5600, a), (1000, 1400, a), (1500, 2400, b), (3000, 3100, e), (5700, 6900, b), (7000, 7100, b)]
    t = tf.ref_table(recs, [(a, b)])
    check(t.get((a, b)) == [1400.0, 1900.0], "a call's span runs from its first kernel's start to its last's end",
          t.get((a, b)))
    check(t.get((b,)) == [900.0, 1200.0, 100.0] and t.get((e,)) == [100.0], "each kernel's own durations too", t)
    check(tf.ref_table([(1000, 1400, a), (1450, 1500, e), (1500, 2400, b)], [(a, b)]).get((a, b)) is None,
          "no span where another kernel runs between the call's kernels")
    kernels = tf.gpu_kernels(False)
    check(len(kernels) >= 8 and len({bd for _, bd, _ in kernels}) >= 4 and all(os.path.exists(p) for _, _, p in kernels),
          "the H200 run compares at least eight kernels over four boards, every file there", kernels)


def smoke_one(row, tmp):
    """(compiled, --help exit, smoke exit, smoke output, seconds) of one bench."""
    name, _, takes_out, _ = row
    path = os.path.join(BENCH_DIR, name)
    try:
        py_compile.compile(path, cfile=os.path.join(tmp, name + "c"), doraise=True)
        compiled = ""
    except py_compile.PyCompileError as e:
        compiled = str(e)
    hp = subprocess.run([sys.executable, path, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    argv = [sys.executable, path, "--smoke"] + (["--out", os.path.join(tmp, name[:-3])] if takes_out else [])
    t0 = time.time()
    try:
        p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=SMOKE_TIMEOUT_S,
                           env=dict(os.environ, PYTHONUNBUFFERED="1"))
        rc, out = p.returncode, p.stdout + "\n--- stderr\n" + p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out = "timeout", "no exit within %d s; output so far: %s" % (SMOKE_TIMEOUT_S, e.stdout)
    return compiled, hp.returncode, (hp.stdout or "") + hp.stderr, rc, out, time.time() - t0


def test_smoke():
    listed = {b[0] for b in BENCHES}
    unlisted = [f for f in bench_files() if f not in listed and f != "bench_common.py"]
    check(not unlisted, "every bench has a smoke run in test_benches.py's BENCHES", unlisted)
    built = [b for b in (BIN, FAKE) if not os.access(b, os.X_OK)]
    if built:
        check(False, "the server and the fake-GPU runner are built (make all build/kjudge-runner-fakegpu)", built)
        return
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="kjudge-benches-") as tmp, \
            concurrent.futures.ThreadPoolExecutor(4) as ex:
        # The longest first, so that the four slots end together.
        order = sorted(BENCHES, key=lambda b: b[0] not in ("bench_queue.py", "bench_abuse_streams.py",
                                                           "bench_compile_load.py"))
        futs = [(row, ex.submit(smoke_one, row, tmp)) for row in order]
        for row, fut in futs:
            name, gpu, _, want = row
            compiled, help_rc, help_out, rc, out, secs = fut.result()
            lines = out.splitlines()
            lost = [w for w in want if not any(re.search(w, ln) for ln in lines)]
            ok = not compiled and help_rc == 0 and "usage:" in help_out and rc == 0 and not lost and \
                "could not go on" not in out
            what = "%s: compiles, --help, --smoke exits 0 and prints its table (%.1f s)" % (name, secs)
            if not ok:
                print("---- %s --smoke, its output's tail:\n%s\n----" % (name, out[-2500:]), flush=True)
                check(False, what, {"py_compile": compiled, "--help exit": help_rc, "--smoke exit": rc,
                                    "lines not printed": lost})
            elif not gpu:
                check(True, what)
                print("ran  %s --smoke: passed, measured here without a GPU (%.1f s)" % (name, secs), flush=True)
            else:
                skip(what, "its smoke ran to the GPU's boundary with stand-ins; the real measurement needs a GPU "
                     "(make bench, or the bench on a GPU host)")
    print("smoke runs of %d benches: %.1f s" % (len(BENCHES), time.time() - t0), flush=True)


if __name__ == "__main__":
    sys.exit(run_groups("test_benches", globals()))
