#!/usr/bin/env python3
"""test_queue.py - the queue rule and the long-poll claim, through a real server.

Real processes: bin/kjudge-server (one per scenario, --queue-rule fair or
fifo) and, to give a user recent GPU time, the real runner program without
a GPU (build/kjudge-runner-fakegpu, kjrunner.py), whose fake judge takes
the seconds the source names. Claims after that are made by hand over HTTP,
so the order the server hands jobs out in is seen directly. Checks:

- POST /runner/claim?wait=S: malformed waits refused (400, nothing
  claimed); nothing queued: 204 once the wait ends (not before); a
  submission made while a claim is parked is handed to it at once; a
  token bound to another GPU type gets 403 without waiting; the parked
  claim holds a waiting slot that is given back;
- fair share: with a heavy user's GPU time charged (queue_usage), a light
  user's job queued after the heavy user's jobs is claimed first and shows
  queue position 1 in its event stream and GET /submissions/{id}
  (queue_position, gone once claimed) while the heavy user's oldest shows
  3 (after the light and a leaderboard job of a third user); under
  --queue-rule fifo the same queue is claimed oldest first with the
  positions in arrival order;
- the class bound: a light user's test flood takes at most 3 picks in a row
  while a heavy user's leaderboard job waits (fifo: the flood goes first);
- tool jobs: while a user's sanitize job runs, their second one is held
  (a claim gets 204, its position counts it after the other queued jobs),
  and a parked claim gets it once the first is given back;
- positions over lanes: while a job of the GPU type runs, a test job
  queued behind another user's older leaderboard job shows position 1
  (a gap or side lane takes it first), as the lane's filtered claim does;
- --queue-rule with another value is a usage error.
Ends with "test_queue: N passed, N failed, N skipped".
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check as check1  # noqa: E402
from kjservice import BIN  # noqa: E402
import kjdeploy  # noqa: E402
import kjrunner  # noqa: E402
import kjtest  # noqa: E402
from kjdeploy import request, json_of  # noqa: E402
from kjrunner import Runner, submit, wait_status  # noqa: E402


def check(cond, what, *detail):
    return check1(cond, what, detail if detail else "")


def claim(srv, token, query="", name="box", timeout=40):
    """POST /runner/claim; returns (status, body, seconds taken)."""
    t0 = time.time()
    st, _, raw = request(srv, "POST", "/api/v1/runner/claim" + query, token,
                         json.dumps({"runner": name, "gpu": "H200", "arch": "sm_90a"}).encode(),
                         {"Content-Type": "application/json"}, timeout=timeout)
    return st, json_of(raw), time.time() - t0


def claimed_id(srv, token):
    st, d, _ = claim(srv, token)
    return d["job"]["id"] if st == 200 and isinstance(d, dict) and "job" in d else None


def position(srv, token, sid):
    """The position in the first (replayed) queued event of sid's stream."""
    s = kjtest.SSE(srv.port, "/api/v1/submissions/%d/events" % sid, token, timeout=10)
    try:
        ev = s.next()
    finally:
        s.close()
    if ev is None or ev[1] != "queued":
        return None
    return ev[2].get("position") if isinstance(ev[2], dict) else None


def setup(tmp, rule):
    srv = kjdeploy.Server(os.path.join(tmp, rule), extra=["--queue-rule", rule])
    if not check(srv.start(), "the server starts with --queue-rule %s" % rule):
        return None, {}
    toks = {n: kjrunner.user_token(srv, n) for n in ("heavy", "light", "third")}
    toks["runner"] = kjrunner.runner_token(srv, "gpuhost")
    return srv, toks


def charge(srv, toks, tmp, jobs, seconds, mode="test"):
    """Give the heavy user GPU time: the fake runner judges `jobs` of its
    jobs (of mode) taking `seconds` each, then stops."""
    r = Runner(os.path.join(tmp, "charge"), "http://127.0.0.1:%d" % srv.port, toks["runner"]).start()
    ids = [submit(srv, toks["heavy"], seconds=seconds, mode=mode) for _ in range(jobs)]
    done = all(wait_status(srv, toks["heavy"], i, "done", 30) is not None for i in ids)
    r.signal(15)
    r.wait(15)
    check(done, "the runner judged the heavy user's %d jobs" % jobs)
    con = sqlite3.connect(srv.db)
    try:
        row = con.execute("SELECT q.usage_ms FROM queue_usage q JOIN users u ON u.id = q.user_id "
                          "WHERE u.name = 'heavy' AND q.gpu = 'H200'").fetchone()
    finally:
        con.close()
    check(row is not None and row[0] >= jobs * seconds * 1000 * 0.9,
          "their GPU time is charged (%d x %g s)" % (jobs, seconds), row)


def test_long_poll(srv, toks):
    rtok = toks["runner"]
    for q in ("?wait=abc", "?wait=-1", "?wait=", "?wait=1.5"):
        st, d, _ = claim(srv, rtok, q)
        check(st == 400 and d.get("error", {}).get("code") == "bad_wait", "claim%s: 400 bad_wait" % q,
              st, d)
    st, d, took = claim(srv, rtok, "?wait=1")
    check(st == 204 and took >= 0.9, "nothing queued: 204 after the wait (%.2f s)" % took, st)
    st, d, took = claim(srv, rtok, "?wait=0")
    check(st == 204 and took < 0.9, "?wait=0 answers at once", st, took)
    other = kjrunner.runner_token(srv, "b200host", gpu="B200")
    st, d, took = claim(srv, other, "?wait=5")
    check(st == 403 and took < 4, "a token bound to another GPU type: 403 without waiting", st, took)

    got = {}

    def parked():
        got["r"] = claim(srv, rtok, "?wait=20")

    t = threading.Thread(target=parked)
    t.start()
    time.sleep(0.7)
    sid = submit(srv, toks["light"], seconds=0.1)
    t.join(30)
    st, d, took = got.get("r", (None, None, 0))
    check(st == 200 and d["job"]["id"] == sid and 0.6 < took < 15,
          "a parked claim gets the job submitted meanwhile (%.2f s after it asked)" % took, st, d)
    # The slot was given back: the metrics count no waiter, and a wait for the light user's job ends.
    st, d, took = claim(srv, rtok, "?wait=1")
    check(st == 204, "nothing queued again", st)
    st, _, raw = request(srv, "POST", "/api/v1/runner/jobs/%d/release?attempt=1" % sid, rtok, b"{}",
                         {"Content-Type": "application/json"})
    check(st == 200, "give the job back", st, raw[:200])
    st, d, took = claim(srv, rtok, "?wait=10")
    check(st == 200 and d["job"]["id"] == sid and took < 5, "a released job is claimed at once", st)


def release(srv, rtok, sid):
    st, _, raw = request(srv, "POST", "/api/v1/runner/jobs/%d/release?attempt=1" % sid, rtok, b"{}",
                         {"Content-Type": "application/json"})
    return st


def test_tools(srv, toks):
    """On the long-poll server (nothing queued, the light user's job running)."""
    rtok = toks["runner"]
    s1 = submit(srv, toks["heavy"], seconds=0.1, mode="sanitize")
    s2 = submit(srv, toks["heavy"], seconds=0.1, mode="sanitize")
    t1 = submit(srv, toks["third"], seconds=0.1)
    check(None not in (s1, s2, t1), "the queue: two sanitize jobs of one user, a test job", s1, s2, t1)
    got = claimed_id(srv, rtok)
    check(got == s1, "the oldest sanitize job is claimed", got, s1)
    v = kjrunner.sub(srv, toks["heavy"], s2)
    check(v is not None and v.get("queue_position") == 2,
          "the user's second tool job, held, is counted after the other queued job",
          v and v.get("queue_position"))
    got = claimed_id(srv, rtok)
    check(got == t1, "the next claim takes the test job, not the held sanitize job", got, t1)
    st, d, took = claim(srv, rtok, "?wait=0")
    check(st == 204, "while the first runs, nobody gets the user's second tool job", st, d)
    got = {}

    def parked():
        got["r"] = claim(srv, rtok, "?wait=15")

    th = threading.Thread(target=parked)
    th.start()
    time.sleep(0.7)
    check(release(srv, rtok, s1) == 200, "the first sanitize job is given back")
    th.join(30)
    st, d, took = got.get("r", (None, None, 0))
    check(st == 200 and isinstance(d, dict) and d["job"]["id"] in (s1, s2) and took < 10,
          "a parked claim gets a tool job of the user once none of theirs runs (%.2f s)" % took, st, d)
    # Positions over lanes: jobs of H200 run (t1 among them).
    a, b = kjrunner.user_token(srv, "lane_a"), kjrunner.user_token(srv, "lane_b")
    la = submit(srv, a, seconds=0.1, mode="leaderboard")
    tb = submit(srv, b, seconds=0.1)
    v = kjrunner.sub(srv, b, tb)
    check(v is not None and v.get("queue_position") == 1 and position(srv, b, tb) == 1,
          "a test job behind an older leaderboard job shows position 1 while a lane can take it",
          v and v.get("queue_position"))
    st, _, raw = request(srv, "POST", "/api/v1/runner/claim", rtok,
                         json.dumps({"runner": "box", "gpu": "H200", "arch": "sm_90a",
                                     "modes": ["test"]}).encode(), {"Content-Type": "application/json"})
    d = json_of(raw)
    check(st == 200 and isinstance(d, dict) and d["job"]["id"] == tb, "and a lane's claim takes it first",
          st, d)
    v = kjrunner.sub(srv, a, la)
    check(v is not None and v.get("queue_position") is not None, "the leaderboard job keeps its place",
          v)


def test_fair(tmp, rule):
    srv, toks = setup(tmp, rule)
    if srv is None:
        return
    try:
        # Two test picks so far: the light user's test job is the third in a row.
        charge(srv, toks, os.path.join(tmp, rule), 2, 0.5)
        h = [submit(srv, toks["heavy"], seconds=0.1) for _ in range(3)]
        light = submit(srv, toks["light"], seconds=0.1)
        lb = submit(srv, toks["third"], seconds=0.1, mode="leaderboard")
        check(None not in h and light and lb, "the queue: 3 heavy, 1 light, 1 leaderboard", h, light, lb)
        pl, ph, pb = (position(srv, toks["light"], light), position(srv, toks["heavy"], h[0]),
                      position(srv, toks["third"], lb))
        if rule == "fair":
            check((pl, pb, ph) == (1, 2, 3), "fair: positions light 1, leaderboard 2, heavy's oldest 3",
                  pl, pb, ph)
            want = [light, lb, h[0], h[1], h[2]]
        else:
            check((ph, pl, pb) == (1, 4, 5), "fifo: positions in arrival order", ph, pl, pb)
            want = h + [light, lb]
        views = [kjrunner.sub(srv, toks[u], i) for u, i in (("light", light), ("heavy", h[0]), ("third", lb))]
        check([v.get("queue_position") if v else None for v in views] == [pl, ph, pb],
              "GET /submissions/{id} shows the same queue positions", views and [v and v.get("queue_position")
                                                                             for v in views])
        got = [claimed_id(srv, toks["runner"]) for _ in range(5)]
        done = kjrunner.sub(srv, toks["light"], light)
        check(done is not None and "queue_position" not in done, "no queue position once claimed")
        check(got == want, "%s: claimed in the order the positions said" % rule, got, want)
    finally:
        srv.stop()


def test_class_bound(tmp, rule):
    srv, toks = setup(tmp, "%s" % rule)
    if srv is None:
        return
    try:
        # Benchmark jobs: the streak so far is of the other class.
        charge(srv, toks, os.path.join(tmp, rule), 3, 2.0, mode="benchmark")
        flood = [submit(srv, toks["light"], seconds=0.1) for _ in range(5)]
        lb = submit(srv, toks["heavy"], seconds=0.1, mode="leaderboard")
        got = [claimed_id(srv, toks["runner"]) for _ in range(6)]
        if rule == "fair":
            want = flood[:3] + [lb] + flood[3:]
            check(got == want, "fair: 3 test jobs in a row, then the waiting leaderboard job", got, want)
        else:
            check(got == flood + [lb], "fifo: the flood first", got)
    finally:
        srv.stop()


def main():
    if not kjrunner.built():
        print("FAIL %s is not built (make build/kjudge-runner-fakegpu)\n"
              "test_queue: 0 passed, 1 failed, 0 skipped" % kjrunner.FAKE)
        return 1
    p = subprocess.run([BIN, "serve", "--queue-rule", "lottery"], capture_output=True, text=True, timeout=10)
    check(p.returncode == 1 and "--queue-rule 'lottery'" in p.stderr, "a bad --queue-rule is a usage error",
          p.returncode, p.stderr[:200])
    with tempfile.TemporaryDirectory(prefix="kjudge-queue-") as tmp:
        srv, toks = setup(os.path.join(tmp, "poll"), "fair")
        if srv is not None:
            try:
                test_long_poll(srv, toks)
                test_tools(srv, toks)
            finally:
                srv.stop()
        test_fair(os.path.join(tmp, "a"), "fair")
        test_fair(os.path.join(tmp, "b"), "fifo")
        test_class_bound(os.path.join(tmp, "c"), "fair")
        test_class_bound(os.path.join(tmp, "d"), "fifo")
    print("test_queue: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
