#!/usr/bin/env python3
"""test_deploy.py - a front-end host without CUDA, the install script, the
service units and the backup job, as far as they can run without systemd
as PID 1.

Checks: `make server` with CUDA pointing nowhere builds only
bin/kjudge-server, its commands never name the CUDA folder, nvcc or CUDA
libraries; `deploy/deps.sh --server` does not look for CUDA while the full
mode still does and says what to do; `deploy/install.sh --root DIR`
renders every unit and env file (no placeholder left, every path they
name exists in DIR, the program files in place, a second run keeps the
operator's settings); the manual pages render under `man --warnings` with no warning and every
installed program answers --help and -h with exit 0; `systemd-analyze verify` accepts every unit with no
warning and `systemd-analyze security` rates each below a threshold; the
compile box works under exactly the runner unit's capability bounding set
with no_new_privs (and not without CAP_SYS_ADMIN); the backup job writes
checked backups and keeps the newest N. Ends with "test_deploy: N passed,
N failed, N skipped"; exit 1 on failure.
"""
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check, skip  # noqa: E402
from kjservice import BIN, ROOT  # noqa: E402
import kjdeploy  # noqa: E402

UNITS = ["kjudge-server.service", "kjudge-runner@.service", "kjudge-backup.service", "kjudge-backup.timer"]
# systemd-analyze security's exposure (0 = locked down, 10 = none) each unit must stay under.
EXPOSURE = {"kjudge-server.service": 2.5, "kjudge-runner@0.service": 5.0, "kjudge-backup.service": 2.0}


def run(args, **kw):
    kw.setdefault("timeout", 120)
    return subprocess.run(args, capture_output=True, text=True, cwd=kw.pop("cwd", ROOT), **kw)


def test_make_server():
    p = run(["make", "-n", "-B", "server", "CUDA=/nonexistent-cuda"])
    cmds = p.stdout
    check(p.returncode == 0, "make -n server with CUDA=/nonexistent-cuda", p.stderr[-300:])
    check("/nonexistent-cuda" not in cmds, "no server command names the CUDA folder",
          [l for l in cmds.splitlines() if "nonexistent" in l][:2])
    check(not re.search(r"\bnvcc\b|-lnvrtc|-lcuda|runner/|kernels/", cmds), "no nvcc, CUDA library or runner object",
          [l for l in cmds.splitlines() if re.search(r"nvcc|nvrtc|runner/|kernels/", l)][:2])
    outs = re.findall(r"-o (\S+)", cmds)
    check("bin/kjudge-server" in outs and "bin/kjudge-runner" not in outs and
          all(o.startswith("build/obj/server/") or o.startswith("build/obj/common/") or o == "bin/kjudge-server"
              for o in outs), "it builds only the server and its objects", outs[-3:])
    p = run(["make", "-n", "-B", "bin/kjudge-runner"])
    check(re.search(r"-I\S*cuda\S*/include .*runner/box\.c", p.stdout) is not None,
          "runner objects still get the CUDA headers", p.stdout[:300])
    # A real build of the server objects with CUDA pointing nowhere, in a scratch folder.
    with tempfile.TemporaryDirectory(prefix="kjudge-nocuda-") as scratch:
        obj = os.path.join(scratch, "obj")
        p = run(["make", "-j2", "--no-print-directory", "OBJ=" + obj, "CUDA=/nonexistent-cuda",
                 obj + "/server/tls.o", obj + "/server/api_metrics.o", obj + "/server/main.o"], timeout=300)
        check(p.returncode == 0, "server objects compile without the CUDA toolkit", p.stderr[-400:])


def test_deps():
    env = dict(os.environ, CUDA="/nonexistent-cuda")
    p = run(["deploy/deps.sh", "--server"], env=env)
    check(p.returncode == 0 and "CUDA" not in p.stderr, "deps.sh --server does not ask for CUDA", (p.returncode, p.stderr[-300:]))
    p = run(["deploy/deps.sh"], env=env)
    check(p.returncode == 1 and "--server" in p.stderr, "the full mode still needs CUDA and points to --server",
          (p.returncode, p.stderr[-300:]))
    p = run(["deploy/deps.sh", "--frobnicate"])
    check(p.returncode == 2 and "unknown option" in p.stderr, "deps.sh refuses an unknown option", p.returncode)


def install(root, *args):
    return run(["deploy/install.sh", "--root", root] + list(args))


def test_install(root):
    p = install(root, "--server", "--runner", "--prefix", "/opt/kjudge")
    check(p.returncode == 0, "install.sh --root renders a server+runner host", (p.returncode, p.stderr[-400:]))
    units = os.path.join(root, "etc/systemd/system")
    for u in UNITS:
        path = os.path.join(units, u)
        if not check(os.path.exists(path), "%s is installed" % u):
            continue
        text = open(path).read()
        check("@" + "PREFIX@" not in text and "@" + "STATE@" not in text, "%s: every placeholder rendered" % u)
        for ref in re.findall(r"(/opt/kjudge/\S*?)(?=[\s;'\"]|$)", text):
            ref = ref.rstrip("\\")
            check(os.path.exists(root + ref), "%s names %s, which is installed" % (u, ref))
    for f in ("bin/kjudge-server", "bin/kjudge-runner", "bin/kjudge-backup", "bin/kjudge-runner-task",
              "slurm/kjudge-runners.sbatch", "server/openapi.json",
              "leaderboards/fp8_quant/leaderboard.json", "web/index.html", "README.md"):
        check(os.path.exists(os.path.join(root, "opt/kjudge", f)), "/opt/kjudge/%s is installed" % f)
    if os.path.isfile(os.path.join(ROOT, ".cutlass", "include", "cute", "tensor.hpp")):
        check(os.path.isfile(os.path.join(root, "opt/kjudge/.cutlass/include/cute/tensor.hpp")),
              "CUTLASS's headers from deploy/deps.sh are installed beside bin/")
    conf = os.path.join(root, "var/lib/kjudge/kjudge.conf")
    text = open(conf).read() if os.path.exists(conf) else ""
    check(re.search(r"^admin_token = [0-9a-f]{64}$", text, re.M) and oct(os.stat(conf).st_mode & 0o777) == "0o600",
          "the state folder gets a config with a new admin token, mode 0600", text[:80])
    check(re.search(r"[0-9a-f]{64}", p.stdout + p.stderr) is None, "the token is not printed")
    test_pages_and_help(root)
    wrote = re.findall(r"^install: wrote (/\S+)", p.stdout, re.M)
    check(len(wrote) >= 3 and all(w.startswith(root + "/") and os.path.exists(w) for w in wrote),
          "every file install.sh says it wrote is named with its --root", wrote)
    hint = re.search(r"start with: systemctl enable --now ([^(\n]*)", p.stdout)
    named = hint.group(1).split() if hint else []
    check("kjudge-server.service" in named and "kjudge-backup.timer" in named, "the closing hint names the units",
          p.stdout[-300:])
    for u in named:
        f = os.path.join(units, re.sub(r"@[^.]+\.", "@.", u))
        check(os.path.exists(f) and "\n[Install]\n" in open(f).read(),
              "%s, which the hint enables, has an [Install] section" % u)
    # A runner host gets no backup job: it holds no database.
    with tempfile.TemporaryDirectory(prefix="kjudge-runner-only-") as alone:
        p = install(alone, "--runner")
        have = [f for f in ("opt/kjudge/bin/kjudge-backup", "etc/systemd/system/kjudge-backup.service",
                            "etc/systemd/system/kjudge-backup.timer") if os.path.exists(os.path.join(alone, f))]
        check(p.returncode == 0 and not have and "kjudge-backup" not in p.stdout,
              "install.sh --runner installs and names no backup job", (p.returncode, have, p.stdout[-200:]))
    env = os.path.join(root, "etc/kjudge/runner.env")
    check("KJUDGE_TOKEN_FILE=/etc/kjudge/runner.token" in open(env).read(), "runner.env names the token file")
    with open(env, "a") as f:
        f.write("KJUDGE_RUNNER_ARGS=--gpu-type H200\n")
    tok = os.path.join(root, "tok")
    with open(tok, "w") as f:
        f.write("0123456789abcdef" * 4 + "\n")
    p = install(root, "--runner", "--token-file", tok)
    check(p.returncode == 0 and "--gpu-type H200" in open(env).read(), "a second run (an upgrade) keeps the settings",
          p.stderr[-200:])
    t = os.path.join(root, "etc/kjudge/runner.token")
    check(os.path.exists(t) and oct(os.stat(t).st_mode & 0o777) == "0o600", "the token file is installed mode 0600")
    runner = open(os.path.join(units, "kjudge-runner@.service")).read()
    check(re.search(r"^ExecStart=.*--token-file \$\{KJUDGE_TOKEN_FILE\}", runner, re.M | re.S) and "KJUDGE_TOKEN=" not in runner,
          "the runner unit passes the token as a file only")
    p = install(root)
    check(p.returncode == 1 and "--server, --runner" in p.stderr, "install.sh without a role says what to give", p.stderr)


# Each installed manual page and an option its program's --help names (so the page carries that text).
PAGES = {"man1/kjudge.1": "withdraw", "man8/kjudge-server.8": "--max-conns-per-ip",
         "man8/kjudge-runner.8": "--gap-seconds"}


def test_pages_and_help(root):
    """Manual pages render without a groff warning; every installed program answers --help and -h."""
    man = shutil.which("man")
    if not check(man is not None, "man is installed (deploy/deps.sh --test installs man-db)"):
        return
    for page, option in PAGES.items():
        path = os.path.join(root, "usr/local/share/man", page)
        if not check(os.path.exists(path), "%s is installed" % page):
            continue
        p = run([man, "--warnings", "-E", "UTF-8", "-l", path], env=dict(os.environ, MANWIDTH="80"))
        check(p.returncode == 0 and p.stderr == "" and "SYNOPSIS" in p.stdout and option in p.stdout,
              "man --warnings renders %s with no warning, with its --help text (%s)" % (page, option),
              (p.returncode, p.stderr[-300:]))
    bins = os.path.join(root, "opt/kjudge/bin")
    for name in sorted(os.listdir(bins)):
        for flag in ("--help", "-h"):
            p = run([os.path.join(bins, name), flag])
            check(p.returncode == 0 and "usage" in p.stdout.lower(), "%s %s exits 0 with its usage" % (name, flag),
                  (p.returncode, p.stdout[-200:], p.stderr[-200:]))
    for name, cmds in (("kjudge-server", ("serve", "user add", "backup", "restore")),
                       ("kjudge-runner", ("serve", "eval", "compile", "probe"))):
        for cmd in cmds:
            p = run([os.path.join(bins, name)] + cmd.split() + ["--help"])
            check(p.returncode == 0 and "usage" in p.stdout, "%s %s --help exits 0 with its usage" % (name, cmd),
                  (p.returncode, p.stderr[-200:]))
    comp = os.path.join(root, "usr/local/share/bash-completion/completions/kjudge")
    link = os.path.join(root, "usr/local/bin/kjudge")
    check(os.path.exists(comp) and os.readlink(link) == "/opt/kjudge/bin/kjudge" and
          os.access(os.path.join(bins, "kjudge"), os.X_OK),
          "the client, its link on the PATH and its bash completion are installed")


def verify_copies(root, scratch):
    """The rendered units with their paths pointing into root, for systemd-analyze on this host."""
    for u in UNITS:
        text = open(os.path.join(root, "etc/systemd/system", u)).read()
        text = text.replace("/opt/kjudge", root + "/opt/kjudge").replace("/etc/kjudge", root + "/etc/kjudge")
        with open(os.path.join(scratch, u), "w") as f:
            f.write(text)


def test_systemd(root):
    if shutil.which("systemd-analyze") is None:
        check(False, "systemd-analyze is installed (deploy/deps.sh --test installs systemd)")
        return
    with tempfile.TemporaryDirectory(prefix="kjudge-units-") as scratch:
        verify_copies(root, scratch)
        names = ["kjudge-server.service", "kjudge-runner@0.service", "kjudge-backup.service", "kjudge-backup.timer"]
        p = run(["systemd-analyze", "verify"] + names, cwd=scratch, env=dict(os.environ, SYSTEMD_LOG_LEVEL="notice"))
        check(p.returncode == 0 and p.stderr.strip() == "", "systemd-analyze verify: no error, no warning",
              (p.returncode, p.stderr[-600:]))
        # The check can fail: a misspelt key is reported.
        bad = os.path.join(scratch, "kjudge-server.service")
        good = open(bad).read()
        with open(bad, "w") as f:
            f.write(good.replace("ProtectHome=yes", "ProtectHom=yes"))
        p = run(["systemd-analyze", "verify", "kjudge-server.service"], cwd=scratch)
        check("Unknown key" in p.stderr, "verify reports a misspelt key (the check above can fail)", p.stderr[-200:])
        with open(bad, "w") as f:
            f.write(good)
        for unit, limit in EXPOSURE.items():
            p = run(["systemd-analyze", "security", "--offline=true", unit], cwd=scratch)
            m = re.search(r"Overall exposure level for %s: ([0-9.]+)" % re.escape(unit), p.stdout)
            check(m is not None and float(m.group(1)) <= limit, "%s exposure <= %.1f" % (unit, limit),
                  m.group(0) if m else p.stdout[-300:] + p.stderr[-300:])


def caps_of(unit_text):
    m = re.search(r"^CapabilityBoundingSet=(.*)$", unit_text, re.M)
    return [c.lower().replace("cap_", "") for c in m.group(1).split()] if m else None


def test_runner_caps(root):
    unit = open(os.path.join(root, "etc/systemd/system/kjudge-runner@.service")).read()
    caps = caps_of(unit)
    check(caps is not None and "NoNewPrivileges=yes" in unit, "the runner unit sets a bounding set and NoNewPrivileges")
    if caps is None:
        return
    runner = os.path.join(ROOT, "bin", "kjudge-runner")
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        skip("the runner's capability set (needs root and setpriv)")
        return
    probe = run([runner, "probe"])
    if '"missing":\t""' not in probe.stdout:
        skip("the runner's capability set: this host cannot build the boxes at all (kjudge-runner probe)")
        return
    src = os.path.join(ROOT, "leaderboards", "fp8_quant", "template.cu")

    def compile_with(capset):
        return run(["setpriv", "--bounding-set", ",".join(["-all"] + ["+" + c for c in capset]), "--no-new-privs",
                    runner, "compile", src, "--leaderboard", "fp8_quant"], timeout=180)
    p = compile_with(caps)
    check(p.returncode == 0 and '"ok":\ttrue' in p.stdout,
          "the compile box works under the unit's capabilities (%s) and no_new_privs" % ",".join(caps),
          (p.returncode, p.stderr[-300:]))
    p = compile_with([c for c in caps if c != "sys_admin"])
    check(p.returncode != 0 and "unshare" in p.stderr, "... and refuses, naming it, without CAP_SYS_ADMIN",
          (p.returncode, p.stderr[-200:]))


def test_backup_job(root):
    state = os.path.join(root, "var/lib/kjudge")
    os.makedirs(state, exist_ok=True)
    db = os.path.join(state, "kjudge.db")
    kjdeploy.cli("user", "add", "someone", "--db", db)
    job = os.path.join(root, "opt/kjudge/bin/kjudge-backup")
    env = dict(os.environ, KJUDGE_BACKUP_KEEP="2")
    made = []
    for i in range(3):
        p = run([job, state], env=env)
        check(p.returncode == 0, "backup job run %d" % (i + 1), p.stderr[-300:])
        made = sorted(os.listdir(os.path.join(state, "backups")))
        time.sleep(1.1)  # the names carry the second
    check(len(made) == 2 and all(re.match(r"kjudge-\d{8}-\d{6}\.db$", f) for f in made),
          "the newest 2 backups are kept", made)
    if made:
        con = sqlite3.connect(os.path.join(state, "backups", made[-1]))
        try:
            n = con.execute("SELECT COUNT(*) FROM users WHERE name = 'someone'").fetchone()[0]
            ok = con.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            con.close()
        check(n == 1 and ok == "ok", "a kept backup holds the data and passes its check", (n, ok))
    p = run([job, state], env=dict(os.environ, KJUDGE_BACKUP_KEEP="x"))
    check(p.returncode == 1 and "must be a number" in p.stderr, "a bad KJUDGE_BACKUP_KEEP is refused", p.stderr)


def main():
    if not os.access(BIN, os.X_OK) or not os.access(os.path.join(ROOT, "bin", "kjudge-runner"), os.X_OK):
        print("FAIL bin/ is not built\ntest_deploy: 0 passed, 1 failed, 0 skipped")
        return 1
    test_make_server()
    test_deps()
    with tempfile.TemporaryDirectory(prefix="kjudge-install-") as root:
        test_install(root)
        test_systemd(root)
        test_runner_caps(root)
        test_backup_job(root)
    print("test_deploy: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
