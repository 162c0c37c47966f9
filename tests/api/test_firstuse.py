#!/usr/bin/env python3
"""test_firstuse.py - what a first user runs into: a GPU type that no runner
serves, and nvdisasm fetched by deploy/deps.sh.

Against a real server (--lease-seconds 2): a ?wait=1 on a job queued for a
GPU type that no runner has asked for answers at once with a "note" saying
so (instead of parking for the whole timeout), the event stream's first
event carries the same note, and `kjudge submit` prints it; once a runner
asks for that type, waits park and the note is gone; when the runner has
been silent for more than 5 minutes (its last request moved back in the
database), the note comes back naming when it was last seen. Then bin/kjudge-runner compile, started from another folder and
with no KJUDGE_NVDISASM or CUDA_HOME, finds the nvdisasm that
deploy/deps.sh put in .tools/bin when the toolkit has none (classes from
the machine code, "classes_from": "sass"). And bin/kjudge-runner compile
started under umask 077 (as `make run` once started its runners) compiles:
its compile box makes its folders with their own modes, so the box's uid
still reaches the toolkit. Ends with
"test_firstuse: N passed, N failed, N skipped".
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check, skip  # noqa: E402
from kjservice import ROOT, NO_RATE_LIMITS  # noqa: E402
import kjdeploy  # noqa: E402
import kjrunner  # noqa: E402
import kjtest  # noqa: E402
from kjdeploy import request, json_of  # noqa: E402

NOTE = "no runner has asked for H200 jobs"


def wait_answer(srv, tok, sid, timeout):
    st, _, raw = request(srv, "GET", "/api/v1/submissions/%d?wait=1&timeout=%d" % (sid, timeout), tok,
                         timeout=timeout + 30)
    return st, json_of(raw)


def first_event(srv, tok, sid):
    s = kjtest.SSE(srv.port, "/api/v1/submissions/%d/events" % sid, tok)
    e = s.next()
    s.close()
    return e


def claim_any(srv, rtok):
    st, _, _ = request(srv, "POST", "/api/v1/runner/claim", rtok,
                       {"runner": "h200-0", "gpu": "H200", "arch": "sm_90a"})
    return st


def test_note(tmp):
    srv = kjdeploy.Server(os.path.join(tmp, "srv"), extra=NO_RATE_LIMITS + ["--lease-seconds", "2"])
    if not check(srv.start(), "the server starts"):
        return
    try:
        alice = kjrunner.user_token(srv, "alice")
        rtok = kjrunner.runner_token(srv, "gpuhost")
        sid = kjrunner.submit(srv, alice)
        st, d = wait_answer(srv, alice, sid, 120)
        check(st == 200 and d.get("status") == "queued" and NOTE + " yet" in d.get("note", "") and
              "GET /api/v1/gpus" in d.get("note", "") and "wait_timed_out" not in d,
              "?wait=1 for a type no runner ever asked for answers at once with a note", (st, d))
        e = first_event(srv, alice, sid)
        check(e is not None and e[1] == "queued" and NOTE + " yet" in (e[2] or {}).get("note", ""),
              "the stream's first event carries the note", e)

        # The client prints it (then keeps following; stopped here).
        home = os.path.join(tmp, "home")
        os.makedirs(home, exist_ok=True)
        src = os.path.join(tmp, "k.cu")
        with open(src, "w") as f:
            f.write(kjrunner.GOOD_SOURCE)
        env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=os.path.join(home, "cfg"),
                   KJUDGE_URL="http://127.0.0.1:%d" % srv.port, KJUDGE_TOKEN=alice)
        p = subprocess.Popen([os.path.join(ROOT, "bin", "kjudge"), "submit", src, "--leaderboard", "fp8_quant",
                              "--gpu", "H200"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=env)
        lines = []
        try:
            deadline = time.time() + 30
            while time.time() < deadline:
                line = p.stdout.readline()
                if not line:
                    break
                lines.append(line)
                if NOTE in line:
                    break
        finally:
            p.kill()
            p.wait()
        check(any(line.startswith("queued: position") and NOTE + " yet" in line for line in lines),
              "kjudge submit prints the note", lines)

        # A runner asks for H200 work: a wait parks again, without a note.
        check(claim_any(srv, rtok) == 200, "(a runner asks for H200 work and takes the oldest job)")
        sid4 = kjrunner.submit(srv, alice)
        st, d = wait_answer(srv, alice, sid4, 1)
        check(st == 200 and d.get("wait_timed_out") is True and "note" not in d,
              "with a runner seen, ?wait=1 parks and has no note", (st, d))
        e = first_event(srv, alice, sid4)
        check(e is not None and "note" not in (e[2] or {}), "nor has the stream's first event", e)
        # The job the runner took goes back to the queue when its lease (2 s)
        # ends; then the runner's last request is moved 10 minutes back: a
        # runner silent for more than 5 minutes serves nothing, the note is back.
        time.sleep(3.5)
        con = sqlite3.connect(srv.db, timeout=10)
        con.execute("UPDATE runners SET last_seen = last_seen - 600")
        con.commit()
        con.close()
        st, d = wait_answer(srv, alice, sid4, 120)
        check(st == 200 and d.get("status") == "queued" and NOTE + " since " in d.get("note", "") and
              "5 minutes or more" in d.get("note", ""),
              "a runner silent for more than 5 minutes: the note again, naming when", (st, d))
    finally:
        srv.stop()


def test_nvdisasm(tmp):
    tools = os.path.join(ROOT, ".tools", "bin", "nvdisasm")
    cuda = os.environ.get("CUDA", "/usr/local/cuda")
    if os.access(os.path.join(cuda, "bin", "nvdisasm"), os.X_OK):
        skip("the toolkit has its own nvdisasm; .tools/bin is not needed here")
        return
    if not os.access(tools, os.X_OK):
        skip("no .tools/bin/nvdisasm (deploy/deps.sh could not fetch it)")
        return
    env = {k: v for k, v in os.environ.items() if k not in ("KJUDGE_NVDISASM", "CUDA_HOME")}
    p = subprocess.run([os.path.join(ROOT, "bin", "kjudge-runner"), "compile",
                        os.path.join(ROOT, "leaderboards", "fp8_quant", "template.cu"), "--leaderboard", "fp8_quant",
                        "--leaderboards", os.path.join(ROOT, "leaderboards")],
                       capture_output=True, text=True, timeout=300, env=env, cwd=tmp)
    try:
        d = json.loads(p.stdout)
    except ValueError:
        d = {}
    ks = d.get("kernels", [])
    check(p.returncode == 0 and ks and all(k.get("classes_from") == "sass" for k in ks),
          "kjudge-runner finds .tools/bin/nvdisasm by itself (classes from the machine code)",
          (p.returncode, [k.get("classes_from") for k in ks], p.stderr[-300:]))


def test_compile_umask(tmp):
    src = os.path.join(ROOT, "leaderboards", "fp8_quant", "template.cu")
    p = subprocess.run([os.path.join(ROOT, "bin", "kjudge-runner"), "compile", src, "--leaderboard", "fp8_quant",
                        "--leaderboards", os.path.join(ROOT, "leaderboards")],
                       capture_output=True, text=True, timeout=300, cwd=tmp, preexec_fn=lambda: os.umask(0o077))
    try:
        d = json.loads(p.stdout)
    except ValueError:
        d = {}
    check(p.returncode == 0 and d.get("ok") is True and d.get("kernels"),
          "kjudge-runner compile under umask 077: the compile box still reaches the toolkit",
          (p.returncode, p.stdout[-300:], p.stderr[-300:]))


def main():
    if not kjrunner.built():
        print("FAIL %s is not built\ntest_firstuse: 0 passed, 1 failed, 0 skipped" % kjrunner.FAKE)
        return 1
    with tempfile.TemporaryDirectory(prefix="kjudge-first-") as tmp:
        test_note(tmp)
        test_nvdisasm(tmp)
        test_compile_umask(tmp)
    print("test_firstuse: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
