#!/usr/bin/env python3
"""test_abuse_http.py - hostile HTTP clients against a real server on loopback.

Starts bin/kjudge-server with a short head deadline (--header-timeout 3)
and a per-address limit (--max-conns-per-ip 40), then, from several
loopback addresses (127.0.0.2, .3, ... are loopback too, so the limit can
be shown without hurting the test's own requests from 127.0.0.1):

  - slow heads: 120 connections that trickle a request head one byte at a
    time; at most 40 are kept, a request from another address is answered
    meanwhile, a further connection from the slow address is refused, and
    the slow ones are cut at the deadline although they keep sending;
    connections that send nothing are cut too;
  - slow bodies: a body trickled at 20 bytes/s is cut; a body sent in a few
    quick pieces is answered;
  - long-lived answers past the deadline: a ?wait=1 that waits longer than
    it, an event stream that stays open longer and still gets its verdict,
    and a kept-alive connection used twice;
  - request framing: Content-Length twice, Content-Length with
    Transfer-Encoding, an unknown Transfer-Encoding, a header folded onto
    the next line (obs-fold), white space in or before a header name
    (answered in JSON and the connection closed: nothing after it is read
    as another request);
  - a NUL byte in the URL, raw or as %00, in the path or the query;
  - over-long URLs and heads answered in JSON by the server (414, 431),
    and the few cases MHD answers itself before any callback (a head too
    large for its memory, a bad HTTP version, a malformed Content-Length),
    whose status is checked: docs/operator.md "Hostile clients" lists them.

Bounded: about 200 connections in all, every wait capped; the file takes
about 25 s. Python 3 standard library only; ends with "test_abuse_http:
N passed, N failed, N skipped".
"""
import json
import os
import resource
import select
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check  # noqa: E402
from kjhttp import Client  # noqa: E402
from kjtest import is_error, result_body  # noqa: E402
from kjtest import Server, SSE, submit, claim  # noqa: E402

HEADER_TIMEOUT = 3
PER_IP = 40
CUT_WAIT = 15        # the longest we wait for the server to cut what it should cut


def connect(port, src="127.0.0.1", timeout=5):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s


def read_answer(s, timeout=10):
    """One HTTP answer from s: (status, headers, body bytes) or (None, {}, b'') when the
    connection closed (or stayed silent) before a status line."""
    s.settimeout(timeout)
    buf = b""
    try:
        while b"\r\n\r\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                return None, {}, b""
            buf += chunk
    except (socket.timeout, ConnectionError):
        return None, {}, b""
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        return None, {}, b""
    headers = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        headers[k.strip().lower()] = v.strip()
    n = int(headers.get("content-length", "0") or 0)
    try:
        while len(body) < n:
            chunk = s.recv(65536)
            if not chunk:
                break
            body += chunk
    except (socket.timeout, ConnectionError):
        pass
    return status, headers, body[:n]


def closed_after(s, timeout=HEADER_TIMEOUT / 2):
    """True when the server closes s (after its answer) within timeout (shorter
    than the head deadline, which would close a kept-alive connection too)."""
    s.settimeout(timeout)
    try:
        return s.recv(1) == b""
    except socket.timeout:
        return False
    except ConnectionError:
        return True


def raw(port, data, src="127.0.0.1"):
    """Send data on a new connection; returns (status, headers, json or None, closed after)."""
    s = connect(port, src)
    try:
        s.sendall(data)
        status, headers, body = read_answer(s)
        try:
            j = json.loads(body) if headers.get("content-type", "").startswith("application/json") else None
        except ValueError:
            j = None
        return status, headers, j, closed_after(s)
    finally:
        s.close()


def poll_closed(socks, trickle=None, limit=CUT_WAIT):
    """Wait (at most limit s) until every socket of socks is closed by the server,
    sending one byte of trickle to each open one every 0.5 s. Returns
    (seconds, number still open)."""
    t0 = time.time()
    open_ = set(range(len(socks)))
    next_send = t0
    while open_ and time.time() - t0 < limit:
        p = select.poll()
        for i in open_:
            p.register(socks[i], select.POLLIN)
        for fd, _ in p.poll(100):
            i = [k for k in open_ if socks[k].fileno() == fd][0]
            s = socks[i]
            try:
                if s.recv(4096) == b"":
                    open_.discard(i)
            except (BlockingIOError, socket.timeout):
                pass
            except ConnectionError:
                open_.discard(i)
        if trickle is not None and time.time() >= next_send:
            next_send += 0.5
            for i in list(open_):
                try:
                    socks[i].send(trickle)
                except OSError:
                    open_.discard(i)
    return time.time() - t0, len(open_)


def count_open(socks, wait=0.5):
    """How many of socks the server keeps open after wait seconds (the rest it
    closed: refused over the per-address limit)."""
    time.sleep(wait)
    n = 0
    for s in socks:
        s.setblocking(False)
        try:
            n += s.recv(4096) != b""   # data would be an answer: none is expected
        except BlockingIOError:
            n += 1
        except ConnectionError:
            pass
    return n


# ---------------------------------------------------------------------------

def test_slow_heads(srv, c):
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "
    socks = []
    for _ in range(3 * PER_IP):
        try:
            s = connect(srv.port, "127.0.0.2")
            s.sendall(head)
            socks.append(s)
        except OSError:
            pass
    held = count_open(socks)
    check(0 < held <= PER_IP, "%d slow connections from one address: at most %d kept (%d)" %
          (len(socks), PER_IP, held), held)
    st, _, d, _ = c.get("/healthz", timeout=10)
    check(st == 200 and d.get("status") == "ok", "a request from another address is answered meanwhile", (st, d))
    st, _, _, _ = raw(srv.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", src="127.0.0.2")
    check(st is None, "a further connection from the slow address is refused while it holds its limit", st)
    idle = [connect(srv.port, "127.0.0.3") for _ in range(5)]
    secs, left = poll_closed(socks, trickle=b"a")
    check(left == 0, "every slow head is cut although it keeps sending (within %d s, idle timeout 60 s)" %
          CUT_WAIT, "%d still open after %.1f s" % (left, secs))
    secs, left = poll_closed(idle)
    check(left == 0, "connections that send nothing are cut at the deadline", "%d still open" % left)
    for s in socks + idle:
        s.close()
    st, _, _, _ = raw(srv.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", src="127.0.0.2")
    check(st == 200, "the slow address may connect again once its connections were cut", st)
    check("closed slow connections" in srv.server_log(), "the server logs the cuts")


def test_idle_keepalive(srv):
    """A client that keeps its answered connection open (libcurl's connection
    cache, the runner's) is closed at the deadline without a warning: only
    slow heads and bodies are logged."""
    before = srv.server_log().count("closed slow connections")
    s = connect(srv.port, "127.0.0.4")
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    status, _, _ = read_answer(s)
    secs, left = poll_closed([s])
    s.close()
    check(status == 200 and left == 0, "an idle keep-alive connection is closed at the deadline (%.1f s)" % secs,
          (status, left))
    time.sleep(1.5)  # a tick of the guard, whose line would come now
    check(srv.server_log().count("closed slow connections") == before,
          "and no 'closed slow connections' warning for it", srv.server_log()[-600:])


def test_slow_body(srv):
    body = b'{"name": "slow", "invite": "x"}' + b" " * 99000
    s = connect(srv.port, "127.0.0.4")
    s.sendall(b"POST /api/v1/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body))
    s.setblocking(False)
    secs, left = poll_closed([s], trickle=b" " * 10)
    check(left == 0, "a body trickled at 20 bytes/s is cut", "still open after %.1f s" % secs)
    s.close()
    body = body[:3000]  # within the route's limit
    s = connect(srv.port, "127.0.0.4")
    s.sendall(b"POST /api/v1/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body))
    for k in range(3):
        time.sleep(0.3)
        s.sendall(body[k * len(body) // 3:(k + 1) * len(body) // 3])
    st, _, b = read_answer(s)
    s.close()
    check(st == 403 and is_error(json.loads(b or b"null"), "bad_invite"),
          "a body sent in quick pieces is read and answered", (st, b[:200]))


def test_long_lived(srv, c, alice, runner):
    claim(c, runner)  # an H200 runner seen: waits on H200 jobs park (no "no runner" note)
    sid = submit(c, alice)
    if not check(sid is not None, "a submission to wait on"):
        return
    t0 = time.time()
    st, _, d, _ = c.get("/api/v1/submissions/%d?wait=1&timeout=%d" % (sid, HEADER_TIMEOUT + 2), alice, timeout=30)
    check(st == 200 and d.get("wait_timed_out") is True and time.time() - t0 > HEADER_TIMEOUT,
          "a ?wait=1 longer than the head deadline is answered when its own timeout ends", (st, d))
    stream = SSE(srv.port, "/api/v1/submissions/%d/events" % sid, alice)
    first = stream.next()
    check(stream.status == 200 and first is not None and first[1] == "queued", "an event stream opens", first)
    time.sleep(HEADER_TIMEOUT + 1.5)
    job = claim(c, runner)
    st, _, _, _ = c.post_json("/api/v1/runner/jobs/%d/result?attempt=%d" % (sid, job["attempt"] if job else 1),
                              result_body("accepted", 1500.0), runner)
    rest = stream.all()
    stream.close()
    check(job is not None and st == 200 and [e[1] for e in rest][-1:] == ["verdict"],
          "an event stream open longer than the head deadline still gets its verdict", rest)
    s = connect(srv.port)
    ok = True
    for _ in range(2):
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        st, _, _ = read_answer(s)
        ok = ok and st == 200
        time.sleep(HEADER_TIMEOUT / 2)
    s.close()
    check(ok, "a kept-alive connection serves a second request within the deadline")


def test_framing(srv):
    body = b'{"name": "smuggle", "invite": "x"}'
    cases = [
        ("Content-Length twice, different", b"Content-Length: 5\r\nContent-Length: %d\r\n" % len(body),
         400, "bad_request", "Content-Length"),
        ("Content-Length twice, equal", b"Content-Length: %d\r\nContent-Length: %d\r\n" % (len(body), len(body)),
         400, "bad_request", "Content-Length"),
        ("Content-Length and Transfer-Encoding", b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n" % len(body),
         400, "bad_request", "not both"),
        ("Transfer-Encoding twice", b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
         400, "bad_request", "Transfer-Encoding"),
        ("an unknown Transfer-Encoding", b"Transfer-Encoding: gzip\r\n", 501, "not_implemented", "chunked"),
        # obs-fold (RFC 9112 5.2): MHD 0.9.75 glues the continuation onto the NAME, so a folded
        # Transfer-Encoding would vanish and the body be read by its length
        ("a folded Transfer-Encoding with Content-Length",
         b"Transfer-Encoding:\r\n chunked\r\nContent-Length: %d\r\n" % len(body), 400, "bad_request", "folded"),
        ("a Transfer-Encoding folded with a tab", b"Content-Length: %d\r\nTransfer-Encoding:\r\n\tchunked\r\n" % len(body),
         400, "bad_request", "folded"),
        ("a folded Content-Length", b"Content-Length:\r\n %d\r\n" % len(body), 400, "bad_request", "folded"),
        ("any other folded header", b"X-Note: a\r\n b\r\n  c\r\nContent-Length: %d\r\n" % len(body),
         400, "bad_request", "folded"),
        ("white space before the colon", b"Transfer-Encoding : chunked\r\nContent-Length: %d\r\n" % len(body),
         400, "bad_request", "header name"),
    ]
    for what, framing, status, code, needle in cases:
        req = (b"POST /api/v1/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + framing +
               b"\r\n" + body + b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        _framing_case(srv, what, req, status, code, needle)
    # a line starting with white space right after the request line
    req = (b"POST /api/v1/register HTTP/1.1\r\n Transfer-Encoding: chunked\r\nHost: x\r\n"
           b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body +
           b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    _framing_case(srv, "white space before the first header", req, 400, "bad_request", "header name")
    st, _, d, closed = raw(srv.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Spaced:   a b  \r\n"
                           b"X-Empty:\r\nx-lower_case.~!#$%&'*+^`|: 1\r\n\r\n")
    check(st == 200 and not closed, "headers with inner white space, empty values and every token character pass",
          (st, d, closed))
    chunked = (b"POST /api/v1/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n")
    st, _, d, _ = raw(srv.port, chunked)
    check(st == 403 and is_error(d, "bad_invite"), "a plain chunked body still works", (st, d))


def _framing_case(srv, what, req, status, code, needle):
    """One request whose head must be refused: the answer, then the connection closed."""
    st, h, d, closed = raw(srv.port, req)
    check(st == status and is_error(d, code) and needle in d["error"]["message"],
          "%s -> %d %s" % (what, status, code), (st, d))
    check(closed and h.get("connection", "").lower() == "close",
          "%s: the connection is closed after the answer (nothing more is read)" % what, (closed, h))


def test_nul_url(srv):
    for what, line in [("a raw NUL in the path", b"GET /api/v1/leaderboards/fp8_quant\0evil HTTP/1.1"),
                       ("%00 in the path", b"GET /api/v1/leaderboards/fp8_quant%00evil HTTP/1.1"),
                       ("%00 in the query", b"GET /api/v1/leaderboards/fp8_quant/rankings?gpu=H200%00x HTTP/1.1"),
                       ("a raw NUL in the query", b"GET /api/v1/leaderboards/fp8_quant/rankings?gpu=H200\0x HTTP/1.1")]:
        st, _, d, _ = raw(srv.port, line + b"\r\nHost: x\r\n\r\n")
        check(st == 400 and is_error(d, "bad_request") and "NUL" in d["error"]["message"],
              "%s -> 400 JSON" % what, (st, d))
    st, _, d, _ = raw(srv.port, b"GET /api/v1/leaderboards/fp8%5Fquant/rankings?gpu=H%32%300 HTTP/1.1\r\nHost: x\r\n\r\n")
    check(st == 200 and isinstance(d, dict) and "rankings" in d, "other %XX escapes still work", (st, d))


def test_big_heads(srv):
    st, _, d, closed = raw(srv.port, b"GET /" + b"a" * 600 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    check(st == 414 and is_error(d, "uri_too_long") and not closed,
          "a 600-byte path -> 414 JSON, the connection kept", (st, d, closed))
    cases = [
        ("a 40 KB query", b"GET /healthz?x=" + b"a" * 40000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, "uri_too_long"),
        ("a 40 KB header", b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40000 + b"\r\n\r\n", 431,
         "headers_too_large"),
        ("400 headers of 50 bytes", b"GET /healthz HTTP/1.1\r\nHost: x\r\n" +
         b"".join(b"X-%03d: %s\r\n" % (i, b"v" * 40) for i in range(400)) + b"\r\n", 431, "headers_too_large"),
    ]
    for what, req, status, code in cases:
        st, _, d, closed = raw(srv.port, req)
        check(st == status and is_error(d, code), "%s -> %d JSON %s" % (what, status, code), (st, d))
        check(closed, "%s: the connection is closed after the answer" % what)
    # Answered by MHD before any callback of ours (docs/operator.md "Hostile clients"):
    # the status is right, the body is MHD's own HTML.
    for what, req, status in [
            ("a 300 KB header (over MHD's memory per connection)",
             b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 300000 + b"\r\n\r\n", 431),
            ("HTTP/2.0 in the request line", b"GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n", 505),
            ("a malformed Content-Length", b"POST /api/v1/register HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n",
             400)]:
        try:
            st, _, _, _ = raw(srv.port, req)
        except OSError:
            st = None
        check(st == status, "MHD itself answers %s with %d" % (what, status), st)
    st, h, d, _ = raw(srv.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    check(st == 200, "the server still answers after all that", (st, d))
    check("strict-transport-security" not in h, "plain HTTP answers carry no Strict-Transport-Security "
          "(HTTPS ones do: test_tls)", h)


def test_config(tmp):
    """max_conns_per_ip and header_timeout come from the config file unless a flag says otherwise."""
    d = os.path.join(tmp, "conf")
    os.makedirs(os.path.join(d, "var"))
    with open(os.path.join(d, "var", "kjudge.conf"), "w") as f:
        f.write("max_conns_per_ip = 7\nheader_timeout = 9\n")
    srv = Server(d, extra=["--header-timeout", "3"])
    ok = srv.start()
    srv.stop()
    log = srv.server_log()
    check(ok and "per_ip=7 header_timeout_s=3" in log, "the config file sets the limits, a flag overrides",
          [ln for ln in log.splitlines() if "http limits" in ln])


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2048:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    with tempfile.TemporaryDirectory(prefix="kjudge-abuse-") as tmp:
        srv = Server(tmp, extra=["--header-timeout", str(HEADER_TIMEOUT), "--max-conns-per-ip", str(PER_IP)])
        if not check(srv.start(), "the server starts with --header-timeout and --max-conns-per-ip",
                     srv.server_log()[-1500:] if os.path.exists(os.path.join(tmp, "server.log")) else ""):
            return
        try:
            c = Client(srv.port)
            rc, out, _ = srv.cli("user", "add", "alice", "--db", srv.db)
            rc2, out2, _ = srv.cli("runner", "add", "box", "--gpu", "H200", "--db", srv.db)
            if not check(rc == 0 and rc2 == 0, "user add, runner add"):
                return
            test_framing(srv)
            test_nul_url(srv)
            test_big_heads(srv)
            test_slow_heads(srv, c)
            test_idle_keepalive(srv)
            test_slow_body(srv)
            test_long_lived(srv, c, out.strip(), out2.strip())
            check(srv.proc.poll() is None, "the server is still running")
        finally:
            srv.stop()
        test_config(tmp)


if __name__ == "__main__":
    try:
        main()
    except Exception as ex:  # a crash is a failure, never a silent pass
        check(False, "test_abuse_http ran to the end", repr(ex))
    print("test_abuse_http: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    sys.exit(1 if Counts.failed else 0)
