#!/usr/bin/env python3
"""test_tls.py - kjudge-server serving HTTPS itself (--tls-cert/--tls-key).

Makes a throwaway CA and a server certificate for 127.0.0.1 with openssl,
starts bin/kjudge-server with them, and checks: a client that trusts the
CA gets answers (Python's ssl and curl, a submission included); a client
trusting another CA is refused during the handshake; plain HTTP to the
HTTPS port gets no HTTP answer; TLS below 1.2 is refused; TLS 1.2 only
with ECDHE and AEAD ciphers (static RSA, CBC and CCM suites refused, for an
ECDSA and an RSA certificate, by openssl s_client); every answer says
Strict-Transport-Security; the config
file's tls_cert/tls_key work like the flags; and serve refuses, naming the
file, an unreadable certificate, a file that is not PEM, a key of another
certificate, an encrypted key, and a certificate without its key.
Python 3 standard library plus the openssl and curl commands; ends with
"test_tls: N passed, N failed, N skipped" and exits 1 on failure.
"""
import http.client
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check, skip  # noqa: E402
from kjhttp import multipart  # noqa: E402
from kjservice import BIN, ROOT, NO_RATE_LIMITS  # noqa: E402
from kjtest import GOOD_SOURCE  # noqa: E402
import kjdeploy  # noqa: E402
from kjdeploy import ADMIN, request, json_of  # noqa: E402


def make_rsa_cert(d):
    """An RSA server certificate for 127.0.0.1/localhost from make_pki's CA (in d): static-RSA
    suites need one to be offered at all."""
    kjdeploy.openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "rsa.key", "-out", "rsa.csr",
                     "-subj", "/CN=localhost", cwd=d)
    kjdeploy.openssl("x509", "-req", "-in", "rsa.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                     "-out", "rsa.pem", "-days", "2", "-extfile", "ext.cnf", cwd=d)
    return {"cert": os.path.join(d, "rsa.pem"), "key": os.path.join(d, "rsa.key")}


def test_verified(srv, pki):
    st, h, raw = request(srv, "GET", "/healthz")
    check(st == 200 and json_of(raw).get("status") == "ok", "HTTPS with the right CA: /healthz", (st, raw))
    rc, out, err = kjdeploy.cli("user", "add", "alice", "--db", srv.db)
    tok = out.strip()
    body, ctype = multipart([("leaderboard", "fp8_quant"), ("gpu", "H200"), ("mode", "test")],
                            [("file", "k.cu", GOOD_SOURCE.encode())])
    st, h, raw = request(srv, "POST", "/api/v1/submissions", tok, body, {"Content-Type": ctype})
    check(st == 202 and json_of(raw).get("status") == "queued", "a submission over HTTPS", (st, raw))
    p = subprocess.run(["curl", "-sS", "--cacert", pki["ca"], "https://127.0.0.1:%d/api/v1/me" % srv.port,
                        "-H", "Authorization: Bearer " + tok], capture_output=True, text=True, timeout=30)
    check(p.returncode == 0 and '"alice"' in p.stdout, "curl --cacert verifies the server", (p.returncode, p.stderr))
    p = subprocess.run(["curl", "-sS", "https://localhost:%d/healthz" % srv.port, "--cacert", pki["ca"]],
                       capture_output=True, text=True, timeout=30)
    check(p.returncode == 0 and '"ok"' in p.stdout, "the name localhost is in the certificate too", p.stderr)


def test_refused(srv, pki):
    ctx = ssl.create_default_context(cafile=pki["wrongca"])
    c = http.client.HTTPSConnection("127.0.0.1", srv.port, timeout=10, context=ctx)
    try:
        c.request("GET", "/healthz")
        got = c.getresponse().status
    except ssl.SSLCertVerificationError as e:
        got = "verify failed: %s" % e.verify_message
    except (OSError, ssl.SSLError) as e:
        got = "error: %r" % e
    finally:
        c.close()
    check(isinstance(got, str) and got.startswith("verify failed"), "a client trusting another CA refuses the server", got)
    p = subprocess.run(["curl", "-sS", "https://127.0.0.1:%d/healthz" % srv.port], capture_output=True,
                       text=True, timeout=30)
    check(p.returncode == 60, "curl without the CA refuses the certificate (exit 60)", (p.returncode, p.stderr))

    # Plain HTTP to the HTTPS port: no HTTP answer, the connection is closed.
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = b""
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    s.close()
    check(not data.startswith(b"HTTP/"), "plain HTTP to the HTTPS port gets no HTTP answer", data[:80])
    st = None
    try:
        st = request(srv.port, "GET", "/healthz")[0]
    except (OSError, http.client.HTTPException) as e:
        st = "refused: %r" % e
    check(not isinstance(st, int), "http.client over plain HTTP fails", st)

    # TLS 1.1 and older are not offered (the server's priorities: TLS 1.2 and 1.3).
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(pki["ca"])
    try:
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as t:
                check(t.version() == "TLSv1.2", "TLS 1.2 is accepted", t.version())
    except (OSError, ssl.SSLError) as e:
        check(False, "TLS 1.2 is accepted", repr(e))
    warnings.simplefilter("ignore", DeprecationWarning)  # TLSv1/TLSv1_1 on purpose
    old = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    old.load_verify_locations(pki["ca"])
    got = None
    try:
        old.set_ciphers("DEFAULT:@SECLEVEL=0")
        old.minimum_version = ssl.TLSVersion.TLSv1
        old.maximum_version = ssl.TLSVersion.TLSv1_1
        with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as raw:
            with old.wrap_socket(raw, server_hostname="127.0.0.1") as t:
                got = t.version()
    except ssl.SSLError as e:
        got = e
    except (OSError, ValueError) as e:
        got = e
    if isinstance(got, ssl.SSLError) and "NO_PROTOCOLS_AVAILABLE" in str(got).upper():
        skip("TLS 1.1 refused: this client's OpenSSL cannot offer TLS 1.1")
    else:
        check(isinstance(got, Exception), "TLS 1.1 is refused by the server", got)


def s_client(port, ca, args):
    """A TLS handshake by openssl s_client with args; returns (ok, the cipher it names, output tail)."""
    p = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-CAfile", ca,
                        "-verify_return_error"] + args, stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=30)
    cipher = ""
    for ln in p.stdout.splitlines():
        if ", Cipher is " in ln:
            cipher = ln.split(", Cipher is ", 1)[1].strip()
    return p.returncode == 0 and cipher not in ("", "(NONE)"), cipher, (p.stdout + p.stderr)[-300:]


def test_suites(port, ca, refused, accepted, what):
    """TLS 1.2 only with ECDHE key exchange and AEAD ciphers: static RSA, CBC with SHA-1 or
    SHA-2 MACs, CCM and DHE are refused; TLS 1.3 works."""
    for cipher in refused:
        ok, got, tail = s_client(port, ca, ["-tls1_2", "-cipher", cipher])
        check(not ok, "%s: TLS 1.2 with %s is refused" % (what, cipher), (got, tail))
    for cipher in accepted:
        ok, got, tail = s_client(port, ca, ["-tls1_2", "-cipher", cipher])
        check(ok and got == cipher, "%s: TLS 1.2 with %s is accepted" % (what, cipher), (got, tail))
    ok, got, tail = s_client(port, ca, ["-tls1_3"])
    check(ok and got.startswith("TLS_"), "%s: TLS 1.3 is accepted" % what, (got, tail))


def test_hsts(srv):
    """Every answer over HTTPS says Strict-Transport-Security (plain HTTP never: test_abuse_http)."""
    for method, path in [("GET", "/healthz"), ("GET", "/"), ("GET", "/api/v1/no-such"),
                         ("GET", "/api/v1/me"), ("POST", "/api/v1/leaderboards")]:
        st, h, _ = request(srv, method, path)
        check(h.get("strict-transport-security", "").startswith("max-age=") and
              int(h["strict-transport-security"].split("=", 1)[1]) >= 86400 * 180,
              "%s %s (%d) over HTTPS says Strict-Transport-Security with max-age of half a year or more"
              % (method, path, st), h.get("strict-transport-security"))


def serve_refuses(tmp, tag, args, want):
    d = os.path.join(tmp, "bad-" + tag)
    os.makedirs(d, exist_ok=True)
    env = dict(os.environ)
    env["KJUDGE_ADMIN_TOKEN"] = ADMIN
    try:
        p = subprocess.run([BIN, "serve", "--port", str(kjdeploy.free_port()), "--db", os.path.join(d, "k.db"),
                            "--config", os.path.join(d, "k.conf"), "--leaderboards",
                            os.path.join(ROOT, "leaderboards")] + args,
                           capture_output=True, text=True, timeout=20, env=env, cwd=d)
        rc, err = p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        rc, err = None, "still running after 20 s"
    check(rc == 1 and all(w in err for w in want), "serve refuses %s (exit 1, names it)" % tag,
          (rc, err[-400:]))


def test_bad_files(tmp, pki):
    missing = os.path.join(tmp, "no-such.pem")
    serve_refuses(tmp, "a missing certificate", ["--tls-cert", missing, "--tls-key", pki["key"]],
                  ["cannot read --tls-cert", missing])
    junk = os.path.join(tmp, "junk.pem")
    with open(junk, "w") as f:
        f.write("this is not a certificate\n")
    serve_refuses(tmp, "a file that is not PEM", ["--tls-cert", junk, "--tls-key", pki["key"]],
                  ["holds no PEM certificate", junk])
    serve_refuses(tmp, "a key of another certificate", ["--tls-cert", pki["cert"], "--tls-key", pki["other_key"]],
                  ["does not match", pki["other_key"], pki["cert"]])
    enc = os.path.join(tmp, "enc.key")
    kjdeploy.openssl("pkey", "-in", pki["key"], "-out", enc, "-aes256", "-passout", "pass:secret", cwd=tmp)
    serve_refuses(tmp, "an encrypted key", ["--tls-cert", pki["cert"], "--tls-key", enc],
                  ["no unencrypted PEM private key", enc])
    serve_refuses(tmp, "a certificate without a key", ["--tls-cert", pki["cert"]], ["needs both"])
    serve_refuses(tmp, "a folder as the key", ["--tls-cert", pki["cert"], "--tls-key", tmp],
                  ["is not a regular file", tmp])


def main():
    if not os.access(BIN, os.X_OK):
        print("FAIL %s is not built\ntest_tls: 0 passed, 1 failed, 0 skipped" % BIN)
        return 1
    if not kjdeploy.have("openssl") or not kjdeploy.have("curl"):
        print("FAIL openssl and curl are needed (deploy/deps.sh --test)\ntest_tls: 0 passed, 1 failed, 0 skipped")
        return 1
    with tempfile.TemporaryDirectory(prefix="kjudge-tls-") as tmp:
        pki = kjdeploy.make_pki(os.path.join(tmp, "pki"))
        srv = kjdeploy.Server(os.path.join(tmp, "flags"), extra=NO_RATE_LIMITS + [
            "--tls-cert", pki["cert"], "--tls-key", pki["key"]], cafile=pki["ca"])
        if check(srv.start(), "serve starts with --tls-cert/--tls-key"):
            try:
                test_verified(srv, pki)
                test_refused(srv, pki)
                test_hsts(srv)
                test_suites(srv.port, pki["ca"], ["ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA384",
                                                  "ECDHE-ECDSA-AES128-CCM"],
                            ["ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
                             "ECDHE-ECDSA-CHACHA20-POLY1305"], "an ECDSA certificate")
            finally:
                check(srv.stop(signal.SIGTERM) == 0, "HTTPS server stops cleanly on SIGTERM")
            check("listening on https://" in srv.server_log(), "the log says https://")
        rsa = make_rsa_cert(os.path.join(tmp, "pki"))
        srv = kjdeploy.Server(os.path.join(tmp, "conf"), cafile=pki["ca"],
                              conf_lines=["tls_cert = " + rsa["cert"], "tls_key = " + rsa["key"]])
        if check(srv.start(), "serve starts with tls_cert/tls_key in the config file (an RSA key)"):
            try:
                st, _, raw = request(srv, "GET", "/healthz")
                check(st == 200, "HTTPS from the config file's keys", st)
                test_suites(srv.port, pki["ca"], ["AES128-SHA", "AES256-GCM-SHA384", "ECDHE-RSA-AES128-SHA",
                                                  "ECDHE-RSA-AES128-SHA256", "DHE-RSA-AES128-GCM-SHA256"],
                            ["ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-CHACHA20-POLY1305"], "an RSA certificate")
            finally:
                srv.stop(signal.SIGTERM)
        test_bad_files(tmp, pki)
    print("test_tls: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
