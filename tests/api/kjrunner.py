"""kjrunner.py - the real runner process for the API tests, without a GPU.

build/kjudge-runner-fakegpu is runner/main.c and runner/serve.c as
shipped, judging with tests/api/fakegpu.c instead of a GPU: it reports an
H200, claims jobs, posts a "compiling" event, takes the seconds a
"fakegpu:seconds=N" line of the source names and answers compile_error.
This module starts it against a test server (plain or HTTPS), makes
runner tokens and submissions, and reads submissions back. Python 3
stdlib only.
"""
import json
import os
import subprocess
import time

import kjdeploy
from kjdeploy import request, json_of
from test_api import ROOT, GOOD_SOURCE, multipart

FAKE = os.path.join(ROOT, "build", "kjudge-runner-fakegpu")
# Settings of the calling environment that would change what the runner does.
CLEAN = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
         "no_proxy", "NO_PROXY", "KJUDGE_CA_FILE", "KJUDGE_RUNNER_TOKEN", "KJUDGE_FAKE_JUDGE_S")


def runner_token(srv, name="gpuhost", gpu="H200"):
    rc, out, err = kjdeploy.cli("runner", "add", name, "--gpu", gpu, "--db", srv.db)
    return out.strip() if rc == 0 else None


def user_token(srv, name):
    rc, out, err = kjdeploy.cli("user", "add", name, "--db", srv.db)
    return out.strip() if rc == 0 else None


def submit(srv, token, seconds=0.5, gpu="H200", mode="test"):
    """A submission the fake judge takes `seconds` on (None: the runner's
    KJUDGE_FAKE_JUDGE_S); returns its id or None."""
    src = GOOD_SOURCE + ("\n// fakegpu:seconds=%g\n" % seconds if seconds is not None else "")
    body, ctype = multipart([("leaderboard", "fp8_quant"), ("gpu", gpu), ("mode", mode)],
                            [("file", "k.cu", src.encode())])
    st, _, raw = request(srv, "POST", "/api/v1/submissions", token, body, {"Content-Type": ctype})
    d = json_of(raw)
    return d.get("id") if st == 202 and isinstance(d, dict) else None


def sub(srv, token, sid):
    st, _, raw = request(srv, "GET", "/api/v1/submissions/%d" % sid, token)
    return json_of(raw) if st == 200 else None


def events(srv, token, sid):
    st, _, raw = request(srv, "GET", "/api/v1/submissions/%d/events" % sid, token)
    d = json_of(raw)
    return d.get("events", []) if st == 200 and isinstance(d, dict) else []


def wait_status(srv, token, sid, want, seconds=30):
    """Poll until the submission's status is want; returns the last view."""
    deadline = time.time() + seconds
    d = None
    while time.time() < deadline:
        d = sub(srv, token, sid)
        if d is not None and d.get("status") == want:
            return d
        time.sleep(0.05)
    return d


class Runner:
    """One kjudge-runner-fakegpu serve process; its stderr goes to a file."""

    def __init__(self, tmp, url, token, args=(), env=None, name="fake-0"):
        os.makedirs(tmp, exist_ok=True)
        self.tmp = tmp
        self.token = token
        self.tokfile = os.path.join(tmp, name + ".token")
        with open(os.open(self.tokfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(token + "\n")
        self.logpath = os.path.join(tmp, name + ".log")
        self.argv = [FAKE, "serve", "--server", url, "--token-file", self.tokfile, "--name", name,
                     "--leaderboards", os.path.join(ROOT, "leaderboards")] + list(args)
        self.env = {k: v for k, v in os.environ.items() if k not in CLEAN}
        self.env.update(env or {})
        self.proc = None

    def start(self):
        self.log = open(self.logpath, "ab")
        self.proc = subprocess.Popen(self.argv, stdout=self.log, stderr=self.log, env=self.env,
                                     cwd=self.tmp)
        return self

    def run(self, timeout=60):
        """Run to its end; returns the exit status (None when it had to be killed)."""
        self.start()
        return self.wait(timeout)

    def wait(self, timeout=30):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None
        finally:
            if self.proc.poll() is not None:
                self.log.close()

    def signal(self, sig):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
            self.log.close()

    def text(self):
        with open(self.logpath, errors="replace") as f:
            return f.read()

    def wait_log(self, needle, seconds=20):
        deadline = time.time() + seconds
        while time.time() < deadline:
            if needle in self.text():
                return True
            if self.proc.poll() is not None:
                return needle in self.text()
            time.sleep(0.05)
        return False


def built():
    return os.access(FAKE, os.X_OK)


def dumps(x):
    return json.dumps(x)[:600]
