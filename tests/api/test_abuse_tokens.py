#!/usr/bin/env python3
"""test_abuse_tokens.py - what one runner token may take, against a real
server on loopback (real SQLite file, real HTTP).

1. artifacts: a 20 MiB and a 64 MiB profile report go up through POST
   /runner/jobs/{id}/artifacts/profile.ncu-rep and come back byte-identical;
   64 MiB + 1 byte is answered 413 too_large (the error JSON, not a cut
   connection) and the stored report stays as it was;
2. claim slots (--max-waiters 16): one token opens 40 long-poll claims whose
   modes match nothing queued: 16 park (--max-claims-per-runner), the rest
   get 429 too_many_claims with Retry-After, and users' ?wait=1 and event
   streams are still served, all 16 of their slots; on a server with
   --max-claim-waiters 20 a second token's claims past the pool get 503
   too_many_claim_waiters, and a slot given back is taken again;
3. runner names: a token reports its own name and at most 8 others
   (--runner-names); a further name in a claim or a hello gets 403
   too_many_runner_names naming the limit, another token is not bound by
   the first one's names, and 200 invented names leave /api/v1/gpus and
   the series of /metrics as they were.
At most about 80 sockets at once, all closed; a few seconds. Python 3
standard library only; ends with "test_abuse_tokens: N passed, N failed,
N skipped" and exits 1 on failure.
"""
import json
import os
import select
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check  # noqa: E402
from kjhttp import Client, SSE  # noqa: E402
from kjtest import GOOD_SOURCE, Server, claim, is_error, submit  # noqa: E402

MIB = 1024 * 1024
ARTIFACT_MAX = 64 * MIB         # DB_MAX_ARTIFACT_BYTES
WAITERS = 16                    # --max-waiters of the claim-slot server
CLAIMS_PER_RUNNER = 16          # KJ_MAX_CLAIMS_PER_RUNNER
RUNNER_NAMES = 8                # KJ_RUNNER_NAMES


def start(tmp, name, extra=()):
    srv = Server(os.path.join(tmp, name), extra=list(extra))
    os.makedirs(srv.tmp, exist_ok=True)
    return srv if check(srv.start(), "the server starts (%s %s)" % (name, " ".join(extra))) else None


def tokens(srv, users=(), runners=()):
    t = {"admin": srv.printed().strip()}
    for u in users:
        t[u] = srv.user(u)
    for r in runners:
        t[r] = srv.runner_token(r, "H200,B200")
    return t


def safe_request(c, *args, **kw):
    """c.request, with a connection the server cut read as status None."""
    try:
        return c.request(*args, **kw)
    except (OSError, ConnectionError) as e:  # http.client's RemoteDisconnected is one
        return None, {}, None, repr(e).encode()


# ---------------------------------------------------------------------------
# 1. Artifacts up to their 64 MiB cap
# ---------------------------------------------------------------------------

def upload(c, token, job, data):
    return safe_request(c, "POST", "/api/v1/runner/jobs/%d/artifacts/profile.ncu-rep?attempt=%d" %
                        (job["id"], job["attempt"]), token=token, body=data,
                        headers={"Content-Type": "application/octet-stream"}, timeout=120, runner=True)


def test_artifacts(tmp):
    srv = start(tmp, "artifacts")
    if srv is None:
        return
    try:
        c = Client(srv.port)
        t = tokens(srv, ["alice"], ["h200-0"])
        st, _, d, _ = c.submit(t["alice"], [("leaderboard", "fp8_quant"), ("gpu", "H200"), ("mode", "profile"),
                                            ("shape", "0")], [("file", "k.cu", GOOD_SOURCE.encode())])
        job = claim(c, t["h200-0"], name="h200-0")
        if not check(st == 202 and job and job["mode"] == "profile", "a profile job is claimed", (st, d, job)):
            return
        url = "/api/v1/submissions/%d/artifacts/profile.ncu-rep" % job["id"]
        for size in (20 * MIB, ARTIFACT_MAX):
            data = os.urandom(size)
            t0 = time.time()
            st, _, d, raw = upload(c, t["h200-0"], job, data)
            check(st == 200 and d == {"ok": True, "bytes": size},
                  "a %d MiB report is taken (%.1f s)" % (size // MIB, time.time() - t0), (st, raw[:200]))
            st, _, _, back = c.get(url, t["alice"], timeout=120)
            check(st == 200 and back == data, "and comes back byte-identical (%d bytes)" % len(back or b""), st)
        st, h, d, raw = upload(c, t["h200-0"], job, data + b"+")
        check(st == 413 and is_error(d, "too_large") and h.get("content-type", "").startswith("application/json"),
              "64 MiB + 1 byte: 413 too_large with the error JSON (not a cut connection)", (st, raw[:200]))
        st, _, _, back = c.get(url, t["alice"], timeout=120)
        check(st == 200 and back == data, "the stored report is unchanged", (st, len(back or b"")))
        st, _, d, _ = c.get("/healthz")
        check(st == 200, "the server still answers", d)
    finally:
        srv.stop()


# ---------------------------------------------------------------------------
# 2. Runners' long-poll claims have slots of their own
# ---------------------------------------------------------------------------

def raw_request(port, method, path, token, body=None, stream=False):
    """Send a request and return the socket, the answer unread."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    h = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n" % (method, path, token)
    if stream:
        h += "Accept: text/event-stream\r\n"
    if body is not None:
        h += "Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
    s.sendall((h + "\r\n").encode() + (body or b""))
    return s


def answer(s, secs):
    """What s received within secs: bytes (b"" when closed), None when nothing came."""
    deadline, buf = time.time() + secs, b""
    while time.time() < deadline:
        s.settimeout(max(0.01, deadline - time.time()))
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        except OSError:
            chunk = b""
        if not chunk:
            return buf
        buf += chunk
        head, sep, rest = buf.partition(b"\r\n\r\n")
        if sep and not head.startswith(b"HTTP/1.1 200"):
            n = [int(v.split(b":")[1]) for v in head.split(b"\r\n") if v.lower().startswith(b"content-length:")]
            if n and len(rest) >= n[0]:
                break
        elif sep:
            break
    return buf or None


def status_of(a):
    return int(a.split(b" ")[1]) if a and a.startswith(b"HTTP/") else None


def json_of(a):
    try:
        return json.loads(a.split(b"\r\n\r\n", 1)[1])
    except (ValueError, IndexError, AttributeError):
        return None


CLAIM = json.dumps({"runner": "x-0", "gpu": "H200", "arch": "sm_90a", "modes": ["sanitize"]}).encode()


def park_claims(port, token, n, expect_parked):
    """n long-poll claims matching nothing queued: (parked sockets, answers of
    the others). Waits up to 5 s for answers, less once all but expect_parked
    are answered (the rest then count as parked)."""
    socks = [raw_request(port, "POST", "/api/v1/runner/claim?wait=30", token, CLAIM) for _ in range(n)]
    waiting, answered = list(socks), []
    deadline = time.time() + 5
    while waiting and len(answered) < n - expect_parked and time.time() < deadline:
        ready, _, _ = select.select(waiting, [], [], max(0.0, deadline - time.time()))
        for s in ready:
            answered.append(answer(s, 2) or b"")
            waiting.remove(s)
            s.close()
    if len(answered) == n - expect_parked:
        time.sleep(0.3)  # and none of the parked ones answers soon after
        late = select.select(waiting, [], [], 0)[0]
        for s in late:
            answered.append(answer(s, 2) or b"")
            waiting.remove(s)
            s.close()
    return waiting, answered


def close_all(socks):
    for s in socks:
        s.close()


def test_claim_slots(tmp):
    srv = start(tmp, "claims", ["--max-waiters", str(WAITERS)])
    if srv is None:
        return
    held = []
    try:
        c = Client(srv.port)
        t = tokens(srv, ["alice", "bob"], ["mallory-gpu"])
        sa, sb = submit(c, t["alice"]), submit(c, t["bob"])  # H200 test jobs: the claims below may not take them
        parked, answered = park_claims(srv.port, t["mallory-gpu"], 40, CLAIMS_PER_RUNNER)
        held += parked
        codes = sorted({(status_of(a), (json_of(a) or {}).get("error", {}).get("code")) for a in answered})
        check(len(parked) == CLAIMS_PER_RUNNER, "one token parks %d of 40 claims" % CLAIMS_PER_RUNNER, len(parked))
        check(codes == [(429, "too_many_claims")] and all(b"Retry-After: " in a for a in answered),
              "the other %d: 429 too_many_claims with Retry-After" % len(answered), codes)
        if answered:
            print("  the answer: %s" % json_of(answered[0]))
        # Users' waits and streams: every one of their slots is still free.
        t0 = time.time()
        st, _, d, _ = c.get("/api/v1/submissions/%d?wait=1&timeout=1" % sa, t["alice"], timeout=10)
        check(st == 200 and d.get("wait_timed_out") is True,
              "alice's ?wait=1 is served: answered after its 1 s timeout (%.1f s)" % (time.time() - t0), (st, d))
        waits = [raw_request(srv.port, "GET", "/api/v1/submissions/%d?wait=1&timeout=30" % sa, t["alice"])
                 for _ in range(WAITERS // 2)]
        held += waits
        time.sleep(0.5)
        early = [answer(s, 1) for s in select.select(waits, [], [], 0)[0]]
        check(not early, "%d more of alice's ?wait=1 park (her cap)" % len(waits), early[:2])
        streams = []
        for i in range(WAITERS // 2):
            sse = SSE(srv.port, "/api/v1/submissions/%d/events?stream=1" % sb, t["bob"], timeout=10)
            first = sse.next() if sse.status == 200 else None
            check(sse.status == 200 and first is not None,
                  "bob's event stream %d is served (first event %s)" % (i + 1, first and first[1]), sse.status)
            streams.append(sse)
        st, _, d, _ = c.get("/api/v1/submissions/%d?wait=1&timeout=1" % sa, t["admin"], timeout=10)
        check(st == 503 and is_error(d, "too_many_waiters"),
              "the users' %d slots are all theirs: the next wait gets 503 as before" % WAITERS, (st, d))
        for sse in streams:
            sse.close()
    finally:
        close_all(held)
        srv.stop()
    test_claim_pool(tmp)


def test_claim_pool(tmp):
    pool = CLAIMS_PER_RUNNER + 4
    srv = start(tmp, "claimpool", ["--max-claim-waiters", str(pool)])
    if srv is None:
        return
    held = []
    try:
        t = tokens(srv, [], ["r1", "r2"])
        p1, _ = park_claims(srv.port, t["r1"], CLAIMS_PER_RUNNER, CLAIMS_PER_RUNNER)
        p2, a2 = park_claims(srv.port, t["r2"], 8, pool - CLAIMS_PER_RUNNER)
        held += p1 + p2
        codes = sorted({(status_of(a), (json_of(a) or {}).get("error", {}).get("code")) for a in a2})
        check(len(p1) + len(p2) == pool and codes == [(503, "too_many_claim_waiters")],
              "%d claim slots in all: the next claims get 503 too_many_claim_waiters" % pool,
              (len(p1), len(p2), codes))
        close_all(p1[:2])
        t0, ok = time.time(), False
        while time.time() - t0 < 10 and not ok:
            p, _ = park_claims(srv.port, t["r2"], 1, 1)
            held += p
            ok = bool(p)
            time.sleep(0.2 if not ok else 0)
        check(ok, "a slot whose client left is taken again (after %.1f s)" % (time.time() - t0))
        st = srv.cli("serve", "--max-claims-per-runner", "0", "--db", os.path.join(tmp, "x.db"))
        check(st[0] == 1 and "--max-claims-per-runner" in st[2], "serve refuses --max-claims-per-runner 0", st[2][:200])
    finally:
        close_all(held)
        srv.stop()


# ---------------------------------------------------------------------------
# 3. Runner names bound to the token
# ---------------------------------------------------------------------------

def series(text):
    """The sample names with their labels of a /metrics text (values dropped)."""
    return sorted(line.rsplit(" ", 1)[0] for line in text.splitlines() if line and not line.startswith("#"))


def test_runner_names(tmp):
    srv = start(tmp, "names")
    if srv is None:
        return
    try:
        c = Client(srv.port)
        t = tokens(srv, [], ["host1", "host2"])

        def claim_as(tok, name):
            return c.post_json("/api/v1/runner/claim", {"runner": name, "gpu": "H200", "arch": "sm_90a"}, tok)

        def hello_as(tok, name):
            return c.post_json("/api/v1/runner/hello", {"runner": name, "state": "ready", "gpu": "H200",
                                                        "arch": "sm_90a"}, tok)
        st = [claim_as(t["host1"], "host1-gpu%d" % i)[0] for i in range(RUNNER_NAMES)]
        check(st == [204] * RUNNER_NAMES, "a token reports %d runner names" % RUNNER_NAMES, st)
        check(claim_as(t["host1"], "host1")[0] == 204 and hello_as(t["host1"], "host1")[0] == 204,
              "and its own name (runner add host1) on top")
        st, _, d, _ = claim_as(t["host1"], "invented-0")
        msg = (d or {}).get("error", {}).get("message", "")
        check(st == 403 and is_error(d, "too_many_runner_names") and "%d" % RUNNER_NAMES in msg and
              "--runner-names" in msg, "a further name in a claim: 403 too_many_runner_names naming the limit", (st, d))
        print("  the answer: %s" % msg)
        st, _, d, _ = hello_as(t["host1"], "invented-1")
        check(st == 403 and is_error(d, "too_many_runner_names"), "and in a hello", (st, d))
        check(hello_as(t["host1"], "host1-gpu3")[0] == 204 and claim_as(t["host1"], "host1-gpu7")[0] == 204,
              "names it holds still work")
        check(claim_as(t["host2"], "invented-0")[0] == 204, "another token has names of its own")
        _, _, _, gpus0 = c.get("/api/v1/gpus")
        c.get("/metrics", t["admin"])  # its own series exist from the first scrape on
        _, _, _, m0 = c.get("/metrics", t["admin"])
        refused = 0
        for i in range(100):
            refused += claim_as(t["host1"], "flood-%d" % i)[0] == 403
            refused += hello_as(t["host1"], "flood-h%d" % i)[0] == 403
        check(refused == 200, "200 invented names: all refused", refused)
        _, _, g, gpus1 = c.get("/api/v1/gpus")
        _, _, _, m1 = c.get("/metrics", t["admin"])
        names = sorted(r["name"] for x in (g or {}).get("gpus", []) for r in x.get("runners", []))
        check(len(gpus1) == len(gpus0) and not any(n.startswith(("flood", "invented-1")) for n in names),
              "/api/v1/gpus does not grow (%d -> %d bytes)" % (len(gpus0), len(gpus1)), names)
        s0, s1 = series(m0.decode()), series(m1.decode())
        check(s0 == s1, "/metrics has the same %d series" % len(s0), sorted(set(s1) - set(s0))[:5])
        check(b"flood" not in m1, "none of the invented names in /metrics")
    finally:
        srv.stop()


def main():
    with tempfile.TemporaryDirectory(prefix="kjudge-abuse-tokens-") as tmp:
        groups = {"artifacts": test_artifacts, "claims": test_claim_slots, "names": test_runner_names}
        only = sys.argv[1:] or list(groups)
        for name in only:
            t0 = time.time()
            groups[name](tmp)
            print("  [%s: %.1f s]" % (name, time.time() - t0))
    print("test_abuse_tokens: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
