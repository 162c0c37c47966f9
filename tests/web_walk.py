#!/usr/bin/env python3
"""web_walk.py - serve a copy of a kjudge database and walk through its web
site in headless Chromium: the home page, every board's statement and
rankings on each GPU type, the submissions list, and every submission's page
(at most --max), anonymously and as an admin sees them (the copy is served
with a fresh admin token; no user's token is needed). Saves a screenshot of each whole page at laptop (1366 px) and phone
(390 px) widths in --out, and prints what each page showed, any page that
sticks out sideways at either width (outside a box that scrolls), and any
console error (a script error or a refused request); ends with
"web_walk: N pages, N overflowing, N console errors, N other problems" and
exits 1 when any count is not 0.

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

# What sticks out on the right of a w px window outside a box that clips or scrolls.
OVERFLOW_JS = """
  const clipped = e => { for (let p = e.parentElement; p; p = p.parentElement)
    if (getComputedStyle(p).overflowX !== 'visible') return true; return false; };
  return [document.documentElement.scrollWidth,
          [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > arguments[0] + 1
            && !clipped(e) && e.checkVisibility()).slice(0, 3).map(e => e.tagName + '.' + e.className)]"""


def settle(b):
    """Wait until the page has drawn its main content (no 'Loading...' left)."""
    end = time.time() + 15
    while time.time() < end:
        if b.js("return !document.querySelector('#loading') && ![...document.querySelectorAll('main .muted')]"
                ".some(e => /^Loading/.test(e.textContent))"):
            break
        time.sleep(0.1)
    time.sleep(0.4)


def visit(b, route, name, out, found):
    b.go(route)
    settle(b)
    main = b.text("main")
    if "Something went wrong" in main:
        found["problems"].append("%s: %s" % (route, main[:200]))
    print("%-34s %s" % (route or "#/", re.sub(r"\s+", " ", main)[:110]), flush=True)
    for (w, h), tag in ((LAPTOP, "laptop"), (PHONE, "phone")):
        b.size(w, h)
        time.sleep(0.2)
        width, wide = b.js(OVERFLOW_JS, w)
        if width > w or wide:
            found["overflow"].append("%s at %d px: page %d px wide, %s" % (route or "#/", w, width, wide))
        b.save_full(os.path.join(out, "%s-%s.png" % (tag, name)))
    for e in b.d.get_log("browser"):
        if e.get("level") == "SEVERE":
            found["console"].append("%s: %s" % (route or "#/", e.get("message", "")[:200]))
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
    found = {"overflow": [], "console": [], "problems": []}
    b = None
    try:
        if not srv.start():
            raise RuntimeError("the server did not start: " + srv.server_log()[-2000:])
        admin, port = srv.printed().strip(), srv.port
        c = Client(port)
        b = Browser(port)
        visit(b, "", "home-anonymous", a.out, found)
        b.js("sessionStorage.setItem('kjudge-token', arguments[0])", admin)
        boards = c.get("/api/v1/leaderboards")[2]["leaderboards"]
        subs = c.get("/api/v1/submissions?user=*&limit=500", admin)[2]["submissions"]
        used = sorted({s["leaderboard"] for s in subs})
        visit(b, "", "home", a.out, found)
        for bd in boards:
            if bd["name"] not in used:
                continue
            visit(b, "#/board/" + bd["name"], "board-" + bd["name"], a.out, found)
            for g in bd["gpus"]:
                visit(b, "#/board/%s/rankings/%s" % (bd["name"], g), "rankings-%s-%s" % (bd["name"], g), a.out, found)
        visit(b, "#/me?user=*", "submissions", a.out, found)
        visit(b, "#/submit", "submit", a.out, found)
        for u in sorted({s["user"] for s in subs})[:5]:
            visit(b, "#/user/" + u, "user-" + u, a.out, found)
        for s in subs[:a.max]:
            visit(b, "#/submission/%d" % s["id"], "submission-%d-%s" % (s["id"], s["verdict"] or s["status"]),
                  a.out, found)
        visit(b, "#/admin", "admin", a.out, found)
    finally:
        if b:
            b.quit()
        srv.stop(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)
    for kind in ("overflow", "console", "problems"):
        for p in found[kind]:
            print("PROBLEM %s %s" % (kind, p))
    print("web_walk: %d pages, %d overflowing, %d console errors, %d other problems" %
          (len(os.listdir(a.out)) // 2, len(found["overflow"]), len(found["console"]), len(found["problems"])))
    return 1 if any(found.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
