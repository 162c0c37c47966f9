#!/usr/bin/env python3
"""test_runner_net.py - the runner's HTTP client (common/curlc.c, libcurl)
against a real kjudge-server, plain and HTTPS.

The runner is the real program (build/kjudge-runner-fakegpu: runner/main.c
and runner/serve.c as shipped, judging with tests/api/fakegpu.c instead of
a GPU; see kjrunner.py). A throwaway CA is made with openssl. Checks:
bin/kjudge-server and the server's objects do not link libcurl; a job is
judged end to end over plain HTTP, over HTTPS with --ca-file, and with
KJUDGE_CA_FILE; heartbeats keep a job longer than the lease (server
--lease-seconds 3); a runner trusting another CA, or none, stops at start
with a message naming the certificate and --ca-file; plain HTTP to the
HTTPS port and https:// to a plain port stop it with a message saying
what to check; https_proxy from the environment is used (a CONNECT proxy
run by the test sees the tunnel) and no_proxy bypasses it; the token
appears in no log. Ends with "test_runner_net: N passed, N failed, N skipped".
"""
import glob
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check  # noqa: E402
from kjservice import ROOT, NO_RATE_LIMITS  # noqa: E402
import kjdeploy  # noqa: E402
import kjrunner  # noqa: E402
from kjrunner import Runner, submit, sub, events, wait_status  # noqa: E402


class ConnectProxy:
    """An HTTP proxy that only tunnels (CONNECT host:port), recording each request line."""

    def __init__(self):
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.port = self.lsock.getsockname()[1]
        self.seen = []
        self.stopping = False
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while not self.stopping:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(c,), daemon=True).start()

    def handle(self, c):
        head = b""
        c.settimeout(10)
        try:
            while b"\r\n\r\n" not in head and len(head) < 65536:
                chunk = c.recv(4096)
                if not chunk:
                    return
                head += chunk
            line = head.split(b"\r\n", 1)[0].decode("latin-1")
            self.seen.append(line)
            parts = line.split()
            if len(parts) != 3 or parts[0] != "CONNECT":
                c.sendall(b"HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\n\r\n")
                return
            host, _, port = parts[1].rpartition(":")
            up = socket.create_connection((host, int(port)), timeout=10)
            c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            self.relay(c, up)
        except OSError:
            pass
        finally:
            c.close()

    @staticmethod
    def relay(a, b):
        socks = [a, b]
        try:
            while True:
                r, _, _ = select.select(socks, [], [], 30)
                if not r:
                    return
                for s in r:
                    data = s.recv(65536)
                    if not data:
                        return
                    (b if s is a else a).sendall(data)
        finally:
            b.close()

    def close(self):
        self.stopping = True
        self.lsock.close()


def test_no_curl_in_server():
    p = subprocess.run(["ldd", os.path.join(ROOT, "bin", "kjudge-server")], capture_output=True, text=True)
    check(p.returncode == 0 and "libcurl" not in p.stdout, "bin/kjudge-server does not link libcurl",
          p.stdout[-400:])
    p = subprocess.run(["ldd", kjrunner.FAKE], capture_output=True, text=True)
    check("libcurl" in p.stdout, "the runner links libcurl", p.stdout[-400:])
    objs = sorted(glob.glob(os.path.join(ROOT, "build", "obj", "server", "*.o")))
    objs += [o for o in glob.glob(os.path.join(ROOT, "build", "obj", "common", "*.o"))
             if not o.endswith("/curlc.o")]
    p = subprocess.run(["nm", "-u"] + objs, capture_output=True, text=True)
    users = [ln for ln in p.stdout.splitlines() if "curl_" in ln]
    check(len(objs) > 20 and p.returncode == 0 and not users,
          "no server or common object (but curlc.o) calls libcurl (%d objects)" % len(objs), users[:5])


def judged(tag, srv, alice, rtok, args=(), env=None, seconds=0.5):
    """A runner judges one job (--once) through url; returns the Runner."""
    tmp = os.path.join(srv.tmp, "runner-" + tag.replace(" ", "-"))
    sid = submit(srv, alice, seconds=seconds)
    r = Runner(tmp, srv.url, rtok, ["--once"] + list(args), env=env)
    rc = r.run(timeout=60)
    d = sub(srv, alice, sid) if sid else None
    names = [e["event"] for e in events(srv, alice, sid)] if sid else []
    check(rc == 0 and d is not None and d.get("status") == "done" and d.get("verdict") == "compile_error"
          and names[:1] == ["compiling"],
          "%s: a job is claimed, its event and result posted" % tag, (rc, d and d.get("status"), names,
                                                                      r.text()[-600:]))
    return r


def refused(tag, srv, rtok, url, args, wants, env=None):
    tmp = os.path.join(srv.tmp, "refused-" + tag.replace(" ", "-"))
    r = Runner(tmp, url, rtok, list(args), env=env)
    rc = r.run(timeout=60)
    text = r.text()
    check(rc == 2 and all(w in text for w in wants), "%s: the runner stops at start (exit 2) saying %s" %
          (tag, wants), (rc, text[-600:]))
    return r


def test_plain(tmp, alice_name="alice"):
    srv = kjdeploy.Server(os.path.join(tmp, "plain"), extra=NO_RATE_LIMITS)
    if not check(srv.start(), "a plain HTTP server starts"):
        return
    srv.url = "http://127.0.0.1:%d" % srv.port
    try:
        alice, rtok = kjrunner.user_token(srv, alice_name), kjrunner.runner_token(srv)
        r = judged("plain HTTP", srv, alice, rtok)
        check(rtok not in r.text() and rtok not in srv.server_log(), "plain HTTP: the token is in no log")
        refused("https:// to a plain server", srv, rtok, "https://127.0.0.1:%d" % srv.port, [],
                ["https://127.0.0.1:%d/api/v1/runner/hello" % srv.port, "TLS failed", "http://"])
    finally:
        srv.stop()


def test_tls(tmp, pki):
    srv = kjdeploy.Server(os.path.join(tmp, "tls"), cafile=pki["ca"], extra=NO_RATE_LIMITS + [
        "--tls-cert", pki["cert"], "--tls-key", pki["key"], "--lease-seconds", "3"])
    if not check(srv.start(), "an HTTPS server starts"):
        return
    srv.url = "https://127.0.0.1:%d" % srv.port
    try:
        alice, rtok = kjrunner.user_token(srv, "alice"), kjrunner.runner_token(srv)
        r = judged("HTTPS with --ca-file", srv, alice, rtok, ["--ca-file", pki["ca"]])
        check("reported to https://" in r.text(), "HTTPS: the start-up report reached the server", r.text()[-300:])
        judged("HTTPS with KJUDGE_CA_FILE", srv, alice, rtok, env={"KJUDGE_CA_FILE": pki["ca"]})
        # A job three times the lease: the heartbeats (a third of lease_seconds) keep it.
        sid = submit(srv, alice, seconds=8)
        r = Runner(os.path.join(tmp, "long"), srv.url, rtok, ["--once", "--ca-file", pki["ca"]]).start()
        rc = r.wait(60)
        d = sub(srv, alice, sid)
        queued = [e for e in events(srv, alice, sid) if e["event"] == "queued"]
        check(rc == 0 and d.get("status") == "done" and d.get("attempts") == 0 and not queued,
              "HTTPS heartbeats keep a job three times the lease", (rc, d, queued, r.text()[-400:]))
        check("heartbeat not taken" not in r.text(), "every heartbeat was taken", r.text()[-400:])

        before = srv.server_log().count("runner: ready")
        refused("another CA", srv, rtok, srv.url, ["--ca-file", pki["wrongca"]],
                ["SSL certificate problem", "--ca-file", "/api/v1/runner/hello"])
        refused("no CA file", srv, rtok, srv.url, [], ["SSL certificate problem", "--ca-file"])
        refused("plain HTTP to the HTTPS port", srv, rtok, "http://127.0.0.1:%d" % srv.port, [],
                ["no HTTP answer", "https://"])
        check(before == 3 and srv.server_log().count("runner: ready") == before,
              "the refused runners never reached the server", (before, srv.server_log().count("runner: ready")))

        # https_proxy from the environment: the CONNECT proxy carries the job.
        px = ConnectProxy()
        try:
            judged("HTTPS through https_proxy", srv, alice, rtok, ["--ca-file", pki["ca"]],
                   env={"https_proxy": "http://127.0.0.1:%d" % px.port})
            want = "CONNECT 127.0.0.1:%d HTTP/1.1" % srv.port
            check(want in px.seen, "https_proxy: the runner tunnels through the proxy", px.seen)
            n = len(px.seen)
            judged("no_proxy", srv, alice, rtok, ["--ca-file", pki["ca"]],
                   env={"https_proxy": "http://127.0.0.1:%d" % px.port, "no_proxy": "127.0.0.1"})
            check(len(px.seen) == n, "no_proxy=127.0.0.1 bypasses the proxy", px.seen[n:])
        finally:
            px.close()
        logs = "".join(open(p, errors="replace").read() for p in glob.glob(os.path.join(tmp, "**", "*.log"), recursive=True))
        check(rtok not in logs and rtok not in srv.server_log(), "HTTPS: the token is in no log (%d bytes read)" %
              len(logs))
    finally:
        srv.stop()


def main():
    if not kjrunner.built():
        print("FAIL %s is not built (make build/kjudge-runner-fakegpu)\n"
              "test_runner_net: 0 passed, 1 failed, 0 skipped" % kjrunner.FAKE)
        return 1
    if not kjdeploy.have("openssl"):
        print("FAIL openssl is needed (deploy/deps.sh --test)\ntest_runner_net: 0 passed, 1 failed, 0 skipped")
        return 1
    test_no_curl_in_server()
    with tempfile.TemporaryDirectory(prefix="kjudge-rnet-") as tmp:
        pki = kjdeploy.make_pki(os.path.join(tmp, "pki"))
        test_plain(tmp)
        test_tls(tmp, pki)
    print("test_runner_net: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
