#!/usr/bin/env python3
"""test_abuse_streams.py - floods of ?wait=1 requests and event streams, a
runner that posts too many events, and waits that outlive their token.

Loopback only, bounded in count and time (well under a minute). Starts
bin/kjudge-server with small wait-slot caps (--max-waiters 12,
--max-waiters-per-user 3) and checks:

  - anonymous callers and other users get 404 at once for ?wait=1 and
    streams on a submission they may not see, however many they send, and
    the owner's own ?wait=1 still parks;
  - a user past the per-user cap gets 429 too_many_waits with Retry-After,
    for ?wait=1 and for streams; admins count only against the total; past
    the total, 503 too_many_waiters;
  - slots whose clients closed their sockets are free again within seconds
    (the caps are filled again by new clients);
  - a ban, a token revocation and a token rotation end the user's parked
    ?wait=1 (403 banned / 401 invalid_token) and streams (an "error" event
    naming the reason) at once, and nobody else's;
  - bad --max-waiters values are refused at start;
  - then, on a fresh server: a runner's events past the per-job cap (1 MiB,
    1000 events) get 413 too_many_events and are not stored; 10 streams
    replaying a job filled to the cap keep the server's memory within a few
    MiB (RSS measured from /proc), deliver every event in order, and end
    with the verdict.

Python 3 standard library only; ends with "test_abuse_streams: N passed, N
failed, N skipped" and exits 1 on failure.
"""
import os
import socket
import sqlite3
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check  # noqa: E402
from kjhttp import Client  # noqa: E402
from kjservice import BIN  # noqa: E402
from kjtest import is_error, result_body, serve_fails  # noqa: E402
from kjtest import Server, SSE, submit, claim, serve_gpu  # noqa: E402

CAP_TOTAL, CAP_USER = 12, 3
JOB_EVENT_BYTES, JOB_EVENTS = 1024 * 1024, 1000  # db.h


def raw_get(port, path, token=None, stream=False):
    """Send a GET and return the socket, the answer unread."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    h = "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n" % path
    if token:
        h += "Authorization: Bearer %s\r\n" % token
    if stream:
        h += "Accept: text/event-stream\r\n"
    s.sendall((h + "\r\n").encode())
    return s


def collect(socks, secs):
    """What each socket received within secs in all: bytes, b"" when closed
    without an answer, or None when nothing came (parked)."""
    deadline = time.time() + secs
    out = []
    for s in socks:
        buf = b""
        while True:
            left = deadline - time.time()
            s.settimeout(max(0.01, left))
            try:
                chunk = s.recv(65536)
            except (socket.timeout, BlockingIOError):
                break
            except OSError:
                chunk = b""
            if not chunk:
                break
            buf += chunk
            if b"\r\n\r\n" in buf and not buf.startswith(b"HTTP/1.1 200") and \
                    len(buf.split(b"\r\n\r\n", 1)[1]) >= content_length(buf):
                break
        out.append(buf if buf else (None if time.time() >= deadline - 0.005 else b""))
    return out


def content_length(buf):
    for line in buf.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            return int(v.strip())
    return 0


def status_of(answer):
    if not answer or not answer.startswith(b"HTTP/"):
        return None
    return int(answer.split(b" ")[1])


def body_of(answer):
    return answer.split(b"\r\n\r\n", 1)[1] if answer and b"\r\n\r\n" in answer else b""


def header(answer, name):
    for line in answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        k, _, v = line.partition(b":")
        if k.strip().lower() == name.encode():
            return v.strip().decode()
    return None


def close_all(socks):
    for s in socks:
        s.close()


def wait_url(sid, timeout=30):
    return "/api/v1/submissions/%d?wait=1&timeout=%d" % (sid, timeout)


def events_url(sid):
    return "/api/v1/submissions/%d/events?stream=1" % sid


# ---------------------------------------------------------------------------
# Slots
# ---------------------------------------------------------------------------

def test_hidden_floods(srv, c, t):
    """Waits and streams on a submission the caller may not see: 404 at once."""
    sid = submit(c, t["alice"], gpu="B200")
    n = CAP_TOTAL + 8
    missing = c.get(wait_url(999999))[3]
    socks = [raw_get(srv.port, wait_url(sid)) for _ in range(n)]
    got = collect(socks, 3)
    close_all(socks)
    check(all(status_of(a) == 404 for a in got), "%d anonymous ?wait=1 on alice's queued submission: 404 at once" % n,
          [a[:40] if a else a for a in got[:5]])
    check(all(body_of(a) == missing.replace(b"999999", str(sid).encode()) for a in got if a),
          "the same 404 as an id that does not exist", (body_of(got[0]), missing))
    socks = [raw_get(srv.port, wait_url(sid), t["bob"]) for _ in range(n)] + \
            [raw_get(srv.port, events_url(sid), t["bob"], stream=True) for _ in range(n)]
    got = collect(socks, 3)
    close_all(socks)
    check(all(status_of(a) == 404 for a in got), "%d waits and %d streams of another user: 404 at once" % (n, n),
          [a[:40] if a else a for a in got[:3]])
    st, _, d, _ = c.get(wait_url(sid, 1), t["alice"], timeout=10)
    check(st == 200 and d.get("wait_timed_out") is True, "alice's own ?wait=1 still parks (not 503)", (st, d))


def park(port, path, token, stream=False, wait=0.4):
    """Open a wait or stream; (socket, None) when it parked or streams (no
    other answer within wait seconds), else (None, answer)."""
    s = raw_get(port, path, token, stream)
    a = collect([s], wait)[0]
    if a is None or (stream and status_of(a) == 200 and b"event: error" not in a):
        return s, None
    s.close()
    return None, a


def test_caps(srv, c, t):
    """Per-user cap (429 + Retry-After), admins exempt, the total (503); returns the parked sockets."""
    held = []
    subs = {u: submit(c, t[u], gpu="B200") for u in ("bob", "carol", "dave", "erin")}
    for _ in range(CAP_USER):
        s, a = park(srv.port, wait_url(subs["bob"]), t["bob"])
        held.append(s)
    check(all(held), "bob parks %d ?wait=1" % CAP_USER, held)
    s, a = park(srv.port, wait_url(subs["bob"]), t["bob"], wait=3)
    ra = header(a or b"", "retry-after")
    check(s is None and status_of(a) == 429 and b'"too_many_waits"' in body_of(a) and ra and ra.isdigit(),
          "bob's next ?wait=1 -> 429 too_many_waits with Retry-After", a)
    if s:
        held.append(s)
    st = SSE(srv.port, events_url(subs["bob"]), t["bob"], timeout=5)
    check(st.status == 429 and st.headers.get("retry-after", "").isdigit(), "and so does a stream", st.status)
    st.close()
    for _ in range(CAP_USER):
        s, a = park(srv.port, events_url(subs["carol"]), t["carol"], stream=True)
        held.append(s)
        check(s is not None, "carol opens a stream", a)
    for _ in range(CAP_USER + 1):
        s, a = park(srv.port, wait_url(subs["bob"]), t["admin"])
        held.append(s)
        check(s is not None, "an admin parks past the per-user cap", a)
    left = CAP_TOTAL - 2 * CAP_USER - (CAP_USER + 1)
    for _ in range(left):
        s, a = park(srv.port, wait_url(subs["dave"]), t["dave"])
        held.append(s)
        check(s is not None, "dave parks while slots are left", a)
    s, a = park(srv.port, wait_url(subs["dave"]), t["dave"], wait=3)
    check(s is None and status_of(a) == 503 and b'"too_many_waiters"' in body_of(a),
          "past %d slots in all -> 503 too_many_waiters" % CAP_TOTAL, a)
    if s:
        held.append(s)
    return [h for h in held if h], subs


def test_disconnect(srv, c, t, held, subs):
    """Clients that close their sockets free their slots within seconds."""
    close_all(held)
    t0 = time.time()
    deadline = t0 + 10
    plan = [(u, events_url(subs[u]) if u == "carol" else wait_url(subs[u]), u == "carol")
            for u in ("bob", "carol", "dave", "erin") for _ in range(CAP_USER)]
    again = []
    for user, path, stream in plan:
        while time.time() < deadline:
            s, a = park(srv.port, path, t[user], stream)
            if s is not None:
                again.append(s)
                break
            time.sleep(0.2)
    dt = time.time() - t0
    check(len(again) == CAP_TOTAL, "%d clients closed their sockets: all %d slots taken again within 10 s (%.1f s)"
          % (len(held), CAP_TOTAL, dt), (len(again), dt))
    close_all(again)


# ---------------------------------------------------------------------------
# Bans, revocations, rotations
# ---------------------------------------------------------------------------

def sse_open(srv, sid, token):
    """A stream, retried for a while when every slot is taken (the last
    test's closed sockets may still hold some for a moment)."""
    deadline = time.time() + 10
    while True:
        s = SSE(srv.port, events_url(sid), token, timeout=5)
        if s.status != 503 or time.time() > deadline:
            return s
        s.close()
        time.sleep(0.2)


def open_pair(srv, token, sid):
    """A stream (its first event read) and a parked ?wait=1 of token on sid."""
    s = sse_open(srv, sid, token)
    first = s.next() if s.status == 200 else None
    w, a = park(srv.port, wait_url(sid, 60), token)
    return s, w, first is not None and first[1] == "queued" and w is not None


def ends(s, w, code, status):
    """The stream's next frames are one error event with code, then the end; the wait answers status."""
    try:
        evs = s.all()
    except OSError as e:
        evs = ["still open: %s" % e]
    a = collect([w], 5)[0] if w is not None else None
    s.close()
    if w is not None:
        w.close()
    ok_stream = len(evs) == 1 and evs[0][1] == "error" and evs[0][2].get("code") == code and evs[0][2].get("message")
    return ok_stream, status_of(a) == status, (evs, a[:120] if a else a)


def test_kicks(srv, c, t):
    admin = t["admin"]
    st, _, d, _ = c.post_json("/api/v1/users", {"name": "frank"}, admin, runner=False)
    frank = d["token"]
    fsid = submit(c, frank, gpu="B200")
    asid = submit(c, t["alice"], gpu="B200")
    bystander = sse_open(srv, asid, t["alice"])
    check(bystander.status == 200 and bystander.next()[1] == "queued", "alice streams her submission")
    s, w, ok = open_pair(srv, frank, fsid)
    check(ok, "frank streams and waits on his submission")
    t0 = time.time()
    c.post_json("/api/v1/users/frank/ban", {}, admin, runner=False)
    ok_s, ok_w, detail = ends(s, w, "banned", 403)
    check(ok_s, "a ban ends frank's stream with an error event 'banned'", detail)
    check(ok_w, "and answers his parked ?wait=1 with 403 banned", detail)
    check(time.time() - t0 < 5, "both at once, not at the next keep-alive", time.time() - t0)
    check(collect([bystander.conn.sock], 0.3)[0] is None, "alice's stream goes on")
    c.post_json("/api/v1/users/frank/unban", {}, admin, runner=False)
    s, w, ok = open_pair(srv, frank, fsid)
    check(ok, "after the unban frank streams and waits again (his slots were freed)")
    c.request("DELETE", "/api/v1/users/frank/tokens", token=admin)
    ok_s, ok_w, detail = ends(s, w, "token_revoked", 401)
    check(ok_s and ok_w, "a revocation ends them: error 'token_revoked', 401", detail)

    st, _, d, _ = c.post_json("/api/v1/users", {"name": "gina"}, admin, runner=False)
    gina = d["token"]
    gsid = submit(c, gina, gpu="B200")
    s, w, ok = open_pair(srv, gina, gsid)
    st, _, d, _ = c.post_json("/api/v1/me/token", {}, gina, runner=False)
    new = d.get("token") if st == 200 else None
    ok_s, ok_w, detail = ends(s, w, "token_revoked", 401)
    check(ok and ok_s and ok_w, "rotating the token ends the streams and waits of the old one", detail)
    s = SSE(srv.port, events_url(gsid), new, timeout=5)
    check(s.status == 200 and s.next()[1] == "queued", "the new token streams", s.status)
    s.close()
    bystander.close()


# ---------------------------------------------------------------------------
# A job's events: the cap and the memory of replaying them
# ---------------------------------------------------------------------------

def rss_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def stored_events(srv, sid):
    con = sqlite3.connect(srv.db, timeout=10)
    try:
        return con.execute("SELECT count(*), coalesce(sum(length(CAST(event AS BLOB)) + "
                           "length(CAST(data AS BLOB))), 0) FROM events WHERE submission_id = ?",
                           (sid,)).fetchone()
    finally:
        con.close()


def fill_job(srv, c, t, pad):
    """Claim carol's new job and post events of pad bytes until refused (or 1.5 x the cap)."""
    sid = submit(c, t["carol"])
    job = claim(c, t["runner"])
    if job is None or job["id"] != sid:
        return None, None, None
    url = "/api/v1/runner/jobs/%d/events?attempt=%d" % (sid, job["attempt"])
    posted, refusal = 0, None
    while posted < 1.5 * JOB_EVENT_BYTES:
        st, _, d, _ = c.post_json(url, {"event": "test", "data": {"pad": "x" * pad}}, t["runner"])
        if st != 204:
            refusal = (st, d)
            break
        posted += pad
    return sid, url, refusal


def test_event_cap(srv, c, t):
    sid, url, refusal = fill_job(srv, c, t, 100 * 1024)
    if not check(sid is not None, "a job to fill"):
        return None
    n, nbytes = stored_events(srv, sid)
    check(refusal is not None and refusal[0] == 413 and is_error(refusal[1], "too_many_events"),
          "events past 1 MiB per job -> 413 too_many_events", refusal)
    check(JOB_EVENT_BYTES - 110 * 1024 < nbytes <= JOB_EVENT_BYTES, "what is stored stays within the cap",
          (n, nbytes))
    st, _, _, _ = c.post_json(url, {"event": "test", "data": {"pad": "y" * 100 * 1024}}, t["runner"])
    check(st == 413 and stored_events(srv, sid) == (n, nbytes), "a refused event stores nothing", st)
    # The count cap, on a job of its own.
    sid2 = submit(c, t["alice"])
    job = claim(c, t["runner"])
    url2 = "/api/v1/runner/jobs/%d/events?attempt=%d" % (sid2, job["attempt"])
    sts = [c.post_json(url2, {"event": "test"}, t["runner"])[0] for _ in range(JOB_EVENTS)]
    st, _, d, _ = c.post_json(url2, {"event": "test"}, t["runner"])
    check(sts == [204] * JOB_EVENTS and st == 413 and is_error(d, "too_many_events") and
          stored_events(srv, sid2)[0] == JOB_EVENTS, "%d events per job, the next -> 413" % JOB_EVENTS,
          (sts.count(204), st, d))
    c.post_json("/api/v1/runner/jobs/%d/result?attempt=%d" % (sid2, job["attempt"]), result_body("accepted"),
                t["runner"])
    return sid


def test_replay_memory(srv, c, t, sid):
    """10 streams replay a job filled to the cap: the server's memory stays within a few MiB."""
    nstreams = 10
    n, _ = stored_events(srv, sid)
    pid = srv.proc.pid
    base, hwm0 = rss_kb(pid, "VmRSS"), rss_kb(pid, "VmHWM")
    streams = [SSE(srv.port, events_url(sid), t["admin"], timeout=10) for _ in range(nstreams)]
    ids = [[] for _ in streams]
    for i, s in enumerate(streams):
        while True:
            e = s.next() if s.status == 200 else None
            if e is None:
                break
            ids[i].append(e[0])
            if e[0] == n:
                break
    live, hwm = rss_kb(pid, "VmRSS"), rss_kb(pid, "VmHWM")
    check(all(x == list(range(0, n + 1)) for x in ids), "each of %d streams replays all %d events in order"
          % (nstreams, n), [len(x) for x in ids])
    grow_live, grow_peak = (live - base) / 1024, max(0, hwm - max(base, hwm0)) / 1024
    print("memory: RSS %.1f MiB before, %.1f MiB with %d streams open on %d events (%.2f MiB stored), "
          "peak +%.1f MiB" % (base / 1024, live / 1024, nstreams, n, stored_events(srv, sid)[1] / 2**20, grow_peak),
          flush=True)
    check(grow_live < 8 and grow_peak < 8, "%d streams on a job of 1 MiB of events grow the server by < 8 MiB "
          "(live +%.1f, peak +%.1f)" % (nstreams, grow_live, grow_peak), (base, live, hwm0, hwm))
    c.post_json("/api/v1/runner/jobs/%d/result?attempt=1" % sid, result_body("accepted"), t["runner"])
    tails = [s.all() for s in streams]
    check(all(len(x) == 1 and x[0][:2] == (n + 1, "verdict") for x in tails),
          "then each ends with the verdict made from the result (id %d)" % (n + 1), [x[:1] for x in tails])
    for s in streams:
        s.close()
    time.sleep(0.5)
    print("memory: RSS %.1f MiB after the streams closed" % (rss_kb(pid, "VmRSS") / 1024), flush=True)


# ---------------------------------------------------------------------------

def users(srv, c, names):
    t = {"admin": srv.printed().strip()}
    for name in names:
        t[name] = srv.cli("user", "add", name, "--db", srv.db)[1].strip()
    t["runner"] = srv.cli("runner", "add", "r1", "--gpu", "H200", "--db", srv.db)[1].strip()
    return t


def main():
    if not os.access(BIN, os.X_OK):
        print("FAIL %s is not built" % BIN)
        print("test_abuse_streams: 0 passed, 1 failed, 0 skipped")
        return 1
    with tempfile.TemporaryDirectory(prefix="kjudge-abuse-") as tmp:
        os.makedirs(os.path.join(tmp, "a"))
        # B200 jobs stay queued (no runner takes them) while a B200 runner
        # seen within the (long) lease keeps their waits parked, however
        # long this test takes.
        srv = Server(os.path.join(tmp, "a"), extra=["--max-waiters", str(CAP_TOTAL),
                                                    "--max-waiters-per-user", str(CAP_USER),
                                                    "--lease-seconds", "3600"])
        if check(srv.start(), "the server starts with --max-waiters %d --max-waiters-per-user %d"
                 % (CAP_TOTAL, CAP_USER)):
            try:
                c = Client(srv.port)
                t = users(srv, c, ("alice", "bob", "carol", "dave", "erin"))
                check(serve_gpu(srv, c, "B200"), "a B200 runner is seen (it takes nothing)")
                test_hidden_floods(srv, c, t)
                held, subs = test_caps(srv, c, t)
                test_disconnect(srv, c, t, held, subs)
                test_kicks(srv, c, t)
                for flag, value in (("--max-waiters", "0"), ("--max-waiters-per-user", "lots"),
                                    ("--max-waiters", "5000")):
                    rc, err = serve_fails(srv, "flag", [flag, value])
                    check(rc == 1 and "--max-waiters" in err, "serve %s %s is refused" % (flag, value),
                          (rc, err[-200:]))
            finally:
                srv.stop()
        os.makedirs(os.path.join(tmp, "b"))
        srv = Server(os.path.join(tmp, "b"))
        if check(srv.start(), "a fresh server for the event cap"):
            try:
                c = Client(srv.port)
                t = users(srv, c, ("alice", "carol"))
                sid = test_event_cap(srv, c, t)
                if sid is not None:
                    test_replay_memory(srv, c, t, sid)
            finally:
                srv.stop()
    print("test_abuse_streams: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
