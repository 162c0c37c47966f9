#!/usr/bin/env python3
"""test_prestart.py - a runner starts the next job's boxes before the job.

Real processes: bin/kjudge-server and the real runner program without a GPU
(build/kjudge-runner-fakegpu, tests/api/fakegpu.c). The fake stands for a
pair of boxes started before its job with a file pre-XXXXXX in
$KJUDGE_FAKE_BOX_DIR, renamed box-XXXXXX when a job takes it, removed by
its teardown; its verdict message says "in boxes started before the job"
when the job was judged in such a pair. Checks (runner/serve.c's top
comment says the rule):

- the first job starts its own boxes; once its result is posted, one pair
  waits for the next job of the same board;
- the next test job of that board is judged in it, and one more pair is
  started beside it (never more than one waits);
- a job of another board does not take the pair: it is torn down, and the
  next pair is for the new board;
- a profile-mode job (its tool starts its own box) does not take it either;
  a leaderboard-mode job of the board does;
- SIGTERM with a pair waiting: the runner tears it down, leaves no box and
  no pair behind, and exits 0;
- with a Python environment (a stand-in interpreter that answers
  runner/pyenv.c's probe): after a Python file's job a Python pair waits
  (pypre-XXXXXX), the next Python job is judged in it; a file that names
  Helion is not (that pair did not import it), and the pair after it
  imports Helion (hlpre-XXXXXX), which a plain Python job then takes; a
  CUDA job takes no Python pair (a CUDA pair waits after that job).
Ends with "test_prestart: N passed, N failed, N skipped".
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import check  # noqa: E402
from kjtest import GOOD_SOURCE  # noqa: E402
import kjrunner  # noqa: E402
from kjrunner import boxed_runner, wait_status, wait_until  # noqa: E402

TEARDOWN_S = 0.3
PRE = "in boxes started before the job"
HISTOGRAM_SOURCE = (
    "//!kjudge launch zero grid=(1) block=(256)\n"
    "//!kjudge launch count grid=(ceil_div(N, 256)) block=(256)\n"
    "extern \"C\" __global__ void zero(const unsigned char* x, unsigned int* h, int N) {}\n"
    "extern \"C\" __global__ void count(const unsigned char* x, unsigned int* h, int N) {}\n"
)


def files(d, prefix):
    return sorted(f for f in os.listdir(d) if f.startswith(prefix + "-"))


def judged(srv, tok, sid):
    """The stored verdict message of sid once done, else None."""
    d = wait_status(srv, tok, sid, "done")
    res = d.get("result") if isinstance(d, dict) and d.get("status") == "done" else None
    return (res.get("message") or "") if isinstance(res, dict) else None


def submit(srv, tok, board, mode="test"):
    return kjrunner.submit(srv, tok, seconds=0.2, mode=mode, leaderboard=board,
                           source=GOOD_SOURCE if board == "fp8_quant" else HISTOGRAM_SOURCE)


def test_prestart(srv, tok, rtok, tmp):
    with boxed_runner(srv, rtok, tmp, "runner", TEARDOWN_S) as (r, bdir):
        a = submit(srv, tok, "fp8_quant")
        msg = judged(srv, tok, a)
        check(msg is not None and PRE not in msg, "the first job starts its own boxes", (msg, r.text()[-400:]))
        check(wait_until(lambda: len(files(bdir, "pre")) == 1 and files(bdir, "box") == []),
              "after its result, one pair waits for the next job", (os.listdir(bdir), r.text()[-400:]))

        b = submit(srv, tok, "fp8_quant")
        msg = judged(srv, tok, b)
        check(msg is not None and msg.endswith(PRE), "the next test job of the board is judged in it",
              (msg, r.text()[-400:]))
        check(wait_until(lambda: len(files(bdir, "pre")) == 1 and files(bdir, "box") == []),
              "one more pair was started beside it, and only one waits", os.listdir(bdir))
        waiting = files(bdir, "pre")

        c = submit(srv, tok, "histogram")
        msg = judged(srv, tok, c)
        check(msg is not None and PRE not in msg, "a job of another board starts its own boxes", msg)
        check(wait_until(lambda: len(files(bdir, "pre")) == 1 and files(bdir, "pre") != waiting and
                         files(bdir, "box") == []),
              "the other board's pair is torn down; the next pair is the new board's",
              (waiting, os.listdir(bdir), r.text()[-400:]))

        p = submit(srv, tok, "histogram", mode="profile")
        msg = judged(srv, tok, p)
        check(msg is not None and PRE not in msg, "a profile job does not take the pair (its tool "
              "starts its own box)", (msg, r.text()[-400:]))
        check(wait_until(lambda: len(files(bdir, "pre")) == 1 and files(bdir, "box") == []),
              "a pair waits again after it", os.listdir(bdir))

        lb = submit(srv, tok, "histogram", mode="leaderboard")
        msg = judged(srv, tok, lb)
        check(msg is not None and msg.endswith(PRE), "a leaderboard job of the board takes it",
              (msg, r.text()[-400:]))
        check(wait_until(lambda: len(files(bdir, "pre")) == 1 and files(bdir, "box") == []),
              "and the pair for the job after it waits", os.listdir(bdir))

        r.signal(signal.SIGTERM)
        rc = r.wait(30)
        check(rc == 0 and os.listdir(bdir) == [] and "stopped name=" in r.text(),
              "SIGTERM with a pair waiting: it is torn down, nothing is left, exit 0",
              (rc, os.listdir(bdir), r.text()[-600:]))


PY_SOURCE = ("#!POPCORN leaderboard fp8_quant\nfrom task import input_t, output_t\n\n"
             "def custom_kernel(data: input_t) -> output_t:\n    return data[1], data[2]\n")
HELION_SOURCE = PY_SOURCE.replace("from task", "import helion\nfrom task")


def submit_py(srv, tok, source=PY_SOURCE):
    return kjrunner.submit(srv, tok, seconds=0.2, source=source, name="k.py")


def stand_in_python(tmp):
    """An interpreter that answers runner/pyenv.c's probe, one fact a line."""
    exe = os.path.join(tmp, "python3-stand-in")
    if not os.path.exists(exe):
        with open(exe, "w") as f:
            f.write("#!/bin/sh\necho \"$0\"\necho /usr\necho\n"
                    "echo 'python 3.11.0, torch 0.0-stand-in, triton (none), helion (none)'\n")
        os.chmod(exe, 0o755)
    return exe


def test_prestart_python(srv, tok, rtok, tmp):
    exe = stand_in_python(tmp)
    bdir = os.path.join(tmp, "py-boxes")
    os.makedirs(bdir, exist_ok=True)
    r = kjrunner.Runner(os.path.join(tmp, "py"), "http://127.0.0.1:%d" % srv.port, rtok, [], name="py-runner",
                        env={"KJUDGE_FAKE_BOX_DIR": bdir, "KJUDGE_FAKE_TEARDOWN_S": str(TEARDOWN_S),
                             "KJUDGE_PYTHON": exe})  # Python pairs: on by default
    r.start()
    try:
        a = submit_py(srv, tok)
        msg = judged(srv, tok, a)
        check(msg is not None and PRE not in msg, "the first Python job starts its own boxes", (msg, r.text()[-400:]))
        check(wait_until(lambda: len(files(bdir, "pypre")) == 1 and files(bdir, "pre") == []),
              "after a Python job, a Python pair waits (not a CUDA one)", (os.listdir(bdir), r.text()[-400:]))
        b = submit_py(srv, tok)
        msg = judged(srv, tok, b)
        check(msg is not None and msg.endswith(PRE), "the next Python job is judged in it", (msg, r.text()[-400:]))
        check(wait_until(lambda: len(files(bdir, "pypre")) == 1 and files(bdir, "box") == []),
              "and a Python pair waits again", os.listdir(bdir))
        h = submit_py(srv, tok, HELION_SOURCE)
        msg = judged(srv, tok, h)
        check(msg is not None and PRE not in msg, "a file that names Helion does not take a pair without it",
              (msg, r.text()[-400:]))
        check(wait_until(lambda: len(files(bdir, "hlpre")) == 1 and files(bdir, "pypre") == [] and
                         files(bdir, "box") == []),
              "after it the waiting pair imports Helion; the one without it is torn down", os.listdir(bdir))
        p = submit_py(srv, tok)
        msg = judged(srv, tok, p)
        check(msg is not None and msg.endswith(PRE), "a plain Python job is judged in a pair with Helion",
              (msg, r.text()[-400:]))
        check(wait_until(lambda: len(files(bdir, "pypre")) == 1 and files(bdir, "hlpre") == []),
              "and the pair after it has no Helion again", os.listdir(bdir))
        c = submit(srv, tok, "fp8_quant")
        msg = judged(srv, tok, c)
        check(msg is not None and PRE not in msg, "a CUDA job does not take a Python pair", (msg, r.text()[-400:]))
        check(wait_until(lambda: len(files(bdir, "pre")) == 1 and files(bdir, "pypre") == [] and
                         files(bdir, "box") == []),
              "the Python pair is torn down; a CUDA pair waits after the CUDA job", os.listdir(bdir))
    finally:
        r.stop()
    off = kjrunner.Runner(os.path.join(tmp, "py-off"), "http://127.0.0.1:%d" % srv.port, rtok, [],
                          name="py-off-runner",
                          env={"KJUDGE_FAKE_BOX_DIR": bdir, "KJUDGE_FAKE_TEARDOWN_S": str(TEARDOWN_S),
                               "KJUDGE_PYTHON": exe, "KJUDGE_PY_PRESTART": "0"})
    off.start()
    try:
        d = submit_py(srv, tok)
        msg = judged(srv, tok, d)
        check(msg is not None and PRE not in msg, "KJUDGE_PY_PRESTART=0: the Python job starts its own boxes",
              (msg, off.text()[-400:]))
        check(not wait_until(lambda: len(files(bdir, "pypre")) > 0, 2.0),
              "and no Python pair is started after it", os.listdir(bdir))
    finally:
        off.stop()


def test_prestart_held(srv, tok, rtok, tmp):
    """KJUDGE_PY_PRESTART_EARLY=1: a timed Python job starts the next job's
    pair beside it, held (pyheld-, hlheld- for Helion: imports, no CUDA,
    no reference box), and the same pair is made whole when the job ends
    (renamed pypre-/hlpre-, not started again), so the next Python job is
    judged in it; a held pair fits no job. KJUDGE_FAKE_RELEASE=fail: the
    held box is gone at the release; the runner says so, drops it and
    starts the next pair as without the option."""
    exe = stand_in_python(tmp)
    for fail in (False, True):
        bdir = os.path.join(tmp, "held-boxes-%d" % fail)
        os.makedirs(bdir, exist_ok=True)
        env = {"KJUDGE_FAKE_BOX_DIR": bdir, "KJUDGE_FAKE_TEARDOWN_S": str(TEARDOWN_S),
               "KJUDGE_PYTHON": exe, "KJUDGE_PY_PRESTART_EARLY": "1"}
        if fail:
            env["KJUDGE_FAKE_RELEASE"] = "fail"
        r = kjrunner.Runner(os.path.join(tmp, "held-%d" % fail), "http://127.0.0.1:%d" % srv.port, rtok, [],
                            name="held-runner-%d" % fail, env=env)
        r.start()
        try:
            a = kjrunner.submit(srv, tok, seconds=2.0, mode="leaderboard", source=HELION_SOURCE, name="k.py")
            check(wait_until(lambda: len(files(bdir, "hlheld")) == 1 and len(files(bdir, "box")) == 1, 10),
                  "%s: while a timed Helion job runs, the next pair waits held beside it (hlheld-)" %
                  ("release fails" if fail else "held"), (os.listdir(bdir), r.text()[-400:]))
            held = files(bdir, "hlheld")
            msg = judged(srv, tok, a)
            check(msg is not None and PRE not in msg, "the job itself started its own boxes", msg)
            if not fail:
                tail = held[0].split("-", 1)[1] if held else None
                check(wait_until(lambda: files(bdir, "hlpre") == ["hlpre-%s" % tail] and files(bdir, "hlheld") == []),
                      "when it ends, that same pair is made whole (hlheld-X renamed hlpre-X), not started again",
                      (held, os.listdir(bdir)))
                b = submit_py(srv, tok, HELION_SOURCE)
                msg = judged(srv, tok, b)
                check(msg is not None and msg.endswith(PRE), "the next Helion job is judged in it",
                      (msg, r.text()[-400:]))
            else:
                check(wait_until(lambda: "the Python pair started beside job=" in r.text() and
                                 len(files(bdir, "hlpre")) == 1 and files(bdir, "hlheld") == []),
                      "a release that fails is logged, the held pair dropped and a new pair started",
                      (os.listdir(bdir), r.text()[-600:]))
        finally:
            r.stop()


def main():
    return kjrunner.run_suite("test_prestart", [test_prestart, test_prestart_python, test_prestart_held])


if __name__ == "__main__":
    sys.exit(main())
