"""Helpers shared by the benchmarks: paths, running the runner, a real server."""
import json, os, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "gpu"))
from kjclient import free_port, http, submit, wait_runner  # noqa: E402  (shared with the GPU tests)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNNER = os.path.join(ROOT, "bin", "kjudge-runner")
SERVER = os.path.join(ROOT, "bin", "kjudge-server")
LB = os.path.join(ROOT, "leaderboards", "fp8_quant")


def evaluate(path, mode, *extra, env=None):
    p = subprocess.run([RUNNER, "eval", path, "--leaderboard", "fp8_quant", "--mode", mode, "--json", *extra],
                       cwd=ROOT, capture_output=True, text=True, env=env)
    if p.returncode not in (0, 1):
        raise RuntimeError("eval failed: " + p.stderr[-2000:])
    return json.loads(p.stdout)


class Service:
    """A real kjudge-server on a free loopback port plus one runner on GPU 0."""

    def __enter__(self):
        self.tmp = tempfile.mkdtemp(prefix="kjudge-bench-")
        port = free_port()
        db, conf = os.path.join(self.tmp, "k.db"), os.path.join(self.tmp, "k.conf")
        with open(conf, "w") as f:
            f.write("admin_token = %s\n" % os.urandom(16).hex())
        self.base = "http://127.0.0.1:%d" % port
        log = open(os.path.join(self.tmp, "log"), "w")
        self.procs = [subprocess.Popen([SERVER, "serve", "--port", str(port), "--db", db, "--config", conf,
                                        "--rate-limit-test", "0", "--rate-limit-benchmark", "0", "--rate-limit-leaderboard", "0",
                                        "--leaderboards", os.path.join(ROOT, "leaderboards")], cwd=ROOT,
                                       stdout=subprocess.DEVNULL, stderr=log)]
        for _ in range(100):
            try:
                if http("GET", self.base + "/healthz", timeout=2)[0] == 200:
                    break
            except OSError:
                time.sleep(0.1)
        run = lambda *a: subprocess.run([SERVER, *a, "--db", db], capture_output=True, text=True).stdout.strip()
        self.user = run("user", "add", "bench")
        env = dict(os.environ, KJUDGE_RUNNER_TOKEN=run("runner", "add", "bench-gpu0", "--gpu", "H200"))
        self.procs.append(subprocess.Popen([RUNNER, "serve", "--server", self.base, "--gpu", "0", "--leaderboards",
                                            os.path.join(ROOT, "leaderboards")], cwd=ROOT, env=env,
                                           stdout=subprocess.DEVNULL, stderr=log))
        wait_runner(self.base, "H200", proc=self.procs[-1])
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.terminate()
            p.wait(timeout=30)
