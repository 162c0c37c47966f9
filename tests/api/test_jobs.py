#!/usr/bin/env python3
"""test_jobs.py - progress streams, job leases, retries, /api/v1/gpus and the
OpenAPI document against the route table, over real HTTP.

Starts bin/kjudge-server with a 2-second lease, then: streams a
submission's events while posting them as a runner (replay for a late
client, live delivery, Last-Event-ID, the end after the verdict); lets a
lease expire and checks the job is queued again and the old runner's
result is refused and changes nothing; lets a job's runner go silent three
times and checks it ends as internal_error with the reason shown to its
owner; retries a runner's internal_error; reads /api/v1/gpus; and checks
that every route of server/http_route.c is in server/openapi.json and back.
Python 3 standard library only; ends with "test_jobs: N passed, N failed,
N skipped" and exits 1 on failure.
"""
import os
import re
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check  # noqa: E402
from kjhttp import Client  # noqa: E402
from kjservice import ROOT, BIN  # noqa: E402
from kjtest import is_error, result_body  # noqa: E402
from kjtest import Server, SSE, submit, claim  # noqa: E402

LEASE = 2


def events_url(sid):
    return "/api/v1/submissions/%d/events" % sid


def test_sse(srv, c, alice, bob, runner):
    sid = submit(c, alice)
    if not check(sid is not None, "submit for the stream"):
        return
    s = SSE(srv.port, events_url(sid), alice)
    check(s.status == 200 and s.headers.get("content-type", "").startswith("text/event-stream"),
          "Accept: text/event-stream -> 200 text/event-stream", (s.status, s.headers))
    first = s.next()
    check(first is not None and first[:2] == (0, "queued") and first[2].get("position") == 1,
          "the stream starts with queued and the queue position", first)
    job = claim(c, runner)
    check(job is not None and job["id"] == sid and job.get("attempt") == 1 and job.get("lease_seconds") == LEASE,
          "claim carries attempt 1 and the lease length", job)
    got = []
    for ev, data in [("compiling", {}), ("compiled", {"ok": True}), ("test", {"index": 0, "status": "pass"}),
                     ("benchmark", {"index": 0, "median_ns": 2000.0})]:
        t0 = time.time()
        st, _, _, _ = c.post_json("/api/v1/runner/jobs/%d/events?attempt=1" % sid, {"event": ev, "data": data},
                                  runner)
        e = s.next()
        got.append(e)
        check(st == 204 and e is not None and e[1] == ev and e[2] == data and time.time() - t0 < 2,
              "live: the %s event reaches the open stream at once" % ev, (st, e))
    check([e[0] for e in got if e] == [1, 2, 3, 4], "event ids are the stored seq numbers", got)
    c.post_json("/api/v1/runner/jobs/%d/events?attempt=1" % sid, {"event": "verdict", "data": {"verdict": "accepted"}},
                runner)
    st, _, data, _ = c.post_json("/api/v1/runner/jobs/%d/result?attempt=1" % sid, result_body("accepted"), runner)
    check(st == 200, "result posted", (st, data))
    rest = s.all()
    check([e[1] for e in rest] == ["verdict"], "the stream ends after the verdict", rest)
    s.close()

    late = SSE(srv.port, events_url(sid) + "?stream=1", alice).all()
    check([e[1] for e in late] == ["queued", "compiling", "compiled", "test", "benchmark", "verdict"] and
          late[0][2].get("position") is None, "a late client gets the whole replay, then the end", late)
    resumed = SSE(srv.port, events_url(sid), alice, last_event_id=3).all()
    check([e[0] for e in resumed] == [4, 5], "Last-Event-ID: 3 resumes after event 3", resumed)
    st, h, data, _ = c.get(events_url(sid), alice)
    check(st == 200 and h.get("content-type", "").startswith("application/json") and
          len(data.get("events", [])) == 5, "without the stream flag the answer is today's JSON", (st, data))
    s = SSE(srv.port, events_url(sid), bob)
    check(s.status == 404, "another user cannot stream the events: 404 as for no such id", s.status)
    s.close()
    st, _, data, _ = c.get(events_url(sid) + "?stream=maybe", alice)
    check(st == 400 and is_error(data, "bad_stream"), "a bad stream flag -> 400", (st, data))
    st, _, data, _ = c.get(events_url(sid), alice, headers={"Accept": "text/event-stream", "Last-Event-ID": "x"})
    check(st == 400 and is_error(data, "bad_last_event_id"), "a bad Last-Event-ID -> 400", (st, data))
    st, _, data, _ = c.get(events_url(sid) + "?stream=1&timeout=0", alice)
    check(st == 400 and is_error(data, "bad_timeout"), "timeout=0 -> 400", (st, data))


def test_sse_no_verdict_event(srv, c, alice, runner):
    """A runner that posts no verdict event: the stream makes one from the row, then ends."""
    sid = submit(c, alice, gpu="B200")
    job = claim(c, runner, "B200")
    if not check(job is not None and job["id"] == sid, "claim the B200 job"):
        return
    s = SSE(srv.port, events_url(sid) + "?timeout=10", alice)
    s.next()
    threading.Timer(0.3, lambda: c.post_json("/api/v1/runner/jobs/%d/result?attempt=1" % sid,
                                             result_body("wrong_answer", gpu="NVIDIA B200"), runner)).start()
    t0 = time.time()
    rest = s.all()
    check(len(rest) == 1 and rest[0][1] == "verdict" and rest[0][2].get("verdict") == "wrong_answer" and
          time.time() - t0 < 5, "a verdict is made from the result and ends the stream", rest)
    s.close()
    sid = submit(c, alice, gpu="B200")
    t0 = time.time()
    evs = SSE(srv.port, events_url(sid) + "?timeout=1", alice).all()
    check([e[1] for e in evs] == ["queued", "timeout"] and 0.8 < time.time() - t0 < 5,
          "a stream with nothing to say ends with a timeout event", (evs, time.time() - t0))
    job = claim(c, runner, "B200")  # leave nothing queued or running for B200
    if job is not None:
        c.post_json("/api/v1/runner/jobs/%d/result?attempt=%d" % (job["id"], job["attempt"]),
                    result_body("accepted", gpu="NVIDIA B200"), runner)


def test_lease(srv, c, alice, runner, runner2):
    sid = submit(c, alice)
    job = claim(c, runner)
    if not check(job is not None and job["id"] == sid, "claim for the lease test", job):
        return
    url = "/api/v1/runner/jobs/%d" % sid
    st, _, data, _ = c.request("POST", url + "/heartbeat", token=runner, runner=True)
    check(st == 400 and is_error(data, "bad_attempt"), "heartbeat without ?attempt -> 400", (st, data))
    st, _, _, raw = c.request("POST", url + "/heartbeat?attempt=1", token=runner, runner=True)
    check(st == 204 and raw == b"", "heartbeat -> 204", (st, raw))
    st, _, data, _ = c.post_json(url + "/heartbeat?attempt=1", {}, runner2)
    check(st == 409 and is_error(data, "not_held"), "heartbeat from another runner -> 409", (st, data))
    st, _, data, _ = c.post_json(url + "/heartbeat?attempt=x", {}, runner)
    check(st == 400 and is_error(data, "bad_attempt"), "a bad attempt -> 400", (st, data))
    st, _, data, _ = c.post_json("/api/v1/runner/jobs/999999/heartbeat?attempt=1", {}, runner)
    check(st == 404, "heartbeat for an unknown job -> 404", (st, data))
    for _ in range(3):  # heartbeats keep the lease past its length
        time.sleep(LEASE * 0.5)
        c.post_json(url + "/heartbeat?attempt=1", {}, runner)
    check(srv.row(sid)["status"] == "running", "heartbeats keep the job running past the lease")
    time.sleep(LEASE + 1.0)
    row = srv.row(sid)
    check(row["status"] == "queued" and row["attempts"] == 1 and row["runner_id"] is None,
          "a silent runner's job goes back to the queue with attempts 1", dict(row))
    check("expired id=%d" % sid in srv.server_log(), "the requeue is logged")
    before = dict(srv.row(sid))
    st, _, data, _ = c.post_json(url + "/result?attempt=1", result_body("accepted"), runner)
    check(st == 409 and is_error(data, "not_held"), "a late result -> 409", (st, data))
    st, _, data, _ = c.post_json(url + "/events?attempt=1", {"event": "test"}, runner)
    check(st == 409, "a late event -> 409", (st, data))
    check(dict(srv.row(sid)) == before, "the late result and event changed nothing")
    job = claim(c, runner2, name="other")
    check(job is not None and job["id"] == sid and job["attempt"] == 2, "the job is handed out again, attempt 2", job)
    st, _, data, _ = c.post_json(url + "/result?attempt=1", result_body("accepted"), runner2)
    check(st == 409, "a result naming the old attempt -> 409", (st, data))
    st, _, data, _ = c.post_json(url + "/result", result_body("accepted"), runner2)
    check(st == 400 and is_error(data, "bad_attempt"), "a result naming no attempt -> 400", (st, data))
    st, _, data, _ = c.post_json(url + "/result?attempt=2", result_body("accepted"), runner2)
    check(st == 200 and data == {"ok": True}, "the current attempt's result is accepted", (st, data))
    st, _, d, _ = c.get("/api/v1/submissions/%d" % sid, alice)
    check(d.get("verdict") == "accepted" and d.get("attempts") == 1, "judged once, on attempt 2", d)


def test_retries(srv, c, alice, bob, runner):
    sid = submit(c, alice)
    for attempt in range(1, 4):
        job = claim(c, runner)
        check(job is not None and job["id"] == sid and job["attempt"] == attempt,
              "attempt %d is handed out" % attempt, job)
        time.sleep(LEASE + 0.8)
    row = srv.row(sid)
    check(row["status"] == "done" and row["verdict"] == "internal_error" and
          row["reason"] == "the runner stopped answering 3 times", "after 3 silent attempts: internal_error",
          dict(row))
    st, _, d, _ = c.get("/api/v1/submissions/%d" % sid, alice)
    check(d.get("verdict") == "internal_error" and d.get("reason") == "the runner stopped answering 3 times",
          "the owner sees the reason", d)
    st, _, d, _ = c.get("/api/v1/submissions/%d" % sid, bob)
    check(st == 404 and is_error(d, "not_found"), "others do not see it at all (not ranked)", (st, d))
    evs = SSE(srv.port, events_url(sid), alice).all()
    check([e[1] for e in evs] == ["queued", "queued", "queued", "verdict"] and
          evs[-1][2].get("verdict") == "internal_error", "the stream shows each requeue and the end", evs)
    check(claim(c, runner) is None, "a failed job is not handed out again")

    sid = submit(c, alice)
    for attempt in range(1, 4):
        job = claim(c, runner)
        st, _, data, _ = c.post_json("/api/v1/runner/jobs/%d/result?attempt=%d" % (sid, attempt),
                                     result_body("internal_error"), runner)
        want = {"ok": True, "requeued": True} if attempt < 3 else {"ok": True}
        check(job is not None and job["attempt"] == attempt and st == 200 and data == want,
              "a runner's internal_error on attempt %d -> %s" % (attempt, want), (job, st, data))
    row = srv.row(sid)
    check(row["status"] == "done" and row["verdict"] == "internal_error" and row["attempts"] == 2,
          "internal_error is retried until the third attempt", dict(row))


def test_gpus(c, runner):
    st, _, d, _ = c.get("/api/v1/gpus")
    gpus = {g["gpu"]: g for g in d.get("gpus", [])} if st == 200 else {}
    check(st == 200 and {"H200", "B200"} <= set(gpus), "GET /api/v1/gpus lists the boards' GPU types", d)
    h = gpus.get("H200", {})
    names = {r["name"]: r for r in h.get("runners", [])}
    check("box" in names and names["box"]["state"] in ("idle", "silent") and names["box"]["last_seen"].endswith("Z"),
          "runners with name, last seen and state", h)
    check(isinstance(h.get("queued"), int) and isinstance(h.get("running"), int), "queue depth", h)
    sid_job = claim(c, runner, "B200", name="busy")  # nothing queued: the runner is idle
    st, _, d, _ = c.get("/api/v1/gpus")
    b = [r for g in d["gpus"] if g["gpu"] == "B200" for r in g["runners"] if r["name"] == "busy"]
    check(sid_job is None and b and b[0]["state"] == "idle", "a polling runner is idle", b)


def route_table():
    text = open(os.path.join(ROOT, "server", "http_route.c")).read()
    table = text[text.index("routes[] = {"):text.index("{NULL, NULL")]
    out = set()
    for m, p in re.findall(r'\{"(GET|POST|PUT|DELETE|PATCH)", "([^"]+)"', table):
        out.add((m, "/static/{path}" if p == "/static/*" else p))
    return out


def test_openapi_routes(c, admin):
    st, _, d, _ = c.get("/api/v1/openapi.json")
    documented = {(m.upper(), p) for p, ops in d.get("paths", {}).items() for m in ops
                  if m in ("get", "post", "put", "delete", "patch")}
    routes = route_table()
    check(len(routes) >= 17, "the route table was read from server/http_route.c", sorted(routes))
    check(routes - documented == set(), "every route is in openapi.json", sorted(routes - documented))
    check(documented - routes == set(), "every openapi.json path is a route", sorted(documented - routes))
    for m, p in sorted(documented):
        path = p.replace("{id}", "1").replace("{name}", "fp8_quant").replace("{path}", "index.html")
        st, _, data, _ = c.request(m, path, token=admin, body=b"{}" if m == "POST" else None,
                                   headers={"Content-Type": "application/json"} if m == "POST" else None)
        check(st not in (404, 405) or (isinstance(data, dict) and data.get("error", {}).get("code") not in
                                       ("not_found", "method_not_allowed")) or "{id}" in p,
              "the server answers %s %s" % (m, p), (st, data))


def test_wait_through_events(srv, c, alice, runner):
    """?wait=1 must sleep through the claim and the progress events (which
    wake it, for the event streams) and return only at the verdict."""
    sid = submit(c, alice)
    if not check(sid is not None, "submit for the wait test"):
        return
    got = {}

    def waiter():
        t0 = time.time()
        st, _, data, _ = Client(srv.port).get("/api/v1/submissions/%d?wait=1&timeout=30" % sid, alice, timeout=40)
        got.update(status=st, data=data, seconds=time.time() - t0)

    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.3)
    job = claim(c, runner)
    if not check(job is not None and job["id"] == sid, "claim for the wait test", job):
        c.post_json("/api/v1/runner/jobs/%d/result?attempt=1" % sid, result_body("accepted"), runner)
        t.join(10)
        return
    time.sleep(0.3)
    posted = []
    for ev in ("compiling", "compiled", "test"):
        posted.append(c.post_json("/api/v1/runner/jobs/%d/events?attempt=1" % sid, {"event": ev, "data": {}},
                                  runner)[0])
        time.sleep(0.3)
    check(posted == [204, 204, 204], "progress events accepted", posted)
    check(t.is_alive(), "?wait=1 keeps waiting through the claim and progress events", got)
    c.post_json("/api/v1/runner/jobs/%d/result?attempt=1" % sid, result_body("accepted"), runner)
    t.join(10)
    data = got.get("data") or {}
    check(not t.is_alive() and got.get("status") == 200 and data.get("status") == "done" and
          data.get("verdict") == "accepted" and got.get("seconds", 99) < 5,
          "?wait=1 returns the verdict once the result is in", got)


def run_all(srv):
    c = Client(srv.port)
    tokens = {}
    for kind, name in [("user", "alice"), ("user", "bob"), ("runner", "r1"), ("runner", "r2")]:
        rc, out, _ = srv.cli(kind, "add", name, *(["--gpu", "H200,B200"] if kind == "runner" else []), "--db", srv.db)
        check(rc == 0, "%s add %s" % (kind, name))
        tokens[name] = out.strip()
    admin = srv.printed().strip()
    alice, bob, r1, r2 = tokens["alice"], tokens["bob"], tokens["r1"], tokens["r2"]
    rc, _, err = srv.cli("serve", "--lease-seconds", "0")
    check(rc == 1 and "--lease-seconds" in err, "--lease-seconds 0 is refused", (rc, err[-200:]))
    test_sse(srv, c, alice, bob, r1)
    test_sse_no_verdict_event(srv, c, alice, r1)
    test_wait_through_events(srv, c, alice, r1)
    test_lease(srv, c, alice, r1, r2)
    test_retries(srv, c, alice, bob, r1)
    test_gpus(c, r1)
    test_openapi_routes(c, admin)


def main():
    if not os.access(BIN, os.X_OK):
        print("FAIL %s is not built" % BIN)
        print("test_jobs: 0 passed, 1 failed, 0 skipped")
        return 1
    with tempfile.TemporaryDirectory(prefix="kjudge-jobs-") as tmp:
        srv = Server(tmp, ["--lease-seconds", str(LEASE)])
        if check(srv.start(), "the server starts with --lease-seconds %d" % LEASE):
            try:
                run_all(srv)
            finally:
                srv.stop(signal.SIGTERM)
    print("test_jobs: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
