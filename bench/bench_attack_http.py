#!/usr/bin/env python3
"""bench_attack_http.py - hostile HTTP input against a kjudge-server, as a table.

Starts the server given by --server (default bin/kjudge-server; give an
older build to compare, with its own boards in --leaderboards) with its default limits on a loopback port and a
temporary database, and sends, counting per attack the inputs sent, the
server crashes (it is restarted after one), 5xx answers, answers that are
not JSON, and what was stored that should not have been (or lost):

  multipart   the unnamed-part reproducer, then random mutations of a good
              multipart body, some with unnamed parts (one user token);
  slowloris   1,100 connections from 127.0.0.2 that trickle a request head
              for 35 s (--trickle-seconds) while 20 requests come from 127.0.0.1 (5 s timeout
              each): how many are answered, how many slow heads survive;
  names       POST /users with ".", "..", "...";
  lenient     a NUL in a form field, "\\u0000" in a JSON name, text after a
              JSON body, Content-Length twice, a NUL in the URL (raw and
              %00), a 40 KB header and a 40 KB URL;
  bom         a submission whose source starts with a byte-order mark.

The full-disk case needs root and a tmpfs: tests/api/test_disk_full.py.
Prints a Markdown table; takes about a minute and a half. Exit 0 unless it could not run.
--smoke (make test, tests/api/test_benches.py): 20 mutations, 20 slow heads
trickling for 2 s; a few seconds.
"""
import argparse
import json
import os
import random
import resource
import select
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(ROOT, "bin", "kjudge-server"))
    ap.add_argument("--mutations", type=int, default=500)
    ap.add_argument("--slow", type=int, default=1100)
    ap.add_argument("--trickle-seconds", type=float, default=35, help="how long the slow heads trickle (default 35)")
    ap.add_argument("--leaderboards", help="the boards folder the server loads (an older build needs its own)")
    ap.add_argument("--smoke", action="store_true", help="a run of seconds for make test")
    a = ap.parse_args()
    if a.smoke:
        a.mutations, a.slow, a.trickle_seconds = 20, 20, 2.0
    os.environ["KJUDGE_SERVER_BIN"] = os.path.abspath(a.server)
    sys.path.insert(0, os.path.join(ROOT, "tests", "api"))
    sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
    global kjhttp, kjservice, GOOD
    import kjhttp  # noqa: E402
    import kjservice  # noqa: E402  (reads KJUDGE_SERVER_BIN)
    import kjtest  # noqa: E402
    GOOD = kjtest.GOOD_SOURCE.encode()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    rows = []
    with tempfile.TemporaryDirectory(prefix="kjudge-attack-") as tmp:
        h = Harness(tmp, a.leaderboards)
        if not h.start():
            print("attack_http: the server did not start")
            return 2
        try:
            for fn in (multipart, slowloris, names, lenient, bom):
                rows.append(fn(h, a))
        finally:
            h.srv.stop()
    print("server: %s\n" % a.server)
    print("| attack | inputs | crashes | 5xx | not JSON | wrongly stored / lost | notes |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %d | %d | %d | %d | %d | %s |" % (r["name"], r["inputs"], r["crashes"], r["5xx"],
                                                  r["nonjson"], r["bad"], r["notes"]))
    return 0


class Harness:
    def __init__(self, tmp, boards=None):
        self.srv = kjservice.Server(tmp, boards=boards) if boards else kjservice.Server(tmp)
        self.c = None

    def start(self):
        if not self.srv.start():
            return False
        self.c = kjhttp.Client(self.srv.port)
        if not hasattr(self, "alice"):
            self.admin = self.srv.printed().strip()
            self.alice = self.srv.cli("user", "add", "alice", "--db", self.srv.db)[1].strip()
        return True

    def alive_or_restart(self, row, status=0):
        """Count a crash and restart; status None (no answer) waits for a dying process."""
        if status is None:
            try:
                self.srv.proc.wait(2)
            except subprocess.TimeoutExpired:
                pass
        if self.srv.proc.poll() is None:
            return True
        row["crashes"] += 1
        self.srv.stop()
        return self.start()

    def count(self):
        con = sqlite3.connect(self.srv.db, timeout=10)
        try:
            return (con.execute("SELECT count(*) FROM submissions").fetchone()[0],
                    [r[0] for r in con.execute("SELECT name FROM users")])
        finally:
            con.close()


def new_row(name):
    return {"name": name, "inputs": 0, "crashes": 0, "5xx": 0, "nonjson": 0, "bad": 0, "notes": ""}


def tally(row, st, h):
    row["inputs"] += 1
    if st is None:
        return
    if st >= 500:
        row["5xx"] += 1
    if st not in (200, 202, 204, 304) and not h.get("content-type", "").startswith("application/json"):
        row["nonjson"] += 1


def post_raw(h, body, ctype, token=None):
    try:
        st, hd, d, _ = h.c.request("POST", "/api/v1/submissions", token=token, body=body,
                                   headers={"Content-Type": ctype}, timeout=10)
        return st, hd, d
    except (OSError, Exception):
        return None, {}, None


def mp_body(parts):
    out = b""
    for headers, data in parts:
        out += b"--XyZ\r\n" + headers + b"\r\n" + data + b"\r\n"
    return out + b"--XyZ--\r\n"


def multipart(h, a):
    row = new_row("multipart (unnamed parts, mutations)")
    rnd = random.Random(11)
    good = [(b'Content-Disposition: form-data; name="leaderboard"\r\n', b"fp8_quant"),
            (b'Content-Disposition: form-data; name="gpu"\r\n', b"H200"),
            (b'Content-Disposition: form-data; name="file"; filename="k.cu"\r\n', GOOD)]
    bodies = [b"--XyZ\r\nContent-Type: text/plain\r\n\r\nx\r\n--XyZ--\r\n"]
    for i in range(a.mutations):
        parts = list(good)
        k = rnd.randrange(4)
        if k == 0:
            parts.insert(rnd.randrange(4), (b"Content-Type: text/plain\r\n", b"x"))
        elif k == 1:
            j = rnd.randrange(3)
            parts[j] = (parts[j][0].replace(b'name="', b'nom="'), parts[j][1])
        body = bytearray(mp_body(parts))
        for _ in range(rnd.randrange(4)):
            body[rnd.randrange(len(body))] = rnd.choice(b"\r\n-\"; =\0x")
        bodies.append(bytes(body))
    before, _ = h.count()
    ok = 0
    for b in bodies:
        st, hd, d = post_raw(h, b, "multipart/form-data; boundary=XyZ", h.alice)
        tally(row, st, hd)
        ok += st == 202
        if not h.alive_or_restart(row, st):
            row["notes"] = "the server did not restart"
            return row
    after, _ = h.count()
    row["bad"] = abs((after - before) - ok)
    row["notes"] = "%d accepted (202), stored %d" % (ok, after - before)
    return row


def slowloris(h, a):
    row = new_row("slowloris (%d slow heads)" % a.slow)
    socks = []
    for _ in range(a.slow):
        try:
            s = socket.socket()
            s.bind(("127.0.0.2", 0))
            s.settimeout(2)
            s.connect(("127.0.0.1", h.srv.port))
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            s.setblocking(False)
            socks.append(s)
        except OSError:
            pass
    row["inputs"] = len(socks)
    legit = {"answered": 0, "sent": 0}

    def requests():  # from 127.0.0.1 while the slow heads keep trickling
        for _ in range(20):
            legit["sent"] += 1
            try:
                st, hd, _, _ = h.c.get("/healthz", timeout=5)
                legit["answered"] += st == 200
                tally(row, st, hd)
            except OSError:
                row["inputs"] += 1

    th = threading.Thread(target=requests)
    th.start()
    t0, open_ = time.time(), {s.fileno(): s for s in socks}
    while time.time() - t0 < a.trickle_seconds and open_:
        p = select.poll()
        for fd in open_:
            p.register(fd, select.POLLIN)
        for fd, _ in p.poll(1000):
            try:
                if open_[fd].recv(100) == b"":
                    del open_[fd]
            except BlockingIOError:
                pass
            except OSError:
                del open_[fd]
        for fd, s in list(open_.items()):
            try:
                s.send(b"a")
            except OSError:
                del open_[fd]
    th.join()
    row["notes"] = ("legit requests answered %d/20; slow heads still open after %g s of trickling: %d" %
                    (legit["answered"], a.trickle_seconds, len(open_)))
    for s in socks:
        s.close()
    h.alive_or_restart(row)
    return row


def names(h, a):
    row = new_row("user names . .. ...")
    for n in (".", "..", "..."):
        st, hd, d, _ = h.c.post_json("/api/v1/users", {"name": n}, h.admin, runner=False)
        tally(row, st, hd)
        row["bad"] += st == 201
    row["notes"] = "created: %d of 3" % row["bad"]
    h.alive_or_restart(row)
    return row


def raw(h, data):
    s = socket.create_connection(("127.0.0.1", h.srv.port), timeout=5)
    try:
        s.sendall(data)
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        head = buf.split(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
        st = int(head[0].split()[1]) if head and head[0].startswith("HTTP/") else None
        hd = {ln.split(":", 1)[0].lower(): ln.split(":", 1)[1].strip() for ln in head[1:] if ":" in ln}
        return st, hd
    except (OSError, ValueError, IndexError):
        return None, {}
    finally:
        s.close()


def lenient(h, a):
    row = new_row("lenient parsing")
    notes = []
    before, users = h.count()
    body, ctype = kjhttp.multipart([("leaderboard", "fp8_quant\0evil"), ("gpu", "H200")],
                                     [("file", "k.cu", GOOD)])
    st, hd, d = post_raw(h, body, ctype, h.alice)
    tally(row, st, hd)
    if st == 202:
        row["bad"] += 1
        notes.append("NUL field accepted")
    for raw_body, what in [(b'{"name": "zed\\u0000evil"}', "\\u0000 name"), (b'{"name": "yan"}garbage', "trailing")]:
        st, hd, d, _ = h.c.post_json("/api/v1/users", None, h.admin, raw=raw_body)
        tally(row, st, hd)
        if st == 201:
            row["bad"] += 1
            notes.append("%s accepted (user %s)" % (what, d.get("name")))
    body = b'{"name": "smuggle", "invite": "x"}'
    # (what, request, the status a careless server gives: counted as wrongly taken)
    for what, req, wrong in [
            ("Content-Length twice", b"POST /api/v1/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             b"Content-Length: 5\r\nContent-Length: %d\r\n\r\n" % len(body) + body, lambda st: st != 400),
            ("raw NUL URL", b"GET /api/v1/leaderboards/fp8_quant\0evil HTTP/1.1\r\nHost: x\r\n\r\n",
             lambda st: st == 200),
            ("%00 URL", b"GET /api/v1/leaderboards/fp8_quant%00evil HTTP/1.1\r\nHost: x\r\n\r\n",
             lambda st: st == 200),
            ("40 KB header", b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40000 + b"\r\n\r\n",
             lambda st: st == 200),
            ("40 KB URL", b"GET /healthz?" + b"a" * 40000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", lambda st: st == 200)]:
        st, hd = raw(h, req)
        tally(row, st, hd)
        if wrong(st):
            row["bad"] += 1
            notes.append("%s -> %s" % (what, st))
    row["notes"] = "; ".join(notes) or "all refused"
    h.alive_or_restart(row)
    return row


def bom(h, a):
    row = new_row("source with a BOM")
    st, hd, d, _ = h.c.submit(h.alice, [("leaderboard", "fp8_quant"), ("gpu", "B200")],
                              [("file", "k.cu", b"\xef\xbb\xbf" + GOOD)])
    tally(row, st, hd)
    stored = None
    if st == 202:
        stored = bytes(h.srv.row(d["id"])["source"])
        row["bad"] += stored[:3] == b"\xef\xbb\xbf"
    row["notes"] = "status %s; stored with the mark: %s" % (st, None if stored is None else stored[:3] == b"\xef\xbb\xbf")
    return row


if __name__ == "__main__":
    sys.exit(main())
