"""gpueval.py - what the GPU test scripts share beyond tests/lib.

The paths of the built programs, `kjudge-runner eval` as a function, the
"template still accepted" check run after every fault, the report written
to $KJ_REPORT_DIR/gpu-report.json, and main(): probe the GPU, then run the
given test functions, or count each as skipped when there is no GPU, and
print "NAME: N passed, N failed, N skipped". test_gpu.py and
test_exploits.py both build on it (neither imports the other).
Importing it puts tests/lib on sys.path. Python 3 stdlib only.
"""
import json
import os
import subprocess
import sys

LIB = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib")
if LIB not in sys.path:
    sys.path.insert(0, LIB)

import kjcheck  # noqa: E402
from kjservice import ROOT, RUNNER, BIN as SERVER  # noqa: E402,F401

LB = os.path.join(ROOT, "leaderboards", "fp8_quant")
report = {"eval": {}, "server": {}}

# A long GPU run shows each pass as it comes, and a failure's whole detail.
kjcheck.Counts.verbose = True
kjcheck.Counts.limit = None
counts = kjcheck.Counts
check = kjcheck.check


def skip(name, why):
    kjcheck.skip(name, why)


def run(args, timeout=600):
    p = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def evaluate(path, mode="test", extra=(), env=None):
    """`kjudge-runner eval` on fp8_quant: (exit status, result JSON or None, stderr)."""
    p = subprocess.run([RUNNER, "eval", path, "--leaderboard", "fp8_quant", "--mode", mode, "--json", *extra],
                       cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    rc, out, err = p.returncode, p.stdout, p.stderr
    try:
        return rc, json.loads(out), err
    except ValueError:
        return rc, None, err + out


def template_ok(after):
    rc, res, err = evaluate(os.path.join(LB, "template.cu"))
    check(res is not None and res.get("verdict") == "accepted", "template accepted after %s" % after,
          (res or {}).get("message", err))


def main(name, tests):
    """Run tests (KJ_GPU_ONLY=a,b keeps only test_a, test_b; a name that is
    no test is a failure) on the GPU, or count each as skipped without one;
    returns the exit status. With --list, prints the tests' names (a b ...)
    and runs nothing: tests/gpu/run.sh's split runs what its parts leave."""
    names = [t.__name__[5:] for t in tests]
    if "--list" in sys.argv[1:]:
        print(" ".join(names))
        return 0
    only = os.environ.get("KJ_GPU_ONLY")  # e.g. "corpus,examples" while developing
    if only:
        want = only.split(",")
        unknown = [n for n in want if n not in names]
        if unknown:  # a failure, never a pass: a run without a GPU must not count one
            check(False, "KJ_GPU_ONLY names only tests that exist (%s)" % " ".join(names), unknown)
        tests = [t for t, n in zip(tests, names) if n in want]
    rc, out, err = run([RUNNER, "probe"], timeout=120)
    if rc != 0:
        for t in tests:
            skip(t.__name__, "no GPU: " + (err.strip() or out.strip())[:200])
    else:
        print("GPU: " + " ".join(out.split()), flush=True)
        for t in tests:
            try:
                t()
            except Exception as e:  # a crash in a test is a failure, never a pass
                check(False, t.__name__, "raised %r" % e)
    out_dir = os.environ.get("KJ_REPORT_DIR")
    if out_dir:
        with open(os.path.join(out_dir, "gpu-report.json"), "w") as f:
            json.dump(report, f, indent=1)
    return kjcheck.summary(name)
