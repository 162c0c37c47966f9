#!/usr/bin/env python3
"""test_runner_args.py - `kjudge-runner eval` refuses bad timing options
before it starts anything.

The real bin/kjudge-runner, no GPU needed: each bad option ends the command
with exit 2 and one line naming the option, and no GPU work is tried (no
"judge error" and no "no GPU" message). Checked: --trace into a folder that
does not exist, --trace naming a folder, and numbers that are not numbers,
not whole or out of range (--processes outside 1 to 8, the v2 rounds of
docs/timing.md section 4; --gpu, --warmup, --samples, --shape, --gpu-plan-ms). Ends with
"test_runner_args: N passed, N failed, N skipped".
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNER = os.path.join(ROOT, "bin", "kjudge-runner")
KERNEL = os.path.join(ROOT, "leaderboards", "histogram", "examples", "fast.cu")


def run_eval(*extra):
    p = subprocess.run([RUNNER, "eval", KERNEL, "--leaderboard", "histogram", "--mode", "leaderboard"]
                       + list(extra), cwd=ROOT, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def refused(what, extra, needle):
    rc, out, err = run_eval(*extra)
    check(rc == 2, "%s: exit 2" % what, (rc, err[-300:]))
    check(needle in err, "%s: the message says %r" % (what, needle), err[-300:])
    check("judge error" not in err and "GPU" not in err and out == "",
          "%s: refused before any GPU work" % what, (out[-200:], err[-300:]))


def main():
    if not os.access(RUNNER, os.X_OK):
        print("FAIL %s is not built\ntest_runner_args: 0 passed, 1 failed, 0 skipped" % RUNNER)
        return 1
    with tempfile.TemporaryDirectory(prefix="kjudge-args-") as tmp:
        missing = os.path.join(tmp, "no-such-folder", "trace.csv")
        refused("--trace into a missing folder", ["--trace", missing],
                "--trace %s: No such file or directory" % missing)
        folder = os.path.join(tmp, "a-folder")
        os.mkdir(folder)
        refused("--trace naming a folder", ["--trace", folder], "--trace %s: Is a directory" % folder)
        check(os.listdir(tmp) == ["a-folder"] and os.listdir(folder) == [], "nothing was written",
              (os.listdir(tmp), os.listdir(folder)))
    for flag, bad, says in (("--processes", "9", "a whole number from 1 to 8"),
                            ("--processes", "0", "a whole number from 1 to 8"),
                            ("--processes", "x", "a whole number from 1 to 8"),
                            ("--processes", "2.5", "a whole number from 1 to 8"),
                            ("--gpu", "-1", "a whole number from 0 to 1023"),
                            ("--warmup", "1e400", "a number from 0 to 3600"),
                            ("--warmup", "nan", "a number from 0 to 3600"),
                            ("--samples", "10abc", "a whole number from 0 to 10000000"),
                            ("--shape", "", "a whole number from 0 to"),
                            ("--gpu-plan-ms", "0.01", "a number from 0.1 to 1000"),
                            ("--gpu-plan-ms", "inf", "a number from 0.1 to 1000")):
        refused("%s %r" % (flag, bad), [flag, bad], "%s '%s' is not %s" % (flag, bad, says))
    rc, out, err = run_eval("--samples")
    check(rc == 2 and "is not a whole number" in err, "a number flag without its value is refused", err[-300:])
    print("test_runner_args: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
