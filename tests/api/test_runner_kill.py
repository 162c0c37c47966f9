#!/usr/bin/env python3
"""test_runner_kill.py - a runner killed in the middle of a job.

Starts bin/kjudge-server with a 2-second lease. Runner A is a separate
process that claims a job and then heartbeats; while it lives the job stays
its own (runner B finds nothing to claim, even after several lease
lengths). A is killed with SIGKILL; after the lease runs out the job goes
back to the queue, B claims it as attempt 2 and posts its verdict; the
late result, heartbeat and event of A (same token, attempt 1) are refused
with 409 and change nothing; the job is judged exactly once (one verdict,
B's result, stored once; nothing left to claim). Python 3 standard library
only; ends with "test_runner_kill: N passed, N failed, N skipped" and exits
1 on failure.
"""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check  # noqa: E402
from kjhttp import Client  # noqa: E402
from kjservice import BIN  # noqa: E402
from kjtest import is_error, result_body  # noqa: E402
from kjtest import Server, submit, claim  # noqa: E402

LEASE = 2

# Runner A: claim one job, print it, then heartbeat every 0.4 s until killed.
RUNNER_A = r"""
import http.client, json, sys, time
port, token = int(sys.argv[1]), sys.argv[2]
def post(path, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("POST", path, body=json.dumps(body), headers={"Authorization": "Bearer " + token,
              "Content-Type": "application/json"})
    r = c.getresponse(); data = r.read(); c.close()
    return r.status, data
while True:
    st, data = post("/api/v1/runner/claim", {"runner": "box-a", "gpu": "H200", "arch": "sm_90a"})
    if st == 200:
        break
    time.sleep(0.1)
job = json.loads(data)["job"]
print(json.dumps({"id": job["id"], "attempt": job["attempt"]}), flush=True)
post("/api/v1/runner/jobs/%d/events?attempt=%d" % (job["id"], job["attempt"]), {"event": "compiling", "data": {}})
while True:
    time.sleep(0.4)
    post("/api/v1/runner/jobs/%d/heartbeat?attempt=%d" % (job["id"], job["attempt"]), {})
"""


def db_rows(srv, sql, args=()):
    con = sqlite3.connect(srv.db, timeout=10)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def run_all(srv):
    c = Client(srv.port)
    alice = srv.cli("user", "add", "alice", "--db", srv.db)[1].strip()
    ra = srv.cli("runner", "add", "ra", "--gpu", "H200", "--db", srv.db)[1].strip()
    rb = srv.cli("runner", "add", "rb", "--gpu", "H200", "--db", srv.db)[1].strip()
    sid = submit(c, alice)
    if not check(sid is not None, "a submission to judge"):
        return
    a = subprocess.Popen([sys.executable, "-c", RUNNER_A, str(srv.port), ra], stdout=subprocess.PIPE, text=True)
    try:
        line = a.stdout.readline()
        job_a = json.loads(line) if line else {}
        check(job_a.get("id") == sid and job_a.get("attempt") == 1, "runner A claims the job", line)
        t0 = time.time()
        stolen = None
        while time.time() - t0 < 2.5 * LEASE:
            stolen = stolen or claim(c, rb, name="box-b")
            time.sleep(0.2)
        check(stolen is None, "while A heartbeats, B gets nothing for %.0f lease lengths" % 2.5, stolen)
        check(db_rows(srv, "SELECT status, runner_name, attempts FROM submissions WHERE id = ?", (sid,)) ==
              [("running", "box-a", 0)], "the job is still A's")
    finally:
        a.send_signal(signal.SIGKILL)
        a.wait()
    killed = time.time()
    job_b = None
    while job_b is None and time.time() - killed < LEASE + 5:
        job_b = claim(c, rb, name="box-b")
        if job_b is None:
            time.sleep(0.1)
    waited = time.time() - killed
    check(job_b is not None and job_b["id"] == sid and job_b["attempt"] == 2,
          "after A is killed the job is queued again and B claims it as attempt 2", job_b)
    check(job_b is not None and LEASE - 1.0 <= waited <= LEASE + 4, "within a lease of the kill (%.1f s)" % waited)
    if job_b is None:
        return
    url = "/api/v1/runner/jobs/%d" % sid
    st, _, _, _ = c.post_json(url + "/events?attempt=2", {"event": "compiling", "data": {}}, rb)
    check(st == 204, "B's progress is recorded", st)
    body_b = result_body("accepted", 1234.5)
    body_b["message"] = "judged by B"
    st, _, d, _ = c.post_json(url + "/result?attempt=2", body_b, rb)
    check(st == 200 and d == {"ok": True}, "B's result is stored", (st, d))
    row = db_rows(srv, "SELECT status, verdict, runner_name, attempts, finished_at, result FROM submissions "
                  "WHERE id = ?", (sid,))[0]
    body_a = result_body("wrong_answer")
    body_a["message"] = "late result of A"
    for path, body in [(url + "/result?attempt=1", body_a), (url + "/heartbeat?attempt=1", {}),
                       (url + "/events?attempt=1", {"event": "test", "data": {}})]:
        st, _, d, _ = c.post_json(path, body, ra)
        check(st == 409 and is_error(d, "not_held"), "late %s from A -> 409" % path.rsplit("/", 1)[1], (st, d))
    st, _, d, _ = c.post_json(url + "/result", body_a, ra)
    check(st == 400 and is_error(d, "bad_attempt"), "a late result from A naming no attempt -> 400", (st, d))
    after = db_rows(srv, "SELECT status, verdict, runner_name, attempts, finished_at, result FROM submissions "
                    "WHERE id = ?", (sid,))[0]
    check(after == row and row[:4] == ("done", "accepted", "box-b", 1) and "judged by B" in row[5],
          "the job was judged once, by B; A's late result changed nothing", row[:5])
    events = [e for (e,) in db_rows(srv, "SELECT event FROM events WHERE submission_id = ? ORDER BY seq", (sid,))]
    check(events.count("queued") == 1 and "verdict" not in events and events.count("compiling") == 2,
          "one requeue event, the progress of both attempts", events)
    st, _, d, _ = c.post_json(url + "/result?attempt=2", body_b, rb)
    check(st == 200 and d.get("duplicate") is True, "B posting again is a duplicate", (st, d))
    check(claim(c, ra, name="box-a") is None and claim(c, rb, name="box-b") is None, "nothing is left to claim")
    st, _, d, _ = c.get("/api/v1/submissions/%d" % sid, alice)
    check(st == 200 and d.get("verdict") == "accepted" and d.get("attempts") == 1 and
          d.get("result", {}).get("message") == "judged by B", "the owner sees B's verdict", d)


def main():
    if not os.access(BIN, os.X_OK):
        print("FAIL %s is not built" % BIN)
        print("test_runner_kill: 0 passed, 1 failed, 0 skipped")
        return 1
    with tempfile.TemporaryDirectory(prefix="kjudge-kill-") as tmp:
        srv = Server(tmp, extra=["--lease-seconds", str(LEASE)])
        if check(srv.start(), "the server starts with a %d s lease" % LEASE):
            try:
                run_all(srv)
            finally:
                srv.stop()
    print("test_runner_kill: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
