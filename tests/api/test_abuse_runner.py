#!/usr/bin/env python3
"""test_abuse_runner.py - a hostile runner against a real server on loopback.

A runner host runs untrusted code, so a runner token can fall into the
wrong hands. With alice's honest entry ranked first on fp8_quant/H200,
mallory's runner token (bound to H200) claims mallory's own leaderboard-mode
jobs and posts forged results: forged scores, the wrong mode or board,
missing, extra and changed shapes, negative, zero, NaN, infinite and 1e-300
medians, made-up medians below the physical floor (every shape 1.1 ns;
the 236 MB shape at 11.8 TB/s), statistics out of order, invalid UTF-8 (in a shape key, the GPU
name), \\u0000, duplicate keys, trailing text, deep nesting, a huge string,
a body over the limit, 100,000 values, a result from another GPU. Each must
be refused (4xx) and change nothing: the job stays leased, and an honest
result for it is still taken afterwards. Unknown keys are dropped from what
is stored; a message that is not UTF-8 is stored with U+FFFD. The token
may not claim B200 jobs; a token made before GPU binding (written to the
database the old way) is refused until `runner bind`. Two processes sharing one token: the stale one's result,
heartbeat and event without ?attempt are refused (400) and with its old
attempt too (409), so it cannot finish the attempt the other one holds.
After all of it the public rankings are unchanged and parse as strict JSON.
Prints a summary of what got through; bounded in time (about 5 s) and
count (about 80 attacking requests). Python 3 standard library only; ends
with "test_abuse_runner: N passed, N failed, N skipped".
"""
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check  # noqa: E402
from kjhttp import Client  # noqa: E402
from kjservice import BIN  # noqa: E402
from kjtest import is_error, result_body, geomean, GOOD_SOURCE, DEFAULT_MEDIANS  # noqa: E402
from kjtest import Server  # noqa: E402

LEASE = 3
RANKINGS = ["/api/v1/leaderboards/fp8_quant/rankings?gpu=H200", "/api/v1/leaderboards/fp8_quant/rankings?gpu=B200"]

# A runner process: reads one JSON request per line ({"method", "path", "body"}; body is
# a JSON value or {"raw": text}) and prints {"status", "data"} per line.
PROC = r"""
import http.client, json, sys
port, token = int(sys.argv[1]), sys.argv[2]
for line in sys.stdin:
    req = json.loads(line)
    body = req.get("body")
    body = body["raw"].encode() if isinstance(body, dict) and "raw" in body else json.dumps(body).encode()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    c.request(req["method"], req["path"], body=body, headers={"Authorization": "Bearer " + token,
              "Content-Type": "application/json"})
    r = c.getresponse(); raw = r.read(); c.close()
    try:
        data = json.loads(raw) if raw else None
    except ValueError:
        data = None
    print(json.dumps({"status": r.status, "data": data}), flush=True)
"""


def strict_json(raw):
    """raw parsed as strict JSON (UTF-8, no NaN or Infinity), or an exception."""
    def no_constant(name):
        raise ValueError("non-JSON constant " + name)
    return json.loads(raw.decode("utf-8", errors="strict"), parse_constant=no_constant)


def public_state(c):
    """The rankings bodies, each parsed strictly (None for one that does not parse)."""
    out = []
    for url in RANKINGS:
        st, _, _, raw = c.get(url)
        try:
            d = strict_json(raw)
        except ValueError:
            d = None
        out.append((st, d))
    return out


def row(srv, sid):
    con = sqlite3.connect(srv.db, timeout=10)
    con.row_factory = sqlite3.Row
    con.text_factory = bytes  # a stored result need not be UTF-8 (it was, before the check)
    try:
        r = con.execute("SELECT * FROM submissions WHERE id = ?", (sid,)).fetchone()
        return dict(r) if r else None
    finally:
        con.close()


class Runner:
    """A runner process of its own (PROC) holding a token."""

    def __init__(self, port, token):
        self.p = subprocess.Popen([sys.executable, "-c", PROC, str(port), token], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)

    def call(self, method, path, body=None):
        self.p.stdin.write(json.dumps({"method": method, "path": path, "body": body}) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        r = json.loads(line) if line else {"status": None, "data": None}
        return r["status"], r["data"]

    def close(self):
        self.p.stdin.close()
        self.p.wait(10)


def runner_token(srv, name, gpus):
    rc, out, err = srv.cli("runner", "add", name, "--gpu", gpus, "--db", srv.db)
    check(rc == 0 and len(out.strip()) == 64, "runner add %s --gpu %s" % (name, gpus), (rc, err[-300:]))
    if rc != 0:  # keep going so the rest of the attack can be measured
        rc, out, err = srv.cli("runner", "add", name, "--db", srv.db)
    return out.strip()


def submit(c, token, gpu="H200", mode="leaderboard"):
    st, _, d, _ = c.submit(token, [("leaderboard", "fp8_quant"), ("gpu", gpu), ("mode", mode)],
                           [("file", "k.cu", GOOD_SOURCE.encode())])
    return d["id"] if st == 202 else None


def claim(c, token, gpu="H200", name="evil-box"):
    st, _, d, _ = c.post_json("/api/v1/runner/claim", {"runner": name, "gpu": gpu, "arch": "sm_90a"}, token)
    return st, (d or {}).get("job") if isinstance(d, dict) else None


def fresh_job(c, mallory, evil):
    sid = submit(c, mallory)
    st, job = claim(c, evil)
    ok = job is not None and job["id"] == sid
    return job if ok else None


def accepted(**kw):
    return result_body("accepted", mode="leaderboard", **kw)


def attacks():
    """(name, body text, allowed statuses)."""
    a = []
    def add(name, body, statuses=(422,)):
        a.append((name, body if isinstance(body, str) else json.dumps(body), statuses))
    r = json.dumps(accepted(medians=(1000.0, 2000.0, 3000.0)))
    r = r.replace('"GS": 128}, "status": "pass", "median_ns": 1000.0',
                  '"GS": 128, "\udcff": 1}, "status": "pass", "median_ns": 1000.0')
    add("invalid UTF-8 in a shape key", r.encode("utf-8", "surrogateescape").decode("latin-1"))
    r = accepted(); r["score_ns"] = 5e-324
    add("forged score 5e-324", r)
    add("the issue's example: accepted, 5e-324, mode test, median -5",
        {"verdict": "accepted", "score_ns": 5e-324, "mode": "test", "benchmarks": [{"median_ns": -5}]})
    r = accepted(); r["score_ns"] = geomean(DEFAULT_MEDIANS) / 10
    add("score 10x better than the medians", r)
    r = result_body("accepted", mode="test")
    add("mode test for a leaderboard job", r)
    r = accepted(); r["mode"] = "benchmark"
    add("mode benchmark for a leaderboard job", r)
    r = accepted(); r["leaderboard"] = "matmul"
    add("another leaderboard", r)
    r = accepted(); r["benchmarks"] = r["benchmarks"][:2]; r["score_ns"] = geomean(DEFAULT_MEDIANS[:2])
    add("a missing shape (2 of 3)", r)
    r = accepted(); r["benchmarks"].append(dict(r["benchmarks"][2], index=3))
    add("an extra shape (4 of 3)", r)
    r = accepted(); r["benchmarks"][0]["shape"]["T"] = 1
    add("a smaller shape", r)
    for m in (-5.0, 0.0, 1e-300):
        r = accepted()
        b = r["benchmarks"][0]
        for k in ("median_ns", "mean_ns", "min_ns", "max_ns", "q1_ns", "q3_ns", "ci_lo_ns", "ci_hi_ns"):
            b[k] = m
        b["stdev_ns"] = 0.0
        r["score_ns"] = 1e-100 if m <= 0 else geomean((m, 4000.0, 56000.0))
        add("median %g" % m, r)
    # (1.1 ns: the fixture's min_ns, 0.99 of the median, stays within the 1 ns a timing may be)
    add("made up but consistent: every median 1.1 ns, the score too", accepted(medians=(1.1, 1.1, 1.1)))
    r = accepted(medians=(2000.0, 4000.0, 20000.0))  # 236 MB in 20 us: 11.8 TB/s
    add("shape 2 faster than an H200's memory", r)
    r = json.dumps(accepted()).replace('"median_ns": 4000.0', '"median_ns": NaN')
    add("a NaN median", r, (400, 422))
    r = json.dumps(accepted()).replace('"median_ns": 4000.0', '"median_ns": 1e999')
    add("an infinite median", r)
    r = accepted(); r["benchmarks"][1]["min_ns"] = 9000.0
    add("min above the median", r)
    r = accepted(); r["benchmarks"][2]["n"] = 0
    add("zero samples", r)
    r = accepted(); r["tests"] = r["tests"][:1]
    add("1 of 5 tests", r)
    r = accepted(gpu="NVIDIA B200")
    add("a B200 device for an H200 job", r)
    r = accepted(); del r["system"]
    add("no system information", r)
    r = json.dumps(accepted()).replace('"NVIDIA H200"', '"NVIDIA H200 \udcfe"')
    add("invalid UTF-8 in the GPU name", r.encode("utf-8", "surrogateescape").decode("latin-1"))
    add("\\u0000 in the message", json.dumps(accepted()).replace('"test result"', '"a\\u0000b"'))
    add("verdict twice", json.dumps(accepted()).replace('{"verdict": "accepted"',
                                                        '{"verdict": "wrong_answer", "verdict": "accepted"'))
    add("text after the object", json.dumps(accepted()) + " {}", (400, 422))
    add("deep nesting", '{"verdict": "accepted", "score_ns": 1.0, "x": ' + "[" * 900 + "]" * 900 + "}", (400, 422))
    add("a 3.9 MB message", json.dumps(dict(accepted(), message="A" * 3900000)))
    add("a body over the limit (5 MB)", json.dumps(dict(accepted(), message="A" * 5000000)), (413,))
    add("100,000 values", json.dumps(dict(accepted(), x=[0] * 100001)))
    return a


def post(c, job, token, text, attempt=True):
    path = "/api/v1/runner/jobs/%d/result" % job["id"]
    if attempt:
        path += "?attempt=%d" % job["attempt"]
    st, _, d, _ = c.request("POST", path, token=token, body=text.encode("latin-1") if isinstance(text, str) else text,
                            headers={"Content-Type": "application/json"}, runner=True)
    return st, d


def test_forgeries(srv, c, mallory, evil, honest_state, tally):
    for name, text, statuses in attacks():
        job = fresh_job(c, mallory, evil)
        if not check(job is not None, "%s: a job to attack" % name):
            continue
        before = row(srv, job["id"])
        st, d = post(c, job, evil, text)
        tally["sent"] += 1
        stored = st is not None and 200 <= st < 300
        tally["stored"] += stored
        check(st in statuses and isinstance(d, dict) and isinstance(d.get("error"), dict),
              "%s -> %s" % (name, "/".join(map(str, statuses))), (st, d))
        check(row(srv, job["id"]) == before, "%s changes nothing" % name)
        state = public_state(c)
        tally["rankings_changed"] += state != honest_state
        tally["rankings_unparsable"] += any(d is None for _, d in state)
        check(state == honest_state, "%s leaves the rankings as they were" % name, state)
        # A correct result for the same job is still taken (the job stayed leased).
        st, d = post(c, job, evil, json.dumps(result_body("wrong_answer", mode="leaderboard")))
        check(st == 200 and d == {"ok": True}, "%s: an honest result afterwards is taken" % name, (st, d))


def test_unknown_keys(srv, c, mallory, evil, honest_state):
    job = fresh_job(c, mallory, evil)
    if not check(job is not None, "a job for unknown keys"):
        return
    r = result_body("wrong_answer", mode="leaderboard")
    r["evil"] = "<script>alert(1)</script>"
    r["tests"][0]["secret_seed"] = "1234"
    r["system"]["backdoor"] = {"x": 1}
    st, d = post(c, job, evil, json.dumps(r))
    check(st == 200 and d == {"ok": True}, "a result with unknown keys is taken", (st, d))
    stored = json.loads(row(srv, job["id"])["result"])
    check("evil" not in stored and "secret_seed" not in stored["tests"][0] and "backdoor" not in stored["system"]
          and stored["verdict"] == "wrong_answer", "the unknown keys are not stored", stored)
    check("dropped unknown keys" in srv.server_log(), "and the drop is logged")
    check(public_state(c) == honest_state, "the rankings are as they were")


def test_text_repair(srv, c, mallory, evil, honest_state):
    """Free text that is not UTF-8 (a runner's truncated message) is stored repaired, not refused."""
    job = fresh_job(c, mallory, evil)
    if not check(job is not None, "a job for a message that is not UTF-8"):
        return
    text = json.dumps(result_body("wrong_answer", mode="leaderboard")).replace('"test result"', '"caf\\u00e9 XX"')
    text = text.replace("XX", "\udcff\udcfe").encode("utf-8", "surrogateescape")
    st, d = post(c, job, evil, text)
    check(st == 200 and d == {"ok": True}, "a message that is not UTF-8 is taken", (st, d))
    stored = row(srv, job["id"])["result"]
    check(b"caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd" in stored, "its bad bytes are stored as U+FFFD", stored[:200])
    st, _, _, raw = c.get("/api/v1/submissions/%d" % job["id"], mallory)
    try:
        ok = st == 200 and strict_json(raw)["result"]["message"] == "caf\u00e9 \ufffd\ufffd"
    except (ValueError, KeyError, TypeError):
        ok = False
    check(ok, "and read back as strict JSON", raw[:300])
    check(public_state(c) == honest_state, "the rankings are as they were")


def test_gpu_binding(srv, c, mallory, evil, tally):
    sid = submit(c, mallory, gpu="B200")
    st, job = claim(c, evil, gpu="B200")
    tally["cross_gpu_claims"] += job is not None
    check(st == 403 and job is None, "an H200 runner token claiming B200 -> 403", (st, job))
    st, _, d, _ = c.post_json("/api/v1/runner/claim", {"runner": "x", "gpu": "B200"}, evil)
    check(st == 403 and is_error(d, "gpu_not_allowed") and "H200" in d["error"]["message"],
          "the 403 names the allowed GPU types", (st, d))
    check(row(srv, sid)["status"] == b"queued", "the B200 job stays queued")
    # A token made before tokens were bound: a runner row without GPU types.
    old = os.urandom(32).hex()
    con = sqlite3.connect(srv.db, timeout=10)
    con.execute("INSERT INTO users(name, role, token_hash, created_at) VALUES ('oldbox', 'runner', ?, 0)",
                (hashlib.sha256(old.encode()).hexdigest(),))
    con.commit()
    con.close()
    st, _, d, _ = c.post_json("/api/v1/runner/claim", {"runner": "old", "gpu": "B200"}, old)
    tally["cross_gpu_claims"] += st == 200
    check(st == 403 and is_error(d, "runner_unbound") and "runner bind oldbox" in d["error"]["message"],
          "an unbound runner token -> 403 naming `runner bind`", (st, d))
    rc, out, err = srv.cli("runner", "bind", "oldbox", "--gpu", "B200", "--db", srv.db)
    check(rc == 0, "runner bind oldbox --gpu B200", (rc, err[-300:]))
    st, job = claim(c, old, gpu="B200", name="old")
    check(st == 200 and job is not None and job["id"] == sid, "once bound it claims B200 jobs", (st, job))
    if job is not None:
        st, d = post(c, job, old, json.dumps(result_body("wrong_answer", mode="leaderboard", gpu="NVIDIA B200")))
        check(st == 200, "and finishes them", (st, d))
    for args in (["runner", "bind", "nobody", "--gpu", "H200"], ["runner", "bind", "oldbox", "--gpu", "H200,H200"],
                 ["runner", "bind", "oldbox"], ["runner", "add", "nogpu"], ["runner", "add", "badgpu", "--gpu", "H 200"]):
        rc, out, err = srv.cli(*args, "--db", srv.db)
        check(rc == 1 and out == "", "%s exits 1" % " ".join(args), (rc, out, err[-200:]))


def test_stale_attempt(srv, c, mallory, shared_token, tally):
    """Two processes share one token; A stalls past its lease, B gets attempt 2."""
    sid = submit(c, mallory)
    a, b = Runner(srv.port, shared_token), Runner(srv.port, shared_token)
    try:
        st, d = a.call("POST", "/api/v1/runner/claim", {"runner": "proc-a", "gpu": "H200"})
        job_a = (d or {}).get("job") or {}
        check(st == 200 and job_a.get("id") == sid and job_a.get("attempt") == 1, "process A claims attempt 1", d)
        deadline = time.time() + LEASE + 5
        job_b = {}
        while time.time() < deadline:
            st, d = b.call("POST", "/api/v1/runner/claim", {"runner": "proc-b", "gpu": "H200"})
            if st == 200:
                job_b = d["job"]
                break
            time.sleep(0.2)
        check(job_b.get("id") == sid and job_b.get("attempt") == 2, "A stalls; after the lease B claims attempt 2",
              job_b)
        url = "/api/v1/runner/jobs/%d" % sid
        forged = accepted()
        forged["message"] = "stale result of A"
        before = row(srv, sid)
        st, d = a.call("POST", url + "/result", forged)
        tally["stale_taken"] += st == 200
        check(st == 400 and is_error(d, "bad_attempt") and "attempt" in d["error"]["message"],
              "A's result without ?attempt -> 400", (st, d))
        for path, body in [(url + "/heartbeat", {}), (url + "/events", {"event": "test", "data": {}})]:
            st, d = a.call("POST", path, body)
            check(st == 400 and is_error(d, "bad_attempt"), "A's %s without ?attempt -> 400" % path.rsplit("/")[-1],
                  (st, d))
        st, d = a.call("POST", url + "/result?attempt=1", forged)
        tally["stale_taken"] += st == 200
        check(st == 409 and is_error(d, "not_held"), "A's result naming attempt 1 -> 409", (st, d))
        check(row(srv, sid) == before, "A changed nothing")
        honest = result_body("wrong_answer", mode="leaderboard")
        honest["message"] = "judged by B"
        st, d = b.call("POST", url + "/result?attempt=2", honest)
        check(st == 200 and d == {"ok": True}, "B's result is taken", (st, d))
        r = row(srv, sid)
        check(r["verdict"] == b"wrong_answer" and b"judged by B" in r["result"] and r["attempts"] == 1,
              "the job was judged once, by B", r)
    finally:
        a.close()
        b.close()


def run_all(srv):
    c = Client(srv.port)
    alice = srv.cli("user", "add", "alice", "--db", srv.db)[1].strip()
    mallory = srv.cli("user", "add", "mallory", "--db", srv.db)[1].strip()
    honest = runner_token(srv, "honest", "H200,B200")
    evil = runner_token(srv, "evil", "H200")
    shared = runner_token(srv, "shared", "H200")
    sid = submit(c, alice)
    st, job = claim(c, honest, name="honest-box")
    check(job is not None and job["id"] == sid, "the honest runner claims alice's job", (st, job))
    if job is None:
        return
    st, d = post(c, job, honest, json.dumps(accepted()))
    check(st == 200 and d == {"ok": True}, "alice's honest result is taken", (st, d))
    state = public_state(c)
    rows = (state[0][1] or {}).get("rankings", [])
    check(state[0][0] == 200 and [(r["user"], r["score_ns"]) for r in rows] == [("alice", geomean(DEFAULT_MEDIANS))],
          "alice ranks first with the server's score", rows)
    tally = {"sent": 0, "stored": 0, "rankings_changed": 0, "rankings_unparsable": 0, "cross_gpu_claims": 0, "stale_taken": 0}
    t0 = time.time()
    test_forgeries(srv, c, mallory, evil, state, tally)
    test_unknown_keys(srv, c, mallory, evil, state)
    test_text_repair(srv, c, mallory, evil, state)
    test_gpu_binding(srv, c, mallory, evil, tally)
    test_stale_attempt(srv, c, mallory, shared, tally)
    final = public_state(c)
    check(all(s == 200 and d is not None for s, d in final), "the rankings parse as strict JSON", final)
    check(final == state, "after all of it the rankings are unchanged", final)
    st, _, _, raw = c.get("/api/v1/submissions?limit=500", mallory)
    try:
        strict_json(raw)
        ok = st == 200
    except ValueError:
        ok = False
    check(ok, "mallory's submissions list parses as strict JSON", raw[:300])
    print("abuse summary: %d forged results sent, %d stored; the rankings changed after %d of them and did not "
          "parse as strict JSON after %d; cross-GPU claims %d; stale-attempt results taken %d; %.1f s"
          % (tally["sent"], tally["stored"], tally["rankings_changed"], tally["rankings_unparsable"],
             tally["cross_gpu_claims"], tally["stale_taken"], time.time() - t0), flush=True)


def main():
    if not os.access(BIN, os.X_OK):
        print("FAIL %s is not built" % BIN)
        print("test_abuse_runner: 0 passed, 1 failed, 0 skipped")
        return 1
    with tempfile.TemporaryDirectory(prefix="kjudge-abuse-runner-") as tmp:
        srv = Server(tmp, extra=["--lease-seconds", str(LEASE)])
        if check(srv.start(), "the server starts"):
            try:
                run_all(srv)
            finally:
                srv.stop()
    print("test_abuse_runner: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
