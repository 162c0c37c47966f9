#!/usr/bin/env python3
"""test_api.py - the HTTP API of kjudge-server, end to end, over real HTTP.

Starts bin/kjudge-server on a free loopback port with a temporary database
and config, creates users and a runner with the CLI, then drives every
endpoint: submissions (good and each kind of bad request, checking that a
rejected request leaves the submissions table unchanged), the runner flow
(claim, events, result, duplicates, ?wait=1), rankings, leaderboards, the
OpenAPI document, static files, secrecy of the secret seed, and a clean
shutdown. Python 3 standard library only. Prints "FAIL ..." per failure
and ends with "test_api: N passed, N failed, N skipped"; exit 1 on failure.
"""
import hashlib
import http.client
import json
import math
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("KJUDGE_SERVER_BIN", os.path.join(ROOT, "bin", "kjudge-server"))

GOOD_SOURCE = (
    "//!kjudge launch quant grid=(ceil_div(T*H/GS, 8)) block=(32, 8)\n"
    "extern \"C\" __global__ void quant(const float* x, float* x_q, float* x_s,\n"
    "                                  int T, int H, int GS) {}\n"
)


# The API tests submit far more than a user may per minute; test_access.py
# checks the limits themselves.
NO_RATE_LIMITS = ["--rate-limit-test", "0", "--rate-limit-benchmark", "0",
                  "--rate-limit-leaderboard", "0", "--rate-limit-profile", "0",
                  "--rate-limit-sanitize", "0"]


class Counts:
    passed = 0
    failed = 0
    skipped = 0


def check(cond, what, detail=""):
    if cond:
        Counts.passed += 1
    else:
        Counts.failed += 1
        print("FAIL %s%s" % (what, (": " + str(detail)[:400]) if detail else ""), flush=True)
    return cond


def skip(what):
    Counts.skipped += 1
    print("SKIP %s" % what, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Client:
    """Tiny HTTP client that remembers every user-facing response body."""

    def __init__(self, port):
        self.port = port
        self.user_bodies = []  # bodies of responses to non-runner requests

    def request(self, method, path, token=None, body=None, headers=None, timeout=30, runner=False):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
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


def multipart(fields, files):
    """fields: [(name, str)], files: [(name, filename, bytes)] -> (body, content type)."""
    boundary = "----kjudgetestboundary7d93a1"
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


class Server:
    def __init__(self, tmp):
        self.tmp = tmp
        self.db = os.path.join(tmp, "var", "kjudge.db")
        self.conf = os.path.join(tmp, "var", "kjudge.conf")
        self.port = free_port()
        self.proc = None
        self.stdout = ""

    def serve_options(self):
        """Options added to `serve`; subclasses add their own."""
        return list(NO_RATE_LIMITS)

    def start(self):
        env = dict(os.environ)
        env.pop("KJUDGE_ADMIN_TOKEN", None)
        self.log = open(os.path.join(self.tmp, "server.log"), "ab")
        self.out = open(os.path.join(self.tmp, "server.out"), "ab")
        self.proc = subprocess.Popen(
            [BIN, "serve", "--port", str(self.port), "--db", self.db, "--config", self.conf,
             "--leaderboards", os.path.join(ROOT, "leaderboards"), "--web", os.path.join(ROOT, "web")]
            + self.serve_options(),
            stdout=self.out, stderr=self.log, env=env, cwd=self.tmp)
        deadline = time.time() + 15
        while time.time() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1)
                c.request("GET", "/healthz")
                ok = c.getresponse().status == 200
                c.close()
                if ok:
                    return True
            except OSError:
                time.sleep(0.05)
        return False

    def stop(self, sig=signal.SIGTERM, timeout=15):
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None
        finally:
            self.log.close()
            self.out.close()
        return self.proc.returncode

    def printed(self):
        with open(os.path.join(self.tmp, "server.out")) as f:
            return f.read()

    def cli(self, *args):
        p = subprocess.run([BIN] + list(args), capture_output=True, text=True, timeout=30)
        return p.returncode, p.stdout, p.stderr

    def rows(self):
        con = sqlite3.connect(self.db, timeout=10)
        try:
            return con.execute("SELECT * FROM submissions ORDER BY id").fetchall()
        finally:
            con.close()

    def row(self, sid):
        con = sqlite3.connect(self.db, timeout=10)
        con.row_factory = sqlite3.Row
        try:
            return con.execute("SELECT * FROM submissions WHERE id = ?", (sid,)).fetchone()
        finally:
            con.close()

    def secret(self, board):
        con = sqlite3.connect(self.db, timeout=10)
        try:
            r = con.execute("SELECT secret_seed FROM leaderboard_secrets WHERE leaderboard = ?",
                            (board,)).fetchone()
            return r[0] if r else None
        finally:
            con.close()


def is_error(data, code):
    return (isinstance(data, dict) and isinstance(data.get("error"), dict) and
            data["error"].get("code") == code and isinstance(data["error"].get("message"), str))


# ---------------------------------------------------------------------------
# Test groups
# ---------------------------------------------------------------------------

def test_cli(srv):
    rc, out, err = srv.cli("--help")
    check(rc == 0 and "user add" in out, "--help exits 0 with usage", (rc, out))
    rc, out, err = srv.cli("frobnicate")
    check(rc == 1, "unknown command exits 1", rc)
    rc, out, err = srv.cli("serve", "--port", "notaport")
    check(rc == 1, "bad --port exits 1", rc)
    rc, out, err = srv.cli("user", "add", "alice", "--db", srv.db)
    check(rc == 1 and out == "", "duplicate user name exits 1 and prints no token", (rc, out, err))
    rc, out, err = srv.cli("user", "add", "admin", "--db", srv.db)
    check(rc == 1, "the name 'admin' is reserved", rc)
    rc, out, err = srv.cli("user", "add", "bad name!", "--db", srv.db)
    check(rc == 1, "a malformed name exits 1", rc)
    for name in ("..", ".", "..."):
        rc, out, err = srv.cli("user", "add", name, "--db", srv.db)
        check(rc == 1 and out == "", "user add %r exits 1 (names start with a letter or digit)" % name, (rc, out))
    rc, out, err = srv.cli("runner", "add", "..", "--gpu", "H200", "--db", srv.db)
    check(rc == 1 and out == "", "runner add '..' exits 1", (rc, out))
    for args, what in [(["runner", "add", "r-nogpu"], "runner add without --gpu"),
                       (["runner", "add", "r-bad", "--gpu", "H200;B200"], "runner add with a bad GPU type"),
                       (["runner", "add", "r-twice", "--gpu", "H200,H200"], "runner add with a GPU type twice"),
                       (["user", "add", "u-gpu", "--gpu", "H200"], "user add --gpu"),
                       (["runner", "bind", "nobody", "--gpu", "H200"], "runner bind of an unknown runner"),
                       (["runner", "bind", "alice", "--gpu", "H200"], "runner bind of a user"),
                       (["runner", "bind", "h200-0"], "runner bind without --gpu")]:
        rc, out, err = srv.cli(*args, "--db", srv.db)
        check(rc == 1 and out == "", "%s exits 1 and prints nothing" % what, (rc, out, err[-200:]))
    check(not [r for r in db_users(srv) if r[0].startswith(("r-", "u-"))], "and creates nobody", db_users(srv))
    check(("h200-0", "runner", "H200,B200") in db_users(srv), "runner add stores the GPU types", db_users(srv))
    rc, out, err = srv.cli("runner", "bind", "h200-1", "--gpu", "B200,H200", "--db", srv.db)
    check(rc == 0 and out == "" and ("h200-1", "runner", "B200,H200") in db_users(srv),
          "runner bind replaces them", (rc, err[-200:], db_users(srv)))


def db_users(srv):
    con = sqlite3.connect(srv.db, timeout=10)
    try:
        return con.execute("SELECT name, role, runner_gpus FROM users ORDER BY id").fetchall()
    finally:
        con.close()


def serve_fails(srv, tag, extra_args, env_extra=None, boards=None):
    """Run `serve` in a configuration that must be refused; returns (rc, stderr)."""
    d = os.path.join(srv.tmp, "bad-" + tag)
    os.makedirs(d, exist_ok=True)
    env = dict(os.environ)
    env.pop("KJUDGE_ADMIN_TOKEN", None)
    env.update(env_extra or {})
    args = [BIN, "serve", "--port", str(srv.port), "--db", os.path.join(d, "k.db"),
            "--config", os.path.join(d, "k.conf"), "--leaderboards", boards or os.path.join(ROOT, "leaderboards"),
            "--web", os.path.join(ROOT, "web")] + extra_args
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=20, env=env, cwd=d)
    except subprocess.TimeoutExpired:
        return None, "still running after 20 s"
    return p.returncode, p.stderr


def test_serve_refuses(srv):
    rc, err = serve_fails(srv, "port", [])
    check(rc == 1 and "cannot listen" in err, "serve on a port in use exits 1", (rc, err[-300:]))
    conf_dir = os.path.join(srv.tmp, "bad-conf")
    os.makedirs(conf_dir, exist_ok=True)
    with open(os.path.join(conf_dir, "k.conf"), "w") as f:
        f.write("# comment\nadmin_tokn = 0123456789abcdef0123\n")
    rc, err = serve_fails(srv, "conf", [])
    check(rc == 1 and "line 2" in err and "admin_tokn" in err, "an unknown config key exits 1 naming the line",
          (rc, err[-300:]))
    rc, err = serve_fails(srv, "env", [], {"KJUDGE_ADMIN_TOKEN": "short"})
    check(rc == 1 and "KJUDGE_ADMIN_TOKEN" in err and "short" not in err.replace("KJUDGE", ""),
          "a too short admin token exits 1", (rc, err[-300:]))
    rc, err = serve_fails(srv, "perip", ["--max-conns-per-ip", "many"])
    check(rc == 1 and "--max-conns-per-ip" in err, "a bad --max-conns-per-ip exits 1", (rc, err[-300:]))
    rc, err = serve_fails(srv, "htime", ["--header-timeout", "-1"])
    check(rc == 1 and "--header-timeout" in err, "a bad --header-timeout exits 1", (rc, err[-300:]))
    conf_dir = os.path.join(srv.tmp, "bad-htconf")
    os.makedirs(conf_dir, exist_ok=True)
    with open(os.path.join(conf_dir, "k.conf"), "w") as f:
        f.write("max_conns_per_ip = 10\nheader_timeout = 1 min\n")
    rc, err = serve_fails(srv, "htconf", [])
    check(rc == 1 and "line 2" in err and "header_timeout" in err, "a bad header_timeout in the config exits 1",
          (rc, err[-300:]))
    rc, err = serve_fails(srv, "noboards", [], boards=os.path.join(srv.tmp, "nowhere"))
    check(rc == 1, "a missing leaderboards folder exits 1", (rc, err[-300:]))
    boards = os.path.join(srv.tmp, "boards")
    os.makedirs(os.path.join(boards, "fp8_quant"), exist_ok=True)
    spec = json.load(open(os.path.join(ROOT, "leaderboards", "fp8_quant", "leaderboard.json")))
    spec["buffers"][1]["shape"][0] = "Q"
    json.dump(spec, open(os.path.join(boards, "fp8_quant", "leaderboard.json"), "w"))
    open(os.path.join(boards, "fp8_quant", "description.md"), "w").write("# x\n")
    rc, err = serve_fails(srv, "badboard", [], boards=boards)
    check(rc == 1 and "buffers[1].shape[0]" in err and "'Q'" in err,
          "a broken leaderboard exits 1 naming the field", (rc, err[-300:]))


def test_submit_ok(srv, c, alice):
    status, _, data, _ = c.submit(alice, [("leaderboard", "fp8_quant"), ("gpu", "H200"), ("mode", "test")],
                                  [("file", "quant.cu", GOOD_SOURCE.encode())])
    ok = check(status == 202, "submit -> 202", (status, data))
    if not ok or not isinstance(data, dict):
        return None
    sid = data.get("id")
    check(data.get("status") == "queued" and data.get("leaderboard") == "fp8_quant" and
          data.get("gpu") == "H200" and data.get("mode") == "test", "202 body fields", data)
    check(data.get("urls", {}).get("self") == "/api/v1/submissions/%d" % sid and
          data["urls"].get("wait") == "/api/v1/submissions/%d?wait=1" % sid, "202 urls", data)
    row = srv.row(sid)
    check(row is not None and row["status"] == "queued" and bytes(row["source"]) == GOOD_SOURCE.encode()
          and row["file_name"] == "quant.cu" and len(row["source_sha256"]) == 64,
          "the row is committed when the 202 arrives", dict(row) if row else None)
    status, _, got, _ = c.get("/api/v1/submissions/%d" % sid, alice)
    check(status == 200 and got.get("status") == "queued" and got.get("source") == GOOD_SOURCE and
          got.get("verdict") is None, "GET shows the queued job with its source to the owner", got)
    return sid


MP_XYZ = "multipart/form-data; boundary=XyZ"


def bad_requests(alice, runner):
    """(what, token, fields, files, raw_body_and_type, status, code, message_substring)"""
    src = GOOD_SOURCE.encode()
    lb = [("leaderboard", "fp8_quant"), ("gpu", "H200")]
    f = [("file", "q.cu", src)]
    return [
        ("no token", None, lb, f, None, 401, "missing_token", None),
        ("bad token", "0" * 64, lb, f, None, 401, "invalid_token", None),
        ("malformed Authorization", None, lb, f, "Basic abc", 401, "invalid_token", None),
        ("unknown leaderboard", alice, [("leaderboard", "nope"), ("gpu", "H200")], f, None, 422,
         "unknown_leaderboard", "nope"),
        ("unknown gpu", alice, [("leaderboard", "fp8_quant"), ("gpu", "A100")], f, None, 422,
         "unknown_gpu", "A100"),
        ("missing gpu", alice, [("leaderboard", "fp8_quant")], f, None, 400, "missing_gpu", None),
        ("bad mode", alice, lb + [("mode", "fast")], f, None, 400, "bad_mode", "fast"),
        ("missing file field", alice, lb, [], None, 400, "missing_file", None),
        ("missing leaderboard", alice, [("gpu", "H200")], f, None, 400, "missing_leaderboard", None),
        ("empty file", alice, lb, [("file", "q.cu", b"")], None, 400, "empty_file", None),
        ("2 MB file", alice, lb, [("file", "q.cu", b"a" * (2 * 1024 * 1024))], None, 413, "too_large", None),
        ("file just over 1 MiB", alice, lb, [("file", "q.cu", src + b" " * (1024 * 1024))], None, 413,
         "too_large", None),
        ("non-UTF-8 file", alice, lb, [("file", "q.cu", src + b"// \xff\xfe\n")], None, 400,
         "invalid_source", "line 4"),
        ("overlong UTF-8", alice, lb, [("file", "q.cu", src + b"// \xc0\xaf\n")], None, 400,
         "invalid_source", None),
        ("NUL byte", alice, lb, [("file", "q.cu", b"// ok\n// \x00\n" + src)], None, 400,
         "invalid_source", "line 2"),
        ("bad directive", alice, lb,
         [("file", "q.cu", b"// a kernel\n\n//!kjudge launch quant grid=(1) blok=(32)\n" + src)], None,
         422, "bad_directive", "line 3"),
        ("unknown variable in a directive", alice, lb,
         [("file", "q.cu", b"// x\n//!kjudge launch quant grid=(Q) block=(32)\n")], None,
         422, "bad_directive", "line 2"),
        ("no launch directive", alice, lb, [("file", "q.cu", b"__global__ void k() {}\n")], None,
         422, "bad_directive", None),
        ("directive names another board", alice, lb,
         [("file", "q.cu", b"//!kjudge leaderboard other_board\n" + src)], None, 422,
         "leaderboard_mismatch", "line 1"),
        ("unknown form field", alice, lb + [("gpus", "H200")], f, None, 400, "bad_request", "gpus"),
        ("field sent twice", alice, lb + [("gpu", "B200")], f, None, 400, "bad_request", "twice"),
        ("runner token used to submit", runner, lb, f, None, 403, "forbidden", None),
        ("JSON instead of multipart", alice, None, None, ("{}", "application/json"), 415,
         "unsupported_media_type", None),
        # Parts MHD hands over without a name (this crashed the server once).
        ("a part without Content-Disposition", alice, None, None,
         ("--XyZ\r\nContent-Type: text/plain\r\n\r\nx\r\n--XyZ--\r\n", MP_XYZ), 400, "bad_request", "name"),
        ("a file part with a filename but no name", alice, None, None,
         ("--XyZ\r\nContent-Disposition: form-data; filename=\"q.cu\"\r\n\r\n" + GOOD_SOURCE +
          "\r\n--XyZ--\r\n", MP_XYZ), 400, "bad_request", "name"),
        ("a part without headers", alice, None, None, ("--XyZ\r\n\r\nx\r\n--XyZ--\r\n", MP_XYZ), 400,
         "bad_request", "name"),
        ("a NUL inside a form field", alice, [("leaderboard", "fp8_quant\0evil"), ("gpu", "H200")], f, None,
         400, "bad_request", "NUL"),
        ("a truncated multipart body", alice, None, None,
         ("--XyZ\r\nContent-Disposition: form-data; name=\"gpu\"\r\n\r\nH2", MP_XYZ), 400, "bad_request",
         "malformed"),
    ]


def test_bad_submissions(srv, c, alice, runner):
    for what, token, fields, files, raw, status, code, needle in bad_requests(alice, runner):
        before = srv.rows()
        if isinstance(raw, tuple):
            st, _, data, _ = c.request("POST", "/api/v1/submissions", token=token, body=raw[0].encode(),
                                       headers={"Content-Type": raw[1]})
        elif isinstance(raw, str):
            body, ctype = multipart(fields, files)
            st, _, data, _ = c.request("POST", "/api/v1/submissions", body=body,
                                       headers={"Content-Type": ctype, "Authorization": raw})
        else:
            st, _, data, _ = c.submit(token, fields, files)
        check(st == status, "%s -> %d" % (what, status), (st, data))
        check(is_error(data, code), "%s -> error code %s" % (what, code), data)
        if needle is not None and is_error(data, code):
            check(needle in data["error"]["message"], "%s: message mentions %r" % (what, needle),
                  data["error"]["message"])
        check(srv.rows() == before, "%s leaves the submissions table unchanged" % what)


def test_bom(srv, c, alice):
    """A source starting with a UTF-8 byte-order mark is stored without it."""
    # B200: the runner flow below expects only its own job queued for H200.
    st, _, data, _ = c.submit(alice, [("leaderboard", "fp8_quant"), ("gpu", "B200")],
                              [("file", "bom.cu", b"\xef\xbb\xbf" + GOOD_SOURCE.encode())])
    if not check(st == 202, "a source with a byte-order mark -> 202", (st, data)):
        return
    row = srv.row(data["id"])
    check(bytes(row["source"]) == GOOD_SOURCE.encode(), "the byte-order mark is not stored",
          bytes(row["source"])[:8])
    check(row["source_sha256"] == hashlib.sha256(GOOD_SOURCE.encode()).hexdigest(),
          "the hash is the hash of the source without the mark", row["source_sha256"])
    st, _, data, _ = c.submit(alice, [("leaderboard", "fp8_quant"), ("gpu", "B200")],
                              [("file", "bom.cu", b"\xef\xbb\xbf")])
    check(st == 400 and is_error(data, "empty_file"), "a file that is only a byte-order mark is empty",
          (st, data))


def test_directive_board(srv, c, alice):
    src = ("//!kjudge leaderboard fp8_quant\n" + GOOD_SOURCE).encode()
    st, _, data, _ = c.submit(alice, [("gpu", "B200")], [("file", "d.cu", src)])
    check(st == 202 and data.get("leaderboard") == "fp8_quant" and data.get("mode") == "test",
          "the leaderboard can come from a directive; mode defaults to test", (st, data))
    return data.get("id") if isinstance(data, dict) else None


def claim(c, token, gpu="H200"):
    return c.post_json("/api/v1/runner/claim", {"runner": "h200-test", "gpu": gpu, "arch": "sm_90a"}, token)


BOARD = json.load(open(os.path.join(ROOT, "leaderboards", "fp8_quant", "leaderboard.json")))
DEFAULT_MEDIANS = (2000.0, 4000.0, 56000.0)


def geomean(xs):
    """The score the server computes: exp(mean(log)), kept within [min, max] (equal medians give that value)."""
    g = math.exp(sum(math.log(x) for x in xs) / len(xs))
    return min(max(g, min(xs)), max(xs))


def bench_entry(i, median):
    """Benchmark shape i of fp8_quant timed as runner/judge.c reports it."""
    c = BOARD["benchmarks"][i]
    return {"index": i, "shape": {v: c[v] for v in BOARD["vars"]}, "status": "pass", "median_ns": median,
            "mean_ns": median * 1.002, "stdev_ns": median * 0.004, "min_ns": median * 0.99, "max_ns": median * 1.05,
            "q1_ns": median * 0.998, "q3_ns": median * 1.003, "ci_lo_ns": median * 0.999, "ci_hi_ns": median * 1.001,
            "n": 312, "stop_reason": "ci_converged", "floor_ns": 1958.5, "below_floor": False, "wall_s": 0.6,
            "wall_ms_per_call": 1.9, "verified_on_gpu": True}


def result_body(verdict, score=None, mode="test", medians=None, gpu="NVIDIA H200"):
    """A result for GOOD_SOURCE on fp8_quant as kjudge-runner writes it (runner/judge.c).

    Every test shape passes unless the verdict is wrong_answer (test 0 fails). An accepted
    benchmark or leaderboard result times the board's three benchmark shapes: medians given,
    else three equal to score, else DEFAULT_MEDIANS; score_ns is their geometric mean. Test
    mode and failing verdicts have no score. internal_error is what the runner posts when
    the judge itself fails."""
    if verdict == "internal_error":
        return {"verdict": verdict, "message": "test result", "score_ns": None}
    tests = [{"index": i, "shape": {v: c[v] for v in BOARD["vars"]}, "seed": c["seed"], "status": "pass"}
             for i, c in enumerate(BOARD["tests"])]
    if verdict == "wrong_answer":
        tests = [dict(tests[0], status="fail", message="x_q: 1 of 256 elements differ",
                      mismatch={"buffer": "x_q", "count": 1, "total": 256, "max_abs_err": 0.5, "max_rel_err": 0.5,
                                "first": [{"index": [0, 3], "expected": 1.0, "got": 1.5}]})]
    r = {"verdict": verdict, "message": "test result", "mode": mode, "leaderboard": "fp8_quant",
         "compile": {"ok": verdict != "compile_error", "arch": "sm_90a", "log": "COMPILE-LOG-MARKER",
                     "seconds": 0.1, "kernels": []},
         "tests": tests if verdict in ("accepted", "wrong_answer") else [], "benchmarks": [], "score_ns": None,
         "system": {"gpu": gpu, "arch": "sm_90a"}}
    if verdict == "accepted" and mode != "test":
        medians = tuple(medians or ((score,) * 3 if score else DEFAULT_MEDIANS))
        r["benchmarks"] = [bench_entry(i, m) for i, m in enumerate(medians)]
        r["score_ns"] = geomean(medians)
    return r


def test_runner_flow(srv, c, alice, bob, runner, runner2, sid):
    st, _, data, _ = claim(c, alice)
    check(st == 403 and is_error(data, "forbidden"), "a user token cannot claim", (st, data))
    st, _, data, _ = c.post_json("/api/v1/runner/claim", None, runner, raw=b"{not json")
    check(st == 400 and is_error(data, "bad_json"), "claim with bad JSON -> 400", (st, data))
    st, _, data, _ = c.post_json("/api/v1/runner/claim", {"runner": "x"}, runner)
    check(st == 400 and is_error(data, "bad_claim"), "claim without gpu -> 400", (st, data))

    st, _, data, _ = claim(c, runner)
    ok = check(st == 200 and isinstance(data, dict) and "job" in data, "claim -> 200 with a job", (st, data))
    if not ok:
        return
    job = data["job"]
    check(job.get("id") == sid and job.get("submission_id") == sid and job.get("source") == GOOD_SOURCE and
          job.get("leaderboard") == "fp8_quant" and job.get("mode") == "test" and job.get("gpu") == "H200" and
          job.get("file_name") == "quant.cu", "the job carries the oldest submission and its source", job)
    check("secret_seed" not in job, "a test-mode job has no secret seed", job)
    check(srv.row(sid)["status"] == "running", "claim moves the submission to running")
    st, _, got, _ = c.get("/api/v1/submissions/%d" % sid, alice)
    check(st == 200 and got.get("status") == "running" and got.get("started_at"), "GET shows running", got)
    st, _, data, raw = claim(c, runner)
    check(st == 204 and raw == b"", "a second claim -> 204 (nothing queued for H200)", (st, raw))
    st, _, data, _ = claim(c, runner, "MI300")
    check(st == 403 and is_error(data, "gpu_not_allowed") and "H200,B200" in data["error"]["message"],
          "claim for a GPU type the token is not bound to -> 403 naming its types", (st, data))
    job_url = "/api/v1/runner/jobs/%d" % sid
    for tail in ("/events", "/events?attempt=", "/events?attempt=0", "/events?attempt=4", "/events?attempt=1x"):
        st, _, data, _ = c.post_json(job_url + tail, {"event": "compiling", "data": {}}, runner)
        check(st == 400 and is_error(data, "bad_attempt") and "?attempt" in data["error"]["message"],
              "an event with %r -> 400 bad_attempt" % tail, (st, data))

    st, _, data, _ = c.post_json(job_url + "/events?attempt=1", {"event": "compiled", "data": {"ok": True}}, runner)
    check(st == 204, "event -> 204", (st, data))
    st, _, data, _ = c.post_json(job_url + "/events?attempt=1", {"event": "exploded"}, runner)
    check(st == 422 and is_error(data, "bad_event"), "unknown event -> 422", (st, data))
    st, _, data, _ = c.post_json(job_url + "/events?attempt=1", {"event": "test"}, runner2)
    check(st == 409 and is_error(data, "not_held"), "event from another runner -> 409", (st, data))

    # A ?wait=1 started before the result is posted returns as soon as it is.
    waited = {}

    def waiter():
        t0 = time.time()
        waited["resp"] = c.get("/api/v1/submissions/%d?wait=1&timeout=30" % sid, alice, timeout=60)
        waited["secs"] = time.time() - t0

    th = threading.Thread(target=waiter)
    th.start()
    time.sleep(0.5)
    st, _, data, _ = c.post_json(job_url + "/result?attempt=1", {"verdict": "maybe"}, runner)
    check(st == 422 and is_error(data, "bad_verdict"), "an unknown verdict -> 422", (st, data))
    st, _, data, _ = c.post_json(job_url + "/result?attempt=1", {"verdict": "accepted", "score_ns": -1}, runner)
    check(st == 422 and is_error(data, "bad_score"), "a negative score -> 422", (st, data))
    st, _, data, _ = c.post_json(job_url + "/result?attempt=1", result_body("accepted", 1500.0, mode="benchmark"),
                                 runner)
    check(st == 422 and is_error(data, "bad_result") and "mode" in data["error"]["message"],
          "a benchmark-mode result for a test-mode job -> 422 naming the mode", (st, data))
    st, _, data, _ = c.post_json(job_url + "/result", result_body("accepted"), runner)
    check(st == 400 and is_error(data, "bad_attempt"), "a result without ?attempt -> 400", (st, data))
    check(srv.row(sid)["status"] == "running", "refused results change nothing")
    st, _, data, _ = c.post_json(job_url + "/result?attempt=1", result_body("accepted"), runner2)
    check(st == 409 and is_error(data, "not_held"), "result from a runner that does not hold the job -> 409",
          (st, data))
    t_post = time.time()
    st, _, data, _ = c.post_json(job_url + "/result?attempt=1", result_body("accepted"), runner)
    check(st == 200 and data == {"ok": True}, "result -> 200 {ok: true}", (st, data))
    th.join(40)
    w = waited.get("resp")
    check(w is not None and w[0] == 200 and w[2].get("status") == "done" and w[2].get("verdict") == "accepted",
          "a parked ?wait=1 returns the verdict", w)
    if w is not None:
        check(time.time() - t_post < 3.0 and waited["secs"] < 10, "the parked ?wait=1 returned promptly",
              waited.get("secs"))
        check(w[2].get("wait_timed_out") is False, "wait_timed_out is false", w[2])
    row = srv.row(sid)
    check(row["status"] == "done" and row["verdict"] == "accepted" and row["score_ns"] is None and
          json.loads(row["result"])["verdict"] == "accepted" and row["finished_at"], "the row is done", dict(row))

    st, _, data, _ = c.post_json(job_url + "/result?attempt=1", result_body("wrong_answer"), runner)
    check(st == 200 and data == {"ok": True, "duplicate": True}, "a duplicate result is a no-op", (st, data))
    check(srv.row(sid)["verdict"] == "accepted", "the duplicate changed nothing")
    st, _, data, _ = c.post_json("/api/v1/runner/jobs/999999/result?attempt=1", result_body("accepted"), runner)
    check(st == 404 and is_error(data, "not_found"), "result for an unknown job -> 404", (st, data))
    st, _, data, _ = c.post_json(job_url + "/events?attempt=1", {"event": "test"}, runner)
    check(st == 409, "an event for a finished job -> 409", (st, data))

    t0 = time.time()
    st, _, got, _ = c.get("/api/v1/submissions/%d?wait=1" % sid, alice)
    check(st == 200 and got.get("verdict") == "accepted" and time.time() - t0 < 2,
          "?wait=1 on a finished job returns at once", (st, got))
    check(got.get("source") == GOOD_SOURCE and got["result"]["compile"]["log"] == "COMPILE-LOG-MARKER",
          "the owner sees the source and the compile log", got)
    # A test-mode run is not ranked: to anyone but its owner and admins it
    # does not exist (test_admin.py has the whole visibility matrix).
    for who, tok in [("another user", bob), ("an anonymous reader", None)]:
        st, _, pub, raw = c.get("/api/v1/submissions/%d" % sid, tok)
        check(st == 404 and is_error(pub, "not_found") and b"COMPILE-LOG-MARKER" not in raw,
              "%s gets 404 for a test-mode run" % who, (st, pub))
    st, _, ev, _ = c.get("/api/v1/submissions/%d/events" % sid, alice)
    check(st == 200 and [e["event"] for e in ev.get("events", [])] == ["compiled"] and
          ev["events"][0]["data"] == {"ok": True}, "the owner reads the events", ev)
    st, _, ev, _ = c.get("/api/v1/submissions/%d/events" % sid, bob)
    check(st == 404 and is_error(ev, "not_found"), "another user cannot read the events: 404", (st, ev))


def serve_b200(c, runner):
    """A runner asks for B200 work and gives back the job it got, if any: B200
    then has a runner seen, so a ?wait=1 on a queued B200 job parks (for a
    GPU type no runner asked for, it is answered at once with a note)."""
    st, _, data, _ = claim(c, runner, "B200")
    if st == 200:
        job = data["job"]
        c.post_json("/api/v1/runner/jobs/%d/release?attempt=%d" % (job["id"], job["attempt"]), {}, runner)
    return st in (200, 204)


def test_wait_timeout(c, alice, runner, sid_queued):
    st, _, got, _ = c.get("/api/v1/submissions/%d?wait=1&timeout=60" % sid_queued, alice)
    check(st == 200 and got.get("status") == "queued" and
          "no runner has asked for B200 jobs yet" in got.get("note", ""),
          "?wait=1 on a job of a GPU type no runner asked for answers at once with a note", (st, got))
    check(serve_b200(c, runner), "a runner asks for B200 work")
    t0 = time.time()
    st, _, got, _ = c.get("/api/v1/submissions/%d?wait=1&timeout=1" % sid_queued, alice)
    dt = time.time() - t0
    check(st == 200 and got.get("status") == "queued" and got.get("wait_timed_out") is True and 0.8 < dt < 5 and
          "note" not in got, "?wait=1&timeout=1 on a queued job answers after about a second", (st, got, dt))
    st, _, data, _ = c.get("/api/v1/submissions/%d?wait=1&timeout=abc" % sid_queued, alice)
    check(st == 400 and is_error(data, "bad_timeout"), "a bad timeout -> 400", (st, data))


def submit_and_finish(srv, c, token, runner, verdict, score, mode="leaderboard", gpu="H200", medians=None):
    st, _, data, _ = c.submit(token, [("leaderboard", "fp8_quant"), ("gpu", gpu), ("mode", mode)],
                              [("file", "k.cu", GOOD_SOURCE.encode())])
    if not check(st == 202, "submit (%s, %s) -> 202" % (mode, verdict), (st, data)):
        return None, None
    sid = data["id"]
    st, _, job, _ = claim(c, runner, gpu)
    check(st == 200 and job["job"]["id"] == sid, "claim the new job", (st, job))
    job = job["job"] if st == 200 else {}
    body = result_body(verdict, score, mode, medians)
    st, _, data, _ = c.post_json("/api/v1/runner/jobs/%d/result?attempt=%d" % (sid, job.get("attempt", 1)), body,
                                 runner)
    check(st == 200, "post result %s" % verdict, (st, data))
    return sid, job


def test_rankings(srv, c, users, runner):
    alice, bob, carol, dave = users
    secret = srv.secret("fp8_quant")
    check(secret is not None and secret.isdigit(), "the board has a secret seed", secret)
    sid_a, job = submit_and_finish(srv, c, alice, runner, "accepted", 1000.0)
    check(job.get("secret_seed") == secret, "a leaderboard-mode claim carries the secret seed", job)
    submit_and_finish(srv, c, alice, runner, "accepted", 5000.0)        # worse: not alice's best
    sid_b, _ = submit_and_finish(srv, c, bob, runner, "wrong_answer", None)
    sid_c, _ = submit_and_finish(srv, c, carol, runner, "accepted", 2000.0)
    sid_d, _ = submit_and_finish(srv, c, dave, runner, "accepted", 2000.0)
    submit_and_finish(srv, c, bob, runner, "accepted", 100.0, mode="benchmark")  # not ranked

    st, h, data, _ = c.get("/api/v1/leaderboards/fp8_quant/rankings?gpu=H200")
    ok = check(st == 200 and isinstance(data, dict) and isinstance(data.get("rankings"), list),
               "rankings -> 200", (st, data))
    if not ok:
        return
    rows = data["rankings"]
    got = [(r["rank"], r["user"], r["score_ns"], r["submission_id"]) for r in rows]
    want = [(1, "alice", 1000.0, sid_a), (2, "carol", 2000.0, sid_c), (2, "dave", 2000.0, sid_d)]
    check(got == want, "best accepted per user, equal scores share a rank, earlier first", got)
    check("bob" not in [r["user"] for r in rows], "a wrong_answer and a benchmark-mode run are not ranked", rows)
    r0 = rows[0]
    check(r0["submitted_at"].endswith("Z") and len(r0["submitted_at"]) == 20, "submitted_at is ISO 8601 UTC", r0)
    check([s["median_ns"] for s in r0["shapes"]] == [1000.0, 1000.0, 1000.0] and
          r0["shapes"][0]["shape"] == {"T": 256, "H": 4096, "GS": 128}, "per-shape medians", r0["shapes"])
    st, _, data, _ = c.get("/api/v1/leaderboards/fp8_quant/rankings?gpu=B200")
    check(st == 200 and data["rankings"] == [], "rankings are per GPU type", data)
    st, _, data, _ = c.get("/api/v1/leaderboards/fp8_quant/rankings")
    check(st == 400 and is_error(data, "missing_gpu"), "rankings without gpu -> 400", (st, data))
    st, _, data, _ = c.get("/api/v1/leaderboards/fp8_quant/rankings?gpu=A100")
    check(st == 400 and is_error(data, "unknown_gpu"), "rankings for a GPU the board lacks -> 400", (st, data))
    st, _, data, _ = c.get("/api/v1/leaderboards/nope/rankings?gpu=H200")
    check(st == 404 and is_error(data, "unknown_leaderboard"), "rankings of an unknown board -> 404", (st, data))
    st, _, own, _ = c.get("/api/v1/submissions/%d" % sid_a, alice)
    check(all("seed" not in b for b in own["result"]["benchmarks"]),
          "leaderboard-mode benchmark seeds are not shown, even to the owner", own["result"]["benchmarks"])


def test_lists(c, alice, bob):
    st, _, data, _ = c.get("/api/v1/submissions", alice)
    subs = data.get("submissions", []) if isinstance(data, dict) else []
    ids = [s["id"] for s in subs]
    check(st == 200 and len(ids) >= 3 and ids == sorted(ids, reverse=True) and
          all(s["user"] == "alice" for s in subs), "GET /submissions lists the caller's own, newest first", ids)
    st, _, data, _ = c.get("/api/v1/submissions?limit=2", alice)
    check(st == 200 and len(data["submissions"]) == 2, "limit", data)
    st, _, data, _ = c.get("/api/v1/submissions?limit=-1", alice)
    check(st == 400 and is_error(data, "bad_limit"), "a bad limit -> 400", (st, data))
    st, _, data, _ = c.get("/api/v1/submissions", bob)
    check(st == 200 and all(s["user"] == "bob" for s in data["submissions"]), "bob sees only bob's", data)
    st, _, data, _ = c.get("/api/v1/submissions")
    check(st == 401 and is_error(data, "missing_token"), "listing needs a token", (st, data))
    st, _, data, _ = c.get("/api/v1/submissions/999999", alice)
    check(st == 404 and is_error(data, "not_found"), "an unknown submission -> 404", (st, data))
    st, _, data, _ = c.get("/api/v1/submissions/abc", alice)
    check(st == 404, "a non-numeric id -> 404", st)


def test_boards(c):
    st, h, data, raw = c.get("/api/v1/leaderboards")
    boards = data.get("leaderboards", []) if isinstance(data, dict) else []
    fp8 = [b for b in boards if b.get("name") == "fp8_quant"]
    check(st == 200 and len(fp8) == 1, "the list has fp8_quant", data)
    if fp8:
        b = fp8[0]
        check(b["title"] and b["deadline"] == "2027-03-15T00:00:00Z" and b["gpus"] == ["H200", "B200"] and
              b["vars"] == ["T", "H", "GS"] and b["num_tests"] == 5 and b["num_benchmarks"] == 3,
              "list entry fields", b)
    etag = h.get("etag")
    if check(etag is not None, "the list has an ETag"):
        st2, _, _, raw2 = c.get("/api/v1/leaderboards", headers={"If-None-Match": etag})
        check(st2 == 304 and raw2 == b"", "If-None-Match -> 304", st2)
    st, _, d, _ = c.get("/api/v1/leaderboards/fp8_quant")
    ok = check(st == 200 and isinstance(d, dict), "detail -> 200", st)
    if ok:
        check("448" in d.get("description", "") and len(d.get("buffers", [])) == 3 and
              [x["name"] for x in d["buffers"]] == ["x", "x_q", "x_s"], "detail has the description and buffers", d)
        check(d.get("signature") == "(const float* x, float* x_q, float* x_s, int T, int H, int GS)",
              "detail signature", d.get("signature"))
        check(d["tests"][0] == {"T": 1, "H": 256, "GS": 64, "seed": 4242} and len(d["benchmarks"]) == 3,
              "detail shapes and seeds", d.get("tests"))
        check(d["buffers"][1]["atol"] == 1e-3 and d["buffers"][0]["init"]["dist"] == "normal", "detail buffers", d)
    st, _, d, _ = c.get("/api/v1/leaderboards/nope")
    check(st == 404 and is_error(d, "unknown_leaderboard"), "unknown board -> 404", (st, d))


def test_misc(c, alice):
    st, h, d, _ = c.get("/healthz")
    check(st == 200 and d.get("status") == "ok", "healthz", d)
    st, _, d, _ = c.get("/api/v1/me", alice)
    check(st == 200 and d.get("name") == "alice" and d.get("role") == "user", "me", d)
    st, _, d, _ = c.get("/api/v1/nothing-here")
    check(st == 404 and is_error(d, "not_found"), "an unknown path -> 404 JSON", (st, d))
    st, h, d, _ = c.request("DELETE", "/api/v1/submissions")
    check(st == 405 and is_error(d, "method_not_allowed") and "GET" in h.get("allow", ""),
          "a wrong method -> 405 JSON with Allow", (st, d, h.get("allow")))
    st, h, _, raw = c.get("/")
    check(st == 200 and h.get("content-type", "").startswith("text/html") and b"/api/v1/leaderboards" in raw,
          "GET / serves the web page", (st, h))
    st, h, _, _ = c.get("/static/index.html")
    check(st == 200 and h.get("content-type", "").startswith("text/html"), "GET /static/index.html", st)
    for bad in ["/static/../Makefile", "/static/%2e%2e/Makefile", "/static/.hidden", "/static//etc/passwd",
                "/static/nothing.js"]:
        st, _, d, _ = c.get(bad)
        check(st == 404, "static %s -> 404" % bad, st)


def test_openapi(c, used_paths):
    st, _, d, raw = c.get("/api/v1/openapi.json")
    ok = check(st == 200 and isinstance(d, dict) and d.get("openapi", "").startswith("3."),
               "openapi.json parses as OpenAPI 3", st)
    if not ok:
        return
    paths = d.get("paths", {})
    for method, p in used_paths:
        check(p in paths and method.lower() in paths[p], "openapi lists %s %s" % (method, p), sorted(paths))


def test_secret_never_shown(srv, c):
    secret = srv.secret("fp8_quant")
    leaked = [b[:200] for b in c.user_bodies if secret and secret.encode() in b]
    check(secret and not leaked, "the secret seed appears in no user-facing response (%d checked)" %
          len(c.user_bodies), leaked)


def test_shutdown(srv, c, alice, sid_queued):
    """SIGTERM with a parked ?wait=1: the waiter is answered, the server exits 0."""
    got = {}

    def waiter():
        try:
            got["resp"] = c.get("/api/v1/submissions/%d?wait=1&timeout=60" % sid_queued, alice, timeout=30)
        except OSError as e:
            got["error"] = e

    th = threading.Thread(target=waiter)
    th.start()
    time.sleep(0.5)
    rc = srv.stop(signal.SIGTERM)
    th.join(20)
    check(rc == 0, "SIGTERM stops the server with exit code 0", rc)
    r = got.get("resp")
    check(r is not None and r[0] == 200 and r[2].get("status") == "queued",
          "a parked ?wait=1 is answered at shutdown", got)


def test_restart(srv, c, alice, sid):
    admin_before = open(srv.conf).read()
    ok = check(srv.start(), "the server restarts on the same database")
    if not ok:
        return
    st, _, d, _ = c.get("/api/v1/submissions/%d" % sid, alice)
    check(st == 200 and d.get("verdict") == "accepted", "results survive a restart", (st, d))
    check(open(srv.conf).read() == admin_before and srv.printed().count("\n") == 1,
          "the admin token is not regenerated or printed again", srv.printed().count("\n"))


def main():
    if not os.access(BIN, os.X_OK):
        print("FAIL %s is not built (make bin/kjudge-server)" % BIN)
        print("test_api: 0 passed, 1 failed, 0 skipped")
        return 1
    with tempfile.TemporaryDirectory(prefix="kjudge-api-") as tmp:
        srv = Server(tmp)
        if not check(srv.start(), "the server starts", open(os.path.join(tmp, "server.log")).read()[-2000:]
                     if os.path.exists(os.path.join(tmp, "server.log")) else ""):
            print("test_api: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
            return 1
        try:
            run_all(srv)
        finally:
            srv.stop(signal.SIGKILL)
    print("test_api: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


def read_admin_token(srv):
    line = srv.printed().strip()
    conf = open(srv.conf).read()
    mode = os.stat(srv.conf).st_mode & 0o777
    check(len(line) == 64 and ("admin_token = " + line) in conf, "the generated admin token is printed once "
          "and saved in the config file", (line[:8], conf.count("admin_token")))
    check(mode == 0o600, "the config file is mode 0600", oct(mode))
    log = open(os.path.join(srv.tmp, "server.log")).read()
    check(line and line not in log, "the admin token is not in the log")
    return line


def run_all(srv):
    c = Client(srv.port)
    admin = read_admin_token(srv)
    tokens = {}
    for name in ["alice", "bob", "carol", "dave"]:
        rc, out, err = srv.cli("user", "add", name, "--db", srv.db)
        check(rc == 0 and len(out.strip()) == 64 and out.count("\n") == 1, "user add %s prints one token" % name,
              (rc, out, err))
        tokens[name] = out.strip()
    runners = []
    for name in ["h200-0", "h200-1"]:
        rc, out, err = srv.cli("runner", "add", name, "--gpu", "H200,B200", "--db", srv.db)
        check(rc == 0 and len(out.strip()) == 64, "runner add %s" % name, (rc, err))
        runners.append(out.strip())
    alice, bob = tokens["alice"], tokens["bob"]
    runner, runner2 = runners

    test_cli(srv)
    test_serve_refuses(srv)
    test_misc(c, alice)
    sid = test_submit_ok(srv, c, alice)
    test_bad_submissions(srv, c, alice, runner)
    test_bom(srv, c, alice)
    sid_b200 = test_directive_board(srv, c, alice)
    if sid is not None:
        test_runner_flow(srv, c, alice, bob, runner, runner2, sid)
    else:
        skip("runner flow: no submission")
    if sid_b200 is not None:
        test_wait_timeout(c, alice, runner, sid_b200)
    st, _, d, _ = c.get("/api/v1/submissions/%d" % (sid or 1), admin)
    check(st == 200 and d.get("source") == GOOD_SOURCE, "the admin sees any submission's source", (st, d))
    test_rankings(srv, c, [tokens[n] for n in ["alice", "bob", "carol", "dave"]], runner)
    test_lists(c, alice, bob)
    test_boards(c)
    used = [("GET", "/healthz"), ("GET", "/"), ("GET", "/static/{path}"), ("GET", "/api/v1/openapi.json"),
            ("GET", "/api/v1/me"), ("POST", "/api/v1/submissions"), ("GET", "/api/v1/submissions"),
            ("GET", "/api/v1/submissions/{id}"), ("GET", "/api/v1/submissions/{id}/events"),
            ("GET", "/api/v1/leaderboards"), ("GET", "/api/v1/leaderboards/{name}"),
            ("GET", "/api/v1/leaderboards/{name}/rankings"), ("POST", "/api/v1/runner/claim"),
            ("POST", "/api/v1/runner/jobs/{id}/events"), ("POST", "/api/v1/runner/jobs/{id}/result")]
    test_openapi(c, used)
    test_secret_never_shown(srv, c)
    if sid_b200 is not None:
        serve_b200(c, runner)  # seen again within the lease: the wait below parks
        test_shutdown(srv, c, alice, sid_b200)
        if sid is not None:
            test_restart(srv, c, alice, sid)


if __name__ == "__main__":
    sys.exit(main())
