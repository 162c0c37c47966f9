"""kjrunner.py - the real runner process for the API tests, without a GPU.

build/kjudge-runner-fakegpu is runner/main.c and runner/serve.c as
shipped, judging with tests/api/fakegpu.c instead of a GPU: it reports an
H200, claims jobs, posts a "compiling" event, takes the seconds a
"fakegpu:seconds=N" line of the source names and answers compile_error.
tests/lib/kjservice.py starts it (Runner); this module makes runner tokens
and submissions for it and reads submissions back, over plain HTTP or
HTTPS. Python 3 stdlib only.
"""
import contextlib
import json
import os
import time

from kjdeploy import request, json_of
from kjhttp import multipart
from kjservice import FAKE, Runner  # noqa: F401  (tests reach them as kjrunner.FAKE, kjrunner.Runner)
from kjtest import GOOD_SOURCE


def runner_token(srv, name="gpuhost", gpu="H200"):
    return srv.runner_token(name, gpu)


def user_token(srv, name):
    return srv.user(name)


def submit(srv, token, seconds=0.5, gpu="H200", mode="test", leaderboard="fp8_quant",
           source=GOOD_SOURCE, name="k.cu"):
    """A submission (source, on leaderboard, uploaded as file name) the fake
    judge takes `seconds` on (None: the runner's KJUDGE_FAKE_JUDGE_S);
    returns its id or None."""
    comment = "#" if name.endswith(".py") else "//"
    src = source + ("\n%s fakegpu:seconds=%g\n" % (comment, seconds) if seconds is not None else "")
    body, ctype = multipart([("leaderboard", leaderboard), ("gpu", gpu), ("mode", mode)],
                            [("file", name, src.encode())])
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


def status(srv, token, sid):
    """The submission's status, None when it cannot be read."""
    d = sub(srv, token, sid)
    return d.get("status") if isinstance(d, dict) else None


def done_at(srv, token, sids, seconds=40):
    """{sid: time it was first seen done}, polled every 20 ms."""
    seen, end = {}, time.time() + seconds
    while time.time() < end and len(seen) < len(sids):
        for s in sids:
            if s not in seen and status(srv, token, s) == "done":
                seen[s] = time.time()
        time.sleep(0.02)
    return seen


def post_json(srv, path, token, body=b"{}"):
    """POST a JSON body as a runner does: (status, parsed answer)."""
    st, _, raw = request(srv, "POST", path, token, body, {"Content-Type": "application/json"})
    return st, json_of(raw)


def claim_job(srv, token, name="box"):
    """Claim a job of H200 by hand (no long poll): the job object, or None."""
    st, d = post_json(srv, "/api/v1/runner/claim", token,
                      json.dumps({"runner": name, "gpu": "H200", "arch": "sm_90a"}).encode())
    return d["job"] if st == 200 else None


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


def wait_until(cond, seconds=30):
    """Poll cond() every 20 ms for up to seconds; its last value."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


@contextlib.contextmanager
def boxed_runner(srv, rtok, tmp, name, teardown_s):
    """The fake runner named name, started, its boxes files in a folder of its
    own ($KJUDGE_FAKE_BOX_DIR, fakegpu.c) whose teardown takes teardown_s;
    yields (runner, folder) and stops the runner at the end."""
    bdir = os.path.join(tmp, name + "-boxes")
    os.makedirs(bdir, exist_ok=True)
    r = Runner(os.path.join(tmp, name), "http://127.0.0.1:%d" % srv.port, rtok, [],
               env={"KJUDGE_FAKE_BOX_DIR": bdir, "KJUDGE_FAKE_TEARDOWN_S": str(teardown_s)})
    r.start()
    try:
        yield r, bdir
    finally:
        r.stop()


def built():
    return os.access(FAKE, os.X_OK)


def run_suite(name, tests):
    """The main() of a suite of the fake runner: one server (no rate limits)
    in a temporary folder, a user token and a runner token, then each
    test(srv, tok, rtok, tmp); prints "name: N passed, N failed, N skipped"
    and returns the exit status. A suite starts a dozen runners of its own
    names under the one token: more than a token's default 8 other names
    (serve --runner-names), so the server takes 64."""
    import tempfile
    import kjdeploy
    from kjcheck import Counts, check
    from kjservice import NO_RATE_LIMITS
    if not built():
        print("FAIL %s is not built (make build/kjudge-runner-fakegpu)\n"
              "%s: 0 passed, 1 failed, 0 skipped" % (FAKE, name))
        return 1
    with tempfile.TemporaryDirectory(prefix="kjudge-%s-" % name) as tmp:
        srv = kjdeploy.Server(os.path.join(tmp, "srv"), extra=NO_RATE_LIMITS + ["--runner-names", "64"])
        if check(srv.start(), "the server starts"):
            try:
                tok = user_token(srv, "alice")
                rtok = runner_token(srv, "gpuhost")
                for test in tests:
                    test(srv, tok, rtok, tmp)
            finally:
                srv.stop()
    print("%s: %d passed, %d failed, %d skipped" % (name, Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


def dumps(x):
    return json.dumps(x)[:600]
