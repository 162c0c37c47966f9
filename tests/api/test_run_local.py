#!/usr/bin/env python3
"""test_run_local.py - `make run` (deploy/run-local.sh) on a port that is
taken, and on a free one.

run-local.sh is run as `make run` runs it, with KJUDGE_PORT and KJUDGE_VAR
(a temporary folder, not the checkout's var/). Checks: on a port held by a
program that accepts connections and never answers, it says the port is
taken and exits 1 (it does not hang, start a server or print a token); on a
port held by another kjudge server, it says so, exits 1 and prints neither
that server's URL as its own nor any token; on a free port it starts,
prints the URL, the admin token and what to do next (the page, a user, a
runner on another host), answers /healthz, and stops on SIGINT. On this
host there is no GPU, so no runner is started. Ends with
"test_run_local: N passed, N failed, N skipped".
"""
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check  # noqa: E402
from kjservice import ROOT  # noqa: E402
import kjdeploy  # noqa: E402

SCRIPT = os.path.join(ROOT, "deploy", "run-local.sh")


def env_for(port, var):
    env = dict(os.environ)
    for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        env.pop(k, None)
    env.update(KJUDGE_PORT=str(port), KJUDGE_VAR=var)
    return env


def run_taken(port, var):
    try:
        p = subprocess.run([SCRIPT], capture_output=True, text=True, timeout=300, env=env_for(port, var),
                           cwd=ROOT)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        return None, (e.stdout or b"").decode(errors="replace"), "timed out after 300 s (it hung)"


class Silent:
    """A listener that accepts connections and never answers."""

    def __init__(self):
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(16)
        self.port = self.s.getsockname()[1]
        self.held = []
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while True:
            try:
                c, _ = self.s.accept()
            except OSError:
                return
            self.held.append(c)

    def close(self):
        self.s.close()
        for c in self.held:
            c.close()


def test_silent(tmp):
    sl = Silent()
    try:
        rc, out, err = run_taken(sl.port, os.path.join(tmp, "var-silent"))
    finally:
        sl.close()
    check(rc == 1 and "port %d on 127.0.0.1 is taken by another program" % sl.port in err and
          "KJUDGE_PORT=" in err, "a port held by a silent program: exit 1, says it is taken", (rc, err[-500:]))
    check("admin token" not in out and not os.path.exists(os.path.join(tmp, "var-silent", "kjudge.db")),
          "nothing started, no token printed", out[-300:])


def test_other_kjudge(tmp):
    srv = kjdeploy.Server(os.path.join(tmp, "other"))
    if not check(srv.start(), "another kjudge server starts"):
        return
    try:
        rc, out, err = run_taken(srv.port, os.path.join(tmp, "var-other"))
    finally:
        srv.stop()
    check(rc == 1 and "another kjudge server already listens on 127.0.0.1:%d" % srv.port in err,
          "a port held by another kjudge: exit 1, says so", (rc, err[-500:]))
    check("admin token" not in out and kjdeploy.ADMIN not in out + err and "is running at" not in out,
          "neither its URL nor a token is printed", out[-300:])


def test_free(tmp):
    port = kjdeploy.free_port()
    var = os.path.join(tmp, "var-free")
    log = open(os.path.join(tmp, "run.out"), "w+")
    p = subprocess.Popen([SCRIPT], stdout=log, stderr=subprocess.STDOUT, env=env_for(port, var), cwd=ROOT,
                         start_new_session=True)
    text = ""
    deadline = time.time() + 300
    while time.time() < deadline and p.poll() is None:
        log.seek(0)
        text = log.read()
        if "Ctrl-C stops" in text:
            break
        time.sleep(0.2)
    try:
        m = re.search(r"admin token: ([0-9a-f]{64})", text)
        check("kjudge is running at http://localhost:%d/" % port in text and m is not None,
              "a free port: the URL and the admin token", text[-600:])
        check("open http://localhost:%d/ in a browser" % port in text and "runner add" in text and
              "kjudge-runner serve --server" in text and "user add" in text,
              "it says what to do next: the page, a user, a runner on another host", text[-900:])
        check("no GPU found" in text, "no GPU here: it says no runner is attached", text[-600:])
        st = kjdeploy.request(port, "GET", "/healthz")[0] if p.poll() is None else None
        check(st == 200, "the server answers", st)
        check(os.path.exists(os.path.join(var, "kjudge.db")), "the database is in KJUDGE_VAR")
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGINT)
        try:
            rc = p.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            rc = p.wait()
        log.close()
    check(rc is not None and rc != -9, "Ctrl-C stops it", rc)
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        gone = False
    except OSError:
        gone = True
    check(gone, "nothing listens on the port afterwards")


def main():
    with tempfile.TemporaryDirectory(prefix="kjudge-run-") as tmp:
        test_silent(tmp)
        test_other_kjudge(tmp)
        test_free(tmp)
    print("test_run_local: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
