"""kjdeploy.py - helpers shared by the deployment tests (TLS, nginx, metrics,
backups, Slurm, service units).

A throwaway certificate authority made with the openssl command, a server
started with a prepared config file (known admin token, extra keys) that
may speak HTTPS, and HTTP requests from a chosen loopback source address
(so that a test can tell a proxy from its client). Python 3 stdlib only.
"""
import http.client
import json
import os
import shutil
import ssl
import subprocess

import kjtest  # noqa: F401  (puts tests/lib on sys.path)
import kjservice
from kjhttp import free_port  # noqa: F401  (tests reach it as kjdeploy.free_port)
from kjservice import cli  # noqa: F401  (tests reach it as kjdeploy.cli)

ADMIN = "adm1n-t0ken-for-deploy-tests-0123456789"


def have(cmd):
    return shutil.which(cmd) is not None


def openssl(*args, cwd):
    p = subprocess.run(["openssl"] + list(args), cwd=cwd, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError("openssl %s: %s" % (" ".join(args[:2]), p.stderr[-400:]))


def make_pki(d):
    """A CA, a server certificate for 127.0.0.1/localhost signed by it, and an
    unrelated second CA. Returns a dict of paths."""
    os.makedirs(d, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for ca in ("ca", "wrongca"):
        openssl("req", "-x509", *ec, "-keyout", ca + ".key", "-out", ca + ".pem", "-days", "2",
                "-subj", "/CN=kjudge test %s" % ca, cwd=d)
    openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost", cwd=d)
    with open(os.path.join(d, "ext.cnf"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf", cwd=d)
    # A second key and certificate, to pair the wrong way round.
    openssl("req", "-x509", *ec, "-keyout", "other.key", "-out", "other.pem", "-days", "2",
            "-subj", "/CN=other", cwd=d)
    j = lambda name: os.path.join(d, name)  # noqa: E731
    return {"ca": j("ca.pem"), "wrongca": j("wrongca.pem"), "cert": j("server.pem"),
            "key": j("server.key"), "other_key": j("other.key"), "other_cert": j("other.pem")}


class Server(kjservice.Server):
    """kjservice.Server with a config file written first (admin token + conf
    lines), optionally HTTPS (cafile: the CA that the readiness probe trusts)."""

    def __init__(self, tmp, conf_lines=(), extra=(), cafile=None):
        super().__init__(tmp, extra)
        os.makedirs(os.path.dirname(self.conf), exist_ok=True)
        with open(self.conf, "w") as f:
            f.write("admin_token = %s\n" % ADMIN)
            for line in conf_lines:
                f.write(line + "\n")
        os.chmod(self.conf, 0o600)
        self.cafile = cafile

    def conn(self, timeout=10, source=None):
        src = (source, 0) if source else None
        if self.cafile is None:
            return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout, source_address=src)
        ctx = ssl.create_default_context(cafile=self.cafile)
        return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout, context=ctx,
                                           source_address=src)


def request(srv_or_port, method, path, token=None, body=None, headers=None, source=None,
            host="127.0.0.1", timeout=30, conn=None):
    """One request; returns (status, headers dict lower-cased, raw body)."""
    if conn is None:
        if isinstance(srv_or_port, int):
            conn = http.client.HTTPConnection(host, srv_or_port, timeout=timeout,
                                              source_address=(source, 0) if source else None)
        else:
            conn = srv_or_port.conn(timeout=timeout, source=source)
    h = dict(headers or {})
    if token:
        h["Authorization"] = "Bearer " + token
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
        h.setdefault("Content-Type", "application/json")
    try:
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def json_of(raw):
    try:
        return json.loads(raw)
    except ValueError:
        return None
