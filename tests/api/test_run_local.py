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
host there is no GPU, so no runner is started.

The first run, started under umask 077 with a fresh KJUDGE_VAR: the
script's runner is build/kjudge-runner-fakegpu (KJUDGE_TEST_RUNNER, a
hook of run-local.sh for this test only) with --ahead 1, so a submission is
compiled by NVRTC in a real compile box before the fake GPU judges it. It
must be judged "compiled ahead": a box that inherited the umask made its
mount points 0700 and could not read the toolkit once it dropped to its
uid, so the first run of all judged nothing. The config file stays 0600.
Ends with "test_run_local: N passed, N failed, N skipped".
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
from kjservice import ROOT, FAKE  # noqa: E402
import kjdeploy  # noqa: E402
import kjrunner  # noqa: E402

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


def start(port, var, log, extra_env=None, umask=None):
    """run-local.sh in its own session, its output in log: (process, what
    it printed up to "Ctrl-C stops", or all of it when it ended first)."""
    env = env_for(port, var)
    env.update(extra_env or {})
    p = subprocess.Popen([SCRIPT], stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT,
                         start_new_session=True, preexec_fn=(lambda: os.umask(umask)) if umask is not None else None)
    text = ""
    t0 = time.time()
    while time.time() < t0 + 300 and p.poll() is None:
        log.seek(0)
        text = log.read()
        if "Ctrl-C stops" in text:
            break
        time.sleep(0.2)
    if "Ctrl-C stops" not in text:
        print("  (waited %.0f s for run-local.sh to say \"Ctrl-C stops\"; it %s)" %
              (time.time() - t0, "is still running" if p.poll() is None else "exited %s" % p.poll()))
    return p, text


def stop(p):
    """SIGINT to the script's session (Ctrl-C); its exit status, None when it had to be killed."""
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGINT)
    try:
        return p.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        return None


def server_umask(sid):
    """The umask of the kjudge-server in session sid, None when none is there."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.getsid(int(pid)) != sid or not os.readlink("/proc/%s/exe" % pid).endswith("/kjudge-server"):
                continue
            with open("/proc/%s/status" % pid) as f:
                for line in f:
                    if line.startswith("Umask:"):
                        return int(line.split()[1], 8)
        except OSError:
            continue
    return None


def test_free(tmp):
    port = kjdeploy.free_port()
    var = os.path.join(tmp, "var-free")
    log = open(os.path.join(tmp, "run.out"), "w+")
    p, text = start(port, var, log, umask=0o022)
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
        um = server_umask(p.pid)
        check(um == 0o022, "the server keeps the caller's umask 022 (077 is for the config file only)",
              oct(um) if um is not None else "no kjudge-server found in the script's session")
    finally:
        rc = stop(p)
        log.close()
    check(rc is not None, "Ctrl-C stops it", rc)
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        gone = False
    except OSError:
        gone = True
    check(gone, "nothing listens on the port afterwards")


def test_first_run(tmp):
    if not kjrunner.built():
        check(False, "%s is built (make %s)" % (FAKE, os.path.relpath(FAKE, ROOT)))
        return
    port = kjdeploy.free_port()
    var = os.path.join(tmp, "var-first")
    log = open(os.path.join(tmp, "first.out"), "w+")
    p, text = start(port, var, log, {"KJUDGE_TEST_RUNNER": FAKE}, umask=0o077)
    try:
        if not check("runners attached: 1" in text, "a first run under umask 077 starts the server and a runner",
                     text[-900:]):
            return
        check(os.stat(os.path.join(var, "kjudge.conf")).st_mode & 0o777 == 0o600, "its config file is 0600",
              oct(os.stat(os.path.join(var, "kjudge.conf")).st_mode))
        u = subprocess.run([os.path.join(ROOT, "bin", "kjudge-server"), "user", "add", "alice", "--db",
                            os.path.join(var, "kjudge.db")], capture_output=True, text=True, timeout=60)
        tok = u.stdout.strip()
        sid = kjrunner.submit(port, tok, seconds=0) if u.returncode == 0 else None
        if not check(sid is not None, "a user submits", (u.returncode, u.stderr[-300:])):
            return
        t0, d = time.time(), None
        while time.time() < t0 + 180:
            d = kjrunner.sub(port, tok, sid)
            if isinstance(d, dict) and d.get("status") == "done":
                break
            time.sleep(0.2)
        res = (d or {}).get("result") or {}
        msg = res.get("message", "")
        log.seek(0)
        out = log.read()
        check(isinstance(d, dict) and d.get("status") == "done" and
              msg.startswith("fakegpu: judged a submission compiled ahead"),
              "the first run's job is compiled in a real compile box and judged",
              "waited %.1f s for submission %d to be done: %s; run-local.sh said: %s" %
              (time.time() - t0, sid, {k: (d or {}).get(k) for k in ("status", "attempts", "result")},
               out[-1500:]))
        check("not found" not in out and "the judge compiles it" not in out,
              "no compile box failed on the way", out[-1500:])
    finally:
        stop(p)
        log.close()


def main():
    with tempfile.TemporaryDirectory(prefix="kjudge-run-") as tmp:
        test_silent(tmp)
        test_other_kjudge(tmp)
        test_free(tmp)
        test_first_run(tmp)
    print("test_run_local: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
