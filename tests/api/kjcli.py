"""kjcli.py - what the client's tests share (test_cli.py, test_cli_errors.py):
bin/kjudge run as one user with a config folder of its own (in a pipe, held
until the job is queued, or on a pseudo-terminal), a board copied with
changed fields, and the record of every run's output, which the scripts
check for tokens at the end (SECRETS, OUTPUTS). Python 3 stdlib only.
"""
import fcntl
import json
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import check  # noqa: E402
from kjhttp import Client  # noqa: E402
from kjservice import ROOT  # noqa: E402

KJ = os.environ.get("KJUDGE_CLI_BIN", os.path.join(ROOT, "bin", "kjudge"))
BOARD_DIR = os.path.join(ROOT, "leaderboards", "fp8_quant")
TEMPLATE = open(os.path.join(BOARD_DIR, "template.cu")).read()
REFERENCE = open(os.path.join(BOARD_DIR, "reference.cu"), "rb").read()
SECRETS = []          # tokens that must never be printed
OUTPUTS = []          # (what, stdout + stderr) of every run, checked at the end


def copy_board(boards, dst, **fields):
    shutil.copytree(BOARD_DIR, os.path.join(boards, dst))
    p = os.path.join(boards, dst, "leaderboard.json")
    spec = json.load(open(p))
    spec.update(dict(name=dst, **fields))
    json.dump(spec, open(p, "w"), indent=2)


class Cli:
    """One user of the client: a config folder of its own and a clean environment."""

    def __init__(self, tmp, name, env=None):
        self.home = os.path.join(tmp, "home-" + name)
        os.makedirs(self.home, exist_ok=True)
        # not KJUDGE_*, nor COLUMNS (a table in a pipe is cut only where a test asks)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("KJUDGE_") and k != "COLUMNS"}
        self.env.update({"HOME": self.home, "XDG_CONFIG_HOME": os.path.join(self.home, "cfg")})
        self.env.update(env or {})
        self.config = os.path.join(self.home, "cfg", "kjudge", "config")

    def run(self, *args, env=None, stdin=None, timeout=60, record=True):
        e = dict(self.env)
        e.update(env or {})
        p = subprocess.run([KJ] + list(args), input=stdin, capture_output=True, text=True,
                           timeout=timeout, env=e, cwd=self.home)
        if record:
            OUTPUTS.append((" ".join(args), p.stdout + p.stderr))
        return p.returncode, p.stdout, p.stderr

    def run_held(self, args, hold, lines=2, timeout=60):
        """Run while hold (the fake runner's) is set, until the first `lines`
        lines are out, then clear it; returns (rc, stdout, stderr). So the
        job is still queued when the client opens its event stream."""
        p = subprocess.Popen([KJ] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=self.env, cwd=self.home)
        head = "".join(p.stdout.readline() for _ in range(lines))
        hold.clear()
        rest, err = p.communicate(timeout=timeout)
        OUTPUTS.append((" ".join(args), head + rest + err))
        return p.returncode, head + rest, err

    def run_pty(self, *args, cols=100, timeout=60, hold=None, until=None, answer=None):
        """Run with stdout and stderr on a pseudo-terminal; returns (rc, everything written).
        hold: an Event cleared once the output contains until. answer: typed once a
        question ending in "[y/N] " is asked."""
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, cols, 0, 0))
        p = subprocess.Popen([KJ] + list(args), stdin=slave, stdout=slave, stderr=slave,
                             env=self.env, cwd=self.home, close_fds=True)
        os.close(slave)
        out, deadline = b"", time.time() + timeout
        while time.time() < deadline:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
            if answer is not None and b"[y/N] " in out:
                os.write(master, answer.encode())
                answer = None
            if hold is not None and until.encode() in out:
                hold.clear()
        os.close(master)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        text = out.decode(errors="replace")
        OUTPUTS.append((" ".join(args), text))
        return p.returncode, text


def api(port):
    return Client(port)


def write(tmp, name, text):
    p = os.path.join(tmp, name)
    with open(p, "w") as f:
        f.write(text)
    return p


def sub_id(out):
    m = re.search(r"submitted #(\d+)", out)
    return int(m.group(1)) if m else None


def test_no_secret_printed():
    leaked = [what for what, text in OUTPUTS if any(s in text for s in SECRETS)]
    check(not leaked, "no token appears in any output (%d runs)" % len(OUTPUTS), leaked)
    # With KJUDGE_CLI_BIN pointing at a sanitizer build, its reports land here.
    bad = [what for what, text in OUTPUTS if "Sanitizer" in text or "runtime error:" in text]
    check(not bad, "no sanitizer report in any output", bad)
