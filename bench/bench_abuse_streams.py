#!/usr/bin/env python3
"""bench_abuse_streams.py - waits, event streams and submission reads as an attacker uses them.

No GPU needed; loopback only. Starts a kjudge-server binary (default
bin/kjudge-server, or --bin PATH, e.g. an older build to compare) on a
fresh database with rate limits off, and runs five attacks, printing one
Markdown table of what happened:

  1. N anonymous `?wait=1` on another user's queued submission (default
     520, more than the 512 global slots): how many park, how many are
     refused, whether the owner's own ?wait=1 and an event stream still
     work, and how long the slots stay taken after the attackers close
     their sockets;
  2. one signed-in user opens N event streams on their own submission:
     how many open, and whether another user's ?wait=1 still works;
  3. a runner posts events of 200 KiB to one job (up to --events-mb MB, or
     until the server refuses), then --streams clients replay them all:
     the server's RSS before, at the peak and after the streams closed;
  4. anonymous and another user walk ids 1..max over /submissions/{id} and
     /detail: how many answer 200 and whether file names and source
     hashes show;
  5. a user with an open stream and a parked ?wait=1 is banned: how long
     each stays open.

Options: --bin PATH, --waits N, --streams N, --events-mb MB; --smoke (make
test, tests/api/test_benches.py) is --waits 8 --streams 2 --events-mb 1, a
few seconds. Exit 0 when it ran (the table is the result), 2 when the
server did not start.
"""
import argparse
import http.client
import json
import os
import socket
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import kjservice  # noqa: E402
from kjhttp import Client  # noqa: E402
SOURCE = ("//!kjudge launch quant grid=(ceil_div(T*H/GS, 8)) block=(32, 8)\n"
          "extern \"C\" __global__ void quant(const float* x, float* x_q, float* x_s,\n"
          "                                  int T, int H, int GS) {}\n")


class Srv(kjservice.Server):
    """tests/lib's server, built from binary, started at once; .admin is its
    admin token. req() answers (status, JSON or None)."""

    def __init__(self, binary, tmp):
        super().__init__(tmp, extra=["--openapi", os.path.join(ROOT, "server", "openapi.json")], binary=binary)
        if not self.start():
            raise RuntimeError("the server did not start; see %s" % os.path.join(tmp, "server.log"))
        self.admin = self.printed().strip()
        self.c = Client(self.port)

    def req(self, method, path, token=None, body=None, ctype=None, timeout=30):
        st, _, data, _ = self.c.request(method, path, token, body, {"Content-Type": ctype} if ctype else None,
                                        timeout=timeout, runner=True)
        return st, data

    def submit(self, token, gpu="B200", mode="test"):
        st, _, d, _ = self.c.submit(token, [("leaderboard", "fp8_quant"), ("gpu", gpu), ("mode", mode)],
                                    [("file", "k.cu", SOURCE.encode())])
        return d["id"] if st == 202 else None

    def post(self, path, obj, token):
        return self.req("POST", path, token, json.dumps(obj).encode(), "application/json")

    def rss_kb(self, key="VmRSS"):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        return super().stop(timeout=20)


def attacker_addr(i):
    """The loopback address attacker socket i comes from: 200 per address from
    127.0.0.2 on, so the per-address connection limit does not hide the
    global limits, and the victims' requests (from 127.0.0.1) are not
    counted with the attacker's."""
    return "127.0.0.%d" % (2 + i // 200)


def raw_get(port, path, token=None, accept=None, src=None):
    """Send a GET (from address src, default 127.0.0.1) and return the
    socket without reading the answer."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10,
                                 source_address=(src, 0) if src else None)
    h = "GET %s HTTP/1.1\r\nHost: x\r\n" % path
    if token:
        h += "Authorization: Bearer %s\r\n" % token
    if accept:
        h += "Accept: %s\r\n" % accept
    s.sendall((h + "\r\n").encode())
    return s


def status_now(s, wait=0.05):
    """The status of an answer already sent on s, or None while it is parked."""
    s.settimeout(wait)
    try:
        head = s.recv(64)
    except (socket.timeout, BlockingIOError):
        return None
    except OSError:
        return "reset"
    if not head:
        return "closed"
    parts = head.split(b" ")
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else "?"


def stream_state(port, sid, token, secs=1.0):
    """Open a stream, read for secs: 'open', or how it ended."""
    s = raw_get(port, "/api/v1/submissions/%d/events?stream=1" % sid, token, "text/event-stream")
    s.settimeout(secs)
    buf = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    except socket.timeout:
        s.close()
        return "open" if buf.startswith(b"HTTP/1.1 200") and b"event: error" not in buf else "error event"
    s.close()
    if b"event: error" in buf:
        return "ended with an error event"
    return "answered %s" % buf.split(b" ")[1].decode() if buf else "closed"


def tally(xs):
    out = {}
    for x in xs:
        out[x] = out.get(x, 0) + 1
    return ", ".join("%s: %d" % (k, v) for k, v in sorted(out.items(), key=lambda kv: str(kv[0])))


def attack_waits(srv, t, n, rows):
    sid = srv.submit(t["alice"])
    socks = [raw_get(srv.port, "/api/v1/submissions/%d?wait=1&timeout=600" % sid, src=attacker_addr(i))
             for i in range(n)]
    time.sleep(1.0)
    st = [status_now(s) for s in socks]
    rows.append(("1", "%d anonymous ?wait=1 on alice's queued submission" % n,
                 tally("parked" if x is None else x for x in st)))
    own = srv.req("GET", "/api/v1/submissions/%d?wait=1&timeout=1" % sid, t["alice"])[0]
    rows.append(("1", "then alice's own ?wait=1", str(own)))
    bob_sid = srv.submit(t["bob"])
    rows.append(("1", "then bob's event stream on his own submission", stream_state(srv.port, bob_sid, t["bob"])))
    for s in socks:
        s.close()
    t0 = time.time()
    while time.time() - t0 < 20:
        if srv.req("GET", "/api/v1/submissions/%d?wait=1&timeout=1" % sid, t["alice"])[0] != 503:
            break
        time.sleep(0.25)
    dt = time.time() - t0
    rows.append(("1", "attackers close their sockets: slots free after",
                 "%.1f s" % dt if dt < 20 else "> 20 s (still 503)"))


def attack_streams(srv, t, n, rows):
    sid = srv.submit(t["bob"])
    socks = [raw_get(srv.port, "/api/v1/submissions/%d/events?stream=1" % sid, t["bob"], "text/event-stream",
                     src=attacker_addr(i))
             for i in range(n)]
    time.sleep(1.0)
    st = []
    for s in socks:
        s.settimeout(0.05)
        buf = b""
        try:
            while len(buf) < 4096:
                chunk = s.recv(4096)
                if not chunk:
                    break
                buf += chunk
        except (socket.timeout, BlockingIOError):
            pass
        except OSError:
            buf = b"reset"
        code = buf.split(b" ")[1].decode() if buf.startswith(b"HTTP/") else "no answer"
        st.append(code + (" then an error event" if b"event: error" in buf else ""))
    rows.append(("2", "bob opens %d streams on his own queued submission" % n, tally(st)))
    a = srv.submit(t["alice"])
    rows.append(("2", "then alice's ?wait=1 on her submission",
                 str(srv.req("GET", "/api/v1/submissions/%d?wait=1&timeout=1" % a, t["alice"])[0])))
    for s in socks:
        s.close()
    time.sleep(1.0)


def attack_events(srv, t, mb, nstreams, rows):
    sid = srv.submit(t["carol"], gpu="H200")
    st, d = srv.post("/api/v1/runner/claim", {"runner": "abuse", "gpu": "H200", "arch": "sm_90a"}, t["runner"])
    job = d["job"] if st == 200 else None
    if job is None or job["id"] != sid:
        rows.append(("3", "claim", "failed (%s)" % st))
        return
    blob = "x" * (200 * 1024)
    posted = stored = 0
    refused = None
    while posted < mb * 1024 * 1024:
        st, d = srv.post("/api/v1/runner/jobs/%d/events?attempt=%d" % (sid, job["attempt"]),
                         {"event": "test", "data": {"pad": blob}}, t["runner"])
        posted += len(blob)
        if st != 204:
            refused = "%s %s" % (st, (d or {}).get("error", {}).get("code"))
            break
        stored += len(blob)
    rows.append(("3", "runner posts 200 KiB events (up to %d MB)" % mb,
                 "%.1f MB stored%s" % (stored / 1e6, ", then refused: " + refused if refused else "")))
    before, hwm0 = srv.rss_kb(), srv.rss_kb("VmHWM")
    # The admin's streams: an admin may open more than a user's share of wait slots.
    socks = [raw_get(srv.port, "/api/v1/submissions/%d/events?stream=1" % sid, srv.admin, "text/event-stream")
             for _ in range(nstreams)]
    # Read every stream until it has delivered everything stored (or 30 s).
    want = stored
    got = [0] * nstreams
    deadline = time.time() + 60
    for s in socks:
        s.settimeout(0.2)
    while time.time() < deadline and min(got) < want:
        for i, s in enumerate(socks):
            try:
                chunk = s.recv(1 << 20)
                got[i] += len(chunk)
            except (socket.timeout, BlockingIOError):
                pass
    peak = srv.rss_kb()
    for s in socks:
        s.close()
    time.sleep(2.0)
    after = srv.rss_kb()
    rows.append(("3", "%d streams replay it: server RSS before / peak / streams open, all read / 2 s after close"
                 % nstreams, "%.0f / %.0f / %.0f / %.0f MB" % (before / 1024, max(hwm0, srv.rss_kb("VmHWM")) / 1024,
                                                              peak / 1024, after / 1024)))


def attack_walk(srv, t, rows):
    for _ in range(9):
        srv.submit(t["alice"])
    top = srv.submit(t["alice"])
    for who, tok in (("anonymous", None), ("bob", t["bob"])):
        ok = names = 0
        t0 = time.time()
        for i in range(1, top + 1):
            st, d = srv.req("GET", "/api/v1/submissions/%d" % i, tok)
            ok += st == 200 and isinstance(d, dict) and d.get("user") not in (None, "bob")
            st, d = srv.req("GET", "/api/v1/submissions/%d/detail" % i, tok)
            names += st == 200 and isinstance(d, dict) and d.get("user") != "bob" and "source_sha256" in d
        rows.append(("4", "%s walks ids 1..%d" % (who, top),
                     "%d others' submissions readable, %d with file name and hash (%.2f s)"
                     % (ok, names, time.time() - t0)))
    # A hidden id against one that does not exist: median time of each answer.
    def median_ms(path):
        ts = []
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
        for _ in range(300):
            t1 = time.perf_counter()
            c.request("GET", path)
            c.getresponse().read()
            ts.append((time.perf_counter() - t1) * 1e3)
        c.close()
        return sorted(ts)[len(ts) // 2]
    hidden, missing = median_ms("/api/v1/submissions/%d" % top), median_ms("/api/v1/submissions/%d" % (top + 1000))
    rows.append(("4", "anonymous GET of a hidden id / of an id that does not exist (median of 300)",
                 "%.3f / %.3f ms" % (hidden, missing)))


def attack_ban(srv, t, rows):
    dave = srv.post("/api/v1/users", {"name": "dave"}, srv.admin)[1]["token"]
    sid = srv.submit(dave)
    s = raw_get(srv.port, "/api/v1/submissions/%d/events?stream=1" % sid, dave, "text/event-stream")
    w = raw_get(srv.port, "/api/v1/submissions/%d?wait=1&timeout=600" % sid, dave)
    time.sleep(0.5)
    srv.post("/api/v1/users/dave/ban", {}, srv.admin)
    t0 = time.time()
    ends = {}
    s.settimeout(0.1)
    w.settimeout(0.1)
    while time.time() - t0 < 10 and len(ends) < 2:
        for name, sock in (("stream", s), ("wait", w)):
            if name in ends:
                continue
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                continue
            if not chunk or (name == "wait" and chunk.startswith(b"HTTP/")) or b"event: error" in chunk:
                ends[name] = time.time() - t0
    for name in ("stream", "wait"):
        rows.append(("5", "dave is banned: his %s" % name,
                     "ended after %.1f s" % ends[name] if name in ends else "still open after 10 s"))
    s.close()
    w.close()


def fresh(binary, tmp, n):
    """A new server with users alice, bob, carol and a runner r1."""
    d = os.path.join(tmp, "s%s" % n)
    os.makedirs(d)
    srv = Srv(binary, d)
    t = {n: srv.user(n) for n in ("alice", "bob", "carol")}
    t["runner"] = srv.runner_token("r1", "H200,B200")
    return srv, t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "bin", "kjudge-server"))
    ap.add_argument("--waits", type=int, default=520)
    ap.add_argument("--streams", type=int, default=30)
    ap.add_argument("--events-mb", type=int, default=10)
    ap.add_argument("--smoke", action="store_true", help="a run of seconds for make test")
    a = ap.parse_args()
    if a.smoke:
        a.waits, a.streams, a.events_mb = 8, 2, 1
    rows = []
    attacks = (("1", lambda srv, t: attack_waits(srv, t, a.waits, rows)),
               ("2", lambda srv, t: attack_streams(srv, t, a.waits, rows)),
               ("3", lambda srv, t: attack_events(srv, t, a.events_mb, a.streams, rows)),
               ("4", lambda srv, t: attack_walk(srv, t, rows)),
               ("5", lambda srv, t: attack_ban(srv, t, rows)))
    with tempfile.TemporaryDirectory(prefix="kjudge-abuse-") as tmp:
        for n, fn in attacks:  # each attack on a fresh server
            srv, t = fresh(a.bin, tmp, n)
            try:
                if srv.req("GET", "/healthz")[0] != 200:
                    print("the server did not start; see its log in", tmp)
                    return 2
                fn(srv, t)
            except (OSError, KeyError, TypeError) as e:
                rows.append((n, "the attack could not go on", "%s: %s" % (type(e).__name__, e)))
            finally:
                srv.stop()
    print("| # | attack | result |\n|---|---|---|")
    for r in rows:
        print("| %s | %s | %s |" % r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
