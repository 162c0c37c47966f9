#!/usr/bin/env python3
"""test_rejudge.py - `kjudge admin rejudge` end to end on the CPU
(docs/rejudge.md): the real server and the real runner with the fake GPU
(tests/api/fakegpu.c), which accepts a "fakegpu:verdict=accepted" source at
the median its source names, times $KJUDGE_FAKE_TIME_SCALE, under timing
version $KJUDGE_FAKE_TIMING_VERSION.

- three users' leaderboard submissions are judged at timing version 1 and
  ranked; every refused request (unknown board or GPU, bad or future
  --since, unknown keys, a user's token, a board with nothing to rejudge)
  gets its 4xx and changes nothing;
- a rejudge queues them as the admin's jobs behind a participant's job
  submitted after it (queue positions, and the order they are judged in);
  a second rejudge while it runs is 409;
- a runner at timing version 2 (half the time) judges them one at a time:
  while some are done the rankings are the old ones, and the participant's
  version-2 result is not ranked beside them; when the last is judged the
  rankings are all version 2 (new scores, the participant's entry joined,
  carol's entry whose new judgement failed left); every earlier result is
  in its submission's history (API and CLI);
- a rejudge whose results name two timings fails and swaps nothing; a
  cancelled one ends its queued jobs and swaps nothing.
Ends with "test_rejudge: N passed, N failed, N skipped".
"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import kjdeploy  # noqa: E402
import kjrunner  # noqa: E402
from kjcheck import Counts, check  # noqa: E402
from kjhttp import Client  # noqa: E402
from kjservice import NO_RATE_LIMITS, ROOT  # noqa: E402
from kjtest import GOOD_SOURCE, result_body  # noqa: E402

ADMIN = kjdeploy.ADMIN
KJ = os.path.join(ROOT, "bin", "kjudge")
RJ = "/api/v1/leaderboards/fp8_quant/rejudge"


def source(median, extra=""):
    return GOOD_SOURCE + "// fakegpu:verdict=accepted\n// fakegpu:median_ns=%d\n%s" % (median, extra)


def wait_done(srv, tok, sids, seconds=30):
    t0 = time.time()
    seen = kjrunner.done_at(srv, tok, sids, seconds)
    return check(len(seen) == len(sids), "%d jobs done (waited %.1f s)" % (len(sids), time.time() - t0),
                 sorted(set(sids) - set(seen)))


def rankings(c):
    st, _, d, _ = c.get("/api/v1/leaderboards/fp8_quant/rankings?gpu=H200")
    rows = d.get("rankings", []) if st == 200 and isinstance(d, dict) else None
    return None if rows is None else {r["user"]: round(r["score_ns"]) for r in rows}


def status(c):
    st, _, d, _ = c.get(RJ, ADMIN)
    return d if st == 200 else None


def db(srv, sql, args=()):
    import sqlite3
    con = sqlite3.connect(srv.db, timeout=10)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def counts(srv):
    return db(srv, "SELECT (SELECT count(*) FROM rejudges), (SELECT count(*) FROM submissions)")[0]


def cli(*args):
    env = dict(os.environ, KJUDGE_URL=CTX["url"], KJUDGE_TOKEN=ADMIN, HOME=CTX["tmp"])
    p = subprocess.run([KJ] + list(args), capture_output=True, text=True, timeout=30, env=env)
    return p.returncode, p.stdout + p.stderr


CTX = {}


def test_refused(srv, c, toks):
    before = counts(srv)
    for body, st_want, code, what in [
            ({"gpu": "B300"}, 400, "unknown_gpu", "a GPU type the board does not run on"),
            ({"since": "yesterday"}, 400, "bad_since", "a --since that is no date"),
            ({"since": "2026-02-30"}, 400, "bad_since", "an impossible date"),
            ({"since": "2999-01-01"}, 400, "bad_since", "a --since in the future"),
            ({"gpu": "H200", "force": True}, 400, "bad_request", "an unknown key"),
            ({"gpu": 7}, 400, "bad_request", "a gpu that is not a string")]:
        st, _, d, _ = c.post_json(RJ, body, ADMIN, runner=False)
        check(st == st_want and isinstance(d, dict) and d.get("error", {}).get("code") == code,
              "rejudge with %s -> %d %s" % (what, st_want, code), (st, d))
    st, _, d, _ = c.post_json("/api/v1/leaderboards/nosuch/rejudge", {}, ADMIN, runner=False)
    check(st == 404 and d["error"]["code"] == "unknown_leaderboard", "an unknown board -> 404", (st, d))
    st, _, d, _ = c.post_json(RJ, {}, toks["alice"], runner=False)
    check(st == 403, "a user's token -> 403", (st, d))
    st, _, d, _ = c.get(RJ, toks["alice"])
    check(st == 403, "a user's token cannot read the status -> 403", (st, d))
    st, _, d, _ = c.post_json("/api/v1/leaderboards/closed_quant/rejudge", {}, ADMIN, runner=False)
    check(st == 409 and d["error"]["code"] == "nothing_to_rejudge",
          "a board without ranked submissions -> 409 nothing_to_rejudge", (st, d))
    st, _, d, _ = c.post_json(RJ + "/cancel", {}, ADMIN, runner=False)
    check(st == 409 and d["error"]["code"] == "no_rejudge_running", "cancel with none running -> 409", (st, d))
    rc, out = cli("admin", "rejudge", "fp8_quant", "--since", "last week")
    check(rc != 0 and "bad_since" in out or "not a past date" in out, "the CLI shows the server's refusal", out)
    check(counts(srv) == before, "the refused requests changed nothing (rejudges, submissions)",
          (before, counts(srv)))


def test_rejudge(srv, c, toks, rtok, tmp):
    subs = {}
    for user, med, extra in [("alice", 100000, ""), ("bob", 200000, ""),
                             ("carol", 300000, "// fakegpu:verdict_v2=runtime_error\n")]:
        subs[user] = kjrunner.submit(srv, toks[user], None, mode="leaderboard", source=source(med, extra))
    check(all(subs.values()), "three leaderboard submissions", subs)
    r1 = kjrunner.Runner(os.path.join(tmp, "v1"), CTX["url"], rtok, [], name="fake-v1",
                         env={"KJUDGE_FAKE_JUDGE_S": "0.05"}).start()
    try:
        wait_done(srv, toks["alice"], list(subs.values()))
    finally:
        r1.stop()
    old = rankings(c)
    check(old == {"alice": 100000, "bob": 200000, "carol": 300000}, "ranked at timing version 1", old)
    s = status(c)
    check(s is not None and s["rankings"] == [{"gpu": "H200", "timing": {"protocol": "v2", "version": 1}},
                                              {"gpu": "B200", "timing": None}]
          and s["rejudges"] == [], "the status: the H200 ranking holds v2 version 1, B200's none, no rejudge yet",
          s)
    test_refused(srv, c, toks)

    st, _, d, _ = c.post_json(RJ, {"gpu": "H200", "since": "2000-01-01"}, ADMIN, runner=False)
    ok = check(st == 202 and len(d["rejudges"]) == 1 and d["rejudges"][0]["jobs"]["total"] == 3
               and d["rejudges"][0]["state"] == "running"
               and d["rejudges"][0]["from_timing"] == {"protocol": "v2", "version": 1},
               "rejudge -> 202, three jobs queued, from v2 version 1", (st, d))
    if not ok:
        return
    rid = d["rejudges"][0]["id"]
    st, _, d2, _ = c.post_json(RJ, {}, ADMIN, runner=False)
    check(st == 409 and d2["error"]["code"] == "rejudge_running", "a second rejudge while one runs -> 409",
          (st, d2))
    jobs = [j for (j,) in db(srv, "SELECT id FROM submissions WHERE rejudge_id = ? ORDER BY id", (rid,))]
    owners = db(srv, "SELECT DISTINCT u.name FROM submissions s JOIN users u ON u.id = s.user_id "
                "WHERE rejudge_id = ?", (rid,))
    check(owners == [("admin",)], "the jobs are the operator's (fair share charges the admin)", owners)
    # A participant's job submitted after the rejudge goes first.
    dave = kjrunner.submit(srv, toks["dave"], None, mode="leaderboard", source=source(80000))
    pos = {j: (kjrunner.sub(srv, ADMIN, j) or {}).get("queue_position") for j in jobs + [dave]}
    d_view = kjrunner.sub(srv, toks["dave"], dave) or {}
    check(d_view.get("queue_position") == 1 and sorted(pos[j] for j in jobs) == [2, 3, 4],
          "queue positions: the participant's job 1, the rejudge's 2-4", (d_view.get("queue_position"), pos))

    r2 = kjrunner.Runner(os.path.join(tmp, "v2"), CTX["url"], rtok, [], name="fake-v2",
                         env={"KJUDGE_FAKE_JUDGE_S": "0.6", "KJUDGE_FAKE_TIMING_VERSION": "2",
                              "KJUDGE_FAKE_TIME_SCALE": "0.5"}).start()
    try:
        mid_seen, t0 = False, time.time()
        while time.time() - t0 < 30:
            a = status(c)
            cur = a["rejudges"][0] if a else None
            if cur and cur["state"] == "running" and cur["jobs"]["done"] >= 1:
                rk = rankings(c)
                b = status(c)["rejudges"][0]
                if b["state"] == "running":  # the rankings were read while it ran
                    mid_seen = True
                    check(rk == old, "while %d of 3 jobs are done the rankings are the old ones, and "
                          "dave's version-2 result is not ranked beside them" % b["jobs"]["done"], rk)
                    st, _, dd, _ = c.get("/api/v1/submissions/%d/detail" % dave, toks["dave"])
                    check(st == 200 and dd.get("rank") is None
                          and dd.get("timing") == {"protocol": "v2", "version": 2}
                          and dd.get("ranking_timing") == {"protocol": "v2", "version": 1},
                          "dave's detail says why it is not ranked yet (its timing, the ranking's)",
                          {k: (dd or {}).get(k) for k in ("rank", "timing", "ranking_timing")})
                    break
            if cur and cur["state"] != "running":
                break
            time.sleep(0.05)
        check(mid_seen, "the status showed a rejudge partly done (polled %.1f s)" % (time.time() - t0))
        wait_done(srv, ADMIN, jobs + [dave])
    finally:
        r2.stop()
    order = db(srv, "SELECT id FROM submissions WHERE id IN (%s) ORDER BY started_at, claimed_ms, id"
               % ",".join(str(j) for j in jobs + [dave]))
    check(order[0][0] == dave, "the participant's job was judged before the rejudge's", order)
    s = status(c)
    cur = s["rejudges"][0]
    check(cur["state"] == "swapped" and cur["to_timing"] == {"protocol": "v2", "version": 2}
          and cur["jobs"]["accepted"] == 2 and cur["jobs"]["not_accepted"] == 1
          and s["rankings"][0]["timing"] == {"protocol": "v2", "version": 2},
          "the rejudge swapped: the ranking holds v2 version 2", s)
    check(len(cur["entries"]) == 3 and {e["submission"] for e in cur["entries"]} == set(subs.values()),
          "the status lists each entry with its new verdict", cur.get("entries"))
    new = rankings(c)
    check(new == {"alice": 50000, "bob": 100000, "dave": 40000},
          "rankings after the swap: the new scores, dave joined, carol (runtime_error now) left", new)
    mixed = db(srv, "SELECT count(*) FROM submissions WHERE id IN (?, ?, ?) AND timing_version != 2",
               (subs["alice"], subs["bob"], dave))
    check(mixed == [(0,)], "every ranked entry was measured with version 2", mixed)
    carol = kjrunner.sub(srv, toks["carol"], subs["carol"]) or {}
    check(carol.get("verdict") == "runtime_error", "carol's submission now has its new verdict", carol.get("verdict"))
    st, _, dd, _ = c.get("/api/v1/submissions/%d/detail" % dave, toks["dave"])
    check(st == 200 and (dd.get("rank") or {}).get("rank") == 1 and dd.get("timing") == dd.get("ranking_timing"),
          "dave's detail: ranked first now, at the ranking's timing", dd.get("rank") if dd else st)
    for user in ("alice", "carol"):
        st, _, h, _ = c.get("/api/v1/submissions/%d/history" % subs[user], toks[user])
        hist = h.get("history", []) if st == 200 else []
        check(len(hist) == 1 and hist[0]["verdict"] == "accepted"
              and hist[0]["timing"] == {"protocol": "v2", "version": 1} and hist[0]["rejudge"] == rid
              and hist[0]["result"]["timing"]["version"] == 1,
              "%s's history keeps the version-1 result (score %s)" % (user, hist[0]["score_ns"] if hist else None),
              (st, h))
    st, _, h, _ = c.get("/api/v1/submissions/%d/history" % subs["alice"], toks["bob"])
    check(st == 404, "another user's history -> 404", st)
    rc, out = cli("admin", "rejudge", "--status", "fp8_quant")
    check(rc == 0 and "ranking on H200: timing v2 version 2" in out and "swapped" in out,
          "kjudge admin rejudge --status", out)


def claim_and_post(c, rtok, version):
    """Claim one job by hand and post it accepted at timing version."""
    st, _, d, _ = c.post_json("/api/v1/runner/claim", {"runner": "hand", "gpu": "H200", "arch": "sm_90a"}, rtok)
    if st != 200:
        return None
    job = d["job"]
    body = result_body("accepted", 50000.0, mode="leaderboard")
    body["timing"] = {"protocol": "v2", "version": version, "wall_s": 1.0}
    st, _, d, _ = c.post_json("/api/v1/runner/jobs/%d/result?attempt=%d" % (job["id"], job["attempt"]), body, rtok)
    return job["id"] if st == 200 else None


def test_failed_and_cancelled(srv, c, toks, rtok):
    before = rankings(c)
    rc, out = cli("admin", "rejudge", "fp8_quant", "--gpu", "H200")
    check(rc == 0 and "queued" in out, "kjudge admin rejudge fp8_quant --gpu H200", out)
    st, _, d, _ = c.post_json("/api/v1/runner/claim", {"runner": "hand", "gpu": "H200", "arch": "sm_90a"}, rtok)
    if check(st == 200, "claim a rejudge job by hand", st):
        job = d["job"]
        path = "/api/v1/runner/jobs/%d/result?attempt=%d" % (job["id"], job["attempt"])
        for bad in (0, -1, 1.5, "2", 2000000):
            body = result_body("accepted", 50000.0, mode="leaderboard")
            body["timing"] = {"protocol": "v2", "version": bad, "wall_s": 1.0}
            st, _, d, _ = c.post_json(path, body, rtok)
            check(st == 422, "a result naming timing version %r -> 422" % (bad,), (st, d))
        check(db(srv, "SELECT status FROM submissions WHERE id = ?", (job["id"],)) == [("running",)],
              "and the job is still running, nothing stored")
        body = result_body("accepted", 50000.0, mode="leaderboard")
        body["timing"] = {"protocol": "v2", "version": 2, "wall_s": 1.0}
        st, _, d, _ = c.post_json(path, body, rtok)
        check(st == 200, "the same job posted at version 2 -> 200", (st, d))
    got = [claim_and_post(c, rtok, v) for v in (3, 3)]
    check(all(got), "its other two jobs judged by hand at version 3", got)
    s = status(c)["rejudges"][0]
    check(s["state"] == "failed" and "more than one timing" in (s["reason"] or ""),
          "results at two timings: the rejudge failed", s)
    check(rankings(c) == before, "and nothing was swapped", rankings(c))
    st, _, d, _ = c.post_json(RJ, {}, ADMIN, runner=False)
    check(st == 202, "a new rejudge after a failed one -> 202", (st, d))
    claim_and_post(c, rtok, 3)
    rc, out = cli("admin", "rejudge", "--cancel", "fp8_quant")
    check(rc == 0 and "cancelled" in out, "kjudge admin rejudge --cancel fp8_quant", out)
    s = status(c)["rejudges"][0]
    ended = [e for e in s["entries"] if e["verdict"] == "internal_error"]
    check(s["state"] == "cancelled" and s["jobs"]["queued"] == 0 and s["jobs"]["done"] == 3
          and s["jobs"]["accepted"] == 1 and len(ended) == 2 and "cancelled" in (s["reason"] or ""),
          "cancelled: its two queued jobs ended as internal_error, the judged one kept", s)
    check(rankings(c) == before and status(c)["rankings"][0]["timing"]["version"] == 2,
          "a cancelled rejudge swaps nothing (the ranking stays at version 2)", rankings(c))
    st, _, d, _ = c.post_json("/api/v1/runner/claim", {"runner": "hand", "gpu": "H200", "arch": "sm_90a"}, rtok)
    check(st == 204, "no job of the cancelled rejudge is left to claim", st)


def main():
    if not kjrunner.built() or not os.access(KJ, os.X_OK):
        print("FAIL build/kjudge-runner-fakegpu or bin/kjudge is not built\n"
              "test_rejudge: 0 passed, 1 failed, 0 skipped")
        return 1
    with tempfile.TemporaryDirectory(prefix="kjudge-rejudge-") as tmp:
        boards = os.path.join(tmp, "boards")
        import shutil
        shutil.copytree(os.path.join(ROOT, "leaderboards", "fp8_quant"), os.path.join(boards, "fp8_quant"))
        shutil.copytree(os.path.join(ROOT, "leaderboards", "fp8_quant"), os.path.join(boards, "closed_quant"))
        p = os.path.join(boards, "closed_quant", "leaderboard.json")
        spec = json.load(open(p))
        spec["name"] = "closed_quant"
        json.dump(spec, open(p, "w"))
        srv = kjdeploy.Server(os.path.join(tmp, "srv"), extra=NO_RATE_LIMITS + ["--leaderboards", boards])
        if check(srv.start(), "the server starts"):
            try:
                CTX.update(url="http://127.0.0.1:%d" % srv.port, tmp=tmp)
                c = Client(srv.port)
                toks = {u: srv.user(u) for u in ("alice", "bob", "carol", "dave")}
                rtok = srv.runner_token("gpuhost")
                try:
                    test_rejudge(srv, c, toks, rtok, tmp)
                    test_failed_and_cancelled(srv, c, toks, rtok)
                except OSError as e:
                    check(False, "the server answers", e)
            finally:
                if Counts.failed or srv.proc.poll() is not None:
                    print("server exit: %r; log (end):\n%s" % (srv.proc.poll(), srv.server_log()[-1500:]))
                srv.stop()
    print("test_rejudge: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
