#!/usr/bin/env python3
"""test_crash.py - durability under SIGKILL: nothing lost, nothing judged twice.

Starts bin/kjudge-server (3-second leases), then submits 200 jobs from one
thread while another thread acts as a runner over HTTP (claim, one event,
result, retrying a result whose answer was lost) and the main thread kills
the server with SIGKILL at random moments and restarts it on the same
database. Afterwards the runner judges whatever is left, and the test
checks: every submission that got a 202 exists exactly once and is done as
accepted; each was accepted by exactly one attempt; no job was handed out
again while an earlier attempt's lease was live; rows without a 202 come
only from requests whose answer was lost. Python 3 stdlib only; ends with
"test_crash: N passed, N failed, N skipped" and exits 1 on failure.
"""
import http.client
import json
import os
import random
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check  # noqa: E402
from kjhttp import Client, multipart  # noqa: E402
from kjservice import BIN  # noqa: E402
from kjtest import result_body, GOOD_SOURCE  # noqa: E402
from kjtest import Server  # noqa: E402

LEASE = 3
JOBS = 200
KILLS = 8


class Box:
    """Everything the threads record, under one lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.ok202 = []          # ids answered 202
        self.lost_submits = 0    # submissions whose answer never came
        self.claims = {}         # id -> [(attempt, time of the claim answer)]
        self.accepted = {}       # id -> [attempts whose result was answered {ok: true}]
        self.duplicates = 0
        self.done_submitting = False


def call(port, method, path, token, body=None, ctype=None, timeout=5):
    """One request; (status, json) or (None, None) when the server is down."""
    h = {"Authorization": "Bearer " + token}
    if ctype:
        h["Content-Type"] = ctype
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        raw = r.read()
        conn.close()
        return r.status, (json.loads(raw) if raw and r.getheader("Content-Type", "").startswith("application/json")
                          else None)
    except (OSError, http.client.HTTPException):
        return None, None


def submitter(port, token, box):
    body, ctype = multipart([("leaderboard", "fp8_quant"), ("gpu", "H200"), ("mode", "test")],
                            [("file", "k.cu", GOOD_SOURCE.encode())])
    n = 0
    while n < JOBS:
        st, data = call(port, "POST", "/api/v1/submissions", token, body, ctype)
        with box.lock:
            if st == 202:
                box.ok202.append(data["id"])
                n += 1
            else:
                box.lost_submits += 1
        if st is None:
            time.sleep(0.02)
    with box.lock:
        box.done_submitting = True


def post_result(port, runner, jid, attempt, box):
    """Post the result until the server answers; returns its status."""
    body = json.dumps(dict(result_body("accepted"), message="attempt %d" % attempt))
    for _ in range(200):
        st, data = call(port, "POST", "/api/v1/runner/jobs/%d/result?attempt=%d" % (jid, attempt), runner,
                        body, "application/json")
        if st is None:
            time.sleep(0.05)
            continue
        with box.lock:
            if st == 200 and data.get("duplicate"):
                box.duplicates += 1
            elif st == 200:
                box.accepted.setdefault(jid, []).append(attempt)
        return st
    return None


def runner_loop(port, runner, box, stop):
    while not stop.is_set():
        st, data = call(port, "POST", "/api/v1/runner/claim", runner, json.dumps({"runner": "crash", "gpu": "H200"}),
                        "application/json")
        if st != 200:
            time.sleep(0.05 if st is None else 0.02)
            continue
        job = data["job"]
        with box.lock:
            box.claims.setdefault(job["id"], []).append((job["attempt"], time.time()))
        call(port, "POST", "/api/v1/runner/jobs/%d/events?attempt=%d" % (job["id"], job["attempt"]), runner,
             json.dumps({"event": "compiled", "data": {"ok": True}}), "application/json")
        post_result(port, runner, job["id"], job["attempt"], box)


def all_done(srv, ids):
    import sqlite3
    con = sqlite3.connect(srv.db, timeout=10)
    try:
        n = con.execute("SELECT count(*) FROM submissions WHERE status != 'done'").fetchone()[0]
    finally:
        con.close()
    return n == 0


def checks(srv, box):
    import sqlite3
    con = sqlite3.connect(srv.db, timeout=10)
    con.row_factory = sqlite3.Row
    rows = {r["id"]: dict(r) for r in con.execute("SELECT id, status, verdict, attempts, result FROM submissions")}
    con.close()
    ids = box.ok202
    check(len(ids) == JOBS and len(set(ids)) == JOBS, "200 submissions got a 202, each with its own id", len(set(ids)))
    missing = [i for i in ids if i not in rows]
    check(not missing, "every submission that got a 202 exists", missing[:10])
    extra = len(rows) - len(ids)
    check(0 <= extra <= box.lost_submits, "rows without a 202 come only from lost answers (%d rows, %d lost)" %
          (extra, box.lost_submits))
    notdone = [i for i in rows if rows[i]["status"] != "done" or rows[i]["verdict"] != "accepted"]
    check(not notdone, "every submission is judged accepted", [rows[i] for i in notdone[:5]])
    twice = {i: a for i, a in box.accepted.items() if len(a) > 1}
    check(not twice, "no submission was accepted twice", twice)
    wrong = []
    for i, r in rows.items():
        res = json.loads(r["result"] or "{}")
        att = int(res.get("message", "attempt 0").split()[-1])
        acc = box.accepted.get(i)
        if att != r["attempts"] + 1 or (acc and acc != [att]):
            wrong.append((i, att, r["attempts"], acc))
    check(not wrong, "the stored result is the one of the attempt that finished the job", wrong[:5])
    early = []
    for i, cl in box.claims.items():
        atts = [a for a, _ in cl]
        if len(set(atts)) != len(atts):
            early.append((i, "attempt handed out twice", atts))
        for (a1, t1), (a2, t2) in zip(cl, cl[1:]):
            if t2 - t1 < LEASE - 0.5:
                early.append((i, a1, a2, round(t2 - t1, 2)))
    check(not early, "no job was handed out again while a lease was live", early[:5])
    print("crash: %d rows, %d lost submit answers, %d claims, %d duplicate results, %d requeued jobs" %
          (len(rows), box.lost_submits, sum(len(c) for c in box.claims.values()), box.duplicates,
           sum(1 for r in rows.values() if r["attempts"] > 0)), flush=True)


def main():
    if not os.access(BIN, os.X_OK):
        print("FAIL %s is not built" % BIN)
        print("test_crash: 0 passed, 1 failed, 0 skipped")
        return 1
    rnd = random.Random(int(os.environ.get("KJUDGE_CRASH_SEED", "6")))
    t_start = time.time()
    with tempfile.TemporaryDirectory(prefix="kjudge-crash-") as tmp:
        srv = Server(tmp, ["--lease-seconds", str(LEASE)])
        if not check(srv.start(), "the server starts"):
            print("test_crash: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
            return 1
        user = srv.cli("user", "add", "alice", "--db", srv.db)[1].strip()
        runner = srv.cli("runner", "add", "r0", "--gpu", "H200", "--db", srv.db)[1].strip()
        box, stop = Box(), threading.Event()
        threads = [threading.Thread(target=submitter, args=(srv.port, user, box)),
                   threading.Thread(target=runner_loop, args=(srv.port, runner, box, stop))]
        for t in threads:
            t.start()
        restarts_ok = True
        for _ in range(KILLS):
            time.sleep(rnd.uniform(0.1, 0.6))
            srv.stop(signal.SIGKILL)
            restarts_ok &= srv.start()
        check(restarts_ok, "the server restarts on the same database after each SIGKILL")
        threads[0].join(60)
        deadline = time.time() + 40
        while time.time() < deadline and not all_done(srv, box.ok202):
            time.sleep(0.2)
        stop.set()
        threads[1].join(30)
        check(Client(srv.port).get("/healthz")[0] == 200, "the server is healthy at the end")
        checks(srv, box)
        srv.stop(signal.SIGTERM)
    check(time.time() - t_start < 90, "the crash test ran in under 90 s", round(time.time() - t_start, 1))
    print("test_crash: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
