#!/usr/bin/env python3
"""test_access.py - who may call what, and the account and competition rules.

Starts bin/kjudge-server with rate limits from its config file, then:
calls every route of the route table in server/http_route.c (read from the
source, so a new route without a row in MATRIX fails) as each of: no
token, a user, another user, the admin, a runner and a banned user, and
checks each status code; then checks users made by the admin, invite
codes (single use, expiry, stored hashed), token rotation and
revocation, the CLI's name rule, per-user rate limits (429 with
Retry-After, nothing stored, admins exempt), bans, and disqualification
(the submission leaves the rankings; its owner and admins see
`disqualified: true` and the reason, others no longer see it at all). Python 3 standard library
only; ends with "test_access: N passed, N failed, N skipped" and exits 1
on failure.
"""
import datetime
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check  # noqa: E402
from kjhttp import Client, multipart  # noqa: E402
from kjservice import BIN, ROOT  # noqa: E402
from kjtest import is_error, result_body, GOOD_SOURCE  # noqa: E402
from test_jobs import route_table  # noqa: E402
from kjtest import Server, submit, claim  # noqa: E402

ROLES = ("none", "user", "other", "admin", "runner", "banned")

# The authorization matrix: expected status per route and caller.
#   none   no Authorization header
#   user   the owner of the submission {id} stands for ("alice")
#   other  another user ("bob")
#   admin  the configured admin token
#   runner a runner token
#   banned a user banned through POST /users/{name}/ban
# Path parameters: {id} = a queued test submission of alice's, {name} =
# fp8_quant for leaderboards and the user "victim" for /users routes.
# A banned user's token gets 403 on every route, the public ones included
# (a public route ignores any other token). The queued submission {id} is
# not ranked, so to anyone but its owner and admins it does not exist: 404
# (test_admin.py checks the whole visibility matrix). POST /me/token rotates the
# caller's token (the test keeps the new one); the configured admin's
# token lives in the config file, so it gets 403 there. POST /register
# gets a fresh invite for each caller. The runner job routes answer 409
# to a runner: the job {id} is queued, not held by it. Publishing fp8_quant's
# sources answers the admin 409: its deadline has not passed. A reload with
# nothing changed on disk answers 200. A rejudge of fp8_quant answers the
# admin 409 (nothing ranked to rejudge yet), its cancel 409 (none running). Only the owner withdraws {id}, which
# is still queued (409). {file} is template.cu; an artifact {name} is
# profile.ncu-rep (the queued test submission has none: 404 to its owner
# too). /metrics is the admin's only
# (this server's config has no metrics_allow).
#                                                     none user other admin runner banned
MATRIX = {
    ("GET", "/"):                                     (200, 200, 200, 200, 200, 403),
    ("GET", "/static/{path}"):                        (404, 404, 404, 404, 404, 403),
    ("GET", "/healthz"):                              (200, 200, 200, 200, 200, 403),
    ("GET", "/metrics"):                              (401, 403, 403, 200, 403, 403),
    ("GET", "/api/v1/openapi.json"):                  (200, 200, 200, 200, 200, 403),
    ("GET", "/api/v1/me"):                            (401, 200, 200, 200, 200, 403),
    ("POST", "/api/v1/submissions"):                  (401, 202, 202, 202, 403, 403),
    ("GET", "/api/v1/submissions"):                   (401, 200, 200, 200, 403, 403),
    ("GET", "/api/v1/submissions/{id}"):              (404, 200, 404, 200, 404, 403),
    ("GET", "/api/v1/submissions/{id}/events"):       (401, 200, 404, 200, 404, 403),
    ("GET", "/api/v1/submissions/{id}/detail"):       (404, 200, 404, 200, 404, 403),
    ("GET", "/api/v1/submissions/{id}/artifacts/{name}"): (404, 404, 404, 404, 404, 403),
    ("POST", "/api/v1/submissions/{id}/disqualify"):  (401, 403, 403, 200, 403, 403),
    ("GET", "/api/v1/leaderboards"):                  (200, 200, 200, 200, 200, 403),
    ("GET", "/api/v1/leaderboards/{name}"):           (200, 200, 200, 200, 200, 403),
    ("GET", "/api/v1/leaderboards/{name}/rankings"):  (200, 200, 200, 200, 200, 403),
    ("GET", "/api/v1/leaderboards/{name}/history"):   (200, 200, 200, 200, 200, 403),
    ("POST", "/api/v1/leaderboards/{name}/publish"):  (401, 403, 403, 409, 403, 403),
    ("POST", "/api/v1/admin/reload"):                 (401, 403, 403, 200, 403, 403),
    ("POST", "/api/v1/leaderboards/{name}/rejudge"):  (401, 403, 403, 409, 403, 403),
    ("GET", "/api/v1/leaderboards/{name}/rejudge"):   (401, 403, 403, 200, 403, 403),
    ("POST", "/api/v1/leaderboards/{name}/rejudge/cancel"): (401, 403, 403, 409, 403, 403),
    ("GET", "/api/v1/submissions/{id}/history"):      (401, 200, 404, 200, 404, 403),
    ("POST", "/api/v1/runner/hello"):                 (401, 403, 403, 403, 204, 403),
    ("POST", "/api/v1/runner/claim"):                 (401, 403, 403, 403, 204, 403),
    ("POST", "/api/v1/runner/jobs/{id}/events"):      (401, 403, 403, 403, 409, 403),
    ("POST", "/api/v1/runner/jobs/{id}/heartbeat"):   (401, 403, 403, 403, 409, 403),
    ("POST", "/api/v1/runner/jobs/{id}/result"):      (401, 403, 403, 403, 409, 403),
    ("POST", "/api/v1/runner/jobs/{id}/release"):     (401, 403, 403, 403, 409, 403),
    ("POST", "/api/v1/runner/jobs/{id}/artifacts/{name}"): (401, 403, 403, 403, 409, 403),
    ("GET", "/api/v1/gpus"):                          (200, 200, 200, 200, 200, 403),
    ("POST", "/api/v1/me/token"):                     (401, 200, 200, 403, 200, 403),
    ("POST", "/api/v1/users"):                        (401, 403, 403, 201, 403, 403),
    ("DELETE", "/api/v1/users/{name}/tokens"):        (401, 403, 403, 200, 403, 403),
    ("POST", "/api/v1/users/{name}/ban"):             (401, 403, 403, 200, 403, 403),
    ("POST", "/api/v1/users/{name}/unban"):           (401, 403, 403, 200, 403, 403),
    ("POST", "/api/v1/invites"):                      (401, 403, 403, 201, 403, 403),
    ("POST", "/api/v1/register"):                     (201, 201, 201, 201, 201, 403),
    ("POST", "/api/v1/submissions/{id}/withdraw"):    (401, 409, 403, 403, 403, 403),
    ("GET", "/api/v1/leaderboards/{name}/files/{file}"): (200, 200, 200, 200, 200, 403),
    ("GET", "/api/v1/users"):                         (401, 403, 403, 200, 403, 403),
    ("GET", "/api/v1/stats"):                         (401, 403, 403, 200, 403, 403),
    # popcorn-cli's routes: the token also as X-Popcorn-Cli-Id (docs/popcorn.md)
    ("GET", "/popcorn/leaderboards"):                 (200, 200, 200, 200, 200, 403),
    ("GET", "/popcorn/gpus/{leaderboard}"):           (200, 200, 200, 200, 200, 403),
    ("POST", "/popcorn/submission/{leaderboard}/{gpu}/{mode}"): (401, 202, 202, 202, 403, 403),
    ("GET", "/popcorn/user/submissions"):             (401, 200, 200, 200, 403, 403),
    ("GET", "/popcorn/user/submissions/{id}"):        (401, 200, 404, 200, 403, 403),
    ("GET", "/popcorn/auth/init"):                    (404, 404, 404, 404, 404, 403),
    ("POST", "/popcorn/{leaderboard}/{gpu}/profile"): (401, 404, 404, 404, 403, 403),
}

# Limits written to the test server's config file (no serve flags).
RATE_TEST, RATE_BENCHMARK = 3, 2


def sha256(text):
    return hashlib.sha256(text.encode()).hexdigest()


def db_query(srv, sql, args=()):
    con = sqlite3.connect(srv.db, timeout=10)
    try:
        out = con.execute(sql, args).fetchall()
        con.commit()
        return out
    finally:
        con.close()


def api_user(c, admin, name, role="user"):
    st, _, d, _ = c.post_json("/api/v1/users", {"name": name, "role": role}, admin, runner=False)
    check(st == 201 and d.get("name") == name and d.get("role") == role and len(d.get("token", "")) == 64,
          "POST /users creates %s %s" % (role, name), (st, d))
    return d.get("token") if st == 201 else None


def invite(c, admin, days=None):
    st, _, d, _ = c.post_json("/api/v1/invites", {} if days is None else {"days": days}, admin, runner=False)
    return d.get("code") if st == 201 else None


# ---------------------------------------------------------------------------
# The matrix
# ---------------------------------------------------------------------------

def matrix_call(c, srv, method, pattern, role, tokens, ctx):
    """Make the request of one matrix cell; returns the status."""
    tok = tokens.get(role)
    if pattern.startswith("/popcorn/"):
        path = pattern.replace("{id}", str(ctx["sid"])).replace("{leaderboard}", "fp8_quant")
        path = path.replace("{gpu}", "H200").replace("{mode}", "test")
        body, h = (multipart([], [("file", "k.cu", GOOD_SOURCE.encode())]) if method == "POST"
                   else (None, None))
        headers = {"Content-Type": h} if h else {}
        if tok is not None:
            headers["X-Popcorn-Cli-Id"] = tok
        return c.request(method, path, token=tok, body=body, headers=headers)[0]
    path = pattern.replace("{id}", str(ctx["sid"])).replace("{path}", "none.css")
    if pattern.startswith("/api/v1/runner/jobs/"):
        path += "?attempt=1"
    path = path.replace("{file}", "template.cu")
    if "/artifacts/" in pattern:
        path = path.replace("{name}", "profile.ncu-rep")
        if method == "POST":
            return c.request("POST", path, token=tok, body=b"report",
                             headers={"Content-Type": "application/octet-stream"}, runner=True)[0]
    path = path.replace("{name}", "victim" if pattern.startswith("/api/v1/users/") else "fp8_quant")
    if pattern.endswith("/rankings") or pattern.endswith("/history"):
        path += "?gpu=H200"
    if pattern == "/api/v1/submissions" and method == "POST":
        return c.submit(tok, [("leaderboard", "fp8_quant"), ("gpu", "H200"), ("mode", "test")],
                        [("file", "k.cu", GOOD_SOURCE.encode())])[0]
    body = {}
    if pattern == "/api/v1/runner/claim":
        body = {"runner": "matrix", "gpu": "B200", "arch": "sm_100a"}
    elif pattern == "/api/v1/runner/hello":
        body = {"runner": "matrix", "state": "refused", "reason": "matrix"}
    elif pattern.endswith("/events") and method == "POST":
        body = {"event": "compiling", "data": {}}
    elif pattern.endswith("/result"):
        body = result_body("accepted")
    elif pattern.endswith("/disqualify"):
        path = "/api/v1/submissions/%d/disqualify" % ctx["dq_sid"]
        body = {"reason": "matrix"}
    elif pattern == "/api/v1/users":
        body = {"name": "m_" + role}
    elif pattern == "/api/v1/register":
        body = {"name": "reg_" + role, "invite": invite(c, tokens["admin"])}
    if method == "GET":
        return c.get(path, tok)[0]
    if method == "DELETE":
        return c.request("DELETE", path, token=tok)[0]
    st, _, d, _ = c.post_json(path, body, tok, runner=False)
    if pattern == "/api/v1/me/token" and st == 200:
        tokens[role] = d["token"]  # the old one no longer works
    return st


def test_matrix(srv, c, tokens):
    routes = route_table()
    check(len(routes) >= 25, "the route table was read from server/http_route.c", sorted(routes))
    missing = sorted(routes - set(MATRIX))
    check(not missing, "every route has a row in the access matrix", missing)
    check(not sorted(set(MATRIX) - routes), "every matrix row is a route", sorted(set(MATRIX) - routes))
    ctx = {"sid": submit(c, tokens["user"]), "dq_sid": submit(c, tokens["other"])}
    if not check(ctx["sid"] and ctx["dq_sid"], "submissions for the matrix"):
        return
    for method, pattern in sorted(routes & set(MATRIX), key=lambda r: (r[1], r[0])):
        got = tuple(matrix_call(c, srv, method, pattern, role, tokens, ctx) for role in ROLES)
        want = MATRIX[(method, pattern)]
        check(got == want, "access %s %s (none user other admin runner banned)" % (method, pattern),
              "got %s want %s" % (got, want))


# ---------------------------------------------------------------------------
# Users, invites, tokens
# ---------------------------------------------------------------------------

def test_users(srv, c, admin):
    carol = api_user(c, admin, "carol")
    st, _, d, _ = c.get("/api/v1/me", carol)
    check(st == 200 and d == {"id": d.get("id"), "name": "carol", "role": "user"}, "the new token works", (st, d))
    rows = db_query(srv, "SELECT name, token_hash FROM users ORDER BY id")
    check(("carol", sha256(carol)) in rows and all(carol not in r[1] for r in rows),
          "only the token's SHA-256 is stored")
    before = db_query(srv, "SELECT * FROM users ORDER BY id")
    for body, status, code in [({"name": "carol"}, 409, "name_taken"), ({"name": "admin"}, 409, "name_taken"),
                               ({"name": "Carol"}, 400, "bad_name"), ({"name": "x" * 33}, 400, "bad_name"),
                               ({"name": ""}, 400, "bad_name"), ({"name": "a b"}, 400, "bad_name"),
                               ({}, 400, "bad_name"), ({"name": 7}, 400, "bad_name"),
                               ({"name": "dave", "role": "runner"}, 400, "bad_role"),
                               ({"name": "dave", "role": "root"}, 400, "bad_role"),
                               # Names must start with a letter or digit: no ".", "..", "-x".
                               ({"name": "."}, 400, "bad_name"), ({"name": ".."}, 400, "bad_name"),
                               ({"name": "..."}, 400, "bad_name"), ({"name": ".carol"}, 400, "bad_name"),
                               ({"name": "-carol"}, 400, "bad_name"), ({"name": "_carol"}, 400, "bad_name")]:
        st, _, d, _ = c.post_json("/api/v1/users", body, admin, runner=False)
        check(st == status and is_error(d, code), "POST /users %s -> %d %s" % (body, status, code), (st, d))
    st, _, d, _ = c.post_json("/api/v1/users", None, admin, raw=b"[1]")
    check(st == 400 and is_error(d, "bad_json"), "a body that is not an object -> 400", (st, d))
    # Lenient JSON: a NUL escape would cut the name where C strings end
    # ("a\u0000b" created user "a"); text after the object was ignored.
    for raw, what in [(b'{"name": "dave\\u0000evil"}', "a \\u0000 inside a string"),
                      (b'{"name": "dave", "role": "user\\u0000admin"}', "a \\u0000 in another field"),
                      (b'{"name\\u0000x": "dave"}', "a \\u0000 inside a key"),
                      (b'{"name": "dave"} {"name": "eve"}', "a second object after the body"),
                      (b'{"name": "dave"}garbage', "text after the body"),
                      (b'{"name": "dave"}\x00', "a NUL byte after the body")]:
        st, _, d, _ = c.post_json("/api/v1/users", None, admin, raw=raw)
        check(st == 400 and is_error(d, "bad_json"), "%s -> 400 bad_json" % what, (st, d))
    st, _, d, _ = c.post_json("/api/v1/users", None, admin, raw=b'{"name": "d\\\\u0000"}')
    check(st == 400 and is_error(d, "bad_name"), "an escaped backslash before u0000 is no NUL (bad_name)",
          (st, d))
    check(db_query(srv, "SELECT * FROM users ORDER BY id") == before, "refused requests change no user")
    st, _, d, _ = c.post_json("/api/v1/users", None, admin, raw=b'{"name": "dave.0"} \r\n\t ')
    check(st == 201 and d.get("name") == "dave.0", "white space after the body is fine; dots inside a name too",
          (st, d))
    # A name made before the rule (here: written straight into the database)
    # keeps working and can still be managed, percent-encoded in the path.
    db_query(srv, "INSERT INTO users(name, role, token_hash, created_at) VALUES ('..', 'user', ?, 0)",
             (sha256("old-dots-token"),))
    st, _, d, _ = c.post_json("/api/v1/users/%2E%2E/ban", {}, admin, runner=False)
    check(st == 200 and d == {"name": "..", "banned": True}, "an existing user '..' can still be banned", (st, d))
    x = api_user(c, admin, "x" * 32, "admin")
    st, _, d, _ = c.post_json("/api/v1/invites", {}, x, runner=False)
    check(st == 201, "an admin made through the API can make invites", (st, d))
    return carol


def test_invites(srv, c, admin):
    code = invite(c, admin)
    st, _, d, _ = c.post_json("/api/v1/invites", {}, admin, runner=False)
    exp = datetime.datetime.strptime(d["expires_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    days = (exp - datetime.datetime.now(datetime.timezone.utc)).total_seconds() / 86400
    check(st == 201 and 6.99 < days < 7.01, "an invite lasts 7 days by default", (st, d))
    stored = [r[0] for r in db_query(srv, "SELECT code_hash FROM invites")]
    check(sha256(code) in stored and code not in stored, "invites are stored hashed")
    for body in ({"days": 0}, {"days": 366}, {"days": 1.5}, {"days": "7"}):
        st, _, d, _ = c.post_json("/api/v1/invites", body, admin, runner=False)
        check(st == 400 and is_error(d, "bad_days"), "invite %s -> 400" % body, (st, d))

    users_before = db_query(srv, "SELECT * FROM users ORDER BY id")
    for body, status, err in [({"name": "Erin", "invite": code}, 400, "bad_name"),
                              ({"name": "erin"}, 403, "bad_invite"),
                              ({"name": "erin", "invite": "0" * 64}, 403, "bad_invite"),
                              ({"name": "carol", "invite": code}, 409, "name_taken")]:
        st, _, d, _ = c.post_json("/api/v1/register", body, None, runner=False)
        check(st == status and is_error(d, err), "register %s -> %d %s" % (body.get("name"), status, err), (st, d))
    check(db_query(srv, "SELECT * FROM users ORDER BY id") == users_before and
          db_query(srv, "SELECT used_by FROM invites WHERE code_hash = ?", (sha256(code),)) == [(None,)],
          "refused registrations change nothing and leave the invite unused")
    st, _, d, _ = c.post_json("/api/v1/register", {"name": "erin", "invite": code}, None, runner=False)
    check(st == 201 and d.get("role") == "user" and c.get("/api/v1/me", d.get("token"))[0] == 200,
          "register with an invite -> 201 and a working user token", (st, d))
    st, _, d, _ = c.post_json("/api/v1/register", {"name": "frank", "invite": code}, None, runner=False)
    check(st == 403 and is_error(d, "bad_invite"), "an invite works once", (st, d))
    old = invite(c, admin, days=1)
    db_query(srv, "UPDATE invites SET expires_at = 1 WHERE code_hash = ?", (sha256(old),))
    st, _, d, _ = c.post_json("/api/v1/register", {"name": "frank", "invite": old}, None, runner=False)
    check(st == 403 and is_error(d, "bad_invite"), "an expired invite -> 403", (st, d))


def test_tokens(srv, c, admin, carol):
    st, _, d, _ = c.post_json("/api/v1/me/token", {}, carol, runner=False)
    new = d.get("token") if st == 200 else None
    check(st == 200 and new and new != carol and d.get("name") == "carol", "rotation returns a new token", (st, d))
    check(c.get("/api/v1/me", carol)[0] == 401, "the old token stops working at once")
    check(c.get("/api/v1/me", new)[0] == 200, "the new token works")
    st, _, d, _ = c.request("POST", "/api/v1/me/token", token=new)
    check(st == 200 and c.get("/api/v1/me", d["token"])[0] == 200, "rotation without a body", (st, d))
    new = d["token"]
    st, _, d, _ = c.post_json("/api/v1/me/token", {}, admin, runner=False)
    check(st == 403 and is_error(d, "config_admin"), "the configured admin token is not rotated", (st, d))
    st, _, d, _ = c.request("DELETE", "/api/v1/users/carol/tokens", token=admin)
    check(st == 200 and d == {"name": "carol", "revoked": True}, "DELETE /users/carol/tokens -> 200", (st, d))
    st, _, d, _ = c.get("/api/v1/me", new)
    check(st == 401 and is_error(d, "invalid_token"), "a revoked token gets 401", (st, d))
    st, _, d, _ = c.request("DELETE", "/api/v1/users/nobody/tokens", token=admin)
    check(st == 404 and is_error(d, "unknown_user"), "revoking an unknown user -> 404", (st, d))
    st, _, d, _ = c.request("DELETE", "/api/v1/users/admin/tokens", token=admin)
    check(st == 403 and is_error(d, "config_admin"), "the configured admin's token is not revoked", (st, d))
    check(c.get("/api/v1/me", admin)[0] == 200, "the admin token still works")
    rc, out, _ = srv.cli("user", "add", "gina", "--db", srv.db)
    check(rc == 0 and c.get("/api/v1/me", out.strip())[0] == 200, "kjudge-server user add still works", rc)
    rc, out, _ = srv.cli("user", "add", "Gina", "--db", srv.db)
    check(rc == 1 and out == "", "the CLI applies the same name rule", rc)


# ---------------------------------------------------------------------------
# Rate limits, bans, disqualification
# ---------------------------------------------------------------------------

def test_rate_limits(srv, c, admin):
    rl = api_user(c, admin, "rl")
    sts = [c.submit(rl, [("leaderboard", "fp8_quant"), ("gpu", "B200"), ("mode", "test")],
                    [("file", "k.cu", GOOD_SOURCE.encode())])[0] for _ in range(RATE_TEST)]
    check(sts == [202] * RATE_TEST, "%d test submissions within the limit" % RATE_TEST, sts)
    before = srv.rows()
    st, h, d, _ = c.submit(rl, [("leaderboard", "fp8_quant"), ("gpu", "B200"), ("mode", "test")],
                           [("file", "k.cu", GOOD_SOURCE.encode())])
    ra = h.get("retry-after", "")
    check(st == 429 and is_error(d, "rate_limited") and "rate_limit_test" in d["error"]["message"],
          "over the limit -> 429 rate_limited naming rate_limit_test", (st, d))
    check(ra.isdigit() and 1 <= int(ra) <= 61, "429 carries Retry-After in seconds", ra)
    check(srv.rows() == before, "a rate-limited submission stores nothing")
    sts = [c.submit(rl, [("leaderboard", "fp8_quant"), ("gpu", "B200"), ("mode", "benchmark")],
                    [("file", "k.cu", GOOD_SOURCE.encode())])[0] for _ in range(RATE_BENCHMARK + 1)]
    check(sts == [202] * RATE_BENCHMARK + [429], "benchmark mode has its own limit", sts)
    sts = [c.submit(admin, [("leaderboard", "fp8_quant"), ("gpu", "B200"), ("mode", "test")],
                    [("file", "k.cu", GOOD_SOURCE.encode())])[0] for _ in range(RATE_TEST + 2)]
    check(sts == [202] * (RATE_TEST + 2), "admins are not limited", sts)
    for args, what in [(["--rate-limit-test", "lots"], "a bad --rate-limit-test")]:
        rc, _, err = srv.cli("serve", *args)
        check(rc == 1 and "--rate-limit-test" in err, "%s is refused" % what, (rc, err[-200:]))
    d = os.path.join(srv.tmp, "badconf")
    os.makedirs(d)
    with open(os.path.join(d, "k.conf"), "w") as f:
        f.write("rate_limit_benchmark = ten\n")
    p = subprocess.run([BIN, "serve", "--port", "1", "--db", os.path.join(d, "k.db"), "--config",
                        os.path.join(d, "k.conf"), "--leaderboards", os.path.join(ROOT, "leaderboards")],
                       capture_output=True, text=True, timeout=20, cwd=d,
                       env={k: v for k, v in os.environ.items() if k != "KJUDGE_ADMIN_TOKEN"})
    check(p.returncode == 1 and "rate_limit_benchmark" in p.stderr, "a bad rate_limit_* in the config is refused",
          (p.returncode, p.stderr[-300:]))


def test_bans(c, admin, tokens):
    hank = tokens["hank"]
    st, _, d, _ = c.post_json("/api/v1/users/hank/ban", {}, admin, runner=False)
    check(st == 200 and d == {"name": "hank", "banned": True}, "ban -> 200", (st, d))
    for m, p in [("GET", "/api/v1/me"), ("GET", "/api/v1/leaderboards"), ("GET", "/healthz")]:
        st, _, d, _ = c.request(m, p, token=hank)
        check(st == 403 and is_error(d, "banned"), "a banned token gets 403 banned on %s" % p, (st, d))
    st, _, d, _ = c.submit(hank, [("leaderboard", "fp8_quant"), ("gpu", "B200")], [("file", "k.cu", b"x")])
    check(st == 403 and is_error(d, "banned"), "a banned user cannot submit", (st, d))
    check(c.get("/api/v1/leaderboards")[0] == 200, "public routes still work without the token")
    st, _, d, _ = c.post_json("/api/v1/users/hank/unban", {}, admin, runner=False)
    check(st == 200 and d == {"name": "hank", "banned": False} and c.get("/api/v1/me", hank)[0] == 200,
          "unban restores access", (st, d))
    for path, status, code in [("/api/v1/users/nobody/ban", 404, "unknown_user"),
                               ("/api/v1/users/admin/ban", 403, "config_admin")]:
        st, _, d, _ = c.post_json(path, {}, admin, runner=False)
        check(st == status and is_error(d, code), "%s -> %d" % (path, status), (st, d))


def judge(c, runner, sid, score):
    """Claim every queued B200 job (in the order the queue rule hands them
    out); each gets an accepted result. True when sid was among them."""
    seen = False
    for _ in range(200):
        job = claim(c, runner, "B200", name="judge")
        if job is None:
            return seen
        body = result_body("accepted", score if job["id"] == sid else 9e9, mode=job["mode"], gpu="NVIDIA B200")
        c.post_json("/api/v1/runner/jobs/%d/result?attempt=%d" % (job["id"], job["attempt"]), body, runner)
        seen = seen or job["id"] == sid
    return False


def ranked_ids(c):
    st, _, d, _ = c.get("/api/v1/leaderboards/fp8_quant/rankings?gpu=B200")
    return [r["submission_id"] for r in d.get("rankings", [])] if st == 200 else None


def test_disqualify(c, admin, alice, bob, runner):
    sid = submit(c, alice, gpu="B200", mode="leaderboard")
    check(sid is not None and judge(c, runner, sid, 1234.0), "a ranked submission is judged")
    check(sid in (ranked_ids(c) or []), "it is in the rankings", ranked_ids(c))
    url = "/api/v1/submissions/%d" % sid
    for body in ({}, {"reason": ""}, {"reason": 5}, {"reason": "x" * 300}):
        st, _, d, _ = c.post_json(url + "/disqualify", body, admin, runner=False)
        check(st == 400 and is_error(d, "bad_reason"), "disqualify %s -> 400" % str(body)[:30], (st, d))
    st, _, d, _ = c.post_json("/api/v1/submissions/999999/disqualify", {"reason": "x"}, admin, runner=False)
    check(st == 404, "disqualifying an unknown submission -> 404", (st, d))
    st, _, d, _ = c.post_json(url + "/disqualify", {"reason": "copied kernel"}, admin, runner=False)
    check(st == 200 and d.get("disqualified") is True and d.get("disqualified_reason") == "copied kernel",
          "disqualify -> 200", (st, d))
    after = ranked_ids(c)
    check(after is not None and sid not in after, "a disqualified submission leaves the rankings", after)
    st, _, d, _ = c.get(url, alice)
    check(st == 200 and d.get("disqualified") is True and d.get("disqualified_reason") == "copied kernel",
          "its owner sees disqualified and the reason", d)
    for who, tok in [("another user", bob), ("an anonymous reader", None)]:
        st, _, d, _ = c.get(url, tok)
        check(st == 404 and is_error(d, "not_found"), "to %s a disqualified submission does not exist" % who,
              (st, d))
    st, _, d, _ = c.get(url, admin)
    check(d.get("disqualified_reason") == "copied kernel", "an admin sees the reason", d)
    st, _, d, _ = c.get("/api/v1/submissions", alice)
    mine = [s for s in d.get("submissions", []) if s["id"] == sid]
    check(mine and mine[0].get("disqualified") is True, "the owner's list marks it too", mine)


def run_all(srv):
    c = Client(srv.port)
    admin = srv.printed().strip()
    tokens = {"admin": admin}
    for name in ("alice", "bob", "hank", "victim", "banned1"):
        tokens[name] = api_user(c, admin, name)
    rc, out, _ = srv.cli("runner", "add", "r1", "--gpu", "H200,B200", "--db", srv.db)
    tokens["runner"] = out.strip()
    carol = test_users(srv, c, admin)
    test_invites(srv, c, admin)
    test_tokens(srv, c, admin, carol)
    test_rate_limits(srv, c, admin)
    test_bans(c, admin, tokens)
    test_disqualify(c, admin, tokens["alice"], tokens["bob"], tokens["runner"])
    st, _, _, _ = c.post_json("/api/v1/users/banned1/ban", {}, admin, runner=False)
    check(st == 200, "ban the matrix's banned user", st)
    test_matrix(srv, c, {"none": None, "user": tokens["alice"], "other": tokens["bob"], "admin": admin,
                         "runner": tokens["runner"], "banned": tokens["banned1"]})


def main():
    if not os.access(BIN, os.X_OK):
        print("FAIL %s is not built" % BIN)
        print("test_access: 0 passed, 1 failed, 0 skipped")
        return 1
    with tempfile.TemporaryDirectory(prefix="kjudge-access-") as tmp:
        srv = Server(tmp, rate_flags=[])
        os.makedirs(os.path.dirname(srv.conf), exist_ok=True)
        with open(srv.conf, "w") as f:
            f.write("# limits for test_access.py\nrate_limit_test = %d/min\nrate_limit_benchmark = %d\n"
                    % (RATE_TEST, RATE_BENCHMARK))
        if check(srv.start(), "the server starts with rate limits from its config file"):
            try:
                run_all(srv)
            finally:
                srv.stop()
    print("test_access: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
