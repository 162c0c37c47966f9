#!/usr/bin/env python3
"""test_tool_modes.py - profile and sanitize modes through a real server
(real SQLite file, loopback HTTP), the runner side played over the runner
protocol with results recorded by a real runner on an H200
(tests/data/tool/*_result.json):

1. requests: mode=profile with shape=N and mode=sanitize with tool=T are
   queued, and the claim hands them to the runner ("shape", "tool"); a
   tool outside sanitize mode, a shape outside profile mode, an unknown
   tool and a shape the board does not have are refused and store nothing;
2. results: the recorded profile and sanitize results are accepted and
   shown; neither has a score nor reaches the rankings; the profile (of
   benchmark shape 2) is refused for a job that asked for shape 0, and
   nothing of it is stored;
3. the artifact: only the job's runner, while it holds the job, uploads it
   (application/octet-stream); its owner and admins download it, others
   and anonymous callers get the 404 of a missing submission; a name the
   mode has no artifact for is refused;
   `kjudge show` renders the summary and the findings, `kjudge artifact`
   writes the report and refuses to overwrite a file without --force;
4. rate limits: rate_limit_profile and rate_limit_sanitize default to 2
   per minute and each answers 429 on its own;
5. a database at schema version 8 (made by this test) migrates to the latest (12) and
   then takes profile submissions (the mode CHECK list is rewritten).
Prints "test_tool_modes: N passed, N failed, N skipped".
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check  # noqa: E402
from kjhttp import Client  # noqa: E402
from kjservice import ROOT, Server  # noqa: E402
from kjtest import GOOD_SOURCE, claim  # noqa: E402

DATA = os.path.join(ROOT, "tests", "data", "tool")


def sub(c, token, mode, extra=()):
    st, _, data, _ = c.submit(token, [("leaderboard", "fp8_quant"), ("gpu", "H200"), ("mode", mode)]
                              + list(extra), [("file", "k.cu", GOOD_SOURCE.encode())])
    return st, data


def recorded(name, job):
    res = json.load(open(os.path.join(DATA, name)))
    res["leaderboard"] = job["leaderboard"]
    return res


def post_result(c, runner, job, res):
    return c.post_json("/api/v1/runner/jobs/%d/result?attempt=%d" % (job["id"], job["attempt"]), res, runner)


def upload(c, token, job, name, data, ctype="application/octet-stream", attempt=None):
    return c.request("POST", "/api/v1/runner/jobs/%d/artifacts/%s?attempt=%d" %
                     (job["id"], name, attempt or job["attempt"]), token=token, body=data,
                     headers={"Content-Type": ctype}, runner=True)


def test_requests(srv, c, t):
    n0 = len(srv.rows())
    for extra, mode, status, code in [
            ([("tool", "racecheck")], "profile", 400, "bad_tool"),
            ([("shape", "1")], "sanitize", 400, "bad_shape"),
            ([("tool", "helgrind")], "sanitize", 400, "bad_tool"),
            ([("shape", "3")], "profile", 422, "bad_shape"),
            ([("shape", "-1")], "profile", 422, "bad_shape"),
            ([("shape", "1x")], "profile", 422, "bad_shape"),
            ([("mode", "profiled")], None, 400, None)]:
        if mode is None:
            st, _, data, _ = c.submit(t["alice"], [("leaderboard", "fp8_quant"), ("gpu", "H200")] + extra,
                                      [("file", "k.cu", GOOD_SOURCE.encode())])
        else:
            st, data = sub(c, t["alice"], mode, extra)
        got = (data or {}).get("error", {}).get("code")
        check(st == status and (code is None or got == code), "%s %s -> %d %s" % (mode, extra, status, code),
              (st, data))
    check(len(srv.rows()) == n0, "refused requests stored nothing")
    st, a = sub(c, t["alice"], "profile", [("shape", "2")])
    st2, b = sub(c, t["alice"], "sanitize", [("tool", "racecheck")])
    check(st == 202 and st2 == 202 and a["mode"] == "profile" and b["mode"] == "sanitize", "both queued", (a, b))
    j1, j2 = claim(c, t["runner"]), claim(c, t["runner"])
    check(j1 and j1["mode"] == "profile" and j1.get("shape") == 2 and "tool" not in j1, "the claim names the shape", j1)
    check(j2 and j2["mode"] == "sanitize" and j2.get("tool") == "racecheck" and "shape" not in j2,
          "the claim names the tool", j2)
    return j1, j2


def test_results(srv, c, t, j1, j2):
    rep = b"NVIDIA Nsight Compute report (test bytes)" * 100
    st = upload(c, t["alice"], j1, "profile.ncu-rep", rep)[0]
    check(st in (401, 403), "a user cannot upload an artifact (%d)" % st)
    st, _, d, _ = upload(c, t["runner"], j1, "profile.ncu-rep", rep, ctype="application/json")
    check(st == 415, "an artifact is application/octet-stream (%d)" % st, d)
    st, _, d, _ = upload(c, t["runner"], j1, "sanitize.log", rep)
    check(st == 404 and d["error"]["code"] == "unknown_artifact", "unknown artifact names are refused", d)
    st, _, d, _ = upload(c, t["runner"], j2, "profile.ncu-rep", rep)
    check(st == 404, "a sanitize job has no profile report", d)
    st, _, d, _ = upload(c, t["runner"], j1, "profile.ncu-rep", rep, attempt=2)
    check(st == 409, "another attempt does not hold the job (%d)" % st, d)
    st, _, d, _ = upload(c, t["runner"], j1, "profile.ncu-rep", b"")
    check(st == 400, "an empty artifact is refused", d)
    st, _, d, _ = upload(c, t["runner"], j1, "profile.ncu-rep", rep)
    check(st == 200 and d.get("bytes") == len(rep), "the runner uploads the report", d)
    # the recorded profile is of benchmark shape 2: a job that asked for shape 0 refuses it
    st, j0 = sub(c, t["alice"], "profile", [("shape", "0")])
    j0 = claim(c, t["runner"]) if st == 202 else None
    check(j0 and j0.get("shape") == 0, "a shape-0 profile job is claimed", j0)
    if j0:
        st, _, d, _ = post_result(c, t["runner"], j0, recorded("profile_result.json", j0))
        msg = ((d or {}).get("error") or {}).get("message", "")
        check(st == 422 and d["error"]["code"] == "bad_result" and
              "the job profiles benchmark shape 0 only" in msg,
              "shape 2's profile for a shape-0 job is refused, naming the shape (%d)" % st, d)
        st, _, p0, _ = c.get("/api/v1/submissions/%d" % j0["id"], t["alice"])
        check(st == 200 and p0.get("status") == "running" and not p0.get("result") and not p0.get("verdict"),
              "and nothing is stored: the job is still running", p0)
    st, _, d, _ = post_result(c, t["runner"], j1, recorded("profile_result.json", j1))
    check(st == 200, "the recorded profile result is accepted for the shape-2 job", d)
    st, _, d, _ = post_result(c, t["runner"], j2, recorded("sanitize_race_result.json", j2))
    check(st == 200, "the recorded sanitize result is accepted", d)
    st, _, d, _ = upload(c, t["runner"], j1, "profile.ncu-rep", rep)
    check(st == 409, "no upload once the job is done (%d)" % st, d)
    st, _, p, _ = c.get("/api/v1/submissions/%d" % j1["id"], t["alice"])
    prof = (p or {}).get("result", {}).get("profile", {})
    check(st == 200 and p["verdict"] == "accepted" and p.get("score_ns") is None, "profile: accepted, no score", p)
    check(prof.get("shapes", [{}])[0].get("launches", [{}])[0].get("kernel") == "quant_fast",
          "the profile summary is stored", prof)
    st, _, s, _ = c.get("/api/v1/submissions/%d" % j2["id"], t["alice"])
    san = (s or {}).get("result", {}).get("sanitize", {})
    check(st == 200 and san.get("tool") == "racecheck" and san.get("errors") == 5, "the findings are stored", san)
    st, _, rk, _ = c.get("/api/v1/leaderboards/fp8_quant/rankings?gpu=H200")
    check(st == 200 and not rk.get("rankings"), "nothing from these modes is ranked", rk)
    url = "/api/v1/submissions/%d/artifacts/profile.ncu-rep" % j1["id"]
    st, h, _, raw = c.get(url, t["alice"])
    check(st == 200 and raw == rep and h.get("content-type") == "application/octet-stream" and
          "attachment" in h.get("content-disposition", ""), "the owner downloads the report", (st, h))
    st, _, _, raw = c.get(url, t["admin"])
    check(st == 200 and raw == rep, "an admin downloads it")
    st_b, _, db, _ = c.get(url, t["bob"])
    st_n, _, dn, _ = c.get(url)
    st_x, _, dx, _ = c.get("/api/v1/submissions/999999/artifacts/profile.ncu-rep", t["bob"])
    check(st_b == 404 and st_n == 404 and db["error"]["code"] == dx["error"]["code"] == "not_found" and
          dn["error"]["code"] == "not_found",
          "others get the 404 of a missing submission", (st_b, db, dx))
    st, _, d, _ = c.get("/api/v1/submissions/%d/artifacts/profile.ncu-rep" % j2["id"], t["alice"])
    check(st == 404, "a sanitize submission has no report", d)


def kj(srv, token, *args, cwd=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KJUDGE_")}
    env.update(KJUDGE_URL="http://127.0.0.1:%d" % srv.port, KJUDGE_TOKEN=token, HOME=cwd or srv.tmp)
    p = subprocess.run([os.path.join(ROOT, "bin", "kjudge")] + list(args), capture_output=True, text=True,
                       env=env, cwd=cwd or srv.tmp, timeout=30)
    return p.returncode, p.stdout, p.stderr


def test_cli(srv, t, j1, j2):
    rc, out, err = kj(srv, t["alice"], "show", str(j1["id"]))
    print(out)
    check(rc == 0 and "profile mode" in out and "profile (Nsight Compute, 1 launches" in out and
          "benchmark 2: T=4096 H=7168 GS=128" in out and "quant_fast  grid (7168, 1, 1)" in out,
          "kjudge show: the profile's shape and launch", (rc, out, err))
    check("at 3630 GB/s" in out and "occupancy 40.8% of 50.0% theoretical" in out and "62 registers" in out and
          "L2 hit 52.4%" in out and "memory-bound" in out and "long_scoreboard 6.31" in out,
          "kjudge show: bandwidth, occupancy, registers, hit rates, roofline, stalls", out)
    rc, out, err = kj(srv, t["alice"], "show", str(j2["id"]))
    print(out)
    check(rc == 0 and "sanitize (racecheck): 5 findings in 1 kind" in out and
          "quant  submission.cu:15 and submission.cu:19  512 hazards" in out,
          "kjudge show: the findings by kind with both lines", (rc, out, err))
    rc, out, err = kj(srv, t["alice"], "artifact", str(j1["id"]))
    path = os.path.join(srv.tmp, "submission-%d-profile.ncu-rep" % j1["id"])
    check(rc == 0 and os.path.exists(path) and os.path.getsize(path) == 4100, "kjudge artifact writes the report",
          (rc, out, err))
    rc, out, err = kj(srv, t["alice"], "artifact", str(j1["id"]))
    check(rc == 2 and "--force" in err, "and does not overwrite it without --force", (rc, err))
    rc, out, err = kj(srv, t["bob"], "artifact", str(j1["id"]), "-o", "-")
    check(rc == 2 and out == "", "bob gets nothing", (rc, out, err))
    rc, out, err = kj(srv, t["alice"], "submit", "x.cu", "--mode", "test", "--tool", "racecheck")
    check(rc == 2 and "--tool goes with --mode sanitize" in err, "submit --tool needs sanitize mode", err)
    # the recorded out-of-bounds read (tests/gpu/tool/oob_read.cu) under memcheck
    st, d = sub(c := Client(srv.port), t["alice"], "sanitize")
    job = claim(c, t["runner"])
    st, _, d, _ = post_result(c, t["runner"], job, recorded("sanitize_oob_result.json", job))
    check(st == 200, "the recorded memcheck result is accepted", d)
    rc, out, err = kj(srv, t["alice"], "show", str(job["id"]))
    print(out)
    check("sanitize (memcheck): 1 finding in 1 kind" in out and "Invalid __global__ read: 1" in out and
          "quant  submission.cu:15  thread (63,0,0) block (3,0,0)  address 0x7f7e41a01600  4 bytes" in out,
          "kjudge show: the memcheck finding with thread, block, address and size", out)


def test_rates(tmp):
    srv = Server(os.path.join(tmp, "rates"), rate_flags=[])
    os.makedirs(srv.tmp, exist_ok=True)
    if not check(srv.start(), "a server with the default rate limits starts"):
        return
    try:
        c = Client(srv.port)
        tok = srv.cli("user", "add", "carol", "--db", srv.db)[1].strip()
        for mode in ("profile", "sanitize"):
            got = [sub(c, tok, mode)[0] for _ in range(3)]
            check(got == [202, 202, 429], "rate_limit_%s: 2 per minute by default" % mode, got)
        st, d = sub(c, tok, "test")
        check(st == 202, "test mode has its own limit", d)
    finally:
        srv.stop()


def test_migration(tmp):
    """A version-8 database (the v1 CHECK list of three modes) migrates."""
    path = os.path.join(tmp, "v8", "var")
    os.makedirs(path)
    db = os.path.join(path, "kjudge.db")
    srv = Server(os.path.join(tmp, "v8"))
    if not check(srv.start(), "a fresh server starts"):
        return
    srv.stop()
    con = sqlite3.connect(db)
    con.execute("PRAGMA writable_schema=ON")
    sql = con.execute("SELECT sql FROM sqlite_master WHERE name='submissions'").fetchone()[0]
    old = sql.replace("'test','benchmark','leaderboard','profile','sanitize'", "'test','benchmark','leaderboard'")
    old = old.replace(", sanitizer TEXT, profile_shape INTEGER", "")
    ver = con.execute("PRAGMA schema_version").fetchone()[0]
    con.execute("UPDATE sqlite_master SET sql=? WHERE name='submissions'", (old,))
    con.execute("PRAGMA schema_version=%d" % (ver + 1))
    con.execute("PRAGMA writable_schema=OFF")
    con.commit()
    con.close()
    con = sqlite3.connect(db)
    check("'leaderboard')" in con.execute("SELECT sql FROM sqlite_master WHERE name='submissions'").fetchone()[0],
          "the test made a three-mode CHECK list")
    con.execute("DROP TABLE artifacts")
    con.execute("PRAGMA user_version=8")
    con.commit()
    con.close()
    # the columns stay (SQLite cannot drop them here); the migration adds them with ALTER, so
    # rebuild a table without them by copying through the three-mode schema
    con = sqlite3.connect(db)
    cols = [r[1] for r in con.execute("PRAGMA table_info(submissions)")]
    con.close()
    if "sanitizer" in cols:
        con = sqlite3.connect(db)
        con.execute("PRAGMA foreign_keys=OFF")
        con.execute("ALTER TABLE submissions DROP COLUMN sanitizer")
        con.execute("ALTER TABLE submissions DROP COLUMN profile_shape")
        if "lang" in cols:  # version 12's
            con.execute("ALTER TABLE submissions DROP COLUMN lang")
        con.commit()
        con.close()
    # and without version 9's objects (the queue's), which a version-8 file lacks
    con = sqlite3.connect(db)
    con.execute("DROP TABLE queue_usage")
    con.execute("DROP TABLE queue_state")
    con.execute("ALTER TABLE submissions DROP COLUMN claimed_ms")
    con.commit()
    con.close()
    if not check(srv.start(), "the server migrates a version-8 database", srv.server_log()[-800:]):
        return
    try:
        c = Client(srv.port)
        tok = srv.cli("user", "add", "dave", "--db", srv.db)[1].strip()
        st, d = sub(c, tok, "profile", [("shape", "0")])
        check(st == 202, "a profile submission is stored after the migration", d)
        con = sqlite3.connect(db)
        check(con.execute("PRAGMA user_version").fetchone()[0] == 14, "schema version 14 (11's runner names, 12's lang, 14's timings and rejudges)")
        check("'sanitize'" in con.execute("SELECT sql FROM sqlite_master WHERE name='submissions'").fetchone()[0],
              "the CHECK list has the new modes")
        con.close()
    finally:
        srv.stop()


def main():
    with tempfile.TemporaryDirectory(prefix="kjudge-toolmodes-") as tmp:
        # One user's tool jobs are claimed here while others of theirs run:
        # fair-prev holds none back (one tool job per user is test_queue.py's).
        srv = Server(os.path.join(tmp, "main"), extra=["--queue-rule", "fair-prev"])
        os.makedirs(srv.tmp, exist_ok=True)
        if check(srv.start(), "the server starts"):
            try:
                c = Client(srv.port)
                t = {"admin": srv.printed().strip()}
                for name in ("alice", "bob"):
                    t[name] = srv.cli("user", "add", name, "--db", srv.db)[1].strip()
                t["runner"] = srv.cli("runner", "add", "h200-0", "--gpu", "H200", "--db", srv.db)[1].strip()
                j1, j2 = test_requests(srv, c, t)
                if j1 and j2:
                    test_results(srv, c, t, j1, j2)
                    test_cli(srv, t, j1, j2)
            finally:
                srv.stop()
        test_rates(tmp)
        test_migration(tmp)
    print("test_tool_modes: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
