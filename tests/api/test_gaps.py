#!/usr/bin/env python3
"""test_gaps.py - a runner judges test-mode jobs in the gaps of a timed job.

Real processes: bin/kjudge-server and the real runner program without a GPU
(build/kjudge-runner-fakegpu, tests/api/fakegpu.c, whose timed jobs sleep
in eight rounds and call the gap between two; box files stand for boxes).
runner/serve_gap.c's top comment says the rule. Checks:

- a test job submitted while a leaderboard job runs is judged in one of
  its gaps: done while the leaderboard job is still running, its own
  events and result stored, one gap job per gap;
- a leaderboard job is never taken in a gap: two leaderboard jobs queued
  behind a running one wait for it;
- a test job with no verdict within --gap-seconds is given up: given back
  (queued again, no attempt charged), not claimed again in the same timed
  job, and judged after it as usual;
- --gap-seconds 0: no gap jobs, the test job waits for the timed one;
- a stop during a gap job gives both jobs back; nothing is left behind;
- a gap job's runtime_error is followed by a GPU health check; when it
  fails, the gap job's verdict stands, the timed job is queued again as an
  internal error (not trusted) and the runner stops taking work;
- --gap-seconds is checked like the other numbers.
- sharing (runner/share.h, serve_side.c): test jobs submitted while a
  sanitize job runs are judged beside it (done while it still runs, their
  own results, boxes gone), a leaderboard job submitted then is not: it
  waits for the GPU to itself; a profile job gives test jobs turns between
  its shapes; --share sanitize=alone keeps them waiting, test=side lets
  a test job be judged beside a slow test job; a stop gives the job
  beside back with the main one; a bad --share
  (a ranked mode beside, an unknown mode or way) is refused.
Ends with "test_gaps: N passed, N failed, N skipped".
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import check  # noqa: E402
import kjrunner  # noqa: E402
from kjrunner import sub, submit, wait_status, wait_until  # noqa: E402
from kjrunner import done_at, status  # noqa: E402
from kjtest import GOOD_SOURCE  # noqa: E402

TEARDOWN_S = 0.1


def runner(srv, rtok, tmp, name, args=(), env=None):
    bdir = os.path.join(tmp, name + "-boxes")
    os.makedirs(bdir, exist_ok=True)
    r = kjrunner.Runner(os.path.join(tmp, name), "http://127.0.0.1:%d" % srv.port, rtok, list(args),
                        env=dict({"KJUDGE_FAKE_BOX_DIR": bdir, "KJUDGE_FAKE_TEARDOWN_S": str(TEARDOWN_S)},
                                 **(env or {})))
    return r.start(), bdir


def boxes(bdir):
    """The fake's box files of jobs (a pair started for the next job, pre-*, may wait)."""
    return sorted(f for f in os.listdir(bdir) if f.startswith("box-"))



def running(srv, tok, sid):
    return wait_until(lambda: status(srv, tok, sid) == "running", 15)



def behind_timed(srv, tok, r, timed_s, test_s):
    """A leaderboard job of timed_s, and once it runs a test job of test_s:
    (leaderboard id, test id, {id: time seen done})."""
    lb = submit(srv, tok, seconds=timed_s, mode="leaderboard")
    check(running(srv, tok, lb), "the leaderboard job runs", r.text()[-400:])
    t = submit(srv, tok, seconds=test_s)
    return lb, t, done_at(srv, tok, [lb, t])


def test_gap_job(srv, tok, rtok, tmp):
    r, bdir = runner(srv, rtok, tmp, "gaps")
    try:
        lb = submit(srv, tok, seconds=4, mode="leaderboard")
        check(running(srv, tok, lb), "the leaderboard job runs", r.text()[-400:])
        t1 = submit(srv, tok, seconds=0.1)
        lb2 = submit(srv, tok, seconds=0.5, mode="leaderboard")
        t2 = submit(srv, tok, seconds=0.1)
        seen = done_at(srv, tok, [lb, lb2, t1, t2])
        check(len(seen) == 4, "all four jobs are done", (seen, r.text()[-800:]))
        if len(seen) == 4:
            check(seen[t1] < seen[lb] and seen[t2] < seen[lb],
                  "both test jobs are done while the first leaderboard job still runs",
                  (seen, r.text()[-800:]))
            check(seen[lb2] > seen[lb], "the second leaderboard job is not taken in a gap: it waits",
                  seen)
        log = r.text()
        check(("in a gap of job=%d" % lb) in log and log.count("in a gap of job=%d" % lb) == 2,
              "the runner says each test job was judged in a gap of the first", log[-800:])
        check(("in a gap of job=%d" % lb2) not in log, "nothing was left for the second one's gaps",
              log[-800:])
        for t in (t1, t2):
            d = sub(srv, tok, t)
            res = d.get("result") if isinstance(d, dict) else None
            check(isinstance(res, dict) and res.get("verdict") == "compile_error" and
                  d.get("attempts", 0) <= 1,
                  "the gap job's result is stored as any job's", d)
            ev = [e.get("event") for e in kjrunner.events(srv, tok, t)]
            check("compiling" in ev, "the gap job's own events are stored", ev)
        check(wait_until(lambda: boxes(bdir) == [], 10), "no box of a job is left behind",
              os.listdir(bdir))
        check(("job=%d: 2 test job(s) judged in its gaps" % lb) in log,
              "the timed job's log line counts its gap jobs", log[-800:])
    finally:
        r.stop()


def test_give_back(srv, tok, rtok, tmp):
    r, bdir = runner(srv, rtok, tmp, "giveback", ["--gap-seconds", "0.5"])
    try:
        lb, slow, seen = behind_timed(srv, tok, r, 4, 1.5)
        check(len(seen) == 2 and seen[slow] > seen[lb],
              "a test job slower than --gap-seconds is judged after the timed job", (seen, r.text()[-800:]))
        log = r.text()
        check(log.count("judging job=%d leaderboard=fp8_quant mode=test in a gap" % slow) == 1,
              "it was tried in one gap only (skipped in the others)", log[-1200:])
        check(("gave job=%d back (no verdict within the gap's time)" % slow) in log,
              "the runner says it gave the job back", log[-1200:])
        q = [e for e in kjrunner.events(srv, tok, slow) if e.get("event") == "queued"]
        check(any("no verdict within a gap of a timed job" in (e.get("data") or {}).get("reason", "") for e in q),
              "its user sees why it was queued again", q)
        d = sub(srv, tok, slow)
        check(isinstance(d, dict) and d.get("result", {}).get("verdict") == "compile_error" and
              d.get("attempts", 0) <= 1,
              "its result is the normal one, no attempt charged for the gap", d)
        check(wait_until(lambda: boxes(bdir) == [], 10), "no box of a job is left behind", os.listdir(bdir))
    finally:
        r.stop()


def test_no_gaps(srv, tok, rtok, tmp):
    r, bdir = runner(srv, rtok, tmp, "nogaps", ["--gap-seconds", "0"])
    try:
        lb, t, seen = behind_timed(srv, tok, r, 2, 0.1)
        check(len(seen) == 2 and seen[t] > seen[lb],
              "--gap-seconds 0: the test job waits for the timed one", (seen, r.text()[-600:]))
        check("in a gap" not in r.text(), "and nothing is judged in a gap", r.text()[-600:])
    finally:
        r.stop()


def test_stop_in_gap(srv, tok, rtok, tmp):
    r, bdir = runner(srv, rtok, tmp, "stopgap", ["--gap-seconds", "5", "--grace", "0"])
    lb = submit(srv, tok, seconds=6, mode="leaderboard")
    check(running(srv, tok, lb), "the leaderboard job runs", r.text()[-400:])
    t = submit(srv, tok, seconds=3)
    check(wait_until(lambda: ("judging job=%d" % t) in r.text(), 15),
          "the test job is being judged in a gap", r.text()[-600:])
    r.signal(signal.SIGTERM)
    rc = r.wait(30)
    log = r.text()
    check(rc == 0, "SIGTERM during a gap job: the runner exits 0", (rc, log[-800:]))
    check(status(srv, tok, lb) == "queued" and status(srv, tok, t) == "queued",
          "both the timed job and the gap job are queued again at once",
          (sub(srv, tok, lb), sub(srv, tok, t), log[-800:]))
    check(("gave job=%d back (the runner stops)" % t) in log, "the runner says it gave the gap job back",
          log[-800:])
    # (The real boxes die with the runner, PR_SET_PDEATHSIG; the fake's files of
    # the two jobs being judged stay, so they are not counted here.)
    # Someone must finish them: a runner without gaps takes both.
    r2, _ = runner(srv, rtok, tmp, "after", ["--gap-seconds", "0"])
    try:
        check(wait_status(srv, tok, lb, "done", 30).get("status") == "done" and
              wait_status(srv, tok, t, "done", 30).get("status") == "done",
              "both are judged by the next runner", r2.text()[-600:])
    finally:
        r2.stop()


def test_gap_fault(srv, tok, rtok, tmp):
    r, _ = runner(srv, rtok, tmp, "fault", env={"KJUDGE_FAKE_HEALTH": "fail"})
    try:
        lb = submit(srv, tok, seconds=4, mode="leaderboard")
        check(running(srv, tok, lb), "the leaderboard job runs", r.text()[-400:])
        t = submit(srv, tok, seconds=0.1, source=GOOD_SOURCE + "\n// fakegpu:verdict=runtime_error\n")
        rc = r.wait(30)
        log = r.text()
        check(("GPU 0 failed its health check after gap job=%d" % t) in log,
              "a gap job's runtime_error is followed by a GPU health check, which fails here", log[-1200:])
        d = sub(srv, tok, t)
        check(isinstance(d, dict) and (d.get("result") or {}).get("verdict") == "runtime_error",
              "the gap job's own verdict stands", d)
        d = sub(srv, tok, lb)
        q = [e for e in kjrunner.events(srv, tok, lb) if e.get("event") == "queued"]
        check(isinstance(d, dict) and d.get("status") == "queued" and d.get("attempts") == 1 and
              any("the judge failed (attempt 1 of" in (e.get("data") or {}).get("reason", "") for e in q),
              "the timed job is not trusted: an internal error, queued again for another runner", (d, q))
        check(rc is not None and rc != 0 and "is unhealthy" in log,
              "and the runner stops taking work", (rc, log[-600:]))
    finally:
        r.stop()


def test_side_lane(srv, tok, rtok, tmp):
    r, bdir = runner(srv, rtok, tmp, "side")
    try:
        san = submit(srv, tok, seconds=3, mode="sanitize")
        check(running(srv, tok, san), "the sanitize job runs", r.text()[-400:])
        t1 = submit(srv, tok, seconds=0.1)
        lb = submit(srv, tok, seconds=0.3, mode="leaderboard")
        t2 = submit(srv, tok, seconds=0.1)
        seen = done_at(srv, tok, [san, t1, lb, t2])
        log = r.text()
        check(len(seen) == 4, "all four jobs are done", (seen, log[-800:]))
        if len(seen) == 4:
            check(seen[t1] < seen[san] and seen[t2] < seen[san],
                  "both test jobs are done while the sanitize job still runs", (seen, log[-1200:]))
            check(seen[lb] > seen[san], "the leaderboard job never shares: it waits", seen)
        check(log.count("beside job=%d" % san) == 2,
              "the runner says each test job was judged beside the sanitize job", log[-1200:])
        check(("job=%d: 2 test job(s) judged beside it" % san) in log,
              "the sanitize job's log line counts them", log[-1200:])
        for t in (t1, t2):
            d = sub(srv, tok, t)
            check(isinstance(d, dict) and (d.get("result") or {}).get("verdict") == "compile_error"
                  and d.get("attempts", 0) <= 1, "the side job's result is stored as any job's", d)
        check(wait_until(lambda: boxes(bdir) == [], 10), "no box of a job is left behind",
              os.listdir(bdir))
        # A profile job gives turns between its shapes (the fake's rounds).
        prof = submit(srv, tok, seconds=2, mode="profile")
        check(running(srv, tok, prof), "the profile job runs", r.text()[-400:])
        t3 = submit(srv, tok, seconds=0.1)
        seen = done_at(srv, tok, [prof, t3])
        check(len(seen) == 2 and seen[t3] < seen[prof] and
              ("in a gap of job=%d" % prof) in r.text(),
              "a test job is judged in a turn between the profile job's shapes",
              (seen, r.text()[-800:]))
    finally:
        r.stop()


def test_side_alone(srv, tok, rtok, tmp):
    r, _ = runner(srv, rtok, tmp, "alone", ["--share", "sanitize=alone,test=side"])
    try:
        san = submit(srv, tok, seconds=1.5, mode="sanitize")
        check(running(srv, tok, san), "the sanitize job runs", r.text()[-400:])
        t = submit(srv, tok, seconds=0.1)
        seen = done_at(srv, tok, [san, t])
        check(len(seen) == 2 and seen[t] > seen[san],
              "--share sanitize=alone: the test job waits for the sanitize job", (seen, r.text()[-600:]))
        check(("beside job=%d" % san) not in r.text(), "and nothing is judged beside it", r.text()[-600:])
        slow = submit(srv, tok, seconds=2)
        check(running(srv, tok, slow), "a slow test job runs", r.text()[-400:])
        fast = submit(srv, tok, seconds=0.1)
        seen = done_at(srv, tok, [slow, fast])
        check(len(seen) == 2 and seen[fast] < seen[slow] and ("beside job=%d" % slow) in r.text(),
              "--share test=side: a test job is judged beside a slow one", (seen, r.text()[-600:]))
    finally:
        r.stop()


def test_stop_beside(srv, tok, rtok, tmp):
    """Last: it leaves both jobs queued."""
    r, _ = runner(srv, rtok, tmp, "stopside", ["--gap-seconds", "5", "--grace", "0"])
    san = submit(srv, tok, seconds=6, mode="sanitize")
    check(running(srv, tok, san), "the sanitize job runs", r.text()[-400:])
    t = submit(srv, tok, seconds=3)
    check(wait_until(lambda: ("judging job=%d" % t) in r.text(), 15),
          "the test job is being judged beside it", r.text()[-600:])
    r.signal(signal.SIGTERM)
    rc = r.wait(30)
    log = r.text()
    check(rc == 0 and status(srv, tok, san) == "queued" and status(srv, tok, t) == "queued" and
          ("gave job=%d back (the runner stops)" % t) in log,
          "SIGTERM with a job beside: the runner exits 0, both jobs queued again at once",
          (rc, sub(srv, tok, san), sub(srv, tok, t), log[-800:]))


def test_args(srv, tok, rtok, tmp):
    for bad in ("leaderboard=side", "benchmark=side", "tests=side", "sanitize=maybe", "sanitize", ""):
        p = subprocess.run([kjrunner.FAKE, "serve", "--server", "http://127.0.0.1:9", "--share", bad],
                           capture_output=True, text=True, timeout=30)
        check(p.returncode == 2 and "--share" in p.stderr,
              "--share %r is refused with a message" % bad, (p.returncode, p.stderr[-300:]))
    for bad in ("-1", "61", "x", "nan", ""):
        p = subprocess.run([kjrunner.FAKE, "serve", "--server", "http://127.0.0.1:9", "--gap-seconds", bad],
                           capture_output=True, text=True, timeout=30)
        check(p.returncode == 2 and "--gap-seconds" in p.stderr,
              "--gap-seconds %r is refused with a message" % bad, (p.returncode, p.stderr[-300:]))


def main():
    return kjrunner.run_suite("test_gaps", [test_args, test_gap_job, test_give_back, test_no_gaps,
                                            test_stop_in_gap, test_gap_fault, test_side_lane,
                                            test_side_alone, test_stop_beside])


if __name__ == "__main__":
    sys.exit(main())
