"""kjtest.py - helpers shared by the API test files beyond test_api.py.

A server started with extra `serve` options, a runner that talks to it over
HTTP, and a reader for Server-Sent Events streams. Python 3 stdlib only.
"""
import http.client
import json
import os
import time

import test_api
from test_api import GOOD_SOURCE


class Server(test_api.Server):
    """test_api.Server with extra `serve` options (e.g. --lease-seconds) and rate-limit flags."""

    def __init__(self, tmp, extra=(), rate_flags=None):
        super().__init__(tmp)
        self.extra = list(extra)
        # No rate limits unless the caller gives its own flags ([] = the config's or defaults).
        self.rate_flags = list(test_api.NO_RATE_LIMITS if rate_flags is None else rate_flags)

    def serve_options(self):
        return self.rate_flags + self.extra

    def server_log(self):
        with open(os.path.join(self.tmp, "server.log"), errors="replace") as f:
            return f.read()


def submit(c, token, gpu="H200", mode="test"):
    """Submit GOOD_SOURCE; returns the new id or None."""
    st, _, data, _ = c.submit(token, [("leaderboard", "fp8_quant"), ("gpu", gpu), ("mode", mode)],
                              [("file", "k.cu", GOOD_SOURCE.encode())])
    return data["id"] if st == 202 and isinstance(data, dict) else None


def claim(c, runner, gpu="H200", name="box"):
    st, _, data, _ = c.post_json("/api/v1/runner/claim", {"runner": name, "gpu": gpu, "arch": "sm_90a"}, runner)
    return data["job"] if st == 200 and isinstance(data, dict) else None


def serve_gpu(srv, c, gpu="B200", name="seen"):
    """A runner token for gpu that asks for its work once (call it while no
    job of that type is queued, or it takes one). For 5 minutes (or the
    lease length if longer) waits and streams on that type's jobs park as
    usual: for a type no runner asked for, a ?wait=1 is answered at once
    with a note."""
    tok = srv.cli("runner", "add", name, "--gpu", gpu, "--db", srv.db)[1].strip()
    st = c.post_json("/api/v1/runner/claim", {"runner": name, "gpu": gpu, "arch": "sm_100a"}, tok)[0]
    return st == 204


class SSE:
    """An open event stream: next() returns (id, event, data) or None at its end."""

    def __init__(self, port, path, token, last_event_id=None, timeout=30):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
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
