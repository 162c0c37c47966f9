#!/usr/bin/env python3
"""test_disk_full.py - the server on a filesystem that fills up, over real HTTP.

Needs root: the file re-runs itself in a private mount namespace
(`unshare -m`), mounts a small tmpfs there and starts bin/kjudge-server
with its database on it. Then it fills the tmpfs with a filler file and
checks that /healthz answers 503 with the reason, that submissions and
runner requests get 503 with Retry-After and a message that says the disk
is full (never a bare 500), frees the space, checks that /healthz and
submissions recover by themselves, and that every submission acknowledged
with 202 (before, during and after) is in the database with its source,
also after a SIGKILL and a restart. Without root or without mount
namespaces every check is reported skipped. Python 3 standard library
only; ends with "test_disk_full: N passed, N failed, N skipped".
"""
import errno
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check, skip  # noqa: E402
from kjhttp import Client  # noqa: E402
from kjtest import is_error, GOOD_SOURCE  # noqa: E402
from kjtest import Server, claim  # noqa: E402

INNER = "--in-private-mount-namespace"
TMPFS_SIZE = 16 * 1024 * 1024
PAD = 48 * 1024  # bytes of comment added to each source, so that writes need new space


def source(i):
    return GOOD_SOURCE + ("// %d " % i) + "x" * PAD + "\n"


def submit(c, token, i):
    st, h, d, _ = c.submit(token, [("leaderboard", "fp8_quant"), ("gpu", "H200"), ("mode", "test")],
                           [("file", "k%d.cu" % i, source(i).encode())])
    return st, h, d


def fill(path):
    """Write a filler file until the filesystem is full; returns its size."""
    n = 0
    with open(path, "wb", buffering=0) as f:
        for chunk in (1 << 20, 1 << 16, 1 << 12, 1 << 8, 1):
            while True:
                try:
                    f.write(b"\0" * chunk)
                    n += chunk
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    break
    return n


def stored(db):
    con = sqlite3.connect(db, timeout=10)
    try:
        return {r[0]: bytes(r[1]) for r in con.execute("SELECT id, source FROM submissions")}
    finally:
        con.close()


def run(tmp):
    var = os.path.join(tmp, "var")
    os.makedirs(var)
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%d" % TMPFS_SIZE, "tmpfs", var], capture_output=True)
    if m.returncode != 0:
        skip("the disk-full test cannot mount a tmpfs here: %s" % m.stderr.decode()[-200:])
        return
    srv = Server(tmp)
    if not check(srv.start(), "the server starts with its database on a %d MiB tmpfs" % (TMPFS_SIZE >> 20),
                 srv.server_log()[-1500:] if os.path.exists(os.path.join(tmp, "server.log")) else ""):
        return
    try:
        scenario(srv)
    finally:
        srv.stop(signal.SIGKILL)


def scenario(srv):
    c = Client(srv.port)
    rc, out, _ = srv.cli("user", "add", "alice", "--db", srv.db)
    rc2, out2, _ = srv.cli("runner", "add", "box", "--gpu", "H200", "--db", srv.db)
    if not check(rc == 0 and rc2 == 0, "user add and runner add"):
        return
    alice, runner = out.strip(), out2.strip()
    acked = {}
    for i in range(3):
        st, _, d = submit(c, alice, i)
        if check(st == 202, "submit %d before the disk fills -> 202" % i, (st, d)):
            acked[d["id"]] = source(i).encode()
    st, _, d, _ = c.get("/healthz")
    check(st == 200 and d.get("status") == "ok", "healthz is ok while there is room", (st, d))

    filler = os.path.join(os.path.dirname(srv.db), "filler")
    fill(filler)
    st, h, d, _ = c.get("/healthz")
    check(st == 503 and isinstance(d, dict) and d.get("status") == "unhealthy" and "disk" in str(d.get("storage")),
          "healthz answers 503 naming the full disk", (st, d))

    statuses = []
    for i in range(3, 43):
        st, h, d = submit(c, alice, i)
        statuses.append(st)
        if st == 202:
            acked[d["id"]] = source(i).encode()
        if st == 503:
            break
    print("submissions while the disk was full: %s" % statuses)
    check(500 not in statuses, "no submission gets a bare 500 on a full disk", statuses)
    ok = check(st == 503 and is_error(d, "storage_unavailable"), "a submission that cannot be stored -> 503",
               (statuses, d))
    if ok:
        check("disk full" in d["error"]["message"] and "try again later" in d["error"]["message"],
              "the message says the disk is full and to try again later", d["error"]["message"])
        check(h.get("retry-after", "").isdigit() and int(h["retry-after"]) > 0, "the 503 has Retry-After",
              h.get("retry-after"))
    st, h, d, _ = c.post_json("/api/v1/runner/claim", {"runner": "box", "gpu": "H200", "arch": "sm_90a"}, runner)
    check(st in (200, 503) and (st == 200 or (is_error(d, "storage_unavailable") and "retry-after" in h)),
          "a runner claim on a full disk -> 200 or 503 with Retry-After, never 500", (st, d))
    st, _, d, _ = c.get("/api/v1/leaderboards/fp8_quant/rankings?gpu=H200")
    check(st == 200, "reads still work on a full disk", (st, d))
    st, _, d, _ = c.get("/healthz")
    check(st == 503, "healthz still 503 while the disk is full", (st, d))

    os.unlink(filler)
    st, _, d, _ = c.get("/healthz")
    check(st == 200 and d.get("status") == "ok", "healthz recovers by itself once there is room", (st, d))
    st, _, d = submit(c, alice, 100)
    if check(st == 202, "submissions work again once there is room", (st, d)):
        acked[d["id"]] = source(100).encode()
    job = claim(c, runner)
    check(job is not None, "a runner claims a job again")

    have = stored(srv.db)
    lost = sorted(i for i, src in acked.items() if have.get(i) != src)
    check(not lost and len(acked) >= 4, "every acknowledged submission is stored with its source (%d)" % len(acked),
          lost)
    srv.stop(signal.SIGKILL)
    if check(srv.start(), "the server restarts on the same database after SIGKILL"):
        have = stored(srv.db)
        lost = sorted(i for i, src in acked.items() if have.get(i) != src)
        check(not lost, "after the restart too", lost)


def main():
    if os.geteuid() != 0:
        skip("the disk-full test needs root (it mounts a tmpfs)")
        return
    if INNER not in sys.argv:
        probe = subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True)
        if probe.returncode != 0:
            skip("the disk-full test needs mount namespaces (unshare -m): %s" % probe.stderr.decode()[-200:])
            return
        # The summary line is printed by the inner run.
        p = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable,
                            os.path.abspath(__file__), INNER])
        sys.exit(p.returncode)
    with tempfile.TemporaryDirectory(prefix="kjudge-full-") as tmp:
        try:
            run(tmp)
        finally:
            subprocess.run(["umount", os.path.join(tmp, "var")], capture_output=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as ex:  # a crash is a failure, never a silent pass
        check(False, "test_disk_full ran to the end", repr(ex))
    print("test_disk_full: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    sys.exit(1 if Counts.failed else 0)
