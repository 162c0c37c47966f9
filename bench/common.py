"""Helpers shared by the benchmarks: paths, running the runner, and the
tests' own harness (tests/lib: the HTTP client and a real server with a
real runner on GPU 0)."""
import json, math, os, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "lib"))
from kjhttp import free_port, http, submit, wait_runner  # noqa: E402,F401  (shared with the tests)
from kjservice import ROOT, RUNNER, BIN as SERVER, Service as _Service  # noqa: E402,F401

LB = os.path.join(ROOT, "leaderboards", "fp8_quant")


def runner_env():
    """The environment for a kjudge-runner started here: this one, with the
    checkout's .gpulibs (libcjson and libmicrohttpd for a GPU host without
    them, ../shared/tools/gpu-host-libs.sh) first on LD_LIBRARY_PATH when
    it exists."""
    env = dict(os.environ)
    libs = os.path.join(ROOT, ".gpulibs")
    if os.path.isdir(libs):
        env["LD_LIBRARY_PATH"] = libs + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def geomean(xs):
    """The geometric mean of positive xs, as a score is (runner/stats.c)."""
    return math.exp(math.fsum(math.log(x) for x in xs) / len(xs))


def evaluate(path, mode, *extra, env=None):
    p = subprocess.run([RUNNER, "eval", path, "--leaderboard", "fp8_quant", "--mode", mode, "--json", *extra],
                       cwd=ROOT, capture_output=True, text=True, env=env)
    if p.returncode not in (0, 1):
        raise RuntimeError("eval failed: " + p.stderr[-2000:])
    return json.loads(p.stdout)


class Service(_Service):
    """A real kjudge-server on a free loopback port plus one runner on GPU 0
    (tests/lib's Service); .user is the token of the user "bench"."""

    def __init__(self):
        super().__init__(runner="real", gpu="H200", runner_name="bench-gpu0", prefix="kjudge-bench-")

    def __enter__(self):
        super().__enter__()
        self.user = self.server.user("bench")
        return self
