#!/usr/bin/env python3
"""test_web_api.py - what the web pages need from the server, over real HTTP.

Starts bin/kjudge-server with the leaderboards, the web folder and the
system's /usr/share/javascript (Debian's libjs-* packages), fills it through
the API with a fake runner (tests/api/fakerunner.py), and checks:

- GET /api/v1/leaderboards/{name}/history: its errors (unknown board,
  missing or unknown GPU, a bad ?top), that it lists exactly the ranked
  submissions that beat their user's own best ("users", best first, cut to
  ?top) and those that beat the board's best ("records"), never a test-mode,
  failed, disqualified or withdrawn one, never a source or file name, with
  an ETag answered 304;
- /static/vendor/: each listed library file with its content type, a day's
  caching and an ETag (304 on If-None-Match); files of the same packages
  that are not listed, other packages, "..", percent-encoded dots and
  backslashes are 404; a server started with --vendor naming a missing
  folder serves none of them and still serves the pages;
- the page itself: a Content-Security-Policy that allows only this
  server, an ETag, and 304 when revalidated; the site's scripts and
  styles are served with their types;
- openapi.json lists the history route.

Python 3 standard library only; ends with "test_web_api: N passed, N
failed, N skipped" and exits 1 on failure.
"""
import http.client
import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check  # noqa: E402
from kjhttp import Client  # noqa: E402
from kjservice import BIN  # noqa: E402
from kjtest import GOOD_SOURCE, is_error  # noqa: E402
import kjtest  # noqa: E402
from fakerunner import FakeRunner  # noqa: E402

VENDOR = "/usr/share/javascript"
VENDOR_FILES = {
    "highlight.js/highlight.min.js": "text/javascript", "highlight.js/styles/github.css": "text/css",
    "chart.js/chart.min.js": "text/javascript", "marked/marked.min.js": "text/javascript",
    "katex/katex.min.js": "text/javascript", "katex/katex.min.css": "text/css",
    "katex/fonts/KaTeX_Main-Regular.woff2": "font/woff2", "katex/fonts/KaTeX_Math-Italic.woff2": "font/woff2",
    "codemirror/lib/codemirror.js": "text/javascript", "codemirror/lib/codemirror.css": "text/css",
    "codemirror/mode/clike/clike.js": "text/javascript",
    "codemirror/addon/edit/matchbrackets.js": "text/javascript",
}


def raw_get(port, path, headers=None):
    """GET with the path sent exactly as given (no client-side normalisation)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        conn.putrequest("GET", path, skip_host=False, skip_accept_encoding=True)
        for k, v in (headers or {}).items():
            conn.putheader(k, v)
        conn.endheaders()
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def src(tag, scale=None, kind=""):
    marks = "// %s\n" % tag
    if scale is not None:
        marks += "// FAKE:scale=%s\n" % scale
    if kind:
        marks += "// FAKE:%s\n" % kind
    return (marks + GOOD_SOURCE).encode()


def submit(c, token, body, mode="leaderboard", gpu="H200", board="fp8_quant"):
    st, _, d, _ = c.submit(token, [("leaderboard", board), ("gpu", gpu), ("mode", mode)],
                           [("file", "secret_name.cu", body)])
    return d["id"] if st == 202 else None


def wait_done(c, token, ids, timeout=60):
    end = time.time() + timeout
    for sid in ids:
        while time.time() < end:
            st, _, d, _ = c.get("/api/v1/submissions/%d" % sid, token)
            if st == 200 and d.get("status") == "done":
                break
            time.sleep(0.05)


def test_history(srv, c, t):
    alice, bob, carol, admin = t["alice"], t["bob"], t["carol"], t["admin"]
    base = "/api/v1/leaderboards/fp8_quant/history"
    for path, st_want, code in [("/api/v1/leaderboards/nope/history?gpu=H200", 404, "unknown_leaderboard"),
                                (base, 400, "missing_gpu"), (base + "?gpu=", 400, "missing_gpu"),
                                (base + "?gpu=A100", 400, "unknown_gpu"),
                                (base + "?gpu=H200&top=0", 400, "bad_top"), (base + "?gpu=H200&top=51", 400, "bad_top"),
                                (base + "?gpu=H200&top=x", 400, "bad_top"), (base + "?gpu=H200&top=-1", 400, "bad_top"),
                                (base + "?gpu=H200&top=", 400, "bad_top"), (base + "?gpu=H200&top=1e1", 400, "bad_top"),
                                (base + "?gpu=H200&top=0010", 400, "bad_top")]:
        st, _, d, _ = c.get(path)
        check(st == st_want and is_error(d, code), "history %s -> %d %s" % (path[len("/api/v1/leaderboards"):],
                                                                          st_want, code), (st, d))
    st, _, d, _ = c.get(base + "?gpu=H200")
    check(st == 200 and d == {"leaderboard": "fp8_quant", "gpu": "H200", "records": [], "users": []},
          "history of a board with no ranked submission is empty", d)

    # In order: alice 1.0, bob 0.9, alice 0.8 (improves), alice 0.85 (does not), bob 0.7 (record),
    # carol 0.75; and never ranked: a test-mode run, a wrong answer, one to disqualify, one to withdraw,
    # one on B200.
    ids = {}
    for key, tok, body, mode in [("a1", alice, src("a1", 1.0), "leaderboard"),
                                 ("b1", bob, src("b1", 0.9), "leaderboard"),
                                 ("a2", alice, src("a2", 0.8), "leaderboard"),
                                 ("a3", alice, src("a3", 0.85), "leaderboard"),
                                 ("atest", alice, src("atest", 0.1), "test"),
                                 ("awrong", alice, src("awrong", 0.1, "wrong"), "leaderboard"),
                                 ("cdq", carol, src("cdq", 0.05), "leaderboard"),
                                 ("cwd", carol, src("cwd", 0.06), "leaderboard"),
                                 ("b2", bob, src("b2", 0.7), "leaderboard"),
                                 ("c1", carol, src("c1", 0.75), "leaderboard")]:
        ids[key] = submit(c, tok, body, mode)
        wait_done(c, tok, [ids[key]])
    ids["bb200"] = submit(c, bob, src("bb200", 0.01), gpu="B200")
    wait_done(c, bob, [ids["bb200"]])
    check(all(ids.values()), "eleven submissions made", ids)
    st, _, d, _ = c.post_json("/api/v1/submissions/%d/disqualify" % ids["cdq"], {"reason": "copied"}, admin,
                              runner=False)
    check(st == 200, "one is disqualified", (st, d))
    st, _, d, _ = c.post_json("/api/v1/submissions/%d/withdraw" % ids["cwd"], {}, carol, runner=False)
    check(st == 200, "one is withdrawn", (st, d))

    st, h, d, raw = c.get(base + "?gpu=H200")
    ok = check(st == 200 and isinstance(d, dict) and isinstance(d.get("records"), list), "history -> 200", (st, d))
    if not ok:
        return
    rec = [(p["submission_id"], p["user"]) for p in d["records"]]
    check(rec == [(ids["a1"], "alice"), (ids["b1"], "bob"), (ids["a2"], "alice"), (ids["b2"], "bob")],
          "records: each submission that beat the board's best, oldest first", (rec, ids))
    scores = [p["score_ns"] for p in d["records"]]
    check(all(x > y for x, y in zip(scores, scores[1:])), "records get strictly better", scores)
    users = [(u["user"], [p["submission_id"] for p in u["points"]]) for u in d["users"]]
    check(users == [("bob", [ids["b1"], ids["b2"]]), ("carol", [ids["c1"]]), ("alice", [ids["a1"], ids["a2"]])],
          "users: best first, each with the submissions that beat their own best", (users, ids))
    st2, _, r, _ = c.get("/api/v1/leaderboards/fp8_quant/rankings?gpu=H200")
    best = {row["user"]: (row["submission_id"], row["score_ns"]) for row in r["rankings"]}
    check(all(best[u["user"]] == (u["points"][-1]["submission_id"], u["best_ns"]) for u in d["users"]),
          "each user's last point is their row in the rankings", (best, d["users"]))
    hidden = [ids[k] for k in ("a3", "atest", "awrong", "cdq", "cwd", "bb200")]
    text = raw.decode()
    check(not any(('"submission_id":%d,' % i) in text for i in hidden),
          "no test-mode, failed, disqualified, withdrawn, non-improving or other-GPU submission appears", hidden)
    check("secret_name" not in text and "source" not in text and "FAKE" not in text,
          "no file name or source appears")
    check(all(p["submitted_at"].endswith("Z") for p in d["records"]), "times are ISO UTC")
    st, _, d1, _ = c.get(base + "?gpu=H200&top=1")
    check(st == 200 and [u["user"] for u in d1["users"]] == ["bob"] and d1["records"] == d["records"],
          "?top=1 keeps only the best user (records unchanged)", d1)
    st, _, d50, _ = c.get(base + "?gpu=H200&top=50")
    check(st == 200 and len(d50["users"]) == 3, "?top=50 is allowed", (st, d50))
    etag = h.get("etag")
    st, h2, _, body = c.get(base + "?gpu=H200", headers={"If-None-Match": etag or "x"})
    check(etag and st == 304 and body == b"", "history has an ETag; If-None-Match -> 304", (etag, st))
    st, _, db, _ = c.get(base + "?gpu=B200")
    check(st == 200 and [p["submission_id"] for p in db["records"]] == [ids["bb200"]],
          "another GPU type has its own history", db)


def test_vendor(srv, c):
    for rel, ctype in VENDOR_FILES.items():
        st, h, _, body = c.get("/static/vendor/" + rel)
        disk = open(os.path.join(VENDOR, rel), "rb").read()
        check(st == 200 and h.get("content-type", "").startswith(ctype) and body == disk,
              "/static/vendor/%s -> 200 %s, the package's bytes" % (rel, ctype), (st, h.get("content-type")))
        check("max-age=86400" in h.get("cache-control", "") and h.get("etag"),
              "%s is cached for a day, with an ETag" % rel, h)
    st, h, _, _ = c.get("/static/vendor/chart.js/chart.min.js")
    st2, h2, _, body = c.get("/static/vendor/chart.js/chart.min.js", headers={"If-None-Match": h.get("etag", "")})
    check(st2 == 304 and body == b"" and h2.get("etag") == h.get("etag"), "a library revalidates with 304", (st2, h2))
    for bad in ["/static/vendor/highlight.js/highlight.js", "/static/vendor/chart.js/chart.mjs",
                "/static/vendor/jquery/jquery.js", "/static/vendor/", "/static/vendor/katex",
                "/static/vendor/katex/fonts", "/static/vendor/../../../etc/passwd",
                "/static/vendor/katex/../../../../etc/passwd", "/static/vendor/%2e%2e/jquery/jquery.js",
                "/static/vendor/katex/fonts/..%2f..%2fjquery%2fjquery.js", "/static/vendor/katex\\katex.min.js",
                "/static/vendor//katex/katex.min.js", "/static/vendor/katex/katex.min.js/",
                "/static/vendor/KATEX/katex.min.js", "/static/vendor/katex/katex.min.js%00"]:
        st, h, _ = raw_get(srv.port, bad)
        check(st in (400, 404), "%s -> 404" % bad, st)


def test_pages(srv, c):
    st, h, _, raw = c.get("/")
    csp = h.get("content-security-policy", "")
    check(st == 200 and "script-src 'self'" in csp and "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
          and "connect-src 'self'" in csp, "GET / carries a Content-Security-Policy allowing only this server", csp)
    check(h.get("cache-control") == "no-cache" and h.get("etag"), "the page is revalidated (no-cache, ETag)", h)
    st2, _, _, body = c.get("/", headers={"If-None-Match": h.get("etag", "")})
    check(st2 == 304 and body == b"", "GET / with its ETag -> 304", st2)
    check(b"/static/js/main.js" in raw and b'type="module"' in raw, "the page loads the site's module", raw[:300])
    check(b"<script>" not in raw and b"http://" not in raw.replace(b"http://www.w3.org", b"")
          and b"https://" not in raw, "no inline script and no outside URL in the page")
    for path, ctype in [("/static/js/main.js", "text/javascript"), ("/static/js/pages/submission.js", "text/javascript"),
                        ("/static/app.css", "text/css"), ("/static/favicon.svg", "image/svg+xml")]:
        st, h, _, _ = c.get(path)
        check(st == 200 and h.get("content-type", "").startswith(ctype) and h.get("cache-control") == "no-cache",
              "%s -> 200 %s" % (path, ctype), (st, h))
        check("content-security-policy" not in h, "%s has no page policy of its own" % path)


def test_no_vendor(tmp):
    d = os.path.join(tmp, "novendor")
    os.makedirs(d, exist_ok=True)
    srv = kjtest.Server(d, extra=["--vendor", os.path.join(d, "missing")])
    if not check(srv.start(), "a server with a missing --vendor folder starts"):
        return
    try:
        c = Client(srv.port)
        st, _, _, _ = c.get("/static/vendor/katex/katex.min.js")
        check(st == 404, "without the folder, library files are 404", st)
        st, _, _, _ = c.get("/")
        check(st == 200, "and the page is still served", st)
        check("vendor folder" in srv.server_log(), "the server warns about the missing folder")
    finally:
        srv.stop(signal.SIGKILL)


def test_openapi(c):
    st, _, d, _ = c.get("/api/v1/openapi.json")
    op = d.get("paths", {}).get("/api/v1/leaderboards/{name}/history", {}).get("get", {})
    names = sorted(p.get("name") for p in op.get("parameters", []))
    check(names == ["gpu", "name", "top"] and "200" in op.get("responses", {}) and "400" in op.get("responses", {}),
          "openapi.json describes GET /leaderboards/{name}/history", op)


def main():
    if not os.access(BIN, os.X_OK):
        print("FAIL %s is not built" % BIN)
        print("test_web_api: 0 passed, 1 failed, 0 skipped")
        return 1
    with tempfile.TemporaryDirectory(prefix="kjudge-webapi-") as tmp:
        srv = kjtest.Server(tmp)
        if not check(srv.start(), "the server starts"):
            print("test_web_api: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
            return 1
        fr = None
        try:
            t = {"admin": srv.printed().strip()}
            for name in ("alice", "bob", "carol"):
                t[name] = srv.cli("user", "add", name, "--db", srv.db)[1].strip()
            t["runner"] = srv.cli("runner", "add", "fake-0", "--gpu", "H200,B200", "--db", srv.db)[1].strip()
            c = Client(srv.port)
            fr = FakeRunner(srv.port, t["runner"], pause=0.005).start()
            if os.path.isdir(VENDOR):
                test_vendor(srv, c)
            else:
                Counts.skipped += 1
                print("SKIP /static/vendor/: %s is missing (deploy/deps.sh installs the libjs-* packages)" % VENDOR)
            test_pages(srv, c)
            test_history(srv, c, t)
            test_openapi(c)
        finally:
            if fr:
                fr.stop()
            srv.stop(signal.SIGKILL)
        test_no_vendor(tmp)
    print("test_web_api: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
