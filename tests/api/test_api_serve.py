#!/usr/bin/env python3
"""test_api_serve.py - kjudge-server as a program, end to end, over real HTTP.

Each group starts its own bin/kjudge-server on a free loopback port (a
tests/lib Service): the admin token made at first start, the CLI's
refusals, the configurations `serve` refuses, the routes every reader may
use (health, leaderboards, the OpenAPI document, static files), and a
clean shutdown and restart. `python3 tests/api/test_api_serve.py cli` runs
only the groups whose name contains "cli". test_api.py has submissions and
the runner protocol. Python 3 standard library only. Ends with
"test_api_serve: N passed, N failed, N skipped"; exit 1 on failure.
"""
import json
import os
import signal
import sqlite3
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import kjcheck  # noqa: E402
from kjcheck import check  # noqa: E402
from kjhttp import Client  # noqa: E402
from kjservice import ROOT, Service  # noqa: E402
from kjtest import GOOD_SOURCE, is_error, make_runners, make_users, serve_b200, serve_fails, submit_and_finish  # noqa: E402


def run_cli(srv):
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
    """(name, role, GPU types) of every account, read from the database file:
    no route shows a runner's GPU types."""
    con = sqlite3.connect(srv.db, timeout=10)
    try:
        return con.execute("SELECT name, role, runner_gpus FROM users ORDER BY id").fetchall()
    finally:
        con.close()


def bad_conf(srv, tag, text):
    """The config file serve_fails(srv, tag, ...) starts with."""
    d = os.path.join(srv.tmp, "bad-" + tag)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "k.conf"), "w") as f:
        f.write(text)


def run_serve_refuses(srv):
    rc, err = serve_fails(srv, "port", [])
    check(rc == 1 and "cannot listen" in err, "serve on a port in use exits 1", (rc, err[-300:]))
    bad_conf(srv, "conf", "# comment\nadmin_tokn = 0123456789abcdef0123\n")
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
    bad_conf(srv, "htconf", "max_conns_per_ip = 10\nheader_timeout = 1 min\n")
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


def run_misc(c, alice):
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


def run_boards(c):
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


def run_openapi(c, used_paths):
    st, _, d, raw = c.get("/api/v1/openapi.json")
    ok = check(st == 200 and isinstance(d, dict) and d.get("openapi", "").startswith("3."),
               "openapi.json parses as OpenAPI 3", st)
    if not ok:
        return
    paths = d.get("paths", {})
    for method, p in used_paths:
        check(p in paths and method.lower() in paths[p], "openapi lists %s %s" % (method, p), sorted(paths))


def run_shutdown(srv, c, alice, sid_queued):
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


def run_restart(srv, c, alice, sid):
    admin_before = open(srv.conf).read()
    ok = check(srv.start(), "the server restarts on the same database")
    if not ok:
        return
    st, _, d, _ = c.get("/api/v1/submissions/%d" % sid, alice)
    check(st == 200 and d.get("verdict") == "accepted", "results survive a restart", (st, d))
    check(open(srv.conf).read() == admin_before and srv.printed().count("\n") == 1,
          "the admin token is not regenerated or printed again", srv.printed().count("\n"))


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


# ---------------------------------------------------------------------------
# Groups: each starts its own server and runs alone
# ---------------------------------------------------------------------------

def test_admin_token():
    with Service(prefix="kjudge-api-") as s:
        read_admin_token(s.server)


def test_cli():
    with Service(prefix="kjudge-api-") as s:
        make_users(s.server, "alice")
        make_runners(s.server, "h200-0", "h200-1")
        run_cli(s.server)


def test_serve_refuses():
    with Service(prefix="kjudge-api-") as s:
        run_serve_refuses(s.server)


USED_PATHS = [("GET", "/healthz"), ("GET", "/"), ("GET", "/static/{path}"), ("GET", "/api/v1/openapi.json"),
              ("GET", "/api/v1/me"), ("POST", "/api/v1/submissions"), ("GET", "/api/v1/submissions"),
              ("GET", "/api/v1/submissions/{id}"), ("GET", "/api/v1/submissions/{id}/events"),
              ("GET", "/api/v1/leaderboards"), ("GET", "/api/v1/leaderboards/{name}"),
              ("GET", "/api/v1/leaderboards/{name}/rankings"), ("POST", "/api/v1/runner/claim"),
              ("POST", "/api/v1/runner/jobs/{id}/events"), ("POST", "/api/v1/runner/jobs/{id}/result")]


def test_routes():
    with Service(prefix="kjudge-api-") as s:
        c = Client(s.port)
        alice, = make_users(s.server, "alice")
        run_misc(c, alice)
        run_boards(c)
        run_openapi(c, USED_PATHS)


def test_shutdown_restart():
    """A judged job and a queued B200 job a runner asked for: SIGTERM answers
    the parked ?wait=1 on the queued one; the result survives a restart."""
    with Service(prefix="kjudge-api-") as s:
        srv, c = s.server, Client(s.port)
        alice, = make_users(srv, "alice")
        runner, = make_runners(srv, "h200-0")
        sid, _ = submit_and_finish(c, alice, runner, "accepted", None, mode="test")
        st, _, data, _ = c.submit(alice, [("leaderboard", "fp8_quant"), ("gpu", "B200")],
                                  [("file", "k.cu", GOOD_SOURCE.encode())])
        if not check(st == 202, "a B200 job to wait on -> 202", (st, data)):
            return
        serve_b200(c, runner)  # seen within the lease: the wait below parks
        run_shutdown(srv, c, alice, data["id"])
        if sid is not None:
            run_restart(srv, c, alice, sid)


def main():
    return kjcheck.run_groups("test_api_serve", globals())


if __name__ == "__main__":
    sys.exit(main())
