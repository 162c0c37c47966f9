#!/usr/bin/env python3
"""test_args.py - query arguments and headers that the schema run found read
leniently, each now refused with 400 and our JSON error:

- an argument given twice (?timeout=1&timeout=600 was read as its first value);
- more query arguments than any route reads;
- an empty or malformed timeout/limit (an empty one was taken as absent, and
  ?timeout=x was accepted when no wait or stream used it);
- a malformed timeout or Last-Event-ID on the event list (they were ignored
  unless a stream was asked for), and an empty Last-Event-ID.

The same routes with good arguments still answer 200. Real server on
loopback, temporary database. Prints "test_args: N passed, N failed, N skipped".
"""
import os
import signal
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import kjcheck
import kjtest
from kjcheck import check
from kjhttp import Client


def is_error(st, data, code):
    return st == 400 and isinstance(data, dict) and data.get("error", {}).get("code") == code


def run(srv, c):
    rc, out, err = srv.cli("user", "add", "argy", "--db", srv.db)
    check(rc == 0, "user add", err)
    tok = out.strip()
    sid = kjtest.submit(c, tok)
    check(sid is not None, "a submission to read")
    sub = "/api/v1/submissions/%d" % (sid or 1)
    ev = sub + "/events"

    for path in (sub + "?timeout=1&timeout=600", sub + "?wait=0&wait=1",
                 "/api/v1/submissions?limit=1&limit=2", ev + "?stream=0&stream=1",
                 "/api/v1/leaderboards/fp8_quant/rankings?gpu=H200&gpu=B200"):
        st, _, data, _ = c.get(path, tok)
        check(is_error(st, data, "bad_query") and "given more than once" in data["error"]["message"],
              "an argument given twice is refused: %s" % path, (st, data))
    many = "&".join("a%d=1" % i for i in range(17))
    st, _, data, _ = c.get("/api/v1/leaderboards?" + many, tok)
    check(is_error(st, data, "bad_query"), "17 query arguments are refused", (st, data))
    st, _, data, _ = c.get("/api/v1/leaderboards?" + "&".join("a%d=1" % i for i in range(16)), tok)
    check(st == 200, "16 query arguments are fine", st)

    for path, code in ((sub + "?timeout=", "bad_timeout"), (sub + "?timeout=x", "bad_timeout"),
                       (sub + "?timeout=1000000000", "bad_timeout"),
                       (sub + "?wait=0&timeout=-1", "bad_timeout"),
                       ("/api/v1/submissions?limit=", "bad_limit"),
                       ("/api/v1/submissions?mode=", "bad_filter"),
                       ("/api/v1/submissions?verdict=", "bad_filter"),
                       ("/api/v1/submissions?gpu=", "bad_filter"),
                       ("/api/v1/submissions?leaderboard=", "bad_filter"),
                       (ev + "?timeout=x", "bad_timeout"), (ev + "?timeout=0", "bad_timeout"),
                       (ev + "?stream=0&timeout=", "bad_timeout")):
        st, _, data, _ = c.get(path, tok)
        check(is_error(st, data, code), "%s -> 400 %s" % (path, code), (st, data))
    for value in ("", "x", "-1", "1234567890"):
        st, _, data, _ = c.get(ev, tok, headers={"Last-Event-ID": value})
        check(is_error(st, data, "bad_last_event_id"), "Last-Event-ID '%s' on the event list -> 400" % value,
              (st, data))

    for path in (sub, sub + "?timeout=5", sub + "?wait=0&timeout=700", "/api/v1/submissions?limit=9999",
                 ev, ev + "?timeout=5", ev + "?stream=0", ev + "?stream="):
        st, _, data, _ = c.get(path, tok)
        check(st == 200, "good arguments still work: %s" % path, (st, data))
    st, _, data, _ = c.get(ev, tok, headers={"Last-Event-ID": "0"})
    check(st == 200, "Last-Event-ID 0 on the event list", (st, data))


def main():
    with tempfile.TemporaryDirectory(prefix="kjudge-args-") as tmp:
        srv = kjtest.Server(tmp)
        if check(srv.start(), "the server starts"):
            try:
                run(srv, Client(srv.port))
            finally:
                srv.stop(signal.SIGKILL)
    C = kjcheck.Counts
    print("test_args: %d passed, %d failed, %d skipped" % (C.passed, C.failed, C.skipped))
    return 1 if C.failed else 0


if __name__ == "__main__":
    sys.exit(main())
