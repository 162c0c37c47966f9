"""kjservice.py - a real kjudge-server (and runner) for the tests and benchmarks.

Server is one `kjudge-server serve` process on a free loopback port with its
own database and config under a folder the caller owns; Runner is one
`serve` process of a runner against it: build/kjudge-runner-fakegpu (the
real runner judging without a GPU, for CPU tests) or bin/kjudge-runner on
GPU 0. Service is the context manager most tests want: a temporary folder,
a started server, optionally a runner that has already asked for work, and
everything stopped and removed on the way out. Python 3 stdlib only.
"""
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from http.client import HTTPConnection

from kjhttp import free_port, wait_runner

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("KJUDGE_SERVER_BIN", os.path.join(ROOT, "bin", "kjudge-server"))
RUNNER = os.path.join(ROOT, "bin", "kjudge-runner")
FAKE = os.path.join(ROOT, "build", "kjudge-runner-fakegpu")
BOARDS = os.path.join(ROOT, "leaderboards")
WEB = os.path.join(ROOT, "web")

# The tests submit far more than a user may per minute; test_access.py
# checks the limits themselves.
NO_RATE_LIMITS = ["--rate-limit-test", "0", "--rate-limit-benchmark", "0",
                  "--rate-limit-leaderboard", "0", "--rate-limit-profile", "0",
                  "--rate-limit-sanitize", "0"]

# Settings of the calling environment that would change what a runner does.
RUNNER_ENV_CLEAN = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
                    "no_proxy", "NO_PROXY", "KJUDGE_CA_FILE", "KJUDGE_RUNNER_TOKEN", "KJUDGE_FAKE_JUDGE_S",
                    "KJUDGE_FAKE_TEARDOWN_S", "KJUDGE_FAKE_BOX_DIR")


def cli(*args, timeout=60):
    """Run kjudge-server with args (user add, runner add, ...): (rc, stdout, stderr)."""
    p = subprocess.run([BIN] + list(args), capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


class Server:
    """One kjudge-server on 127.0.0.1:port; database, config and logs under tmp.

    extra: options added to `serve` (e.g. --lease-seconds); rate_flags: the
    rate-limit options (None: no limits; []: the config's or defaults);
    boards: the leaderboards folder; binary: another build of the server
    (None: BIN); port: a port chosen by the caller (None: a free one)."""

    def __init__(self, tmp, extra=(), rate_flags=None, boards=BOARDS, binary=None, port=None):
        self.tmp = tmp
        self.db = os.path.join(tmp, "var", "kjudge.db")
        self.conf = os.path.join(tmp, "var", "kjudge.conf")
        self.binary = binary
        self.port = port or free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        self.boards = boards
        self.extra = list(extra)
        self.rate_flags = list(NO_RATE_LIMITS if rate_flags is None else rate_flags)
        self.proc = None

    def serve_options(self):
        """Options added to `serve`; subclasses add their own."""
        return self.rate_flags + self.extra

    def bin(self):
        return self.binary or BIN  # BIN read now: a test may point it at another build

    def argv(self):
        return [self.bin(), "serve", "--port", str(self.port), "--db", self.db, "--config", self.conf,
                "--leaderboards", self.boards, "--web", WEB] + self.serve_options()

    def conn(self, timeout=10, source=None):
        """A connection to the server (subclasses speak HTTPS)."""
        return HTTPConnection("127.0.0.1", self.port, timeout=timeout,
                              source_address=(source, 0) if source else None)

    def start(self):
        """Start serve and wait until /healthz answers 200; False if it exits or never does."""
        env = dict(os.environ)
        env.pop("KJUDGE_ADMIN_TOKEN", None)
        self.log = open(os.path.join(self.tmp, "server.log"), "ab")
        self.out = open(os.path.join(self.tmp, "server.out"), "ab")
        self.proc = subprocess.Popen(self.argv(), stdout=self.out, stderr=self.log, env=env, cwd=self.tmp)
        deadline = time.time() + 15
        while time.time() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                c = self.conn(timeout=1)
                c.request("GET", "/healthz")
                ok = c.getresponse().status == 200
                c.close()
                if ok:
                    return True
            except OSError:
                time.sleep(0.05)
        return False

    def stop(self, sig=signal.SIGTERM, timeout=15):
        """Send sig and wait; returns the exit status (None when it had to be killed)."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None
        finally:
            self.log.close()
            self.out.close()
        return self.proc.returncode

    def printed(self):
        """What serve printed on its standard output (the admin token, once)."""
        with open(os.path.join(self.tmp, "server.out")) as f:
            return f.read()

    def server_log(self):
        with open(os.path.join(self.tmp, "server.log"), errors="replace") as f:
            return f.read()

    def cli(self, *args, timeout=30):
        """This server's program with args: (rc, stdout, stderr)."""
        p = subprocess.run([self.bin()] + list(args), capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr

    def user(self, name):
        """A new user's token (None when `user add` fails)."""
        rc, out, _ = self.cli("user", "add", name, "--db", self.db)
        return out.strip() if rc == 0 else None

    def runner_token(self, name, gpus="H200"):
        """A new runner's token for the GPU types gpus (None when `runner add` fails)."""
        rc, out, _ = self.cli("runner", "add", name, "--gpu", gpus, "--db", self.db)
        return out.strip() if rc == 0 else None

    # What the API never shows (the secret seed) or the raw stored row: read
    # from the database file, only where no route answers.
    def rows(self):
        con = sqlite3.connect(self.db, timeout=10)
        try:
            return con.execute("SELECT * FROM submissions ORDER BY id").fetchall()
        finally:
            con.close()

    def row(self, sid):
        con = sqlite3.connect(self.db, timeout=10)
        con.row_factory = sqlite3.Row
        try:
            return con.execute("SELECT * FROM submissions WHERE id = ?", (sid,)).fetchone()
        finally:
            con.close()

    def secret(self, board):
        con = sqlite3.connect(self.db, timeout=10)
        try:
            r = con.execute("SELECT secret_seed FROM leaderboard_secrets WHERE leaderboard = ?",
                            (board,)).fetchone()
            return r[0] if r else None
        finally:
            con.close()


class Runner:
    """One runner `serve` process against url; its output goes to tmp/NAME.log.

    kind "fake": build/kjudge-runner-fakegpu with a token file (no GPU);
    kind "real": bin/kjudge-runner on GPU 0 with the token in its environment."""

    def __init__(self, tmp, url, token, args=(), env=None, name="fake-0", kind="fake", boards=BOARDS):
        os.makedirs(tmp, exist_ok=True)
        self.tmp = tmp
        self.token = token
        self.name = name
        self.logpath = os.path.join(tmp, name + ".log")
        self.env = {k: v for k, v in os.environ.items() if k not in RUNNER_ENV_CLEAN}
        if kind == "fake":
            self.tokfile = os.path.join(tmp, name + ".token")
            with open(os.open(self.tokfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
                f.write(token + "\n")
            self.argv = [FAKE, "serve", "--server", url, "--token-file", self.tokfile, "--name", name,
                         "--leaderboards", boards] + list(args)
            self.cwd = tmp
        else:
            self.env["KJUDGE_RUNNER_TOKEN"] = token
            self.argv = [RUNNER, "serve", "--server", url, "--gpu", "0", "--name", name,
                         "--leaderboards", boards] + list(args)
            self.cwd = ROOT
        self.env.update(env or {})
        self.proc = None

    def start(self):
        self.log = open(self.logpath, "ab")
        self.proc = subprocess.Popen(self.argv, stdout=self.log, stderr=self.log, env=self.env, cwd=self.cwd)
        return self

    def run(self, timeout=60):
        """Run to its end; returns the exit status (None when it had to be killed)."""
        self.start()
        return self.wait(timeout)

    def wait(self, timeout=30):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None
        finally:
            if self.proc.poll() is not None:
                self.log.close()

    def poll(self):
        return self.proc.poll()

    def signal(self, sig):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)

    def stop(self):
        """SIGKILL: the runner gets no chance to finish or give back its job."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
            self.log.close()

    def terminate(self, timeout=15):
        """SIGTERM (the runner finishes cleanly), then SIGKILL after timeout seconds."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None:
            self.log.close()

    def text(self):
        with open(self.logpath, errors="replace") as f:
            return f.read()

    def wait_log(self, needle, seconds=20):
        deadline = time.time() + seconds
        while time.time() < deadline:
            if needle in self.text():
                return True
            if self.proc.poll() is not None:
                return needle in self.text()
            time.sleep(0.05)
        return False


class Service:
    """with Service(...) as s: a server on a free loopback port in a new
    temporary folder, and with runner="fake" or "real" one runner of that
    kind (token for gpu, name runner_name) that has asked for gpu work
    before the block starts. s.server, s.base, s.port, s.runner, s.user(name).
    On the way out the runner and the server are stopped and the folder is
    removed (kept, and its logs' tails printed, when keep_on_error and the
    block raised). extra/rate_flags/boards go to Server; runner_env adds
    to the runner's environment (after the calling one's proxies and
    tokens are taken out)."""

    def __init__(self, runner=None, gpu="H200", runner_name="runner-0", extra=(), rate_flags=None,
                 boards=BOARDS, prefix="kjudge-test-", runner_wait_s=180, runner_env=None):
        self.kind = runner
        self.runner_env = runner_env
        self.gpu = gpu
        self.runner_name = runner_name
        self.opts = dict(extra=extra, rate_flags=rate_flags, boards=boards)
        self.prefix = prefix
        self.runner_wait_s = runner_wait_s
        self.runner = None
        self.server = None

    def __enter__(self):
        self.tmp = tempfile.mkdtemp(prefix=self.prefix)
        try:
            self.server = Server(self.tmp, **self.opts)
            if not self.server.start():
                raise RuntimeError("kjudge-server did not start: " + self.tail("server.log"))
            self.base, self.port = self.server.base, self.server.port
            if self.kind is not None:
                tok = self.server.runner_token(self.runner_name, self.gpu)
                if tok is None:
                    raise RuntimeError("runner add %s failed" % self.runner_name)
                self.runner = Runner(self.tmp, self.base, tok, name=self.runner_name, kind=self.kind,
                                     boards=self.opts["boards"], env=self.runner_env).start()
                wait_runner(self.base, self.gpu, timeout=self.runner_wait_s, proc=self.runner.proc)
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def user(self, name):
        return self.server.user(name)

    def tail(self, log, n=3000):
        path = os.path.join(self.tmp, log)
        if not os.path.exists(path):
            return ""
        with open(path, errors="replace") as f:
            return f.read()[-n:]

    def print_logs(self):
        for log in ("server.log", self.runner_name + ".log"):
            if os.path.exists(os.path.join(self.tmp, log)):
                print("---- %s (tail)\n%s" % (log, self.tail(log)), flush=True)

    def __exit__(self, exc_type, exc, tb):
        if self.runner is not None:
            self.runner.terminate()
        if self.server is not None:
            self.server.stop()
        if exc_type is not None and exc_type is not KeyboardInterrupt:
            self.print_logs()
        shutil.rmtree(self.tmp, ignore_errors=True)
        return False
