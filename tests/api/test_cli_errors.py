#!/usr/bin/env python3
"""test_cli_errors.py - the errors a user of bin/kjudge meets before the
server says anything of substance, against a real server on a loopback
port: no config, a URL but no token, an unreachable server (a closed port,
a host that does not resolve), TLS failures (https:// against a plain
listener; a self-signed certificate, refused, then trusted through
KJUDGE_CA_FILE), an answer that is not from kjudge, 401 (saying where the
token came from, also with --json), a URL that is not http(s), a broken
config file, usage errors and --help; a server whose JSON holds raw
control bytes (escape sequences in a name, a compile log, an error): none
reaches the terminal, with --json or without. No token is printed. Python 3
standard library and openssl; ends with "test_cli_errors: N passed,
N failed, N skipped" and exits 1 on failure.
"""
import http.client
import http.server
import json
import os
import ssl
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import check, skip, summary  # noqa: E402
from kjhttp import free_port  # noqa: E402
from kjservice import BIN  # noqa: E402
from kjtest import Server  # noqa: E402
from kjcli import KJ, SECRETS, Cli, test_no_secret_printed  # noqa: E402


def closed_port():
    """A loopback port nobody listens on."""
    return free_port()


class Proxy(http.server.BaseHTTPRequestHandler):
    """A TLS front for the test server (GET only), or a stranger that answers 502 in HTML."""
    target = None

    def do_GET(self):
        if self.target is None:
            body = b"<html><body>Bad gateway</body></html>"
            self.send_response(502)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        conn = http.client.HTTPConnection("127.0.0.1", self.target, timeout=30)
        h = {k: v for k, v in self.headers.items() if k.lower() in ("authorization", "accept")}
        conn.request("GET", self.path, headers=h)
        r = conn.getresponse()
        body = r.read()
        self.send_response(r.status)
        self.send_header("Content-Type", r.getheader("Content-Type", "application/json"))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        conn.close()

    def log_message(self, *a):
        pass


class Hostile(http.server.BaseHTTPRequestHandler):
    """A server that puts raw control bytes (terminal escape sequences, BEL, CR, DEL, a C1
    CSI as UTF-8) into its JSON strings: a user name, a compile log, an error message."""
    EVIL = "\x1b]0;owned\x07\x1b[2J\x1b[1A\r\x7f\u009b31m"
    ANSWERS = {
        "/api/v1/me": (200, {"name": "alice" + EVIL, "role": "user"}),
        "/api/v1/submissions/7": (200, {"id": 7, "status": "done", "verdict": "compile_error",
                                        "leaderboard": "fp8_quant", "gpu": "H200", "mode": "test",
                                        "user": "alice", "result": {"compile_log": "k.cu(1): error" + EVIL}}),
        "/api/v1/leaderboards": (500, {"error": {"code": "internal", "message": "boom" + EVIL}}),
    }

    def do_GET(self):
        status, obj = self.ANSWERS.get(self.path, (404, {"error": {"code": "not_found", "message": "no"}}))
        # json.dumps escapes control characters; put them back raw, as a hostile server would
        body = json.dumps(obj, ensure_ascii=False).replace("\\u001b", "\x1b").replace("\\u0007", "\x07") \
            .replace("\\r", "\r").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def control_chars(text):
    """The control characters in text but newlines: C0, DEL and C1."""
    return sorted({"%02x" % ord(c) for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f})


def test_hostile_bytes(t):
    """--json copies the server's answer, but no control byte reaches the terminal: each is
    escaped (\\u001b), so the JSON still says the same; the text views clean them too."""
    alice = t["alice"]
    bad = serve_in_thread(Hostile)
    env = {"KJUDGE_URL": "http://127.0.0.1:%d" % bad.server_address[1]}
    try:
        raw = Hostile.ANSWERS["/api/v1/me"][1]["name"]
        for args, want in [(["--json", "whoami"], ("name", raw)),
                           (["--json", "show", "7"], ("result", Hostile.ANSWERS["/api/v1/submissions/7"][1]["result"])),
                           (["--json", "boards"], ("error", Hostile.ANSWERS["/api/v1/leaderboards"][1]["error"])),
                           (["whoami"], None), (["show", "7"], None), (["boards"], None)]:
            rc, out, err = alice.run(*args, env=env)
            check(not control_chars(out) and not control_chars(err),
                  "kjudge %s: no raw control character but newline in its output" % " ".join(args),
                  (control_chars(out), control_chars(err), out[-300:], err[-300:]))
            if want is not None:
                try:
                    got = json.loads(out)
                except ValueError:
                    got = None
                check(isinstance(got, dict) and got.get(want[0]) == want[1],
                      "kjudge %s: the JSON printed means what the server sent" % " ".join(args), out[-300:])
    finally:
        bad.shutdown()


def serve_in_thread(handler, tls=None):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if tls is not None:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(*tls)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def self_signed(tmp):
    cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    p = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                       capture_output=True, text=True)
    return (cert, key) if p.returncode == 0 else None


def test_errors(t):
    fresh, alice = t["fresh"], t["alice"]
    for args in (["boards"], ["submit", "x.cu"], ["rankings", "fp8_quant"]):
        rc, out, err = fresh.run(*args)
        check(rc == 2 and "no server configured: %s does not exist and KJUDGE_URL is not set; run: kjudge login"
              % fresh.config in err, "no config: %s" % args[0], (rc, err))
    rc, out, err = fresh.run("submissions", env={"KJUDGE_URL": t["url"]})
    check(rc == 2 and "not logged in:" in err and "KJUDGE_TOKEN is not set" in err, "a URL but no token", (rc, err))
    url = "http://127.0.0.1:%d" % closed_port()
    rc, out, err = alice.run("boards", env={"KJUDGE_URL": url})
    check(rc == 2 and "cannot reach the server at %s: nothing answers there" % url in err,
          "unreachable: a closed port", (rc, err))
    rc, out, err = alice.run("boards", env={"KJUDGE_URL": "http://no-such-host.invalid"})
    check(rc == 2 and "cannot resolve the server's host name" in err, "a host that does not resolve", (rc, err))
    tls_url = "https://127.0.0.1:%d" % t["port"]
    rc, out, err = alice.run("boards", env={"KJUDGE_URL": tls_url})
    check(rc == 2 and "TLS failure talking to %s" % tls_url in err, "TLS failure: https:// against a plain listener",
          (rc, err))
    pair = self_signed(t["tmp"])
    if pair is None:
        skip("openssl could not make a certificate")
    else:
        Proxy.target = t["port"]
        front = serve_in_thread(Proxy, pair)
        furl = "https://127.0.0.1:%d" % front.server_address[1]
        rc, out, err = alice.run("boards", env={"KJUDGE_URL": furl})
        check(rc == 2 and "TLS failure talking to %s" % furl in err and "certificate" in err,
              "TLS failure: a self-signed certificate", (rc, err))
        rc, out, err = alice.run("whoami", env={"KJUDGE_URL": furl, "KJUDGE_CA_FILE": pair[0]})
        check(rc == 0 and out.startswith("alice (user) at https://"), "KJUDGE_CA_FILE trusts it", (rc, out, err))
        front.shutdown()
        Proxy.target = None
    stranger = serve_in_thread(Proxy)
    surl = "http://127.0.0.1:%d" % stranger.server_address[1]
    rc, out, err = alice.run("boards", env={"KJUDGE_URL": surl})
    check(rc == 2 and "unexpected answer from %s: HTTP 502 (text/html)" % surl in err,
          "an answer that is not kjudge's", (rc, err))
    stranger.shutdown()
    rc, out, err = alice.run("whoami", env={"KJUDGE_TOKEN": "0" * 64})
    check(rc == 2 and "the server did not accept the token (HTTP 401 invalid_token)" in err and
          "the token came from the KJUDGE_TOKEN variable; log in again: kjudge login" in err,
          "401: says where the token came from", (rc, err))
    rc, out, err = alice.run("--json", "whoami", env={"KJUDGE_TOKEN": "0" * 64})
    check(rc == 2 and json.loads(out)["error"]["code"] == "invalid_token", "--json prints the error JSON too", out)
    rc, out, err = alice.run("boards", env={"KJUDGE_URL": "ftp://x"})
    check(rc == 2 and "must start with http:// or https://" in err, "a URL that is not http(s)", (rc, err))
    os.makedirs(os.path.dirname(fresh.config), exist_ok=True)
    open(fresh.config, "w").write("url http://x\n")
    rc, out, err = fresh.run("boards")
    check(rc == 2 and "line 1: expected \"key = value\"" in err, "a broken config file is named", (rc, err))
    os.unlink(fresh.config)
    for args, needle in [(["frobnicate"], "unknown command 'frobnicate'"), (["submit"], "name the file"),
                         (["submit", "a.cu", "--gpu"], "--gpu needs a value"),
                         (["submit", "a.cu", "--colour", "red"], "unknown option '--colour'"),
                         (["events"], "name a submission"), ([], "usage: kjudge")]:
        rc, out, err = alice.run(*args)
        check(rc == 2 and needle in err, "usage error: %s" % args, (rc, err))
    rc, out, err = alice.run("--help")
    check(rc == 0 and "kjudge submit FILE" in out and "exit codes: 0" in out, "--help", (rc, out))
    rc, out, err = alice.run("submit", "--help")
    check(rc == 0 and out.startswith("usage: kjudge submit FILE"), "submit --help", (rc, out))


def main():
    if not check(all(os.access(b, os.X_OK) for b in (BIN, KJ)), "%s and %s are built" % (BIN, KJ)):
        return summary("test_cli_errors")
    with tempfile.TemporaryDirectory(prefix="kjudge-cli-errors-") as tmp:
        srv = Server(tmp)
        if not check(srv.start(), "the server starts"):
            return summary("test_cli_errors")
        try:
            url = "http://127.0.0.1:%d" % srv.port
            t = {"tmp": tmp, "srv": srv, "port": srv.port, "url": url}
            tok = srv.cli("user", "add", "alice", "--db", srv.db)[1].strip()
            SECRETS.append(tok)
            t["alice"], t["fresh"] = Cli(tmp, "alice"), Cli(tmp, "fresh")
            rc, out, err = t["alice"].run("login", url, "--token", tok)
            if check(rc == 0, "alice logs in", (rc, out, err)):
                test_errors(t)
                test_hostile_bytes(t)
            test_no_secret_printed()
        finally:
            srv.stop()
    return summary("test_cli_errors")


if __name__ == "__main__":
    sys.exit(main())
