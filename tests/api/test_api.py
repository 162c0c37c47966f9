#!/usr/bin/env python3
"""test_api.py - submissions and the runner protocol, end to end, over real HTTP.

Each group starts its own bin/kjudge-server on a free loopback port (a
tests/lib Service), makes the users and runners it needs with the CLI and
drives the API: submissions (good and each kind of bad request, checking
that a rejected request leaves the submissions unchanged), the runner flow
(claim, events, result, duplicates, ?wait=1), rankings and lists.
`python3 tests/api/test_api.py rankings` runs only the groups whose name
contains "rankings". test_api_serve.py has the CLI, the refused
configurations, the routes and shutdown. Python 3 standard library only.
Prints "FAIL ..." per failure and ends with
"test_api: N passed, N failed, N skipped"; exit 1 on failure.
"""
import hashlib
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import kjcheck  # noqa: E402
from kjcheck import check  # noqa: E402
from kjhttp import Client, multipart  # noqa: E402
from kjservice import Service  # noqa: E402
from kjtest import (GOOD_SOURCE, claim_resp as claim, is_error, make_runners, make_users,  # noqa: E402
                    result_body, serve_b200, submit_and_finish)


def admin_token(srv):
    """The admin token serve printed when it made the config file."""
    return srv.printed().strip()


def all_submissions(c, admin):
    """Every submission as an admin lists it."""
    st, _, data, _ = c.get("/api/v1/submissions?user=*&limit=1000", admin)
    return data if st == 200 else ("status", st)


def status_of(c, token, sid):
    st, _, data, _ = c.get("/api/v1/submissions/%d" % sid, token)
    return data.get("status") if st == 200 and isinstance(data, dict) else None


def secret_never_shown(srv, c):
    """No body a user got from c holds the board's secret seed (read from the
    database file: no route shows it)."""
    secret = srv.secret("fp8_quant")
    leaked = [b[:200] for b in c.user_bodies if secret and secret.encode() in b]
    check(secret and not leaked, "the secret seed appears in no user-facing response (%d checked)" %
          len(c.user_bodies), leaked)


# ---------------------------------------------------------------------------
# What the groups run
# ---------------------------------------------------------------------------

def run_submit_ok(c, alice):
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
    status, _, got, _ = c.get("/api/v1/submissions/%d" % sid, alice)
    check(status == 200 and got.get("file_name") == "quant.cu" and
          got.get("source_sha256") == hashlib.sha256(GOOD_SOURCE.encode()).hexdigest(),
          "the submission is committed when the 202 arrives", (status, got))
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


def run_bad_submissions(c, admin, alice, runner):
    for what, token, fields, files, raw, status, code, needle in bad_requests(alice, runner):
        before = all_submissions(c, admin)
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
        check(all_submissions(c, admin) == before, "%s leaves the submissions unchanged" % what)


def run_bom(c, alice):
    """A source starting with a UTF-8 byte-order mark is stored without it."""
    # B200: the runner flow below expects only its own job queued for H200.
    st, _, data, _ = c.submit(alice, [("leaderboard", "fp8_quant"), ("gpu", "B200")],
                              [("file", "bom.cu", b"\xef\xbb\xbf" + GOOD_SOURCE.encode())])
    if not check(st == 202, "a source with a byte-order mark -> 202", (st, data)):
        return
    st, _, got, _ = c.get("/api/v1/submissions/%d" % data["id"], alice)
    check(st == 200 and got.get("source") == GOOD_SOURCE, "the byte-order mark is not stored",
          (st, (got or {}).get("source", "")[:8]))
    check(st == 200 and got.get("source_sha256") == hashlib.sha256(GOOD_SOURCE.encode()).hexdigest(),
          "the hash is the hash of the source without the mark", (got or {}).get("source_sha256"))
    st, _, data, _ = c.submit(alice, [("leaderboard", "fp8_quant"), ("gpu", "B200")],
                              [("file", "bom.cu", b"\xef\xbb\xbf")])
    check(st == 400 and is_error(data, "empty_file"), "a file that is only a byte-order mark is empty",
          (st, data))


def run_directive_board(c, alice):
    src = ("//!kjudge leaderboard fp8_quant\n" + GOOD_SOURCE).encode()
    st, _, data, _ = c.submit(alice, [("gpu", "B200")], [("file", "d.cu", src)])
    check(st == 202 and data.get("leaderboard") == "fp8_quant" and data.get("mode") == "test",
          "the leaderboard can come from a directive; mode defaults to test", (st, data))
    return data.get("id") if isinstance(data, dict) else None


def run_runner_flow(c, alice, bob, runner, runner2, sid):
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
    st, _, got, _ = c.get("/api/v1/submissions/%d" % sid, alice)
    check(st == 200 and got.get("status") == "running", "claim moves the submission to running", (st, got))
    check(st == 200 and got.get("started_at"), "GET shows when it started", got)
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
    check(status_of(c, alice, sid) == "running", "refused results change nothing")
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
    st, _, row, _ = c.get("/api/v1/submissions/%d" % sid, alice)
    check(st == 200 and row.get("status") == "done" and row.get("verdict") == "accepted" and
          row.get("score_ns") is None and row.get("result", {}).get("verdict") == "accepted" and
          row.get("finished_at"), "the submission is done", (st, row))

    st, _, data, _ = c.post_json(job_url + "/result?attempt=1", result_body("wrong_answer"), runner)
    check(st == 200 and data == {"ok": True, "duplicate": True}, "a duplicate result is a no-op", (st, data))
    st, _, row, _ = c.get("/api/v1/submissions/%d" % sid, alice)
    check(st == 200 and row.get("verdict") == "accepted", "the duplicate changed nothing", (st, row))
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


def run_wait_timeout(c, alice, runner, sid_queued):
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


def run_rankings(srv, c, users, runner):
    alice, bob, carol, dave = users
    secret = srv.secret("fp8_quant")
    check(secret is not None and secret.isdigit(), "the board has a secret seed", secret)
    sid_a, job = submit_and_finish(c, alice, runner, "accepted", 100000.0)
    check(job.get("secret_seed") == secret, "a leaderboard-mode claim carries the secret seed", job)
    submit_and_finish(c, alice, runner, "accepted", 500000.0)        # worse: not alice's best
    sid_b, _ = submit_and_finish(c, bob, runner, "wrong_answer", None)
    sid_c, _ = submit_and_finish(c, carol, runner, "accepted", 200000.0)
    sid_d, _ = submit_and_finish(c, dave, runner, "accepted", 200000.0)
    submit_and_finish(c, bob, runner, "accepted", 50000.0, mode="benchmark")  # not ranked

    st, h, data, _ = c.get("/api/v1/leaderboards/fp8_quant/rankings?gpu=H200")
    ok = check(st == 200 and isinstance(data, dict) and isinstance(data.get("rankings"), list),
               "rankings -> 200", (st, data))
    if not ok:
        return
    rows = data["rankings"]
    got = [(r["rank"], r["user"], r["score_ns"], r["submission_id"]) for r in rows]
    want = [(1, "alice", 100000.0, sid_a), (2, "carol", 200000.0, sid_c), (2, "dave", 200000.0, sid_d)]
    check(got == want, "best accepted per user, equal scores share a rank, earlier first", got)
    check("bob" not in [r["user"] for r in rows], "a wrong_answer and a benchmark-mode run are not ranked", rows)
    r0 = rows[0]
    check(r0["submitted_at"].endswith("Z") and len(r0["submitted_at"]) == 20, "submitted_at is ISO 8601 UTC", r0)
    check([s["median_ns"] for s in r0["shapes"]] == [100000.0, 100000.0, 100000.0] and
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


def run_lists(c, alice, bob):
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


# ---------------------------------------------------------------------------
# Groups: each starts its own server and runs alone
# ---------------------------------------------------------------------------

def test_submit():
    with Service(prefix="kjudge-api-") as s:
        srv, c = s.server, Client(s.port)
        alice, = make_users(srv, "alice")
        runner, = make_runners(srv, "h200-0")
        admin = admin_token(srv)
        sid = run_submit_ok(c, alice)
        run_bad_submissions(c, admin, alice, runner)
        run_bom(c, alice)
        run_directive_board(c, alice)
        st, _, d, _ = c.get("/api/v1/submissions/%d" % (sid or 1), admin)
        check(st == 200 and d.get("source") == GOOD_SOURCE, "the admin sees any submission's source", (st, d))
        secret_never_shown(srv, c)


def test_runner_flow():
    with Service(prefix="kjudge-api-") as s:
        srv, c = s.server, Client(s.port)
        alice, bob = make_users(srv, "alice", "bob")
        runner, runner2 = make_runners(srv, "h200-0", "h200-1")
        st, _, data, _ = c.submit(alice, [("leaderboard", "fp8_quant"), ("gpu", "H200"), ("mode", "test")],
                                  [("file", "quant.cu", GOOD_SOURCE.encode())])
        if check(st == 202 and isinstance(data, dict), "submit the job to claim -> 202", (st, data)):
            run_runner_flow(c, alice, bob, runner, runner2, data["id"])
        secret_never_shown(srv, c)


def test_wait_timeout():
    with Service(prefix="kjudge-api-") as s:
        srv, c = s.server, Client(s.port)
        alice, = make_users(srv, "alice")
        runner, = make_runners(srv, "h200-0")
        sid_b200 = run_directive_board(c, alice)
        if sid_b200 is not None:
            run_wait_timeout(c, alice, runner, sid_b200)


def test_rankings():
    with Service(prefix="kjudge-api-") as s:
        srv, c = s.server, Client(s.port)
        users = make_users(srv, "alice", "bob", "carol", "dave")
        runner, = make_runners(srv, "h200-0")
        run_rankings(srv, c, users, runner)
        secret_never_shown(srv, c)


def test_lists():
    with Service(prefix="kjudge-api-") as s:
        srv, c = s.server, Client(s.port)
        alice, bob = make_users(srv, "alice", "bob")
        for token, n in ((alice, 3), (bob, 1)):
            for _ in range(n):
                st, _, data, _ = c.submit(token, [("leaderboard", "fp8_quant"), ("gpu", "H200")],
                                          [("file", "k.cu", GOOD_SOURCE.encode())])
                check(st == 202, "a submission to list -> 202", (st, data))
        run_lists(c, alice, bob)


def main():
    return kjcheck.run_groups("test_api", globals())


if __name__ == "__main__":
    sys.exit(main())
