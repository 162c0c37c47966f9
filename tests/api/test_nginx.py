#!/usr/bin/env python3
"""test_nginx.py - kjudge-server behind nginx with deploy/nginx/kjudge.conf.

Renders the shipped site file (its ports, server name and certificate
paths swapped for test ones; every swap must find its line) into an nginx
configuration, starts nginx (Debian's nginx-light) in front of a real
kjudge-server on loopback ports, with trusted_proxies = 127.0.0.1, and
checks through nginx over HTTPS, from the client address 127.0.0.2: plain
HTTP is redirected; HTTP/2 is on (ALPN h2) without the deprecated
"listen ... http2" form; an event stream delivers each progress event while the
job runs (the runner posts the next step only after the client has read
the previous one, so a buffering proxy would stall the test); a ?wait=1
answers as soon as the verdict is posted, not before; a body over the
proxy's limit gets JSON 413 from nginx and one over the server's limit
JSON 413 from the server; the proxy's timeouts outlast the longest wait;
and the server's request log shows 127.0.0.2 as the client, forwarded.
Python 3 standard library plus nginx and openssl; ends with
"test_nginx: N passed, N failed, N skipped" and exits 1 on failure.
"""
import http.client
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check  # noqa: E402
from kjhttp import Client, multipart  # noqa: E402
from kjservice import BIN, ROOT, NO_RATE_LIMITS  # noqa: E402
from kjtest import result_body, GOOD_SOURCE  # noqa: E402
from kjtest import claim  # noqa: E402
import kjdeploy  # noqa: E402
from kjdeploy import cli, json_of  # noqa: E402

SITE = os.path.join(ROOT, "deploy", "nginx", "kjudge.conf")
NGINX = "/usr/sbin/nginx"
CLIENT = "127.0.0.2"   # the test's client address; nginx itself reaches the server from 127.0.0.1
DEADLINE = 20          # seconds a step may take before the test gives up on it (not a speed check)


def nginx_version():
    """nginx's version as a tuple, from `nginx -v`."""
    p = subprocess.run([NGINX, "-v"], capture_output=True, text=True, timeout=30)
    m = re.search(r"nginx/(\d+)\.(\d+)\.(\d+)", p.stderr + p.stdout)
    return tuple(int(x) for x in m.groups()) if m else (0, 0, 0)


def render(site, server_port, https_port, http_port, pki, version):
    """The site file with test ports, names and paths; raises if a swap finds nothing.
    Before nginx 1.25.1 the file's own comment says how HTTP/2 is written: that edit is made."""
    old = version < (1, 25, 1)
    swaps = [
        (r"server 127\.0\.0\.1:8080;", "server 127.0.0.1:%d;" % server_port, 1),
        (r"listen 80;", "listen 127.0.0.1:%d;" % http_port, 1),
        (r"listen \[::\]:80;", "", 1),
        (r"listen 443 ssl;", "listen 127.0.0.1:%d ssl%s;" % (https_port, " http2" if old else ""), 1),
        (r"listen \[::\]:443 ssl;", "", 1),
        (r"(?m)^\s*http2 on;$", "" if old else "    http2 on;", 1),
        (r"ssl_certificate\s+/etc/ssl/kjudge/fullchain\.pem;", "ssl_certificate %s;" % pki["cert"], 1),
        (r"ssl_certificate_key\s+/etc/ssl/kjudge/privkey\.pem;", "ssl_certificate_key %s;" % pki["key"], 1),
        (r"server_name kjudge\.example\.org;", "server_name localhost;", 2),
    ]
    text = open(site).read()
    for pat, rep, n in swaps:
        text, got = re.subn(pat, rep, text)
        if got != n:
            raise RuntimeError("deploy/nginx/kjudge.conf: expected %d line(s) matching %r, found %d" % (n, pat, got))
    return text


def nginx_conf(tmp, site_path):
    user = "user root;\n" if os.geteuid() == 0 else ""
    temps = "".join("%s_temp_path %s/%s;\n" % (k, tmp, k) for k in
                    ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return ("%sworker_processes 1;\ndaemon off;\npid %s/nginx.pid;\nerror_log %s/error.log info;\n"
            "events { worker_connections 256; }\n"
            "http {\n  access_log %s/access.log;\n  %s  include %s;\n}\n"
            % (user, tmp, tmp, tmp, temps.replace("\n", "\n  "), site_path))


class Nginx:
    def __init__(self, tmp, text):
        self.tmp = tmp
        self.site = os.path.join(tmp, "kjudge-site.conf")
        with open(self.site, "w") as f:
            f.write(text)
        self.conf = os.path.join(tmp, "nginx.conf")
        with open(self.conf, "w") as f:
            f.write(nginx_conf(tmp, self.site))
        self.proc = None

    def test_config(self):
        p = subprocess.run([NGINX, "-t", "-p", self.tmp, "-c", self.conf], capture_output=True, text=True, timeout=30)
        return p.returncode, p.stderr

    def start(self, port):
        self.err = open(os.path.join(self.tmp, "nginx.stderr"), "wb")
        self.proc = subprocess.Popen([NGINX, "-p", self.tmp, "-c", self.conf], stdout=self.err, stderr=self.err)
        deadline = time.time() + DEADLINE
        while time.time() < deadline and self.proc.poll() is None:
            try:
                import socket
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return True
            except OSError:
                time.sleep(0.05)
        return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.close()


class Front:
    """HTTPS requests to nginx from CLIENT, trusting the test CA."""

    def __init__(self, port, ca):
        self.port = port
        self.ctx = ssl.create_default_context(cafile=ca)

    def conn(self, timeout=DEADLINE):
        return http.client.HTTPSConnection("localhost", self.port, timeout=timeout, context=self.ctx,
                                           source_address=(CLIENT, 0))

    def request(self, method, path, token=None, body=None, headers=None):
        return kjdeploy.request(None, method, path, token, body, headers, conn=self.conn())


def read_event(resp):
    """The next SSE event (id, event, data) from an open response, or None at
    its end or when nothing came for DEADLINE seconds."""
    fields = {}
    while True:
        try:
            line = resp.readline()
        except (OSError, http.client.HTTPException):
            return None
        if not line:
            return None
        line = line.decode().rstrip("\n")
        if line == "":
            if "event" in fields:
                return fields.get("id"), fields["event"], json.loads(fields.get("data", "null"))
            fields = {}
        elif not line.startswith(":"):
            k, _, v = line.partition(":")
            fields[k] = v[1:] if v.startswith(" ") else v


def submit(front, token):
    body, ctype = multipart([("leaderboard", "fp8_quant"), ("gpu", "H200"), ("mode", "test")],
                            [("file", "k.cu", GOOD_SOURCE.encode())])
    st, _, raw = front.request("POST", "/api/v1/submissions", token, body, {"Content-Type": ctype})
    return json_of(raw).get("id") if st == 202 else None


def test_stream(front, direct, user, runner):
    sid = submit(front, user)
    if not check(sid is not None, "a submission through nginx"):
        return
    conn = front.conn()
    try:
        conn.request("GET", "/api/v1/submissions/%d/events" % sid,
                     headers={"Authorization": "Bearer " + user, "Accept": "text/event-stream"})
        resp = conn.getresponse()
    except (OSError, http.client.HTTPException) as e:
        check(False, "the event stream opens through nginx", repr(e))
        conn.close()
        return
    check(resp.status == 200 and resp.getheader("Content-Type", "").startswith("text/event-stream"),
          "the event stream opens through nginx", resp.status)
    first = read_event(resp)
    check(first is not None and first[1] == "queued", "the queued event arrives before the job starts", first)
    job = claim(direct, runner, name="nginx-box")
    check(job is not None and job["id"] == sid, "the runner claims it", job)
    steps = [("compiling", {}), ("compiled", {"ok": True}), ("test", {"index": 0, "status": "pass"})]
    for ev, data in steps:
        st, _, _, _ = direct.post_json("/api/v1/runner/jobs/%d/events?attempt=1" % sid, {"event": ev, "data": data}, runner)
        got = read_event(resp)  # blocks until nginx passes it on (or DEADLINE)
        check(st == 204 and got is not None and got[1] == ev and got[2] == data,
              "the %s event arrives through nginx while the job runs" % ev, (st, got))
    direct.post_json("/api/v1/runner/jobs/%d/events?attempt=1" % sid, {"event": "verdict", "data": {"verdict": "accepted"}},
                     runner)
    st, _, _, _ = direct.post_json("/api/v1/runner/jobs/%d/result?attempt=1" % sid, result_body("accepted"), runner)
    rest = []
    while True:
        e = read_event(resp)
        if e is None:
            break
        rest.append(e[1])
    check("verdict" in rest, "the stream ends after the verdict", rest)
    conn.close()


def test_wait(front, direct, user, runner):
    sid = submit(front, user)
    out = {}

    def waiter():
        try:
            out["r"] = front.request("GET", "/api/v1/submissions/%d?wait=1" % sid, user)
        except (OSError, http.client.HTTPException) as e:
            out["r"] = (None, None, repr(e).encode())
        out["at"] = time.monotonic()

    t = threading.Thread(target=waiter)
    t.start()
    job = claim(direct, runner, name="nginx-box")
    check(job is not None and job["id"] == sid, "the runner claims the waited-for job", job)
    time.sleep(0.5)
    check("r" not in out, "?wait=1 through nginx does not answer before the verdict")
    posted = time.monotonic()
    direct.post_json("/api/v1/runner/jobs/%d/result?attempt=1" % sid, result_body("accepted"), runner)
    t.join(DEADLINE)
    st, _, raw = out.get("r", (None, None, b""))
    d = json_of(raw) or {}
    check(st == 200 and d.get("status") == "done" and d.get("verdict") == "accepted" and out.get("at", 0) >= posted,
          "?wait=1 through nginx answers with the verdict once it is posted", (st, raw[:200]))


def test_limits_and_redirect(front, http_port, user):
    body, ctype = multipart([("leaderboard", "fp8_quant"), ("gpu", "H200"), ("mode", "test")],
                            [("file", "big.cu", b"/" * (5 * 1024 * 1024))])
    st, h, raw = front.request("POST", "/api/v1/submissions", user, body, {"Content-Type": ctype})
    d = json_of(raw) or {}
    check(st == 413 and d.get("error", {}).get("code") == "too_large" and "proxy" in d["error"].get("message", ""),
          "5 MiB: JSON 413 from nginx", (st, raw[:200]))
    body, ctype = multipart([("leaderboard", "fp8_quant"), ("gpu", "H200"), ("mode", "test")],
                            [("file", "big.cu", b"/" * (2 * 1024 * 1024))])
    st, h, raw = front.request("POST", "/api/v1/submissions", user, body, {"Content-Type": ctype})
    d = json_of(raw) or {}
    check(st == 413 and d.get("error", {}).get("code") == "too_large" and "proxy" not in d["error"].get("message", ""),
          "2 MiB: passed on, JSON 413 from the server", (st, raw[:200]))
    st, h, _ = kjdeploy.request(http_port, "GET", "/api/v1/leaderboards", source=CLIENT)
    check(st == 301 and h.get("location", "").startswith("https://"), "plain HTTP redirects to https", (st, h.get("location")))
    text = open(SITE).read()
    m = re.search(r"proxy_read_timeout (\d+)s;", text)
    check(m is not None and int(m.group(1)) > 600, "proxy_read_timeout outlasts the longest ?wait (600 s)",
          m.group(0) if m else None)
    m = re.search(r"client_max_body_size (\d+)m;", text)
    check(m is not None and int(m.group(1)) * 1024 * 1024 >= 4 * 1024 * 1024,
          "client_max_body_size admits a runner's largest result (4 MiB)", m.group(0) if m else None)


def main():
    if not os.access(BIN, os.X_OK):
        print("FAIL %s is not built\ntest_nginx: 0 passed, 1 failed, 0 skipped" % BIN)
        return 1
    if not os.access(NGINX, os.X_OK):
        print("FAIL %s is missing (deploy/deps.sh --test installs nginx-light)\n"
              "test_nginx: 0 passed, 1 failed, 0 skipped" % NGINX)
        return 1
    with tempfile.TemporaryDirectory(prefix="kjudge-nginx-") as tmp:
        os.chmod(tmp, 0o755)
        pki = kjdeploy.make_pki(os.path.join(tmp, "pki"))
        srv = kjdeploy.Server(os.path.join(tmp, "srv"), extra=NO_RATE_LIMITS,
                              conf_lines=["trusted_proxies = 127.0.0.1, ::1"])
        https_port, http_port = kjdeploy.free_port(), kjdeploy.free_port()
        version = nginx_version()
        shipped = open(SITE).read()
        check(not re.search(r"(?m)^\s*listen\b[^;#]*\bhttp2\b", shipped) and
              "delete it and write \"listen 443 ssl http2;\"" in shipped,
              "the site file turns HTTP/2 on as nginx 1.25.1+ wants (no deprecated 'listen ... http2'), "
              "and says how for an older nginx")
        ngx = Nginx(tmp, render(SITE, srv.port, https_port, http_port, pki, version))
        rc, err = ngx.test_config()
        check(rc == 0 and "deprecated" not in err,
              "nginx %s -t accepts the rendered deploy/nginx/kjudge.conf with no warning"
              % ".".join(map(str, version)), err[-400:])
        if check(srv.start(), "the server starts") and check(ngx.start(https_port), "nginx starts"):
            try:
                user = cli("user", "add", "viaproxy", "--db", srv.db)[1].strip()
                runner = cli("runner", "add", "proxyrunner", "--gpu", "H200", "--db", srv.db)[1].strip()
                front, direct = Front(https_port, pki["ca"]), Client(srv.port)
                st, h, raw = front.request("GET", "/healthz")
                check(st == 200, "GET /healthz through nginx over HTTPS", (st, raw[:200]))
                check(h.get("strict-transport-security", "").startswith("max-age="),
                      "nginx's HTTPS answers say Strict-Transport-Security", h)
                alpn = ssl.create_default_context(cafile=pki["ca"])
                alpn.set_alpn_protocols(["h2", "http/1.1"])
                with alpn.wrap_socket(socket.create_connection(("127.0.0.1", https_port), timeout=DEADLINE),
                                      server_hostname="localhost") as tls:
                    got = tls.selected_alpn_protocol()
                check(got == "h2", "nginx offers HTTP/2 (ALPN h2)", got)
                test_stream(front, direct, user, runner)
                test_wait(front, direct, user, runner)
                test_limits_and_redirect(front, http_port, user)
                log = srv.server_log()
                lines = re.findall(r"GET /healthz status=200 ms=\S+ addr=(\S+)( forwarded=1)?", log)
                check(("127.0.0.2", " forwarded=1") in lines, "the server logs the forwarded client address",
                      lines[-3:])
                check(re.search(r"POST /api/v1/submissions status=202 ms=\S+ addr=127\.0\.0\.2 forwarded=1", log),
                      "submissions through nginx are logged under the client's address")
            finally:
                ngx.stop()
                srv.stop(signal.SIGTERM)
        elif ngx.proc is not None:
            ngx.stop()
            print(open(os.path.join(tmp, "error.log")).read()[-800:])
    print("test_nginx: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
