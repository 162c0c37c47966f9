#!/usr/bin/env python3
"""test_admin.py - publishing sources, reloading leaderboards and the
submission detail, over real HTTP.

Starts bin/kjudge-server on a copy of leaderboards/fp8_quant in a temporary
folder (plus a board whose deadline has passed), then checks: publishing is
refused before the deadline (409) and by non-admins, and afterwards any
signed-in user reads others' sources on that board only; who sees a
submission, as a matrix (owner, another user, anonymous, admin) x
(queued, failed, test-mode accepted, ranked, disqualified, published) over
GET /submissions/{id}, ?wait=1, /detail and /events, every refusal the same
404 as an id that does not exist; the submission
detail (hash, file name, "#k of N", kernels, launches, medians, the diff
against the previous submission, its size cap) and who sees its source and
diff; the rankings cache follows new verdicts and answers 304 to a known
ETag; POST /admin/reload adds, edits, changes and removes boards, refuses
changes to shapes or tolerances and removals of boards with submissions
unless forced, keeps the old set when a file is broken, and serves
requests throughout. Secret seeds never appear in a user-facing body.
Python 3 standard library only; ends with "test_admin: N passed, N failed,
N skipped" and exits 1 on failure.
"""
import hashlib
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check  # noqa: E402
from kjhttp import Client  # noqa: E402
from kjservice import ROOT, BIN  # noqa: E402
from kjtest import is_error, result_body, GOOD_SOURCE  # noqa: E402
from kjtest import Server, claim  # noqa: E402

CLOSED = "closed_quant"  # a copy of fp8_quant whose deadline has passed
# the boards the server's folder starts with (a copy of fp8_quant only, see main)
REPO_BOARDS = ["fp8_quant"]


def sha256(b):
    return hashlib.sha256(b).hexdigest()


def board_file(boards, name):
    return os.path.join(boards, name, "leaderboard.json")


def edit_board(boards, name, fn):
    p = board_file(boards, name)
    with open(p) as f:
        spec = json.load(f)
    fn(spec)
    with open(p, "w") as f:
        json.dump(spec, f, indent=2)


def copy_board(boards, src, dst, **fields):
    shutil.copytree(os.path.join(boards, src), os.path.join(boards, dst))
    edit_board(boards, dst, lambda s: s.update(dict(name=dst, **fields)))


def submit(c, token, board, source, mode="test", gpu="H200", name="k.cu"):
    st, _, d, _ = c.submit(token, [("leaderboard", board), ("gpu", gpu), ("mode", mode)],
                           [("file", name, source.encode())])
    return d["id"] if st == 202 else None


def full_result(verdict, score, mode, medians):
    r = result_body(verdict, score, mode=mode, medians=medians)
    r["compile"]["kernels"] = [{"name": "quant", "lowered": "quant", "registers": 40, "smem_static": 1024,
                                "stack_frame": 16, "spill_stores": 4, "spill_loads": 8, "barriers": 1,
                                "max_threads_per_block": 1024, "secret_seed": "999"}]
    for b in r["benchmarks"]:
        b["launches"] = [{"kernel": "quant", "grid": [b["shape"]["T"], 1, 1], "block": [256, 1, 1], "smem": 0}]
    return r


def judge(c, runner, sid, verdict="accepted", score=None, mode="test", medians=None):
    """Claim until sid comes up; every other job gets wrong_answer."""
    for _ in range(50):
        job = claim(c, runner)
        if job is None:
            return False
        if job["id"] != sid:
            wrong = result_body("wrong_answer", mode=job["mode"])
            wrong["leaderboard"] = job["leaderboard"]
            c.post_json("/api/v1/runner/jobs/%d/result?attempt=%d" % (job["id"], job["attempt"]), wrong, runner)
            continue
        res = full_result(verdict, score, mode, medians)
        res["leaderboard"] = job["leaderboard"]  # the copies of fp8_quant share its shapes
        st, _, _, _ = c.post_json("/api/v1/runner/jobs/%d/result?attempt=%d" % (sid, job["attempt"]),
                                  res, runner)
        return st == 200
    return False


def db_query(srv, sql, args=()):
    con = sqlite3.connect(srv.db, timeout=10)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


# ---------------------------------------------------------------------------

def test_publish(srv, c, t):
    alice, bob, admin, runner = t["alice"], t["bob"], t["admin"], t["runner"]
    src = GOOD_SOURCE + "// alice's closed kernel\n"
    sid = submit(c, alice, CLOSED, src)
    open_sid = submit(c, alice, "fp8_quant", GOOD_SOURCE + "// still secret\n")
    if not check(sid and open_sid, "submissions for the publish test"):
        return
    url = "/api/v1/submissions/%d" % sid
    st, _, d, _ = c.get(url, bob)
    check(st == 404 and is_error(d, "not_found"), "before publishing another user gets 404", (st, d))
    st, _, d, _ = c.get(url + "/detail", bob)
    check(st == 404 and is_error(d, "not_found"), "and 404 for the detail", (st, d))

    st, _, d, _ = c.post_json("/api/v1/leaderboards/fp8_quant/publish", {}, admin, runner=False)
    check(st == 409 and is_error(d, "deadline_not_passed") and "2027-03-15" in d["error"]["message"],
          "publishing before the deadline -> 409 naming it", (st, d))
    check(db_query(srv, "SELECT * FROM published_sources") == [], "a refused publish stores nothing")
    for path, body, tok, status, code in [
            ("/api/v1/leaderboards/%s/publish" % CLOSED, {}, alice, 403, "forbidden"),
            ("/api/v1/leaderboards/nope/publish", {}, admin, 404, "unknown_leaderboard"),
            ("/api/v1/leaderboards/%s/publish" % CLOSED, {"x": 1}, admin, 400, "bad_request")]:
        st, _, d, _ = c.post_json(path, body, tok, runner=False)
        check(st == status and is_error(d, code), "publish %s -> %d %s" % (path, status, code), (st, d))
    st, _, d, _ = c.post_json("/api/v1/leaderboards/%s/publish" % CLOSED, None, admin, raw=b"[")
    check(st == 400 and is_error(d, "bad_json"), "publish with bad JSON -> 400", (st, d))

    st, _, d, _ = c.request("POST", "/api/v1/leaderboards/%s/publish" % CLOSED, token=admin)
    check(st == 200 and d.get("sources_published") is True and d.get("already") is False and d.get("published_at"),
          "publishing after the deadline -> 200", (st, d))
    st, _, d2, _ = c.post_json("/api/v1/leaderboards/%s/publish" % CLOSED, {}, admin, runner=False)
    check(st == 200 and d2.get("already") is True and d2.get("published_at") == d.get("published_at"),
          "publishing again changes nothing", (st, d2))
    st, _, d, _ = c.get(url, bob)
    check(st == 200 and d.get("source") == src and d.get("file_name") == "k.cu" and
          d.get("source_sha256") == sha256(src.encode()), "after publishing another user reads the source", d)
    st, _, d, _ = c.get(url + "/detail", bob)
    check(st == 200 and d.get("source_visible") is True and d.get("source") == src, "and the detail shows it", d)
    for who, tok in [("an anonymous reader", None), ("a runner", runner)]:
        st, _, d, _ = c.get(url, tok)
        check(st == 404 and is_error(d, "not_found"), "%s still gets 404 for an unranked one" % who, (st, d))
    st, _, d, _ = c.get("/api/v1/submissions/%d" % open_sid, bob)
    check(st == 404 and is_error(d, "not_found"), "submissions of an unpublished board stay hidden", (st, d))
    st, _, d, _ = c.get("/api/v1/leaderboards/%s/rankings?gpu=H200" % CLOSED)
    check(st == 200 and d.get("sources_published") is True, "the rankings say the sources are published", d)
    st, _, d, _ = c.get("/api/v1/leaderboards/fp8_quant/rankings?gpu=H200")
    check(st == 200 and d.get("sources_published") is False, "and not for another board", d)
    check(db_query(srv, "PRAGMA user_version") == [(14,)], "the schema is at version 14")


def test_detail(srv, c, t):
    alice, bob, runner = t["alice"], t["bob"], t["runner"]
    v1 = GOOD_SOURCE + "// version 1\nint unused_a;\n"
    v2 = GOOD_SOURCE + "// version 2\nint unused_a;\nint unused_b;\n"
    s1 = submit(c, alice, "fp8_quant", v1, mode="leaderboard")
    ok = judge(c, runner, s1, "accepted", 50000.0, "leaderboard")
    s2 = submit(c, alice, "fp8_quant", v2, mode="leaderboard", name="k2.cu")
    ok = ok and judge(c, runner, s2, "accepted", 3000.0, "leaderboard", medians=(1000.0, 2000.0, 30000.0))
    sb = submit(c, bob, "fp8_quant", GOOD_SOURCE, mode="leaderboard")
    ok = ok and judge(c, runner, sb, "accepted", 40000.0, "leaderboard")
    if not check(s1 and s2 and sb and ok, "three ranked submissions are judged"):
        return
    st, _, d, _ = c.get("/api/v1/submissions/%d/detail" % s2, alice)
    check(st == 200 and d.get("source_sha256") == sha256(v2.encode()) and d.get("file_name") == "k2.cu" and
          d.get("source_bytes") == len(v2) and d.get("source_lines") == v2.count("\n"),
          "detail: hash, file name and size of the source", d)
    check(d.get("rank") == {"rank": 1, "of": 2, "text": "#1 of 2"}, "detail: rank #1 of 2", d.get("rank"))
    k = (d.get("kernels") or [{}])[0]
    check(k.get("registers") == 40 and k.get("smem_static") == 1024 and k.get("spill_stores") == 4 and
          k.get("spill_loads") == 8 and k.get("stack_frame") == 16 and "secret_seed" not in k,
          "detail: registers, shared memory and spills of each kernel", d.get("kernels"))
    shapes = d.get("shapes") or []
    check(len(shapes) == 3 and shapes[0].get("median_ns") == 1000.0 and shapes[2]["launches"][0]["grid"] == [4096, 1, 1]
          and shapes[0]["launches"][0]["block"] == [256, 1, 1] and all("seed" not in s for s in shapes),
          "detail: per-shape medians and launch configurations, no seeds", shapes)
    prev = d.get("previous") or {}
    diff = d.get("diff") or {}
    u = diff.get("unified", "")
    check(prev.get("id") == s1 and prev.get("verdict") == "accepted" and prev.get("score_ns") == 50000.0,
          "detail: the previous submission to the board", prev)
    check(u.startswith("--- a/k.cu (#%d)\n+++ b/k2.cu (#%d)\n@@ " % (s1, s2)) and "\n-// version 1\n" in u and
          "\n+// version 2\n" in u and "\n+int unused_b;\n" in u and diff.get("added") == 2 and diff.get("removed") == 1,
          "detail: a unified diff against it", diff)
    st, _, d, _ = c.get("/api/v1/submissions/%d/detail" % s1, alice)
    check(st == 200 and d.get("rank") is None and d.get("previous") is not None, "a superseded submission has no rank", d.get("rank"))
    st, _, d, _ = c.get("/api/v1/submissions/%d/detail" % sb, alice)
    check(st == 200 and d.get("rank", {}).get("text") == "#2 of 2", "the other user's entry is #2 of 2", d.get("rank"))
    for who, tok in [("another user", bob), ("an anonymous reader", None)]:
        st, _, d, _ = c.get("/api/v1/submissions/%d/detail" % s2, tok)
        check(st == 200 and d.get("source_visible") is False and d.get("rank", {}).get("text") == "#1 of 2" and
              set(d) <= RANKED_DETAIL_KEYS and [x.get("median_ns") for x in d.get("shapes", [])] ==
              [1000.0, 2000.0, 30000.0] and all(set(x) <= {"index", "shape", "median_ns"} for x in d["shapes"]),
              "%s sees only the rankings' fields of a ranked entry" % who, d)
    st, _, d, _ = c.get("/api/v1/submissions/%d/detail" % sb, bob)
    check(st == 200 and d.get("previous") is None and d.get("diff") is None, "a first submission has no diff", d)
    big = v2 + "".join("// line %d\n" % i for i in range(1500))
    s3 = submit(c, alice, "fp8_quant", big)
    st, _, d, _ = c.get("/api/v1/submissions/%d/detail" % s3, alice)
    check(st == 200 and d.get("diff") is None and "1000" in d.get("diff_note", "") and d.get("source") == big and
          d.get("rank") is None and d.get("kernels") == [], "a diff over the cap is left out with a note", d.get("diff_note"))
    for path in ("/api/v1/submissions/999999/detail", "/api/v1/submissions/abc/detail"):
        st, _, d, _ = c.get(path, alice)
        check(st == 404 and is_error(d, "not_found"), "%s -> 404" % path, (st, d))


# What others see of a ranked submission: the fields the rankings show (its language included).
RANKED_KEYS = {"id", "user", "leaderboard", "gpu", "mode", "lang", "status", "verdict", "score_ns", "created_at",
               "started_at", "finished_at", "disqualified", "withdrawn", "withdrawn_at", "result", "urls"}
RANKED_RESULT_KEYS = {"verdict", "mode", "leaderboard", "score_ns", "benchmarks"}
RANKED_DETAIL_KEYS = {"id", "user", "leaderboard", "gpu", "mode", "lang", "status", "verdict", "score_ns", "created_at",
                      "disqualified", "withdrawn", "withdrawn_at", "rank", "shapes", "source_visible"}
STATES = ("queued", "failed", "test_ok", "ranked", "dq", "published")
# Expected view per (state, viewer): "full" (owner's), "source" (published:
# with the source), "ranked" (the rankings' fields), 404 (hidden).
VIEWS = {
    #            owner   other     anonymous admin
    "queued":    ("full", 404,      404,      "full"),
    "failed":    ("full", 404,      404,      "full"),
    "test_ok":   ("full", 404,      404,      "full"),
    "ranked":    ("full", "ranked", "ranked", "full"),
    "dq":        ("full", 404,      404,      "full"),
    "published": ("full", "source", 404,      "full"),
}


def visibility_subs(c, t):
    """dave's submissions in each state of STATES (CLOSED is published by now)."""
    dave, runner, admin = t["dave"], t["runner"], t["admin"]
    src = GOOD_SOURCE + "// dave's kernel\n"
    ids = {"queued": submit(c, dave, "fp8_quant", src, gpu="B200")}  # nothing claims B200 here
    for state, board, mode, verdict, score in [("failed", "fp8_quant", "test", "wrong_answer", None),
                                               ("test_ok", "fp8_quant", "test", "accepted", None),
                                               ("ranked", "fp8_quant", "leaderboard", "accepted", 90000.0),
                                               ("dq", "fp8_quant", "leaderboard", "accepted", 80000.0),
                                               ("published", CLOSED, "test", "accepted", None)]:
        ids[state] = submit(c, dave, board, src, mode=mode)
        if not judge(c, runner, ids[state], verdict, score, mode):
            ids[state] = None
    st, _, _, _ = c.post_json("/api/v1/submissions/%d/disqualify" % (ids["dq"] or 0), {"reason": "copied"}, admin,
                              runner=False)
    check(st == 200 and all(ids.values()), "dave's submissions in every state", (st, ids))
    return ids


def check_view(what, st, d, raw, want, sid, missing, detail):
    if want == 404:
        check(st == 404 and raw == missing.replace(b"999999", str(sid).encode()),
              "%s -> the 404 of an id that does not exist" % what, (st, raw[:200]))
    elif want == "ranked" and detail:
        check(st == 200 and set(d) <= RANKED_DETAIL_KEYS and d.get("source_visible") is False and
              all(set(x) <= {"index", "shape", "median_ns"} for x in d.get("shapes", [])),
              "%s -> the rankings' fields only" % what, (st, d))
    elif want == "ranked":
        res = d.get("result") or {}
        check(st == 200 and set(d) <= RANKED_KEYS and set(res) <= RANKED_RESULT_KEYS and
              all(set(b) <= {"index", "shape", "median_ns"} for b in res.get("benchmarks", [])) and
              res.get("benchmarks"), "%s -> the rankings' fields only" % what, (st, d))
    else:
        ok = st == 200 and d.get("file_name") == "k.cu" and d.get("source", "").endswith("// dave's kernel\n")
        if detail:
            ok = ok and d.get("source_visible") is True
        else:
            ok = ok and ("disqualified_reason" in d) == (want == "full" and d.get("disqualified") is True)
        check(ok, "%s -> %s view" % (what, want), (st, d))


def test_visibility(srv, c, t):
    ids = visibility_subs(c, t)
    if not all(ids.values()):
        return
    viewers = (("owner", t["dave"]), ("other", t["bob"]), ("anonymous", None), ("admin", t["admin"]))
    for path, detail in (("/api/v1/submissions/%d", False), ("/api/v1/submissions/%d/detail", True),
                         ("/api/v1/submissions/%d?wait=1&timeout=0", False)):
        for vi, (viewer, tok) in enumerate(viewers):
            missing = c.get(path % 999999, tok)[3]
            for state in STATES:
                st, _, d, raw = c.get(path % ids[state], tok)
                check_view("%s %s as %s" % (path.split("%d")[1] or "GET", state, viewer), st, d, raw,
                           VIEWS[state][vi], ids[state], missing, detail)
    for vi, (viewer, tok) in enumerate(viewers):
        missing = c.get("/api/v1/submissions/999999/events", tok)[3]
        for state in STATES:
            st, _, d, raw = c.get("/api/v1/submissions/%d/events" % ids[state], tok)
            want = 200 if viewer in ("owner", "admin") else 401 if tok is None else 404
            check(st == want and (want != 404 or raw == missing.replace(b"999999", str(ids[state]).encode())),
                  "/events of %s as %s -> %d" % (state, viewer, want), (st, raw[:200]))
    runner = t["runner"]
    st, _, d, _ = c.get("/api/v1/submissions/%d" % ids["ranked"], runner)
    check(st == 200 and set(d) <= RANKED_KEYS, "a runner sees a ranked submission as anyone does", (st, d))
    st, _, d, _ = c.get("/api/v1/submissions/%d" % ids["published"], runner)
    check(st == 404, "but no published source", (st, d))


def test_rank_cache(srv, c, t):
    alice, runner = t["carol"], t["runner"]
    url = "/api/v1/leaderboards/fp8_quant/rankings?gpu=H200"
    st, h, before, _ = c.get(url)
    etag = h.get("etag")
    st2, h2, _, raw = c.get(url, headers={"If-None-Match": etag})
    check(st == 200 and etag and st2 == 304 and raw == b"", "a known ETag gets 304", (st, etag, st2))
    sid = submit(c, alice, "fp8_quant", GOOD_SOURCE, mode="leaderboard")
    # a shape-2 median above its physical floor (server/result_floor.c), the score below every other
    check(judge(c, runner, sid, "accepted", None, "leaderboard", medians=(100.0, 100.0, 30000.0)),
          "a new best submission is judged")
    st, h, after, _ = c.get(url)
    rows = after.get("rankings", [])
    check(st == 200 and rows and rows[0]["submission_id"] == sid and rows[0]["rank"] == 1 and h.get("etag") != etag,
          "the cached rankings follow a new verdict at once", rows[:1])
    st, _, _, _ = c.get(url, headers={"If-None-Match": etag})
    check(st == 200, "the old ETag no longer matches", st)


def test_reload(srv, c, t, boards):
    admin, alice = t["admin"], t["alice"]
    def rl(body=None, raw=None):
        if body is None and raw is None:  # no body at all
            return c.request("POST", "/api/v1/admin/reload", token=admin)
        return c.post_json("/api/v1/admin/reload", body, admin, runner=False, raw=raw)
    st, _, d, _ = rl({})
    check(st == 200 and d.get("leaderboards") == sorted([CLOSED] + REPO_BOARDS) and
          sorted(d.get("unchanged", [])) == sorted([CLOSED] + REPO_BOARDS) and d.get("forced") is False,
          "reload with nothing changed -> 200", (st, d))
    for body, raw in [({"force": "yes"}, None), ({"x": 1}, None), (None, b"{"), (None, b"null")]:
        st, _, d, _ = rl(body, raw)
        check(st == 400, "reload body %s -> 400" % (body or raw), (st, d))

    copy_board(boards, "fp8_quant", "new_board", title="A new board")
    st, _, d, _ = rl()
    check(st == 200 and d.get("added") == ["new_board"], "a new board is added", (st, d))
    st, _, d, _ = c.get("/api/v1/leaderboards/new_board")
    check(st == 200 and d.get("title") == "A new board", "and served", (st, d))
    check(srv.secret("new_board") is not None, "with its own secret seed")

    with open(board_file(boards, "new_board"), "w") as f:
        f.write("{ broken")
    st, _, d, _ = rl({"force": True})
    check(st == 422 and is_error(d, "bad_leaderboard") and "new_board" in d["error"]["message"],
          "a broken file -> 422 with the loader's message", (st, d))
    st, _, d, _ = c.get("/api/v1/leaderboards/new_board")
    check(st == 200 and d.get("title") == "A new board", "the old set stays live", st)
    shutil.rmtree(os.path.join(boards, "new_board"))
    copy_board(boards, "fp8_quant", "new_board", title="A new board")

    def looser(spec):
        for b in spec["buffers"]:
            if b["name"] == "x_q":
                b["atol"] = 1e-2
    edit_board(boards, "fp8_quant", looser)
    before = db_query(srv, "SELECT * FROM leaderboard_secrets ORDER BY leaderboard")
    st, _, d, _ = rl()
    msg = d.get("error", {}).get("message", "") if isinstance(d, dict) else ""
    check(st == 409 and is_error(d, "reload_conflict") and "fp8_quant" in msg and "tolerance of x_q" in msg and
          "force" in msg, "a changed tolerance of a board with submissions -> 409 naming both", (st, d))
    atol = [b["atol"] for b in c.get("/api/v1/leaderboards/fp8_quant")[2]["buffers"] if b["name"] == "x_q"]
    check(atol == [1e-3], "a refused reload changes nothing", atol)
    check(db_query(srv, "SELECT * FROM leaderboard_secrets ORDER BY leaderboard") == before, "not even secrets")
    edit_board(boards, "new_board", lambda s: s["benchmarks"].pop())
    edit_board(boards, CLOSED, lambda s: s.update(title="Closed, renamed"))
    st, _, d, _ = rl({"force": True})
    changed = {x["name"]: x["what"] for x in d.get("changed", [])} if st == 200 else {}
    check(st == 200 and d.get("forced") is True and "tolerance of x_q" in changed.get("fp8_quant", "") and
          "benchmarks changed" in changed.get("new_board", "") and
          [x["name"] for x in d.get("edited", [])] == [CLOSED], "force reloads; changed and edited are listed", (st, d))
    atol = [b["atol"] for b in c.get("/api/v1/leaderboards/fp8_quant")[2]["buffers"] if b["name"] == "x_q"]
    check(atol == [1e-2], "the new tolerance is served", atol)

    edit_board(boards, "new_board", lambda s: s["benchmarks"].pop())
    st, _, d, _ = rl()
    check(st == 200 and [x["name"] for x in d.get("changed", [])] == ["new_board"],
          "a board without submissions changes without force", (st, d))
    sid = submit(c, alice, CLOSED, GOOD_SOURCE)
    shutil.rmtree(os.path.join(boards, CLOSED))
    shutil.rmtree(os.path.join(boards, "new_board"))
    st, _, d, _ = rl()
    msg = d.get("error", {}).get("message", "") if isinstance(d, dict) else ""
    check(st == 409 and CLOSED in msg and "no longer on disk" in msg and "new_board" not in msg,
          "removing a board with submissions needs force", (st, d))
    st, _, d, _ = rl({"force": True})
    check(st == 200 and sorted(d.get("removed", [])) == [CLOSED, "new_board"] and d.get("leaderboards") == REPO_BOARDS,
          "forced: both removed", (st, d))
    check(c.get("/api/v1/leaderboards/%s" % CLOSED)[0] == 404, "a removed board is gone")
    st, _, d, _ = c.get("/api/v1/submissions/%d" % sid, alice)
    check(st == 200 and d.get("leaderboard") == CLOSED, "its submissions can still be read", (st, d))
    st, _, d, _ = c.submit(alice, [("leaderboard", CLOSED), ("gpu", "H200")], [("file", "k.cu", GOOD_SOURCE.encode())])
    check(st == 422 and is_error(d, "unknown_leaderboard"), "and new ones are refused", (st, d))


def test_reload_under_load(srv, c, t, boards):
    """Readers hammer the boards while the set is swapped again and again."""
    admin = t["admin"]
    stop = time.time() + 3
    bad = []

    def reader():
        rc = Client(srv.port)
        while time.time() < stop:
            for p in ("/api/v1/leaderboards", "/api/v1/leaderboards/fp8_quant",
                      "/api/v1/leaderboards/fp8_quant/rankings?gpu=H200", "/api/v1/gpus"):
                st, _, d, _ = rc.get(p)
                if st != 200 or not isinstance(d, dict):
                    bad.append((p, st))
    threads = [threading.Thread(target=reader) for _ in range(3)]
    for th in threads:
        th.start()
    n = 0
    while time.time() < stop:
        st, _, _, _ = c.post_json("/api/v1/admin/reload", {"force": True}, admin, runner=False)
        n += st == 200
    for th in threads:
        th.join()
    check(n > 5 and not bad, "%d reloads while readers ran: every read answered 200" % n, bad[:5])
    check(c.get("/healthz")[0] == 200, "the server is still healthy")


def run_all(srv, boards):
    c = Client(srv.port)
    t = {"admin": srv.printed().strip()}
    for name in ("alice", "bob", "carol", "dave"):
        t[name] = srv.cli("user", "add", name, "--db", srv.db)[1].strip()
    t["runner"] = srv.cli("runner", "add", "r1", "--gpu", "H200", "--db", srv.db)[1].strip()
    test_publish(srv, c, t)
    test_detail(srv, c, t)
    test_rank_cache(srv, c, t)
    test_visibility(srv, c, t)
    test_reload(srv, c, t, boards)
    test_reload_under_load(srv, c, t, boards)
    secrets = [s for (s,) in db_query(srv, "SELECT secret_seed FROM leaderboard_secrets")]
    leaked = [s for s in secrets for body in c.user_bodies if s.encode() in body]
    check(secrets and not leaked, "no secret seed in any user-facing response", leaked[:3])


def main():
    if not os.access(BIN, os.X_OK):
        print("FAIL %s is not built" % BIN)
        print("test_admin: 0 passed, 1 failed, 0 skipped")
        return 1
    with tempfile.TemporaryDirectory(prefix="kjudge-admin-") as tmp:
        boards = os.path.join(tmp, "boards")
        # Only fp8_quant: the reload checks list the exact set of boards, which
        # must not change whenever a board is added to leaderboards/.
        shutil.copytree(os.path.join(ROOT, "leaderboards", "fp8_quant"), os.path.join(boards, "fp8_quant"))
        copy_board(boards, "fp8_quant", CLOSED, deadline="2020-01-01T00:00:00Z")
        srv = Server(tmp, extra=["--leaderboards", boards])
        if check(srv.start(), "the server starts on a copy of fp8_quant"):
            try:
                run_all(srv, boards)
            finally:
                srv.stop()
    print("test_admin: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
