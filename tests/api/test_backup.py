#!/usr/bin/env python3
"""test_backup.py - kjudge-server backup and restore, under write load.

Starts bin/kjudge-server; three threads post submissions (and a fake
runner claims and finishes jobs) while `kjudge-server backup FILE` runs.
Checks that the backup is one self-contained file (mode 0600) that passes
integrity_check, has the current schema version, holds every submission
acknowledged (202) before the backup started, and is consistent (foreign
keys hold, every finished job has its result). Then: restore is refused while the
server holds the database, and changes nothing; restore into a new path
gives a database a server starts on and serves those submissions from;
restore over the live database (server stopped) keeps the replaced one as
.before-restore; and restore refuses, naming the problem and changing
nothing, a file that is not a database, a corrupted database, one from a
newer schema, and an SQLite file that is not kjudge's. Python 3 standard
library only; ends with "test_backup: N passed, N failed, N skipped" and
exits 1 on failure.
"""
import hashlib
import os
import shutil
import signal
import sqlite3
import stat
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check  # noqa: E402
from kjhttp import Client  # noqa: E402
from kjservice import BIN, NO_RATE_LIMITS  # noqa: E402
from kjtest import result_body  # noqa: E402
from kjtest import submit, claim  # noqa: E402
import kjdeploy  # noqa: E402
from kjdeploy import cli  # noqa: E402


class Load:
    """Threads that submit (and a runner that judges) until stop()."""

    def __init__(self, port, user, runner):
        self.port, self.user, self.runner = port, user, runner
        self.acked = []            # (monotonic time of the 202, id)
        self.errors = []
        self.mu = threading.Lock()
        self.halt = threading.Event()
        self.threads = [threading.Thread(target=self.submitter) for _ in range(2)]
        self.threads.append(threading.Thread(target=self.judge))

    def submitter(self):
        c = Client(self.port)
        while not self.halt.is_set():
            try:
                sid = submit(c, self.user)
            except OSError as e:
                self.errors.append(repr(e))
                continue
            if sid is None:
                self.errors.append("a submission was refused")
                continue
            with self.mu:
                self.acked.append((time.monotonic(), sid))

    def judge(self):
        c = Client(self.port)
        while not self.halt.is_set():
            job = claim(c, self.runner, name="backup-box")
            if job is None:
                time.sleep(0.01)
                continue
            c.post_json("/api/v1/runner/jobs/%d/result?attempt=%d" % (job["id"], job["attempt"]), result_body("accepted"), self.runner)

    def start(self):
        for t in self.threads:
            t.start()

    def stop(self):
        self.halt.set()
        for t in self.threads:
            t.join(60)

    def acked_before(self, t):
        with self.mu:
            return {sid for at, sid in self.acked if at < t}


def db_ids(path):
    con = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        return {r[0] for r in con.execute("SELECT id FROM submissions")}
    finally:
        con.close()


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_backup_under_load(srv, tmp, tokens):
    load = Load(srv.port, tokens["user"], tokens["runner"])
    load.start()
    time.sleep(1.0)
    backup = os.path.join(tmp, "backups", "kjudge-1.db")
    os.makedirs(os.path.dirname(backup))
    t0 = time.monotonic()
    rc, out, err = cli("backup", backup, "--db", srv.db)
    t1 = time.monotonic()
    time.sleep(0.5)
    load.stop()
    before = load.acked_before(t0)
    during = load.acked_before(t1) - before
    check(rc == 0 and "backup of" in err, "backup exits 0 while the server writes", (rc, err[-300:]))
    check(not load.errors, "the load ran without errors", load.errors[:3])
    check(len(before) >= 20 and len(during) + len(load.acked_before(1e18) - before) > 0,
          "submissions were acknowledged before and while the backup ran", (len(before), len(during)))
    if rc != 0:
        return None, set()
    st = os.stat(backup)
    check(stat.S_IMODE(st.st_mode) == 0o600, "the backup is mode 0600", oct(st.st_mode))
    leftovers = [f for f in os.listdir(os.path.dirname(backup)) if f != "kjudge-1.db"]
    check(not leftovers, "one self-contained file (no -wal, no temporary file left)", leftovers)
    con = sqlite3.connect("file:%s?mode=ro" % backup, uri=True)
    try:
        ok = con.execute("PRAGMA integrity_check").fetchone()[0]
        version = con.execute("PRAGMA user_version").fetchone()[0]
        jm = con.execute("PRAGMA journal_mode").fetchone()[0]
        ids = {r[0] for r in con.execute("SELECT id FROM submissions")}
        orphans = len(con.execute("PRAGMA foreign_key_check").fetchall())
        done_wo_result = con.execute("SELECT COUNT(*) FROM submissions WHERE status = 'done' AND "
                                     "result IS NULL").fetchone()[0]
    finally:
        con.close()
    check(ok == "ok", "the backup passes integrity_check", ok)
    check(version == schema_version(), "the backup has the server's schema version", version)
    check(jm == "delete", "the backup is in rollback-journal mode (a single file)", jm)
    missing = before - ids
    check(not missing, "every submission acknowledged before the backup started is in it (%d)" % len(before),
          sorted(missing)[:10])
    check(orphans == 0 and done_wo_result == 0, "the snapshot is consistent (foreign keys, results)",
          (orphans, done_wo_result))
    newer = db_ids(srv.db) - ids
    check(len(newer) > 0, "submissions after the backup are not in it (the copy is a snapshot)", len(newer))
    return backup, before


def test_restore(srv, tmp, backup, before):
    live_sha = sha(srv.db)
    rc, _, err = cli("restore", backup, "--db", srv.db)
    check(rc == 1 and "stop it first" in err, "restore is refused while the server holds the database", (rc, err[-300:]))
    check(sha(srv.db) == live_sha and not os.path.exists(srv.db + ".before-restore"),
          "a refused restore changes nothing")

    other = os.path.join(tmp, "restored", "kjudge.db")
    rc, _, err = cli("restore", backup, "--db", other)
    check(rc == 0, "restore into a new path", (rc, err[-300:]))
    con = sqlite3.connect(other)
    try:
        ok = con.execute("PRAGMA integrity_check").fetchone()[0]
        ids = {r[0] for r in con.execute("SELECT id FROM submissions")}
        jm = con.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        con.close()
    check(ok == "ok" and before <= ids, "the restored database passes integrity_check and holds them all", ok)
    check(jm == "wal", "the restored database is in WAL mode again", jm)
    check(stat.S_IMODE(os.stat(other).st_mode) == 0o600, "the restored database is mode 0600")
    srv2 = kjdeploy.Server(os.path.join(tmp, "srv2"), extra=NO_RATE_LIMITS)
    srv2.db = other
    if check(srv2.start(), "a server starts on the restored database"):
        try:
            sid = min(before)
            st, _, _ = kjdeploy.request(srv2, "GET", "/api/v1/submissions/%d" % sid, kjdeploy.ADMIN)
            check(st == 200, "it serves a submission from before the backup (to the admin)", st)
            rc, _, err = cli("restore", backup, "--db", other)
            check(rc == 1 and "stop it first" in err, "the second server's lock is held too", (rc, err[-200:]))
        finally:
            srv2.stop(signal.SIGTERM)


def test_restore_live(srv, backup):
    srv.stop(signal.SIGTERM)
    live_ids = db_ids(srv.db)
    backup_ids = db_ids(backup)
    rc, _, err = cli("restore", backup, "--db", srv.db)
    check(rc == 0, "restore over the live database once the server is stopped", (rc, err[-300:]))
    check(db_ids(srv.db) == backup_ids, "the database now holds exactly the backup's submissions")
    keep = srv.db + ".before-restore"
    check(os.path.exists(keep) and db_ids(keep) == live_ids, "the replaced database is kept as .before-restore")
    check(srv.start(), "the server starts again on the restored database")


def make_db(path, version, tables=True):
    con = sqlite3.connect(path)
    try:
        if tables:
            for t in ("users", "submissions", "events", "leaderboard_secrets"):
                con.execute("CREATE TABLE %s (x)" % t)
        else:
            con.execute("CREATE TABLE notes (x)")
        con.execute("PRAGMA user_version=%d" % version)
        con.commit()
    finally:
        con.close()


def test_bad_restores(srv, tmp, backup):
    target = os.path.join(tmp, "target", "kjudge.db")
    os.makedirs(os.path.dirname(target))
    shutil.copy(backup, target)
    target_sha = sha(target)
    junk = os.path.join(tmp, "junk.db")
    with open(junk, "wb") as f:
        f.write(os.urandom(8192))
    corrupt = os.path.join(tmp, "corrupt.db")
    shutil.copy(backup, corrupt)
    size = os.path.getsize(corrupt)
    with open(corrupt, "r+b") as f:  # scribble over the middle pages, not the header
        for off in range(4096 * 2, min(size, 4096 * 12), 4096):
            f.seek(off + 100)
            f.write(os.urandom(600))
    newer = os.path.join(tmp, "newer.db")
    make_db(newer, 99)
    foreign = os.path.join(tmp, "foreign.db")
    make_db(foreign, 1, tables=False)
    empty = os.path.join(tmp, "empty.db")
    open(empty, "w").close()
    cases = [(junk, "not an SQLite database"), (corrupt, "integrity check"), (newer, "schema version 99"),
             (foreign, "not a kjudge database"), (empty, "not a database file"),
             (os.path.join(tmp, "absent.db"), "cannot read")]
    for path, want in cases:
        rc, _, err = cli("restore", path, "--db", target)
        check(rc == 1 and want in err and path in err, "restore refuses %s: %s" % (os.path.basename(path), want),
              (rc, err[-300:]))
    check(sha(target) == target_sha and not os.path.exists(target + ".before-restore"),
          "refused restores leave the target untouched")
    rc, _, err = cli("backup", os.path.join(tmp, "no", "such", "dir", "b.db"), "--db", srv.db)
    check(rc == 1 and "cannot create" in err, "backup into a missing folder: exit 1, named", (rc, err[-200:]))
    rc, _, err = cli("backup", os.path.join(tmp, "b.db"), "--db", os.path.join(tmp, "nothing.db"))
    check(rc == 1 and "no database at" in err, "backup of a missing database: exit 1", (rc, err[-200:]))
    rc, _, err = cli("backup")
    check(rc == 1 and "needs a FILE" in err, "backup without FILE: usage, exit 1", rc)


def schema_version():
    """DB_SCHEMA_VERSION as server/db.h defines it."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "server", "db.h")) as f:
        for line in f:
            if line.startswith("#define DB_SCHEMA_VERSION "):
                return int(line.split()[2])
    return None


def main():
    if not os.access(BIN, os.X_OK):
        print("FAIL %s is not built\ntest_backup: 0 passed, 1 failed, 0 skipped" % BIN)
        return 1
    with tempfile.TemporaryDirectory(prefix="kjudge-backup-") as tmp:
        srv = kjdeploy.Server(os.path.join(tmp, "srv"), extra=NO_RATE_LIMITS)
        if check(srv.start(), "the server starts"):
            try:
                tokens = {"user": cli("user", "add", "writer", "--db", srv.db)[1].strip(),
                          "runner": cli("runner", "add", "judge", "--gpu", "H200", "--db", srv.db)[1].strip()}
                backup, before = test_backup_under_load(srv, tmp, tokens)
                if backup:
                    test_restore(srv, tmp, backup, before)
                    test_bad_restores(srv, tmp, backup)
                    test_restore_live(srv, backup)
            finally:
                srv.stop(signal.SIGTERM)
    print("test_backup: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
