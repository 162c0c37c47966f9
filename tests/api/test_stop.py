#!/usr/bin/env python3
"""test_stop.py - stopping a runner or the server with SIGTERM.

Real processes throughout: bin/kjudge-server, and the real runner program
without a GPU (build/kjudge-runner-fakegpu, see kjrunner.py; its fake judge
takes as long as the test says). Checks:

- POST /api/v1/runner/jobs/{id}/release: refused (400/403/409, nothing
  changed) without ?attempt, with another attempt, from another runner,
  from a user, for a job not running; accepted from the holder: the job is
  queued again at once with its attempt not counted and a "queued" event
  naming the runner, and the next claim gets it;
- a runner stopped while judging finishes a job shorter than --grace and
  posts its result; a longer one it gives back at --grace (or at a second
  signal, or at once with --grace 0) and exits 0, posting nothing after the
  release; another runner then judges it as the same attempt; an idle
  runner exits 0 at once; a malformed --grace is a usage error;
- a runner stopped right after the server handed it a job (through a
  loopback relay that holds the claim's answer 1.5 s, whole or after its
  status line, the SIGTERM sent at several offsets after the server
  answered, with and without --ahead): the claim is read to its end and
  the job given back, queued again at once with no attempt counted, the
  runner saying so and exiting 0 (runner/claim.h, CLAIM_STOP_ANSWER_MS);
- the server stopped with requests in flight: new connections are refused
  at once, an upload in progress completes (202), a parked ?wait=1 is
  answered, an event stream ends with a "stopping" event, the server exits
  0; an upload that never completes is cut after the drain limit (10 s).
Ends with "test_stop: N passed, N failed, N skipped".
"""
import json
import os
import signal
import socket
import sys
import sqlite3
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check  # noqa: E402
from kjhttp import multipart  # noqa: E402
from kjservice import NO_RATE_LIMITS  # noqa: E402
from kjtest import GOOD_SOURCE  # noqa: E402
import kjdeploy  # noqa: E402
import kjrunner  # noqa: E402
import kjtest  # noqa: E402
from kjdeploy import request, json_of  # noqa: E402
from kjrunner import Runner, submit, sub, events, wait_status  # noqa: E402
from kjrunner import post_json as post, claim_job as claim  # noqa: E402




def code(d):
    return d.get("error", {}).get("code") if isinstance(d, dict) else None


def usage_ms(srv, user):
    """The user's fair-share usage on H200 (queue_usage), None when none."""
    con = sqlite3.connect(srv.db, timeout=10)
    try:
        row = con.execute("SELECT q.usage_ms FROM queue_usage q JOIN users u ON u.id = q.user_id "
                          "WHERE u.name = ? AND q.gpu = 'H200'", (user,)).fetchone()
    finally:
        con.close()
    return row[0] if row else None


def test_release_endpoint(srv, alice, r1, r2):
    sid = submit(srv, alice)
    job = claim(srv, r1, "box-1")
    if not check(job is not None and job["id"] == sid and job["attempt"] == 1, "runner 1 claims the job", job):
        return
    rel = "/api/v1/runner/jobs/%d/release" % sid
    st, d = post(srv, rel, r1)
    check(st == 400 and code(d) == "bad_attempt", "release without ?attempt: 400 bad_attempt", (st, d))
    st, d = post(srv, rel + "?attempt=2", r1)
    check(st == 409 and code(d) == "not_held", "release naming another attempt: 409", (st, d))
    st, d = post(srv, rel + "?attempt=1", r2)
    check(st == 409 and code(d) == "not_held", "release by another runner: 409", (st, d))
    st, d = post(srv, rel + "?attempt=1", alice)
    check(st == 403, "release with a user token: 403", (st, d))
    st, d = post(srv, rel + "?attempt=1", r1, b"[1]")
    check(st == 400 and code(d) == "bad_json", "release with a body that is not an object: 400", (st, d))
    for bad in (b'{"why": "bored"}', b'{"why": 1}', b'{"why": null}', b'{"why": "GAP"}'):
        st, d = post(srv, rel + "?attempt=1", r1, bad)
        check(st == 400 and code(d) == "bad_release" and "stopping" in ((d or {}).get("error") or {}).get("message", ""),
              "release with why %s: 400 bad_release, saying what it takes" % bad.decode(), (st, d))
    st, d = post(srv, "/api/v1/runner/jobs/999999/release?attempt=1", r1)
    check(st == 404, "release of no job: 404", (st, d))
    check(sub(srv, alice, sid).get("status") == "running", "the refusals changed nothing")

    before = usage_ms(srv, "alice")
    st, d = post(srv, rel + "?attempt=1", r1, b"")
    check(st == 200 and d == {"ok": True, "requeued": True}, "the holder gives the job back: 200", (st, d))
    check(usage_ms(srv, "alice") == before, "a stopping runner's release charges its user nothing",
          (before, usage_ms(srv, "alice")))
    s = sub(srv, alice, sid)
    check(s.get("status") == "queued" and s.get("attempts") == 0, "queued again, the attempt not counted", s)
    q = [e for e in events(srv, alice, sid) if e["event"] == "queued"]
    check(len(q) == 1 and q[0]["data"].get("attempt") == 1 and
          "box-1 stopped and gave the job back" in q[0]["data"].get("reason", ""),
          "a queued event names the runner", q)
    st, d = post(srv, rel + "?attempt=1", r1)
    check(st == 409, "releasing again: 409", (st, d))
    st, d = post(srv, "/api/v1/runner/jobs/%d/heartbeat?attempt=1" % sid, r1)
    check(st == 409, "the releasing runner's heartbeat: 409", (st, d))

    job = claim(srv, r2, "box-2")
    check(job is not None and job["id"] == sid and job["attempt"] == 1,
          "the next claim gets it at once, as attempt 1 again", job)
    before = usage_ms(srv, "alice") or 0
    time.sleep(0.3)
    st, d = post(srv, rel + "?attempt=1", r2, b'{"why": "gap"}')
    after = usage_ms(srv, "alice") or 0
    check(after - before >= 250, "a job given back from a gap charges its user the time it was held "
          "(%.0f ms)" % (after - before), (before, after))
    q = [e for e in events(srv, alice, sid) if e["event"] == "queued"]
    check(st == 200 and sub(srv, alice, sid).get("attempts") == 0 and len(q) == 2 and
          "box-2 gave the job back: no verdict within a gap of a timed job" in q[1]["data"].get("reason", ""),
          "given back from a gap ({why: gap}): queued again, the event says why", (st, d, q))
    job = claim(srv, r2, "box-2")
    check(job is not None and job["id"] == sid and job["attempt"] == 1, "and claimed again as attempt 1", job)
    st, d = post(srv, "/api/v1/runner/jobs/%d/events?attempt=1" % sid, r1,
                 json.dumps({"event": "compiling", "data": {}}).encode())
    check(st == 409, "runner 1 can no longer post about it", (st, d))
    res = {"verdict": "compile_error", "message": "x", "mode": "test", "leaderboard": "fp8_quant",
           "compile": {"ok": False, "log": "x"}, "score_ns": None}
    st, d = post(srv, "/api/v1/runner/jobs/%d/result?attempt=1" % sid, r2, json.dumps(res).encode())
    check(st == 200, "runner 2 finishes it", (st, d))
    st, d = post(srv, rel + "?attempt=1", r2)
    check(st == 409 and code(d) == "not_held", "a finished job cannot be given back", (st, d))
    check(sub(srv, alice, sid).get("verdict") == "compile_error", "the verdict stands")


def running(srv, alice, sid, r):
    """The runner has claimed sid and its judge has started (so a stop now
    meets a job being judged, not one still on its way to the runner)."""
    t0 = time.time()
    d = wait_status(srv, alice, sid, "running", 60)
    judging = r.wait_log("judging job=%d " % sid, 60)
    return check(d is not None and d.get("status") == "running" and judging,
                 "the runner took job %s and judges it" % sid,
                 ("waited %.1f s for status running and 'judging job=%d' in the runner's log" % (time.time() - t0, sid),
                  d, r.text()[-400:]))


class Relay:
    """A loopback TCP relay to the server that holds the answer to the next
    claim handed a job (armed) for `hold` seconds: all of it ("whole"), or
    all but its status line ("split"); `answered` is set when the server's
    answer reached the relay."""

    def __init__(self, port):
        self.port_to = port
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(16)
        self.port = self.s.getsockname()[1]
        self.armed, self.mode, self.hold = False, "whole", 1.5
        self.answered = threading.Event()
        self.lock = threading.Lock()
        threading.Thread(target=self.accept, daemon=True).start()

    def arm(self, mode, hold):
        with self.lock:
            self.armed, self.mode, self.hold = True, mode, hold
            self.answered.clear()

    def accept(self):
        while True:
            try:
                c, _ = self.s.accept()
            except OSError:
                return
            try:
                u = socket.create_connection(("127.0.0.1", self.port_to), timeout=10)
                u.settimeout(None)
            except OSError:
                c.close()
                continue
            state = {"claim": False}
            threading.Thread(target=self.pump, args=(c, u, state, True), daemon=True).start()
            threading.Thread(target=self.pump, args=(u, c, state, False), daemon=True).start()

    def pump(self, src, dst, state, up):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if up and data[:5] in (b"POST ", b"GET /"):
                    state["claim"] = data.startswith(b"POST /api/v1/runner/claim")
                elif not up and state["claim"] and data.startswith(b"HTTP/1.1 200"):
                    with self.lock:
                        take, mode, hold = self.armed, self.mode, self.hold
                        self.armed = False
                    if take:
                        self.answered.set()
                        if mode == "split":
                            line = data.index(b"\r\n") + 2
                            dst.sendall(data[:line])
                            data = data[line:]
                        time.sleep(hold)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for x in (src, dst):
                try:
                    x.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                x.close()

    def close(self):
        self.s.close()


def test_stop_at_claim(srv, alice, rtok, tmp):
    """A stop at several offsets right after the server handed the runner a
    job, the answer held in the relay: the job must come back every time."""
    relay = Relay(srv.port)
    url = "http://127.0.0.1:%d" % relay.port
    sid = submit(srv, alice, seconds=0.2)
    cases = [("whole", 0.0, []), ("whole", 0.02, []), ("whole", 0.2, []), ("whole", 0.8, []),
             ("split", 0.0, []), ("split", 0.3, []), ("whole", 0.1, ["--ahead", "1"])]
    try:
        for i, (mode, offset, args) in enumerate(cases):
            what = "the answer held %s, SIGTERM %.0f ms after the server answered%s" % (
                "whole" if mode == "whole" else "after its status line", offset * 1000,
                " (--ahead 1)" if args else "")
            d = sub(srv, alice, sid)
            if not check(d is not None and d.get("status") == "queued", "(job %s is queued)" % sid, d):
                return
            relay.arm(mode, 1.5)
            r = Runner(os.path.join(tmp, "claimstop%d" % i), url, rtok, args,
                       env={"KJUDGE_FAKE_JUDGE_S": "0.2"}, name="fake-c%d" % i).start()
            t0 = time.time()
            got = relay.answered.wait(60)
            if not check(got, "%s: the server hands the runner the job" % what,
                         ("waited %.1f s for the claim's answer to reach the relay" % (time.time() - t0),
                          r.text()[-400:])):
                r.stop()
                return
            time.sleep(offset)
            r.signal(signal.SIGTERM)
            rc = r.wait(30)
            d = sub(srv, alice, sid)
            log = r.text()
            check(rc == 0 and d.get("status") == "queued" and d.get("attempts") == 0 and
                  "gave job=%d back" % sid in log,
                  "%s: the job is given back (queued, no attempt counted), the runner says so, exit 0" % what,
                  (rc, {k: d.get(k) for k in ("status", "attempts")}, log[-600:]))
            r.stop()
            if d.get("status") == "running":  # stranded: hand it back so the next case runs
                post(srv, "/api/v1/runner/jobs/%d/release?attempt=1" % sid, rtok)
    finally:
        relay.close()
    rc = Runner(os.path.join(tmp, "claimstop-end"), "http://127.0.0.1:%d" % srv.port, rtok, ["--once"],
                env={"KJUDGE_FAKE_JUDGE_S": "0.1"}).run(60)
    check(rc == 0 and sub(srv, alice, sid).get("status") == "done", "(the queue is empty again)", rc)


def test_runner_stop(srv, alice, rtok, tmp):
    url = "http://127.0.0.1:%d" % srv.port
    # A job shorter than the grace: finished and posted, then exit 0.
    sid = submit(srv, alice, seconds=3)
    r = Runner(os.path.join(tmp, "finish"), url, rtok).start()
    if running(srv, alice, sid, r):
        r.signal(signal.SIGTERM)
        rc = r.wait(60)
        d = sub(srv, alice, sid)
        check(rc == 0 and d.get("status") == "done" and d.get("verdict") == "compile_error",
              "SIGTERM: a job shorter than the grace is finished, then exit 0", (rc, d, r.text()[-500:]))
        check("has 20 s to finish" in r.text() and "stopped name=" in r.text(), "the runner says so",
              r.text()[-500:])
    r.stop()

    # Longer than --grace: given back, exit 0; another runner judges it as the same attempt.
    sid = submit(srv, alice, seconds=None)
    r = Runner(os.path.join(tmp, "release"), url, rtok, ["--grace", "1"],
               env={"KJUDGE_FAKE_JUDGE_S": "120"}).start()
    if running(srv, alice, sid, r):
        r.signal(signal.SIGTERM)
        rc = r.wait(30)
        d = sub(srv, alice, sid)
        evs = events(srv, alice, sid)
        check(rc == 0 and d.get("status") == "queued" and d.get("attempts") == 0,
              "SIGTERM past --grace: the job is queued again at once, no attempt counted, exit 0",
              (rc, d, r.text()[-500:]))
        check([e["event"] for e in evs] == ["compiling", "queued"], "nothing was posted after the release", evs)
        check("gave job=%d back" % sid in r.text(), "the runner says it gave the job back", r.text()[-400:])
        r2 = Runner(os.path.join(tmp, "after"), url, rtok, ["--once"], env={"KJUDGE_FAKE_JUDGE_S": "0.2"},
                    name="fake-1")
        rc = r2.run(60)
        d = sub(srv, alice, sid)
        check(rc == 0 and d.get("verdict") == "compile_error" and d.get("attempts") == 0,
              "another runner judges it on the same attempt", (rc, d))
    r.stop()

    # A second signal gives the job back at once, whatever the grace.
    sid = submit(srv, alice, seconds=None)
    r = Runner(os.path.join(tmp, "twice"), url, rtok, ["--grace", "3600"],
               env={"KJUDGE_FAKE_JUDGE_S": "120"}).start()
    if running(srv, alice, sid, r):
        r.signal(signal.SIGTERM)
        check(r.wait_log("has 3600 s to finish"), "the first SIGTERM starts the grace", r.text()[-300:])
        r.signal(signal.SIGINT)
        rc = r.wait(30)
        check(rc == 0 and sub(srv, alice, sid).get("status") == "queued", "a second signal gives it back at once",
              (rc, r.text()[-400:]))
    r.stop()

    # --grace 0: at once.
    r = Runner(os.path.join(tmp, "zero"), url, rtok, ["--grace", "0"], env={"KJUDGE_FAKE_JUDGE_S": "120"}).start()
    if running(srv, alice, sid, r):
        r.signal(signal.SIGTERM)
        rc = r.wait(30)
        check(rc == 0 and sub(srv, alice, sid).get("status") == "queued", "--grace 0 gives it back at once",
              (rc, r.text()[-400:]))
    r.stop()
    rc = Runner(os.path.join(tmp, "finish2"), url, rtok, ["--once"], env={"KJUDGE_FAKE_JUDGE_S": "0.1"}).run(60)
    check(rc == 0 and sub(srv, alice, sid).get("status") == "done", "(the queue is empty again)", rc)

    # Idle: exit 0 at once.
    r = Runner(os.path.join(tmp, "idle"), url, rtok).start()
    check(r.wait_log("reported to"), "an idle runner starts", r.text()[-300:])
    r.signal(signal.SIGTERM)
    rc = r.wait(60)
    check(rc == 0, "SIGTERM: the runner exits 0", (rc, r.text()[-400:]))

    r = Runner(os.path.join(tmp, "badgrace"), url, rtok, ["--grace", "soon"])
    rc = r.run(30)
    check(rc == 2 and "--grace 'soon' is not a number from 0 to 3600" in r.text(), "a malformed --grace is a usage error",
          (rc, r.text()))


def slow_upload(port, token):
    """A socket with a submission's head and half its body sent; returns (sock, rest)."""
    body, ctype = multipart([("leaderboard", "fp8_quant"), ("gpu", "H200"), ("mode", "test")],
                            [("file", "k.cu", GOOD_SOURCE.encode())])
    head = ("POST /api/v1/submissions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
            "Content-Type: %s\r\nContent-Length: %d\r\n\r\n" % (token, ctype, len(body))).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(head + body[:len(body) // 2])
    return s, body[len(body) // 2:]


def read_all(s):
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    return data


def refused_now(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=3).close()
        return False
    except ConnectionRefusedError:
        return True
    except OSError:
        return False


def test_server_drain(tmp):
    srv = kjdeploy.Server(os.path.join(tmp, "drain"))
    if not check(srv.start(), "a server starts"):
        return
    _, out, _ = srv.cli("user", "add", "alice", "--db", srv.db)
    alice = out.strip()
    rtok = kjrunner.runner_token(srv)
    check(claim(srv, rtok) is None, "a runner asks for H200 work (none yet)")
    sid = submit(srv, alice)
    got = {}

    def waiter():
        try:
            got["wait"] = request(srv.port, "GET", "/api/v1/submissions/%d?wait=1&timeout=120" % sid, alice)
        except OSError as e:
            got["wait"] = e

    stream = kjtest.SSE(srv.port, "/api/v1/submissions/%d/events" % sid, alice)
    first = stream.next()
    check(first is not None and first[1] == "queued", "the stream is open", first)
    th = threading.Thread(target=waiter)
    th.start()
    sock, rest = slow_upload(srv.port, alice)
    time.sleep(0.5)  # the wait parks, the upload is in flight
    srv.proc.send_signal(signal.SIGTERM)
    check(srv.proc.poll() is None, "the server drains: still running after SIGTERM")
    time.sleep(0.3)
    check(refused_now(srv.port) and srv.proc.poll() is None,
          "new connections are refused at once while it drains (still running)")
    sock.sendall(rest)
    answer = read_all(sock)
    sock.close()
    check(answer.startswith(b"HTTP/1.1 202") and b"Connection: close" in answer,
          "the upload in flight completes: 202 (and closes its connection)", answer[:200])
    rest_events = stream.all()
    stream.close()
    check(rest_events[-1:] and rest_events[-1][1] == "stopping" and rest_events[-1][2].get("reconnect") is True,
          "the event stream ends with a stopping event", rest_events)
    th.join(20)
    w = got.get("wait")
    check(isinstance(w, tuple) and w[0] == 200 and json_of(w[2]).get("status") == "queued",
          "the parked ?wait=1 is answered", w)
    rc = srv.stop(timeout=30)
    check(rc == 0 and "main: stopped" in srv.server_log(), "the server exits 0", (rc, srv.server_log()[-400:]))

    # An upload that never completes does not hold the server past the drain limit.
    if not check(srv.start(), "the server starts again"):
        return
    sock, rest = slow_upload(srv.port, alice)
    time.sleep(0.3)
    rc = srv.stop(timeout=40)
    sock.close()
    check(rc == 0 and "requests still in flight count=1" in srv.server_log(),
          "a stalled upload is cut after the drain limit; exit 0", (rc, srv.server_log()[-400:]))


def main():
    if not kjrunner.built():
        print("FAIL %s is not built (make build/kjudge-runner-fakegpu)\n"
              "test_stop: 0 passed, 1 failed, 0 skipped" % kjrunner.FAKE)
        return 1
    with tempfile.TemporaryDirectory(prefix="kjudge-stop-") as tmp:
        # One runner token reports every runner name of this script (a name
        # each for the stop cases), more than the default 8 (serve --runner-names).
        srv = kjdeploy.Server(os.path.join(tmp, "srv"), extra=["--runner-names", "64"])
        if check(srv.start(), "the server starts"):
            try:
                _, out, _ = srv.cli("user", "add", "alice", "--db", srv.db)
                alice = out.strip()
                r1 = kjrunner.runner_token(srv, "gpuhost1")
                r2 = kjrunner.runner_token(srv, "gpuhost2")
                test_release_endpoint(srv, alice, r1, r2)
                test_runner_stop(srv, alice, r1, tmp)
                test_stop_at_claim(srv, alice, r1, tmp)
            finally:
                srv.stop()
        test_server_drain(tmp)
    print("test_stop: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
