#!/usr/bin/env python3
"""test_claim_filter.py - a claim's "modes" and "skip", over real HTTP.

A runner between two rounds of a timed job fills the gap with a short
test-mode job: it claims with "modes": ["test"] and "skip" naming the jobs
it gave back in earlier gaps (docs/protocol.md, "Runner endpoints").
Starts bin/kjudge-server on a loopback port with a temporary database and
claims by hand, so what each claim gets is seen directly. Checks:

- a leaderboard job queued before a test job: modes [test] gets the test
  job, a plain claim then the leaderboard job; modes [leaderboard] on a
  queue of test jobs only: 204, the jobs stay queued;
- skip of the only queued job: 204, still queued; skip of one of two: the
  other; repeated modes and ids, every mode named, 16 ids: accepted;
- fair share among the allowed jobs: of two users' test jobs, the one of
  the user with less GPU time (no running job) is taken although the other
  is older, and the queue positions said so beforehand: while a job runs,
  a test job's position is its place among the test jobs when that is
  smaller (server/db_queue.c, the lanes that take them);
- a parked ?wait=2 claim for modes [test] is not given leaderboard jobs
  submitted meanwhile, each of which wakes it (204 once its 2 s are over,
  not before, and not pushed later by the wakes), and a parked one gets a
  test job submitted after a leaderboard job;
- every malformed "modes" or "skip" is 400 bad_claim naming the field, and
  changes nothing: the job stays queued, the runner is not seen in
  /metrics, and a plain claim then gets the job.
Ends with "test_claim_filter: N passed, N failed, N skipped".
"""
import os
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check  # noqa: E402
from kjhttp import Client  # noqa: E402
from kjservice import BIN  # noqa: E402
from kjtest import Server, is_error, make_runners, make_users, submit  # noqa: E402

CLAIM = "/api/v1/runner/claim"


def claim(c, tok, query="", name="gapbox", raw=None, **fields):
    """POST /runner/claim with the filter fields given; (status, JSON, seconds)."""
    body = dict({"runner": name, "gpu": "H200", "arch": "sm_90a"}, **fields)
    t0 = time.time()
    st, _, d, _ = c.post_json(CLAIM + query, body, tok, raw=raw)
    return st, d, time.time() - t0


def job_id(st, d):
    return d["job"]["id"] if st == 200 and isinstance(d, dict) and "job" in d else None


def status_of(c, tok, sid):
    st, _, d, _ = c.get("/api/v1/submissions/%d" % sid, tok)
    return d.get("status") if st == 200 and isinstance(d, dict) else None


def drain(c, tok):
    """Take every queued H200 job with plain claims (they stay running); the ids."""
    got = []
    while True:
        i = job_id(*claim(c, tok, name="drain")[:2])
        if i is None:
            return got
        got.append(i)


def test_modes(c, t):
    lb = submit(c, t["alice"], mode="leaderboard")
    tj = submit(c, t["alice"], mode="test")
    check(lb and tj and lb < tj, "queued: a leaderboard job, then a test job", (lb, tj))
    st, d, _ = claim(c, t["r1"], modes=["test"])
    check(job_id(st, d) == tj and d["job"]["mode"] == "test",
          "modes [test] takes the test job queued after the leaderboard job", (st, d))
    st, d, _ = claim(c, t["r1"])
    check(job_id(st, d) == lb and "secret_seed" in d["job"],
          "a plain claim then takes the leaderboard job, with its seed", (st, d))

    a, b = submit(c, t["alice"]), submit(c, t["alice"])
    st, d, _ = claim(c, t["r1"], modes=["leaderboard"])
    check(st == 204 and d is None, "modes [leaderboard] on a queue of test jobs: 204", (st, d))
    check([status_of(c, t["alice"], i) for i in (a, b)] == ["queued", "queued"],
          "both test jobs stay queued")
    st, d, _ = claim(c, t["r1"], modes=["benchmark", "leaderboard", "profile", "sanitize"])
    check(st == 204, "every mode but test: 204", st)
    st, d, _ = claim(c, t["r1"], modes=["test", "test"])
    check(job_id(st, d) == a, "a repeated mode name is harmless: the oldest test job", (st, d))
    st, d, _ = claim(c, t["r1"], modes=["test", "benchmark", "leaderboard", "profile", "sanitize"])
    check(job_id(st, d) == b, "every mode named: as a plain claim", (st, d))
    check(drain(c, t["r1"]) == [], "nothing left queued")


def test_skip(c, t):
    only = submit(c, t["alice"])
    st, d, _ = claim(c, t["r1"], skip=[only])
    check(st == 204, "skip of the only queued job: 204", (st, d))
    check(status_of(c, t["alice"], only) == "queued", "it stays queued")
    st, d, _ = claim(c, t["r1"], skip=[])
    check(job_id(st, d) == only, "skip [] skips nothing", (st, d))

    x, y = submit(c, t["alice"]), submit(c, t["alice"])
    st, d, _ = claim(c, t["r1"], skip=[x, x])
    check(job_id(st, d) == y, "skip of the older of two (named twice): the other", (st, d))
    st, d, _ = claim(c, t["r1"], modes=["test"], skip=list(range(100000, 100016)))
    check(job_id(st, d) == x, "16 ids, none of them queued: the job", (st, d))
    z = submit(c, t["alice"])
    st, d, _ = claim(c, t["r1"], skip=[9007199254740991, z])
    check(st == 204, "the largest id allowed (2^53 - 1) and the queued one skipped: 204", (st, d))
    check(drain(c, t["r1"]) == [z], "the skipped job was left queued")


def position(c, tok, sid):
    st, _, d, _ = c.get("/api/v1/submissions/%d" % sid, tok)
    return d.get("queue_position") if st == 200 and isinstance(d, dict) else None


def test_fair_share(c, t):
    # carol has a test job running (it counts as at least a test job's
    # estimate of GPU time); dave has none.
    held = submit(c, t["carol"])
    check(job_id(*claim(c, t["r2"], name="holder")[:2]) == held, "carol's first job runs")
    old = submit(c, t["carol"])
    dl = submit(c, t["dave"], mode="leaderboard")
    new = submit(c, t["dave"])
    check(old and dl and new, "queued: carol test, dave leaderboard, dave test", (old, dl, new))
    # Over the whole queue the class bound puts dave's leaderboard job first
    # (every pick so far in this script was a test job but one), and the
    # leaderboard estimate it charges dave then puts carol's test job before his.
    # Carol's job runs, so a lane (a gap's {"modes": ["test"]} claim) may take
    # the test jobs: among them dave's comes first (less GPU time).
    pos = [position(c, t["carol"], old), position(c, t["dave"], dl), position(c, t["dave"], new)]
    check(pos == [2, 1, 1], "positions: leaderboard 1 over the whole queue, dave's test job 1 "
          "among the test jobs, carol's 2 in both", pos)
    st, d, _ = claim(c, t["r1"], modes=["test"])
    check(job_id(st, d) == new, "modes [test]: dave's newer test job before carol's older one "
          "(less GPU time)", (st, d, old, new))
    check([position(c, t["carol"], old), position(c, t["dave"], dl)] == [1, 1],
          "then carol's test job is first among the test jobs, the leaderboard job first over all",
          [position(c, t["carol"], old), position(c, t["dave"], dl)])
    st, d, _ = claim(c, t["r1"], modes=["test"], skip=[old])
    check(st == 204, "carol's job skipped: no test job left for the filter", (st, d))
    check(drain(c, t["r1"]) == [dl, old], "plain claims: dave's leaderboard job, then carol's")


def parked(c, tok, query, out, **fields):
    out["r"] = claim(c, tok, query, **fields)


def test_long_poll(c, t):
    out = {}
    th = threading.Thread(target=parked, args=(c, t["r1"], "?wait=2", out), kwargs={"modes": ["test"]})
    th.start()
    lbs = []
    for _ in range(5):  # each wakes the parked claim, which must park again
        time.sleep(0.3)
        lbs.append(submit(c, t["alice"], mode="leaderboard"))
    th.join(10)
    st, d, took = out.get("r", (None, None, 0))
    check(st == 204 and 1.9 <= took < 3.0, "a parked modes [test] claim woken by 5 leaderboard jobs: "
          "204 when its 2 s are over (%.2f s)" % took, (st, d))
    check([status_of(c, t["alice"], i) for i in lbs] == ["queued"] * 5, "the leaderboard jobs stay queued")

    out = {}
    th = threading.Thread(target=parked, args=(c, t["r1"], "?wait=2", out), kwargs={"modes": ["test"]})
    th.start()
    time.sleep(0.4)
    lb = submit(c, t["alice"], mode="leaderboard")
    time.sleep(0.4)
    tj = submit(c, t["alice"])
    th.join(10)
    st, d, took = out.get("r", (None, None, 0))
    check(job_id(st, d) == tj and took < 1.9, "a parked modes [test] claim passes over the leaderboard job "
          "submitted meanwhile and gets the test job submitted after it (%.2f s)" % took, (st, d, lb))
    check(drain(c, t["r1"]) == lbs + [lb], "the leaderboard jobs are left for a plain claim")


BAD = [
    ("modes", {"modes": "test"}, "modes not an array"),
    ("modes", {"modes": None}, "modes null"),
    ("modes", {"modes": []}, "modes empty"),
    ("modes", {"modes": ["fast"]}, "an unknown mode name"),
    ("modes", {"modes": ["TEST"]}, "a mode name in capitals"),
    ("modes", {"modes": ["test", 1]}, "a mode that is not a string"),
    ("modes", {"modes": ["test"] * 6}, "more modes than there are"),
    ("skip", {"skip": 3}, "skip not an array"),
    ("skip", {"skip": {"id": 3}}, "skip an object"),
    ("skip", {"skip": list(range(1, 18))}, "17 ids"),
    ("skip", {"skip": [0]}, "id 0"),
    ("skip", {"skip": [-1]}, "id -1"),
    ("skip", {"skip": [1.5]}, "id 1.5"),
    ("skip", {"skip": ["3"]}, "an id as a string"),
    ("skip", {"skip": [None]}, "a null id"),
    ("skip", {"skip": [1e300]}, "id 1e300"),
    ("skip", {"skip": [9007199254740992]}, "id 2^53"),
    ("skip", {"modes": ["test"], "skip": [2, -5]}, "a bad id after a good filter"),
]


def metrics(c, admin):
    st, _, _, raw = c.get("/metrics", admin)
    return raw.decode("utf-8", "replace") if st == 200 else ""


def test_bad_input(c, t):
    sid = submit(c, t["alice"])
    for field, extra, what in BAD:
        st, d, _ = claim(c, t["r1"], name="badbox", **extra)
        msg = d["error"]["message"] if is_error(d, "bad_claim") else ""
        check(st == 400 and msg.startswith(field) and ("%s must" % field) in msg,
              "%s: 400 bad_claim naming %s" % (what, field), (st, d))
    st, d, _ = claim(c, t["r1"], name="badbox", raw=b'{"runner": "badbox", "gpu": "H200", "skip": [1e300]}')
    check(st == 400 and is_error(d, "bad_claim"), "1e300 written as such: 400 bad_claim", (st, d))
    _, d, _ = claim(c, t["r1"], name="badbox", modes=["fast"])
    check(d and "test, benchmark, leaderboard, profile, sanitize" in d["error"]["message"],
          "the message lists the mode names", d)
    _, d, _ = claim(c, t["r1"], name="badbox", skip=[0])
    check(d and "at most 16 submission ids" in d["error"]["message"], "the message says what skip holds", d)
    check(status_of(c, t["alice"], sid) == "queued", "the job is still queued after the bad claims")
    text = metrics(c, t["admin"])
    check(text and 'runner="badbox"' not in text, "the runner of the bad claims was not seen", text[-300:])
    st, d, _ = claim(c, t["r1"], name="badbox")
    check(job_id(st, d) == sid, "a plain claim then gets the job", (st, d))
    check('runner="badbox"' in metrics(c, t["admin"]), "and that claim is seen")


def main():
    if not os.access(BIN, os.X_OK):
        print("FAIL %s is not built\ntest_claim_filter: 0 passed, 1 failed, 0 skipped" % BIN)
        return 1
    with tempfile.TemporaryDirectory(prefix="kjudge-claimf-") as tmp:
        srv = Server(tmp)
        if check(srv.start(), "the server starts"):
            try:
                c = Client(srv.port)
                t = dict(zip(("alice", "carol", "dave"), make_users(srv, "alice", "carol", "dave")))
                t.update(zip(("r1", "r2"), make_runners(srv, "r1", "r2")))
                t["admin"] = srv.printed().strip()
                for fn in (test_modes, test_skip, test_fair_share, test_long_poll, test_bad_input):
                    try:
                        fn(c, t)
                    except Exception as e:  # a group that raises is a failure, never a pass
                        check(False, "%s ran" % fn.__name__, repr(e))
            finally:
                check(srv.stop(signal.SIGTERM) == 0, "the server stops cleanly")
    print("test_claim_filter: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
