#!/usr/bin/env python3
"""test_teardown.py - a runner posts the result before it tears the boxes down.

Real processes: bin/kjudge-server and the real runner program without a GPU
(build/kjudge-runner-fakegpu, tests/api/fakegpu.c). The fake stands for a
job's boxes with a file in $KJUDGE_FAKE_BOX_DIR that its teardown removes
after $KJUDGE_FAKE_TEARDOWN_S seconds (here 4 s, against jobs of 0.3 s, so
the order of things does not depend on the machine's speed). Checks:

- the result is stored (status done) while the job's box is still there,
  and the runner then logs "torn down job=N in X s" and the box is gone;
- the next test-mode job is claimed and judged while the last job's
  teardown still runs, and its own teardown waits for that one;
- a leaderboard-mode job is judged only once the last job's teardown is
  over (ranked timing never shares the GPU with it);
- SIGTERM while a teardown is pending: the runner finishes it, leaves no
  box behind and exits 0.
Ends with "test_teardown: N passed, N failed, N skipped".
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import check  # noqa: E402
import kjrunner  # noqa: E402
from kjrunner import boxed_runner, wait_until, submit, sub  # noqa: E402

TEARDOWN_S = 4


def boxes(d):
    return sorted(f for f in os.listdir(d) if f.startswith("box-"))


def done(srv, tok, sid):
    d = sub(srv, tok, sid)
    return d is not None and d.get("status") == "done"


def test_result_first(srv, tok, rtok, tmp):
    with boxed_runner(srv, rtok, tmp, "first", TEARDOWN_S) as (r, bdir):
        sid = submit(srv, tok, seconds=0.3)
        ok = wait_until(lambda: done(srv, tok, sid))
        left = boxes(bdir)
        check(ok and len(left) == 1 and "torn down job=%d " % sid not in r.text(),
              "the result is stored while the job's box is still being torn down",
              (ok, left, r.text()[-500:]))
        check(wait_until(lambda: "torn down job=%d in " % sid in r.text(), TEARDOWN_S + 10) and
              boxes(bdir) == [], "then the runner tears it down and says so", (boxes(bdir), r.text()[-500:]))
        d = sub(srv, tok, sid)
        check(d is not None and d.get("verdict") == "compile_error", "the verdict is the judge's", d)


def torn(r, sid):
    """Where the runner's log says job sid was torn down (-1: not yet)."""
    return r.text().find("torn down job=%d in " % sid)


def test_overlap(srv, tok, rtok, tmp):
    with boxed_runner(srv, rtok, tmp, "overlap", TEARDOWN_S) as (r, bdir):
        a = submit(srv, tok, seconds=0.3)
        b = submit(srv, tok, seconds=0.3)
        ok = wait_until(lambda: done(srv, tok, a) and done(srv, tok, b))
        log = r.text()
        check(ok and torn(r, a) < 0 and len(boxes(bdir)) == 2,
              "the next test job is judged while the last one's boxes are still torn down",
              (ok, boxes(bdir), log[-600:]))
        ok = wait_until(lambda: torn(r, a) >= 0 and torn(r, b) >= 0, 2 * TEARDOWN_S + 10)
        log = r.text()
        one, two = sorted((a, b), key=lambda s: log.find("judging job=%d " % s))
        check(ok and 0 <= torn(r, one) < torn(r, two) and
              boxes(bdir) == [], "one teardown at a time: the second job's waits for the first's",
              (boxes(bdir), log[-600:]))

        # The leaderboard job comes while the test job's teardown runs.
        a = submit(srv, tok, seconds=0.3)
        ok = wait_until(lambda: done(srv, tok, a))
        lb = submit(srv, tok, seconds=0.3, mode="leaderboard")
        ok = ok and wait_until(lambda: done(srv, tok, lb), TEARDOWN_S + 30)
        log = r.text()
        judging = log.find("judging job=%d " % lb)
        check(ok and 0 <= torn(r, a) < judging,
              "a leaderboard job is judged only after the last job's teardown", (ok, log[-800:]))
        check(wait_until(lambda: torn(r, lb) >= 0, TEARDOWN_S + 10) and boxes(bdir) == [],
              "and its own boxes are torn down after its result", r.text()[-400:])


def test_stop_pending(srv, tok, rtok, tmp):
    with boxed_runner(srv, rtok, tmp, "stop", TEARDOWN_S) as (r, bdir):
        sid = submit(srv, tok, seconds=0.3)
        ok = wait_until(lambda: done(srv, tok, sid))
        pending = boxes(bdir)
        check(ok and len(pending) == 1, "a job done, its teardown pending", (ok, pending, r.text()[-400:]))
        r.signal(signal.SIGTERM)
        rc = r.wait(TEARDOWN_S + 30)
        check(rc == 0 and boxes(bdir) == [] and "torn down job=%d in " % sid in r.text() and
              "stopped name=" in r.text(),
              "SIGTERM during the teardown: it is finished, no box is left, exit 0",
              (rc, boxes(bdir), r.text()[-600:]))


def main():
    return kjrunner.run_suite("test_teardown", [test_result_first, test_overlap, test_stop_pending])


if __name__ == "__main__":
    sys.exit(main())
