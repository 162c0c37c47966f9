#!/usr/bin/env python3
"""test_cli_api.py - the API the command-line client needs, over real HTTP.

Starts bin/kjudge-server on copies of fp8_quant (one open, one whose
deadline has passed, one with "public_reference": true), then checks:
the gpu and mode directives (used when the request has no such field, a
field that disagrees is a 422 naming the line); GET /api/v1/submissions
with its filters (leaderboard, gpu, mode, verdict, an admin's user) and
its cursor (pages in order, no repeats, stable while submissions arrive,
every bad argument a 400); a board's files (template, description, the
reference only when public, published or asked by an admin; types,
Content-Disposition, ETag); withdrawing a submission (owner only,
idempotent, out of the rankings, 409 while queued, when not ranked or
after the deadline); the admin's GET /users and GET /stats against the
database. Python 3 standard library only; ends with "test_cli_api: N
passed, N failed, N skipped" and exits 1 on failure.
"""
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check  # noqa: E402
from kjhttp import Client  # noqa: E402
from kjservice import ROOT, BIN  # noqa: E402
from kjtest import is_error, result_body, GOOD_SOURCE  # noqa: E402
from kjtest import Server, claim  # noqa: E402
from kjcli import BOARD_DIR, copy_board  # noqa: E402

CLOSED = "closed_quant"   # deadline passed
PUBREF = "pubref_quant"   # "public_reference": true


def db_query(srv, sql, args=()):
    con = sqlite3.connect(srv.db, timeout=10)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def submit(c, token, fields, source=GOOD_SOURCE, name="k.cu"):
    st, _, d, _ = c.submit(token, fields, [("file", name, source.encode())])
    return st, d


def new_sub(c, token, board="fp8_quant", gpu="H200", mode="test"):
    st, d = submit(c, token, [("leaderboard", board), ("gpu", gpu), ("mode", mode)])
    check(st == 202, "submit %s %s %s -> 202" % (board, gpu, mode), (st, d))
    return d.get("id") if st == 202 else None


def finish(c, runner, sid, gpu, verdict="accepted", score=None, mode="test"):
    """Claim jobs of gpu until sid comes up; others get wrong_answer. True when sid was judged."""
    for _ in range(100):
        job = claim(c, runner, gpu)
        if job is None:
            return False
        url = "/api/v1/runner/jobs/%d/result?attempt=%d" % (job["id"], job["attempt"])
        if job["id"] != sid:
            c.post_json(url, result_body("wrong_answer", mode=job["mode"], gpu="NVIDIA " + gpu), runner)
            continue
        st, _, _, _ = c.post_json(url, result_body(verdict, score, mode, gpu="NVIDIA " + gpu), runner)
        return st == 200
    return False


# ---------------------------------------------------------------------------
# gpu and mode directives
# ---------------------------------------------------------------------------

def test_directives(srv, c, alice):
    src = "//!kjudge leaderboard fp8_quant\n//!kjudge gpu B200\n//!kjudge mode benchmark\n" + GOOD_SOURCE
    st, d = submit(c, alice, [], src)
    check(st == 202 and d.get("gpu") == "B200" and d.get("mode") == "benchmark" and
          d.get("leaderboard") == "fp8_quant", "board, gpu and mode all from directives", (st, d))
    st, d = submit(c, alice, [("gpu", "B200"), ("mode", "benchmark")], src)
    check(st == 202, "fields that agree with the directives are fine", (st, d))
    before = srv.rows()
    for fields, code, needle in [
            ([("gpu", "H200")], "gpu_mismatch", "line 2: the file names gpu 'B200' but the request says 'H200'"),
            ([("mode", "test")], "mode_mismatch", "line 3: the file names mode 'benchmark'"),
            ([("leaderboard", "fp8_quant"), ("mode", "leaderboard")], "mode_mismatch", "'leaderboard'")]:
        st, d = submit(c, alice, fields, src)
        check(st == 422 and is_error(d, code) and needle in d["error"]["message"],
              "%s -> 422 %s naming the line" % (fields, code), (st, d))
    st, d = submit(c, alice, [], "//!kjudge leaderboard fp8_quant\n//!kjudge mode fast\n" + GOOD_SOURCE)
    check(st == 422 and is_error(d, "bad_directive") and d["error"]["message"].startswith("line 2: mode"),
          "a bad mode line -> 422 bad_directive naming line 2", (st, d))
    st, d = submit(c, alice, [], "//!kjudge leaderboard fp8_quant\n//!kjudge gpu A100\n" + GOOD_SOURCE)
    check(st == 422 and is_error(d, "unknown_gpu") and "A100" in d["error"]["message"],
          "a gpu line naming a GPU the board lacks -> 422 unknown_gpu", (st, d))
    st, d = submit(c, alice, [], "//!kjudge leaderboard fp8_quant\n" + GOOD_SOURCE)
    check(st == 400 and is_error(d, "missing_gpu") and "//!kjudge gpu" in d["error"]["message"],
          "no gpu anywhere -> 400 missing_gpu mentioning the directive", (st, d))
    check(srv.rows() == before, "refused submissions store nothing")
    st, d = submit(c, alice, [("leaderboard", "fp8_quant"), ("gpu", "H200")],
                   "//!kjudge mode benchmark\n" + GOOD_SOURCE)
    check(st == 202 and d.get("mode") == "benchmark" and d.get("gpu") == "H200",
          "a mode line alone sets the mode (gpu from the field)", (st, d))


# ---------------------------------------------------------------------------
# GET /submissions: filters and cursor
# ---------------------------------------------------------------------------

def ids_of(d):
    return [s["id"] for s in d.get("submissions", [])] if isinstance(d, dict) else None


def walk(c, token, first):
    """Follow next links from first; returns (ids in order, pages, every body)."""
    ids, pages, url = [], 0, first
    while url is not None and pages < 100:
        st, _, d, _ = c.get(url, token)
        if not check(st == 200, "page %s -> 200" % url, (st, d)):
            break
        pages += 1
        ids += ids_of(d)
        url = d.get("next")
    return ids, pages


def test_list(srv, c, t):
    alice, bob, admin, runner = t["alice"], t["bob"], t["admin"], t["runner"]
    made = []
    for gpu, mode, verdict in [("H200", "test", "accepted"), ("H200", "leaderboard", "accepted"),
                               ("B200", "leaderboard", "wrong_answer"), ("H200", "benchmark", None),
                               ("B200", "test", "compile_error")]:
        sid = new_sub(c, alice, gpu=gpu, mode=mode)
        if verdict is not None:
            check(finish(c, runner, sid, gpu, verdict, 100000.0 if verdict == "accepted" else None, mode),
                  "judge %d as %s" % (sid or 0, verdict))
        made.append(sid)
    new_sub(c, bob, gpu="H200", mode="test")

    st, _, d, _ = c.get("/api/v1/submissions?limit=500", alice)
    all_ids = ids_of(d)
    want = [r[0] for r in db_query(srv, "SELECT s.id FROM submissions s JOIN users u ON u.id = s.user_id "
                                        "WHERE u.name = 'alice' ORDER BY s.id DESC")]
    check(st == 200 and all_ids == want and d.get("next") is None and d.get("next_cursor") is None,
          "no filter: all of alice's, newest first, no next page", (all_ids, want, d.get("next")))
    rows = d.get("submissions", [])
    check(rows and all(r.get("withdrawn") is False and r.get("withdrawn_at") is None for r in rows),
          "each row says withdrawn false", rows[:1])

    def q(sql):
        return [r[0] for r in db_query(srv, "SELECT s.id FROM submissions s JOIN users u ON u.id = s.user_id "
                                            "WHERE u.name = 'alice' AND " + sql + " ORDER BY s.id DESC")]
    for query, sql in [("gpu=B200", "s.gpu = 'B200'"), ("mode=leaderboard", "s.mode = 'leaderboard'"),
                       ("verdict=accepted", "s.verdict = 'accepted'"),
                       ("leaderboard=fp8_quant&gpu=H200&mode=test", "s.leaderboard = 'fp8_quant' AND "
                        "s.gpu = 'H200' AND s.mode = 'test'"),
                       ("verdict=compile_error&gpu=B200", "s.verdict = 'compile_error' AND s.gpu = 'B200'"),
                       ("leaderboard=" + CLOSED, "s.leaderboard = '%s'" % CLOSED)]:
        st, _, d, _ = c.get("/api/v1/submissions?" + query, alice)
        got, exp = ids_of(d), q(sql)
        check(st == 200 and got == exp and (query.startswith("leaderboard=" + CLOSED) or got),
              "filter %s" % query, (st, got, exp))

    # Cursor paging: 2 per page through every row, in order, no repeats.
    ids, pages = walk(c, alice, "/api/v1/submissions?limit=2")
    check(ids == all_ids and pages == (len(all_ids) + 1) // 2, "limit=2 pages through everything in order",
          (ids, all_ids, pages))
    # Filters ride along in the next link.
    st, _, d, _ = c.get("/api/v1/submissions?limit=1&gpu=H200", alice)
    nxt = d.get("next") or ""
    check(st == 200 and "gpu=H200" in nxt and "limit=1" in nxt and "cursor=" in nxt and
          d.get("next_cursor") and d["next_cursor"] in nxt, "next keeps the filters and the limit", d)
    ids, _ = walk(c, alice, "/api/v1/submissions?limit=1&gpu=H200")
    check(ids == q("s.gpu = 'H200'"), "filtered pages", ids)
    # Stable while submissions arrive: a page read after inserts is the same page.
    st, _, p1, _ = c.get("/api/v1/submissions?limit=2", alice)
    fresh = [new_sub(c, alice) for _ in range(3)]
    st, _, p2, _ = c.get(p1["next"], alice)
    check(st == 200 and ids_of(p2) == all_ids[2:4], "the second page is unchanged by new submissions",
          (ids_of(p2), all_ids[2:4], fresh))
    check(not set(fresh) & set(ids_of(p2)), "new submissions do not appear in later pages", fresh)
    st, _, d, _ = c.get("/api/v1/submissions?limit=3", alice)
    check(ids_of(d) == sorted(fresh, reverse=True), "a fresh first page starts with them", ids_of(d))

    for query, code in [("cursor=abc", "bad_cursor"), ("cursor=v1.0", "bad_cursor"), ("cursor=v1.-3", "bad_cursor"),
                        ("cursor=v2.5", "bad_cursor"), ("cursor=v1.99999999999999999", "bad_cursor"),
                        ("mode=fast", "bad_filter"), ("verdict=ok", "bad_filter"),
                        ("leaderboard=FP8", "bad_filter"), ("gpu=H%20200", "bad_filter"),
                        ("leaderboard=" + "a" * 64, "bad_filter"), ("limit=0", "bad_limit"),
                        ("limit=x", "bad_limit")]:
        before = srv.rows()
        st, _, d, _ = c.get("/api/v1/submissions?" + query, alice)
        check(st == 400 and is_error(d, code), "?%s -> 400 %s" % (query, code), (st, d))
    check(srv.rows() == before, "bad list requests change nothing")

    # user: only admins name another user.
    st, _, d, _ = c.get("/api/v1/submissions?user=bob", alice)
    check(st == 403 and is_error(d, "forbidden"), "a user cannot list another's", (st, d))
    st, _, d, _ = c.get("/api/v1/submissions?user=alice&limit=500", alice)
    check(st == 200 and ids_of(d) == ids_of(c.get("/api/v1/submissions?limit=500", alice)[2]),
          "user=self is the default", st)
    st, _, d, _ = c.get("/api/v1/submissions?user=alice&limit=500", admin)
    check(st == 200 and ids_of(d) and all(s["user"] == "alice" for s in d["submissions"]) and
          "source_sha256" in d["submissions"][0], "an admin lists alice's", (st, ids_of(d)))
    st, _, d, _ = c.get("/api/v1/submissions?user=*&limit=500", admin)
    every = [r[0] for r in db_query(srv, "SELECT id FROM submissions ORDER BY id DESC")]
    check(st == 200 and ids_of(d) == every, "an admin lists everyone's with user=*", (ids_of(d), every))
    st, _, d, _ = c.get("/api/v1/submissions?user=*&limit=2&mode=test", admin)
    check(st == 200 and "user=*" in (d.get("next") or ""), "user=* rides in next", d.get("next"))
    st, _, d, _ = c.get("/api/v1/submissions?user=nobody", admin)
    check(st == 404 and is_error(d, "unknown_user"), "an unknown user -> 404", (st, d))
    st, _, d, _ = c.get("/api/v1/submissions?user=Bad%20Name", admin)
    check(st == 400 and is_error(d, "bad_filter"), "a malformed user -> 400", (st, d))
    return made


# ---------------------------------------------------------------------------
# A board's files
# ---------------------------------------------------------------------------

def test_files(srv, c, t, boards):
    alice, admin, runner = t["alice"], t["admin"], t["runner"]
    tmpl = open(os.path.join(BOARD_DIR, "template.cu"), "rb").read()
    st, h, _, raw = c.get("/api/v1/leaderboards/fp8_quant/files/template.cu")
    check(st == 200 and raw == tmpl, "template.cu is public and byte for byte the file", (st, len(raw)))
    check(h.get("content-type") == "text/plain; charset=utf-8", "template Content-Type", h.get("content-type"))
    check(h.get("content-disposition") == 'attachment; filename="template.cu"', "template Content-Disposition",
          h.get("content-disposition"))
    etag = h.get("etag")
    if check(etag, "the file has an ETag"):
        st, _, _, raw = c.get("/api/v1/leaderboards/fp8_quant/files/template.cu", headers={"If-None-Match": etag})
        check(st == 304 and raw == b"", "If-None-Match -> 304", st)
    st, h, _, raw = c.request("HEAD", "/api/v1/leaderboards/fp8_quant/files/template.cu")
    check(st == 200 and raw == b"" and h.get("content-length") == str(len(tmpl)), "HEAD works", (st, h))
    desc = open(os.path.join(BOARD_DIR, "description.md"), "rb").read()
    st, h, _, raw = c.get("/api/v1/leaderboards/fp8_quant/files/description.md")
    check(st == 200 and raw == desc and h.get("content-type") == "text/markdown; charset=utf-8" and
          'filename="description.md"' in h.get("content-disposition", ""), "description.md", (st, h))

    ref = open(os.path.join(BOARD_DIR, "reference.cu"), "rb").read()
    url = "/api/v1/leaderboards/fp8_quant/files/reference.cu"
    for who, tok in [("anonymous", None), ("a user", alice), ("a runner", runner)]:
        st, _, d, raw = c.get(url, tok)
        check(st == 403 and is_error(d, "not_published") and ref not in raw,
              "%s cannot read an unpublished reference" % who, (st, d))
    st, _, _, raw = c.get(url, admin)
    check(st == 200 and raw == ref, "an admin reads the reference", st)
    st, _, _, raw = c.get("/api/v1/leaderboards/%s/files/reference.cu" % PUBREF)
    check(st == 200 and raw == ref, "public_reference: anyone reads it", st)

    url = "/api/v1/leaderboards/%s/files/reference.cu" % CLOSED
    st, _, d, _ = c.get(url, alice)
    check(st == 403 and is_error(d, "not_published"), "closed but unpublished: still hidden", (st, d))
    st, _, d, _ = c.post_json("/api/v1/leaderboards/%s/publish" % CLOSED, {}, admin, runner=False)
    check(st == 200, "publish the closed board", (st, d))
    st, _, _, raw = c.get(url, alice)
    check(st == 200 and raw == ref, "after publishing a signed-in user reads the reference", st)
    st, _, d, _ = c.get(url)
    check(st == 401 and is_error(d, "missing_token"), "but not anonymously", (st, d))
    st, _, d, _ = c.get(url, runner)
    check(st == 401 or st == 403, "nor a runner", (st, d))

    for path, status, code in [("/api/v1/leaderboards/fp8_quant/files/leaderboard.json", 404, "unknown_file"),
                               ("/api/v1/leaderboards/fp8_quant/files/generate.cu", 404, "unknown_file"),
                               ("/api/v1/leaderboards/nope/files/template.cu", 404, "unknown_leaderboard")]:
        st, _, d, _ = c.get(path, admin)
        check(st == status and is_error(d, code), "%s -> %d %s" % (path, status, code), (st, d))
    for path in ["/api/v1/leaderboards/fp8_quant/files/../leaderboard.json",
                 "/api/v1/leaderboards/fp8_quant/files/..%2Fleaderboard.json"]:
        st, _, d, raw = c.get(path, admin)
        check(st == 404 and b"ranking" not in raw, "%s -> 404" % path, (st, d))
    os.unlink(os.path.join(boards, PUBREF, "template.cu"))
    st, _, d, _ = c.get("/api/v1/leaderboards/%s/files/template.cu" % PUBREF)
    check(st == 404 and is_error(d, "no_file") and "template.cu" in d["error"]["message"],
          "a board without the file -> 404 no_file", (st, d))


# ---------------------------------------------------------------------------
# Withdrawal
# ---------------------------------------------------------------------------

def rank_ids(c, board="fp8_quant", gpu="H200"):
    st, _, d, _ = c.get("/api/v1/leaderboards/%s/rankings?gpu=%s" % (board, gpu))
    return [(r["user"], r["submission_id"]) for r in d.get("rankings", [])] if st == 200 else None


def test_withdraw(srv, c, t, boards):
    alice, bob, admin, runner = t["alice"], t["bob"], t["admin"], t["runner"]
    best = new_sub(c, alice, mode="leaderboard")
    check(finish(c, runner, best, "H200", "accepted", 50000.0, "leaderboard"), "judge alice's best")
    worse = new_sub(c, alice, mode="leaderboard")
    check(finish(c, runner, worse, "H200", "accepted", 90000.0, "leaderboard"), "judge alice's second")
    check(("alice", best) in (rank_ids(c) or []), "alice's best is ranked", rank_ids(c))
    url = "/api/v1/submissions/%d/withdraw" % best

    for tok, who in [(bob, "another user"), (admin, "an admin")]:
        st, _, d, _ = c.post_json(url, {}, tok, runner=False)
        check(st == 403 and is_error(d, "forbidden"), "%s cannot withdraw it" % who, (st, d))
    st, _, d, _ = c.post_json(url, {"why": "x"}, alice, runner=False)
    check(st == 400 and is_error(d, "bad_request"), "a body other than {} -> 400", (st, d))
    check(db_query(srv, "SELECT withdrawn_at FROM submissions WHERE id = ?", (best,)) == [(None,)],
          "refusals change nothing")

    t0 = int(time.time())
    st, _, d, _ = c.post_json(url, None, alice, raw=b"")
    check(st == 200 and d.get("id") == best and d.get("withdrawn") is True and d.get("already") is False and
          d.get("withdrawn_at"), "the owner withdraws it -> 200", (st, d))
    at = d.get("withdrawn_at")
    row = db_query(srv, "SELECT withdrawn_at, verdict, score_ns, status FROM submissions WHERE id = ?", (best,))
    check(row and row[0][0] is not None and row[0][0] >= t0 and row[0][1:] == ("accepted", 50000.0, "done"),
          "the row is kept, marked withdrawn", row)
    check(rank_ids(c) is not None and ("alice", worse) in rank_ids(c) and best not in [i for _, i in rank_ids(c)],
          "the rankings now show alice's next best", rank_ids(c))
    st, _, d, _ = c.get("/api/v1/submissions/%d" % best, alice)
    check(st == 200 and d.get("withdrawn") is True and d.get("withdrawn_at") == at and
          d.get("verdict") == "accepted", "its owner sees it withdrawn", d)
    st, _, d, _ = c.get("/api/v1/submissions/%d" % best)
    check(st == 404 and is_error(d, "not_found"), "no longer ranked, it is hidden from others", (st, d))
    st, _, d, _ = c.get("/api/v1/submissions/%d/detail" % best, alice)
    check(st == 200 and d.get("rank") is None and d.get("withdrawn") is True, "its detail has no rank", d)
    st, _, d, _ = c.post_json(url, {}, alice, runner=False)
    check(st == 200 and d.get("already") is True and d.get("withdrawn_at") == at,
          "withdrawing again -> 200 already, same time", (st, d))
    st, _, d, _ = c.get("/api/v1/submissions?limit=500", alice)
    mine = [s for s in d.get("submissions", []) if s["id"] == best]
    check(mine and mine[0]["withdrawn"] is True, "the list shows it withdrawn", mine)

    queued = new_sub(c, alice, mode="leaderboard")
    st, _, d, _ = c.post_json("/api/v1/submissions/%d/withdraw" % queued, {}, alice, runner=False)
    check(st == 409 and is_error(d, "not_finished") and "queued" in d["error"]["message"],
          "a queued submission -> 409 not_finished", (st, d))
    test_sub = new_sub(c, alice, mode="test")
    check(finish(c, runner, test_sub, "H200", "accepted", None, "test"), "judge a test run")
    st, _, d, _ = c.post_json("/api/v1/submissions/%d/withdraw" % test_sub, {}, alice, runner=False)
    check(st == 409 and is_error(d, "not_ranked"), "a test-mode run -> 409 not_ranked", (st, d))
    wa = new_sub(c, alice, mode="leaderboard")
    check(finish(c, runner, wa, "H200", "wrong_answer", None, "leaderboard"), "judge a wrong answer")
    st, _, d, _ = c.post_json("/api/v1/submissions/%d/withdraw" % wa, {}, alice, runner=False)
    check(st == 409 and is_error(d, "not_ranked") and "wrong_answer" in d["error"]["message"],
          "a wrong answer -> 409 not_ranked", (st, d))
    for path, code in [("/api/v1/submissions/999999/withdraw", "not_found"),
                       ("/api/v1/submissions/abc/withdraw", "not_found")]:
        st, _, d, _ = c.post_json(path, {}, alice, runner=False)
        check(st == 404 and is_error(d, code), "%s -> 404" % path, (st, d))
    check(db_query(srv, "SELECT count(*) FROM submissions WHERE withdrawn_at IS NOT NULL") == [(1,)],
          "only the one submission is withdrawn")

    # After the deadline the rankings are final.
    p = os.path.join(boards, "fp8_quant", "leaderboard.json")
    spec = json.load(open(p))
    spec["deadline"] = "2020-01-01T00:00:00Z"
    json.dump(spec, open(p, "w"), indent=2)
    st, _, d, _ = c.post_json("/api/v1/admin/reload", {}, admin, runner=False)
    check(st == 200, "reload with the deadline moved into the past", (st, d))
    st, _, d, _ = c.post_json("/api/v1/submissions/%d/withdraw" % worse, {}, alice, runner=False)
    check(st == 409 and is_error(d, "deadline_passed") and "final" in d["error"]["message"],
          "after the deadline -> 409 deadline_passed", (st, d))
    spec["deadline"] = "2027-03-15T00:00:00Z"
    json.dump(spec, open(p, "w"), indent=2)
    st, _, d, _ = c.post_json("/api/v1/admin/reload", {}, admin, runner=False)
    check(st == 200, "reload with the deadline back", (st, d))
    return queued


# ---------------------------------------------------------------------------
# Admin: users and stats
# ---------------------------------------------------------------------------

def test_users_stats(srv, c, t):
    admin, runner = t["admin"], t["runner"]
    st, _, d, raw = c.get("/api/v1/users", admin)
    users = {u["name"]: u for u in d.get("users", [])} if st == 200 else {}
    check(st == 200 and set(users) >= {"alice", "bob", "admin", "h200-0"}, "GET /users lists every account",
          sorted(users))
    check([u["name"] for u in d.get("users", [])] == sorted(users), "users come by name", list(users))
    for name, (total, accepted, pending) in {
            n: db_query(srv, "SELECT count(s.id), coalesce(sum(s.verdict = 'accepted'), 0), "
                             "coalesce(sum(s.status != 'done'), 0) FROM users u LEFT JOIN submissions s "
                             "ON s.user_id = u.id WHERE u.name = ?", (n,))[0]
            for n in ["alice", "bob", "h200-0"]}.items():
        u = users.get(name, {})
        check(u.get("submissions") == {"total": total, "accepted": accepted, "pending": pending},
              "%s's counts match the database" % name, (u.get("submissions"), total, accepted, pending))
    a = users.get("alice", {})
    check(a.get("role") == "user" and a.get("banned") is False and str(a.get("created_at", "")).endswith("Z") and
          str(a.get("last_submission_at", "")).endswith("Z"), "alice's row", a)
    check(users.get("h200-0", {}).get("role") == "runner" and users["h200-0"]["last_submission_at"] is None,
          "the runner's row", users.get("h200-0"))
    st, _, _, _ = c.post_json("/api/v1/users/bob/ban", {}, admin, runner=False)
    st, _, d, _ = c.get("/api/v1/users", admin)
    check([u["banned"] for u in d["users"] if u["name"] == "bob"] == [True], "a ban shows", d)
    c.post_json("/api/v1/users/bob/unban", {}, admin, runner=False)
    hashes = [r[0] for r in db_query(srv, "SELECT token_hash FROM users")]
    check(not any(h.encode() in raw for h in hashes) and b"token" not in raw, "no token or hash is shown")

    st, _, d, raw = c.get("/api/v1/stats", admin)
    if not check(st == 200 and isinstance(d, dict), "GET /stats -> 200", (st, d)):
        return
    subs = d.get("submissions", {})
    total = db_query(srv, "SELECT count(*) FROM submissions")[0][0]
    check(subs.get("total") == total and subs.get("withdrawn") == 1 and subs.get("disqualified") == 0,
          "totals match the database", (subs.get("total"), total, subs.get("withdrawn")))
    groups = db_query(srv, "SELECT leaderboard, mode, CASE WHEN status = 'done' THEN verdict ELSE status END, "
                           "count(*) FROM submissions GROUP BY 1, 2, 3")
    by = subs.get("by_leaderboard", {})
    flat = sorted((b, m, o, n) for b, modes in by.items() for m, outs in modes.items() for o, n in outs.items())
    check(flat == sorted(groups), "by_leaderboard counts every (board, mode, outcome)", (flat, groups))
    check(d.get("users") == db_query(srv, "SELECT count(*) FROM users")[0][0], "user count", d.get("users"))
    queues = {q["gpu"]: q for q in d.get("queues", [])}
    for gpu in ["H200", "B200"]:
        qd, rn, oldest = db_query(srv, "SELECT coalesce(sum(status = 'queued'), 0), coalesce(sum(status = "
                                       "'running'), 0), min(CASE WHEN status = 'queued' THEN created_at END) "
                                       "FROM submissions WHERE gpu = ?", (gpu,))[0]
        q = queues.get(gpu, {})
        check(q.get("queued") == qd and q.get("running") == rn, "%s queue depth" % gpu, (q, qd, rn))
        if oldest is None:
            check(q.get("oldest_queued_age_s") is None, "%s: no queued job, no age" % gpu, q)
        else:
            age = q.get("oldest_queued_age_s")
            check(isinstance(age, (int, float)) and int(time.time()) - oldest - 2 <= age <= int(time.time()) - oldest,
                  "%s: the oldest queued job's age" % gpu, (age, oldest))
    runners = d.get("runners", [])
    r0 = [r for r in runners if r["name"] == "box" and r["gpu"] == "H200"]
    check(r0 and r0[0]["state"] in ("idle", "active") and r0[0]["last_seen"].endswith("Z") and
          r0[0]["last_seen_age_s"] >= 0, "the runner is listed with when it was last seen", runners)
    secret = db_query(srv, "SELECT secret_seed FROM leaderboard_secrets LIMIT 1")[0][0]
    check(secret.encode() not in raw, "no secret seed in the stats")


def test_openapi(c):
    st, _, d, _ = c.get("/api/v1/openapi.json")
    paths = d.get("paths", {}) if st == 200 else {}
    for method, p in [("get", "/api/v1/submissions"), ("post", "/api/v1/submissions/{id}/withdraw"),
                      ("get", "/api/v1/leaderboards/{name}/files/{file}"), ("get", "/api/v1/users"),
                      ("get", "/api/v1/stats")]:
        check(method in paths.get(p, {}), "openapi has %s %s" % (method.upper(), p))
    params = [x.get("name") for x in paths.get("/api/v1/submissions", {}).get("get", {}).get("parameters", [])]
    check(set(params) >= {"limit", "cursor", "leaderboard", "gpu", "mode", "verdict", "user"},
          "openapi lists the list's parameters", params)


def run_all(srv, boards):
    c = Client(srv.port)
    admin = srv.printed().strip()
    t = {"admin": admin}
    for name in ["alice", "bob"]:
        rc, out, err = srv.cli("user", "add", name, "--db", srv.db)
        check(rc == 0, "user add %s" % name, err)
        t[name] = out.strip()
    rc, out, err = srv.cli("runner", "add", "h200-0", "--gpu", "H200,B200", "--db", srv.db)
    check(rc == 0, "runner add", err)
    t["runner"] = out.strip()
    test_directives(srv, c, t["alice"])
    # Drain what the directive test queued so the list test starts clean of queued work.
    for gpu in ["H200", "B200"]:
        while True:
            job = claim(c, t["runner"], gpu)
            if job is None:
                break
            c.post_json("/api/v1/runner/jobs/%d/result?attempt=%d" % (job["id"], job["attempt"]),
                        result_body("wrong_answer", mode=job["mode"], gpu="NVIDIA " + gpu), t["runner"])
    test_list(srv, c, t)
    test_files(srv, c, t, boards)
    test_withdraw(srv, c, t, boards)
    test_users_stats(srv, c, t)
    test_openapi(c)


def main():
    if not os.access(BIN, os.X_OK):
        print("FAIL %s is not built" % BIN)
        print("test_cli_api: 0 passed, 1 failed, 0 skipped")
        return 1
    with tempfile.TemporaryDirectory(prefix="kjudge-cliapi-") as tmp:
        boards = os.path.join(tmp, "boards")
        os.makedirs(boards)
        shutil.copytree(BOARD_DIR, os.path.join(boards, "fp8_quant"))
        copy_board(boards, CLOSED, deadline="2020-01-01T00:00:00Z")
        copy_board(boards, PUBREF, public_reference=True)
        srv = Server(tmp, extra=["--leaderboards", boards])
        if check(srv.start(), "the server starts"):
            try:
                run_all(srv, boards)
            finally:
                srv.stop()
    print("test_cli_api: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
