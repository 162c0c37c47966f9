#!/usr/bin/env python3
"""test_gpu_start.py - a heartbeat's {"gpu_start": true}: the fair-share clock
of a job held before its GPU work starts.

A runner may claim a job and hold it a while before its GPU work begins
(compiling it ahead while the GPU judges another job). The heartbeat that
says {"gpu_start": true} makes the server count the job's run time from
then instead of from the claim. Real processes: bin/kjudge-server on
loopback with its SQLite file; the runner's side is played by hand over
HTTP, and the charge is read from the database (queue_usage.usage_ms,
submissions.claimed_ms, lease_until). Checks:

- a job held ~1.5 s, then a heartbeat with gpu_start true, then its result:
  its user is charged well under the hold (< 1000 ms); a job held as long
  with only an empty-body heartbeat (which still answers 204): charged the
  hold (>= 1500 ms);
- gpu_start that is not a boolean (string, number, null, array, object):
  400 bad_heartbeat naming gpu_start, claimed_ms and the lease unchanged; a
  body that is not an object: 400 bad_json; gpu_start from another runner
  or for another attempt: 409, nothing changed;
- gpu_start false with unknown members: 204, the lease extended, claimed_ms
  unchanged; gpu_start true with unknown members: claimed_ms set to the
  heartbeat's time; a second one moves it again; after the result: 409.
Ends with "test_gpu_start: N passed, N failed, N skipped".
"""
import json
import os
import sqlite3
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check  # noqa: E402
import kjdeploy  # noqa: E402
import kjrunner  # noqa: E402
from kjdeploy import request, json_of  # noqa: E402
from kjrunner import submit, sub  # noqa: E402
from kjrunner import post_json as post, claim_job as claim  # noqa: E402

HOLD_S = 1.5
RESULT = {"verdict": "compile_error", "message": "x", "mode": "test", "leaderboard": "fp8_quant",
          "compile": {"ok": False, "log": "x"}, "score_ns": None}




def code(d):
    return d.get("error", {}).get("code") if isinstance(d, dict) else None


def row(srv, sql, args):
    con = sqlite3.connect(srv.db, timeout=10)
    try:
        return con.execute(sql, args).fetchone()
    finally:
        con.close()


def usage_ms(srv, user):
    """The user's fair-share usage on H200 as stored (not decayed since), None when none."""
    r = row(srv, "SELECT q.usage_ms FROM queue_usage q JOIN users u ON u.id = q.user_id "
            "WHERE u.name = ? AND q.gpu = 'H200'", (user,))
    return r[0] if r else None


def clock(srv, sid):
    """(claimed_ms, lease_until) of submission sid."""
    return row(srv, "SELECT claimed_ms, lease_until FROM submissions WHERE id = ?", (sid,))


def heartbeat(srv, sid, token, body, attempt=1):
    return post(srv, "/api/v1/runner/jobs/%d/heartbeat?attempt=%d" % (sid, attempt), token, body)


def held_job(srv, user, rtok):
    """Submit a job for user and claim it; its id, or None."""
    sid = submit(srv, user)
    job = claim(srv, rtok)
    return sid if check(job is not None and job["id"] == sid, "the runner claims job %s" % sid, job) else None


def test_charge(srv, toks, rtok):
    sid = held_job(srv, toks["held"], rtok)
    if sid is None:
        return
    time.sleep(HOLD_S)
    st, d = heartbeat(srv, sid, rtok, b'{"gpu_start": true}')
    check(st == 204, "heartbeat with gpu_start true: 204", (st, d))
    st, d = post(srv, "/api/v1/runner/jobs/%d/result?attempt=1" % sid, rtok, json.dumps(RESULT).encode())
    check(st == 200, "the result is stored", (st, d))
    u = usage_ms(srv, "held")
    check(u is not None and u < 1000,
          "held %.1f s before gpu_start: charged from the GPU start (%s ms)" % (HOLD_S, u), u)

    sid = held_job(srv, toks["plain"], rtok)
    if sid is None:
        return
    time.sleep(HOLD_S)
    st, d = heartbeat(srv, sid, rtok, b"")
    check(st == 204, "heartbeat with an empty body: 204", (st, d))
    st, d = post(srv, "/api/v1/runner/jobs/%d/result?attempt=1" % sid, rtok, json.dumps(RESULT).encode())
    check(st == 200, "the result is stored", (st, d))
    u = usage_ms(srv, "plain")
    check(u is not None and u >= HOLD_S * 1000,
          "held %.1f s without gpu_start: charged from the claim (%s ms)" % (HOLD_S, u), u)


def test_refusals(srv, toks, rtok, other):
    sid = held_job(srv, toks["held"], rtok)
    if sid is None:
        return
    before = clock(srv, sid)
    time.sleep(0.05)
    for bad in (b'{"gpu_start": "true"}', b'{"gpu_start": 1}', b'{"gpu_start": null}',
                b'{"gpu_start": [true]}', b'{"gpu_start": {}}'):
        st, d = heartbeat(srv, sid, rtok, bad)
        msg = ((d or {}).get("error") or {}).get("message", "")
        check(st == 400 and code(d) == "bad_heartbeat" and "gpu_start" in msg,
              "heartbeat %s: 400 bad_heartbeat naming gpu_start" % bad.decode(), (st, d))
    st, d = heartbeat(srv, sid, rtok, b"[true]")
    check(st == 400 and code(d) == "bad_json", "a body that is not an object: 400 bad_json", (st, d))
    st, d = heartbeat(srv, sid, other, b'{"gpu_start": true}')
    check(st == 409 and code(d) == "not_held", "gpu_start from another runner: 409", (st, d))
    st, d = heartbeat(srv, sid, rtok, b'{"gpu_start": true}', attempt=2)
    check(st == 409 and code(d) == "not_held", "gpu_start for another attempt: 409", (st, d))
    check(clock(srv, sid) == before, "the refused heartbeats changed nothing (claimed_ms, lease)",
          (before, clock(srv, sid)))

    st, d = heartbeat(srv, sid, rtok, b'{"gpu_start": false, "compiled_ahead": 1, "x": {}}')
    after = clock(srv, sid)
    check(st == 204 and after[0] == before[0] and after[1] > before[1],
          "gpu_start false with unknown members: 204, lease extended, claimed_ms unchanged",
          (st, d, before, after))
    t0 = int(time.time() * 1000)
    st, d = heartbeat(srv, sid, rtok, b'{"note": "ignored", "gpu_start": true}')
    first = clock(srv, sid)
    check(st == 204 and first[0] >= t0 - 5 and first[0] > before[0],
          "gpu_start true: claimed_ms set to the heartbeat's time", (st, d, t0, first))
    time.sleep(0.05)
    st, d = heartbeat(srv, sid, rtok, b'{"gpu_start": true}')
    check(st == 204 and clock(srv, sid)[0] > first[0], "a second gpu_start moves claimed_ms again",
          (st, first, clock(srv, sid)))
    st, d = post(srv, "/api/v1/runner/jobs/%d/result?attempt=1" % sid, rtok, json.dumps(RESULT).encode())
    check(st == 200 and sub(srv, toks["held"], sid).get("status") == "done", "the result is stored", (st, d))
    st, d = heartbeat(srv, sid, rtok, b'{"gpu_start": true}')
    check(st == 409, "gpu_start for a finished job: 409", (st, d))


def main():
    with tempfile.TemporaryDirectory(prefix="kjudge-gpustart-") as tmp:
        srv = kjdeploy.Server(os.path.join(tmp, "srv"))
        if check(srv.start(), "the server starts"):
            try:
                toks = {n: kjrunner.user_token(srv, n) for n in ("held", "plain")}
                rtok = kjrunner.runner_token(srv, "gpuhost1")
                other = kjrunner.runner_token(srv, "gpuhost2")
                test_charge(srv, toks, rtok)
                test_refusals(srv, toks, rtok, other)
            finally:
                srv.stop()
    print("test_gpu_start: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
