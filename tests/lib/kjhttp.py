"""kjhttp.py - the one HTTP client of the tests and benchmarks.

free_port() for a loopback port nobody listens on; Client, a connection per
request to a server on 127.0.0.1 that returns (status, headers, JSON,
raw body) and remembers what user-facing requests got back; multipart() for
the submission form; SSE, a reader of one Server-Sent Events stream;
http()/submit()/wait_runner() for a server named by its base URL (the GPU
tests and the benchmarks). Python 3 standard library only.
"""
import json
import os
import socket
import time
import urllib.parse
from http.client import HTTPConnection


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def multipart(fields, files, boundary="----kjudgetestboundary7d93a1"):
    """fields: [(name, str)], files: [(name, filename, bytes)] -> (body, content type)."""
    out = []
    for name, value in fields:
        out.append(("--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n" %
                    (boundary, name)).encode() + value.encode() + b"\r\n")
    for name, filename, data in files:
        out.append(("--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n"
                    "Content-Type: application/octet-stream\r\n\r\n" %
                    (boundary, name, filename)).encode() + data + b"\r\n")
    out.append(("--%s--\r\n" % boundary).encode())
    return b"".join(out), "multipart/form-data; boundary=" + boundary


class Client:
    """A client of the server on 127.0.0.1:port that remembers every
    user-facing response body (to look for leaked secrets in them)."""

    def __init__(self, port):
        self.port = port
        self.user_bodies = []  # bodies of responses to non-runner requests

    def request(self, method, path, token=None, body=None, headers=None, timeout=30, runner=False):
        """(status, headers lower-cased, decoded JSON or None, raw body)."""
        conn = HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = dict(headers or {})
        if token is not None:
            h["Authorization"] = "Bearer " + token
        try:
            conn.request(method, path, body=body, headers=h)
            resp = conn.getresponse()
            raw = resp.read()
            status, rh = resp.status, {k.lower(): v for k, v in resp.getheaders()}
        finally:
            conn.close()
        if not runner:
            self.user_bodies.append(raw)
        data = None
        if raw and rh.get("content-type", "").startswith("application/json"):
            try:
                data = json.loads(raw)
            except ValueError:
                data = None
        return status, rh, data, raw

    def get(self, path, token=None, **kw):
        return self.request("GET", path, token=token, **kw)

    def post_json(self, path, obj, token, runner=True, raw=None):
        body = raw if raw is not None else json.dumps(obj).encode()
        return self.request("POST", path, token=token, body=body,
                            headers={"Content-Type": "application/json"}, runner=runner)

    def submit(self, token, fields, files):
        body, ctype = multipart(fields, files)
        return self.request("POST", "/api/v1/submissions", token=token, body=body,
                            headers={"Content-Type": ctype})


class SSE:
    """An open event stream: next() returns (id, event, data) or None at its end."""

    def __init__(self, port, path, token, last_event_id=None, timeout=30):
        self.conn = HTTPConnection("127.0.0.1", port, timeout=timeout)
        h = {"Authorization": "Bearer " + token, "Accept": "text/event-stream"}
        if last_event_id is not None:
            h["Last-Event-ID"] = str(last_event_id)
        self.conn.request("GET", path, headers=h)
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.headers = {k.lower(): v for k, v in self.resp.getheaders()}

    def next(self):
        fields = {}
        while True:
            line = self.resp.readline()
            if not line:
                return None
            line = line.decode().rstrip("\n")
            if line == "":
                if "event" in fields or "data" in fields:
                    data = json.loads(fields["data"]) if "data" in fields else None
                    return (int(fields["id"]) if "id" in fields else None, fields.get("event"), data)
                fields = {}
                continue
            if line.startswith(":"):
                continue
            k, _, v = line.partition(":")
            fields[k] = v[1:] if v.startswith(" ") else v

    def all(self):
        out = []
        while True:
            e = self.next()
            if e is None:
                return out
            out.append(e)

    def close(self):
        self.conn.close()


def http(method, url, token=None, body=None, ctype=None, timeout=900):
    """(status, decoded JSON body) for one request to an http:// URL; HTTP
    errors are returned, not raised; a refused connection raises OSError."""
    u = urllib.parse.urlsplit(url)
    conn = HTTPConnection(u.hostname, u.port or 80, timeout=timeout)
    h = {}
    if token:
        h["Authorization"] = "Bearer " + token
    if ctype:
        h["Content-Type"] = ctype
    try:
        conn.request(method, u.path + ("?" + u.query if u.query else ""), body=body, headers=h)
        r = conn.getresponse()
        return r.status, json.loads(r.read() or b"null")
    finally:
        conn.close()


def submit(base, token, path, mode, leaderboard="fp8_quant", gpu="H200", **fields):
    """POST the file at path as a multipart submission to base, with any further
    form fields (tool="racecheck", shape="2"); returns (status, JSON)."""
    with open(path, "rb") as f:
        data = f.read()
    body, ctype = multipart([("leaderboard", leaderboard), ("gpu", gpu), ("mode", mode)] + list(fields.items()),
                            [("file", os.path.basename(path), data)], boundary="kjudge%d" % time.time_ns())
    return http("POST", base + "/api/v1/submissions", token, body, ctype)


def wait_runner(base, gpu="H200", timeout=180, proc=None):
    """Block until some runner has asked base for gpu jobs (GET /api/v1/gpus lists it).

    A job submitted before any runner asked is answered at once with a
    "no runner" note instead of being waited on, so a test that starts a
    runner waits here first. Raises RuntimeError on timeout or if proc (the
    runner's Popen) exits first."""
    end = time.time() + timeout
    while time.time() < end:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("the runner exited (status %d) before asking for work" % proc.returncode)
        try:
            st, d = http("GET", base + "/api/v1/gpus", timeout=5)
        except (OSError, ValueError):
            st, d = 0, None
        if st == 200 and any(g.get("gpu") == gpu and g.get("runners") for g in d.get("gpus", [])):
            return
        time.sleep(0.2)
    raise RuntimeError("no runner asked for %s jobs within %d s" % (gpu, timeout))
