#!/usr/bin/env python3
"""test_backup.py - kjudge-server backup and restore, under write load.

Starts bin/kjudge-server; three threads post submissions (and a fake
runner claims and finishes jobs) while `kjudge-server backup FILE` runs.
Checks that a backup onto an existing file is refused without --force
(and replaces it with it), that the backup is one self-contained file (mode 0600) that passes
integrity_check, has the current schema version, holds every submission
acknowledged (202) before the backup started, and is consistent (foreign
keys hold, every finished job has its result). Then: restore is refused while the
server holds the database, and changes nothing; restore into a new path
gives a database a server starts on and serves those submissions from;
restore over the live database (server stopped) keeps the replaced one as
.before-restore-YYYYMMDDTHHMMSSZ, and a second restore right after keeps
that one too (both earlier databases); and restore refuses, with exit 1,
naming the problem and changing nothing, a file that is not a database, a
corrupted database, one from a newer schema, an SQLite file that is not
kjudge's, a backup with an added trigger (one that makes every new user an
admin), one whose users table lacks a column, one with an extra index, and
a file with the right table names but other columns; a version-9 file (made
by this test from the backup) restores, migrated. Python 3 standard
library only; ends with "test_backup: N passed, N failed, N skipped" and
exits 1 on failure.
"""
import glob
import hashlib
import os
import re
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
    test_no_overwrite(srv, backup, ids)
    return backup, before


def test_no_overwrite(srv, backup, ids):
    """An existing FILE is kept (exit 1, named) unless --force replaces it."""
    was = sha(backup)
    rc, _, err = cli("backup", backup, "--db", srv.db)
    check(rc == 1 and backup in err and "--force" in err and sha(backup) == was and db_ids(backup) == ids,
          "backup onto an existing file is refused, naming it and --force, and leaves it as it was",
          (rc, err[-300:]))
    leftovers = [f for f in os.listdir(os.path.dirname(backup)) if f != os.path.basename(backup)]
    check(not leftovers, "a refused backup leaves no temporary file", leftovers)
    rc, _, err = cli("backup", backup, "--force", "--db", srv.db)
    check(rc == 0 and db_ids(backup) == db_ids(srv.db) and db_ids(backup) != ids,
          "backup --force replaces it with a fresh snapshot", (rc, err[-300:]))
    rc, _, err = cli("restore", backup, "--force", "--db", srv.db)
    check(rc == 1 and "--force" in err, "restore takes no --force", (rc, err[-300:]))


def test_restore(srv, tmp, backup, before):
    live_sha = sha(srv.db)
    rc, _, err = cli("restore", backup, "--db", srv.db)
    check(rc == 1 and "stop it first" in err, "restore is refused while the server holds the database", (rc, err[-300:]))
    check(sha(srv.db) == live_sha and not kept(srv.db), "a refused restore changes nothing")

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


def kept(db):
    """The copies restore kept of the databases it replaced, oldest first."""
    return sorted(glob.glob(glob.escape(db) + ".before-restore*"), key=os.path.getmtime)


def test_restore_live(srv, tmp, backup):
    srv.stop(signal.SIGTERM)
    live_ids = db_ids(srv.db)
    backup_ids = db_ids(backup)
    rc, _, err = cli("restore", backup, "--db", srv.db)
    check(rc == 0, "restore over the live database once the server is stopped", (rc, err[-300:]))
    check(db_ids(srv.db) == backup_ids, "the database now holds exactly the backup's submissions")
    k1 = kept(srv.db)
    check(len(k1) == 1 and re.search(r"\.before-restore-\d{8}T\d{6}Z$", k1[0]) and db_ids(k1[0]) == live_ids,
          "the replaced database is kept as .before-restore-YYYYMMDDTHHMMSSZ", k1)
    # a second restore at once (most likely within the same second): the first copy stays
    small = os.path.join(tmp, "small.db")
    shutil.copy(backup, small)
    con = sqlite3.connect(small)
    con.execute("PRAGMA foreign_keys=OFF")
    for t in ("shape_medians", "events", "artifacts"):
        con.execute("DELETE FROM %s WHERE submission_id > (SELECT min(id) FROM submissions)" % t)
    con.execute("DELETE FROM submissions WHERE id > (SELECT min(id) FROM submissions)")
    con.commit()
    con.close()
    rc, _, err = cli("restore", small, "--db", srv.db)
    k2 = kept(srv.db)
    check(rc == 0 and db_ids(srv.db) == db_ids(small), "a second restore right after", (rc, err[-300:]))
    check(len(k2) == 2 and k2[0] == k1[0] and db_ids(k2[0]) == live_ids and db_ids(k2[1]) == backup_ids,
          "both earlier databases are kept, each under its own name", k2)
    rc, _, err = cli("restore", backup, "--db", srv.db)
    check(rc == 0 and db_ids(srv.db) == backup_ids and len(kept(srv.db)) == 3, "a third: three copies",
          (rc, kept(srv.db)))
    check(srv.start(), "the server starts again on the restored database")


def variant(backup, path, *sql, writable=False):
    """A copy of backup at path changed by the statements sql."""
    if backup != path:
        shutil.copy(backup, path)
    con = sqlite3.connect(path)
    try:
        if writable:
            ver = con.execute("PRAGMA schema_version").fetchone()[0]
            con.execute("PRAGMA writable_schema=ON")
        for q in sql:
            con.execute(q)
        if writable:
            con.execute("PRAGMA schema_version=%d" % (ver + 1))
            con.execute("PRAGMA writable_schema=OFF")
        con.commit()
    finally:
        con.close()
    return path


def test_schema_restores(srv, tmp, backup):
    """Only a schema this version knows is restored; anything else is refused, changing nothing."""
    target = os.path.join(tmp, "schema-target", "kjudge.db")
    os.makedirs(os.path.dirname(target))
    shutil.copy(backup, target)
    target_sha = sha(target)
    trig = variant(backup, os.path.join(tmp, "trigger.db"),
                   "CREATE TRIGGER promote AFTER INSERT ON users BEGIN "
                   "UPDATE users SET role = 'admin' WHERE id = new.id; END")
    cols = variant(backup, os.path.join(tmp, "columns.db"), "ALTER TABLE users DROP COLUMN banned")
    index = variant(backup, os.path.join(tmp, "index.db"), "CREATE INDEX users_extra ON users(created_at)")
    check_ = variant(backup, os.path.join(tmp, "check.db"),
                     "UPDATE sqlite_master SET sql = replace(sql, \"'user','admin','runner'\", "
                     "\"'user','admin','runner','root'\") WHERE name = 'users'", writable=True)
    names = os.path.join(tmp, "names.db")  # every table of the backup, by name, with other columns
    con = sqlite3.connect("file:%s?mode=ro" % backup, uri=True)
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND "
                                        "name NOT LIKE 'sqlite%'")]
    con.close()
    con = sqlite3.connect(names)
    for t in tables:
        con.execute("CREATE TABLE %s (x)" % t)
    con.execute("PRAGMA user_version=%d" % schema_version())
    con.commit()
    con.close()
    names1 = os.path.join(tmp, "names1.db")
    make_db(names1, 1)
    cases = [(trig, "holds trigger 'promote'"),
             (cols, "table 'users' is not this version's"),
             (index, "has index 'users_extra', which this version's schema has not"),
             (check_, "table 'users' is not this version's"),
             (names, "table 'artifacts' is not this version's (its columns"),
             (names1, "its migration fails")]
    for path, want in cases:
        rc, _, err = cli("restore", path, "--db", target)
        check(rc == 1 and want in err and path in err, "restore refuses %s: %s" % (os.path.basename(path), want),
              (rc, err[-400:]))
    check(sha(target) == target_sha and not kept(target), "refused restores leave the target untouched")
    # a version-9 file: no artifacts table, no sanitizer/profile_shape columns, the three-mode CHECK list,
    # no runner_names table (version 11), no lang column (version 12), no timings or rejudges (version 14)
    v9 = variant(backup, os.path.join(tmp, "v9.db"), "DROP TABLE artifacts", "DROP TABLE runner_names",
                 "ALTER TABLE submissions DROP COLUMN profile_shape", "ALTER TABLE submissions DROP COLUMN sanitizer",
                 "ALTER TABLE submissions DROP COLUMN lang", "DROP TABLE result_history", "DROP TABLE rank_timing",
                 "DROP TABLE rejudges", "DROP INDEX submissions_rejudge",
                 "ALTER TABLE submissions DROP COLUMN timing_protocol",
                 "ALTER TABLE submissions DROP COLUMN timing_version",
                 "ALTER TABLE submissions DROP COLUMN rejudge_id", "ALTER TABLE submissions DROP COLUMN rejudge_of",
                 "PRAGMA user_version=9")
    variant(v9, v9, "UPDATE sqlite_master SET sql = replace(sql, \"'test','benchmark','leaderboard','profile',"
            "'sanitize'\", \"'test','benchmark','leaderboard'\") WHERE name = 'submissions'", writable=True)
    rc, _, err = cli("restore", v9, "--db", target)
    con = sqlite3.connect(target)
    try:
        ver = con.execute("PRAGMA user_version").fetchone()[0]
    finally:
        con.close()
    check(rc == 0 and ver == schema_version() and db_ids(target) == db_ids(backup) and len(kept(target)) == 1,
          "a version-9 file restores, migrated to version %d" % schema_version(), (rc, ver, err[-400:]))


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
    check(sha(target) == target_sha and not kept(target), "refused restores leave the target untouched")
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
                    test_schema_restores(srv, tmp, backup)
                    test_restore_live(srv, tmp, backup)
            finally:
                srv.stop(signal.SIGTERM)
    print("test_backup: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
