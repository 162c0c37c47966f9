#!/usr/bin/env python3
"""web_walk.py - serve a copy of a kjudge database and walk through its web
site in headless Chromium: the home page, every board's statement and
rankings on each GPU type, the submissions list, and every submission's page
(at most --max), anonymously and as an admin sees them (the copy is served
with a fresh admin token; no user's token is needed). Saves a screenshot of each whole page at laptop (1366 px) and phone
(390 px) widths in --out, and prints what each page showed and any script
error or failed request other than the expected 403 of an unpublished
reference.

    python3 tests/web_walk.py --db web-round.db --out /tmp/screens [--max 20]

A database from a real round: tests/gpu/web_round.py. Uses Selenium from
.venv-browser/ (deploy/deps.sh --test) and Debian's chromium.
"""
import argparse
import os
import re
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
VENV = os.path.join(ROOT, ".venv-browser")
try:
    import selenium  # noqa: F401
except ImportError:
    py = os.path.join(VENV, "bin", "python3")
    if os.path.exists(py) and os.path.realpath(sys.prefix) != os.path.realpath(VENV):
        os.execv(py, [py] + sys.argv)
    sys.exit("web_walk: Selenium is missing (deploy/deps.sh --test)")

sys.path.insert(0, os.path.join(HERE, "api"))
sys.path.insert(0, os.path.join(HERE, "lib"))
from kjhttp import Client  # noqa: E402
from kjservice import Server  # noqa: E402
from test_web import Browser, LAPTOP, PHONE  # noqa: E402


def settle(b):
    """Wait until the page has drawn its main content (no 'Loading...' left)."""
    end = time.time() + 15
    while time.time() < end:
        if b.js("return !document.querySelector('#loading') && ![...document.querySelectorAll('main .muted')]"
                ".some(e => /^Loading/.test(e.textContent))"):
            break
        time.sleep(0.1)
    time.sleep(0.4)


def visit(b, route, name, out, problems):
    b.go(route)
    settle(b)
    main = b.text("main")
    if "Something went wrong" in main:
        problems.append("%s: %s" % (route, main[:200]))
    for e in b.d.get_log("browser"):
        msg = e.get("message", "")
        if e.get("level") == "SEVERE" and "reference.cu" not in msg and "favicon" not in msg:
            problems.append("%s: %s" % (route, msg[:200]))
    print("%-34s %s" % (route or "#/", re.sub(r"\s+", " ", main)[:110]), flush=True)
    for (w, h), tag in ((LAPTOP, "laptop"), (PHONE, "phone")):
        b.size(w, h)
        time.sleep(0.2)
        b.save_full(os.path.join(out, "%s-%s.png" % (tag, name)))
    b.size(*LAPTOP)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--max", type=int, default=20)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="kjudge-walk-")
    srv = Server(tmp, rate_flags=[])  # the rate limits a real round has
    os.makedirs(os.path.dirname(srv.db))
    shutil.copy(a.db, srv.db)
    problems = []
    b = None
    try:
        if not srv.start():
            raise RuntimeError("the server did not start: " + srv.server_log()[-2000:])
        admin, port = srv.printed().strip(), srv.port
        c = Client(port)
        b = Browser(port)
        visit(b, "", "home-anonymous", a.out, problems)
        b.js("sessionStorage.setItem('kjudge-token', arguments[0])", admin)
        boards = c.get("/api/v1/leaderboards")[2]["leaderboards"]
        subs = c.get("/api/v1/submissions?user=*&limit=500", admin)[2]["submissions"]
        used = sorted({s["leaderboard"] for s in subs})
        visit(b, "", "home", a.out, problems)
        for bd in boards:
            if bd["name"] not in used:
                continue
            visit(b, "#/board/" + bd["name"], "board-" + bd["name"], a.out, problems)
            for g in bd["gpus"]:
                visit(b, "#/board/%s/rankings/%s" % (bd["name"], g), "rankings-%s-%s" % (bd["name"], g), a.out, problems)
        visit(b, "#/me?user=*", "submissions", a.out, problems)
        for s in subs[:a.max]:
            visit(b, "#/submission/%d" % s["id"], "submission-%d-%s" % (s["id"], s["verdict"] or s["status"]),
                  a.out, problems)
        visit(b, "#/admin", "admin", a.out, problems)
    finally:
        if b:
            b.quit()
        srv.stop(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)
    print("web_walk: %d pages, %d problems" % (len(os.listdir(a.out)) // 2, len(problems)))
    for p in problems:
        print("PROBLEM " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
