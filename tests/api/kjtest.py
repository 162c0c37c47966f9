"""kjtest.py - what the API tests under tests/api share beyond tests/lib.

The kernel every test submits (GOOD_SOURCE), the shape of an error answer,
results as kjudge-runner posts them (result_body), and short forms of the
runner protocol's steps (submit, claim, serve_gpu). Importing this module
puts tests/lib on sys.path; the server, the client, the counter and the
event-stream reader are there (Server, SSE are named here too, for the
tests that reach them through this module). Python 3 stdlib only.
"""
import json
import math
import os
import subprocess
import sys

LIB = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib")
if LIB not in sys.path:
    sys.path.insert(0, LIB)

from kjhttp import SSE  # noqa: E402,F401  (tests reach it as kjtest.SSE)
from kjcheck import check  # noqa: E402
from kjservice import BIN, ROOT, Server  # noqa: E402,F401

GOOD_SOURCE = (
    "//!kjudge launch quant grid=(ceil_div(T*H/GS, 8)) block=(32, 8)\n"
    "extern \"C\" __global__ void quant(const float* x, float* x_q, float* x_s,\n"
    "                                  int T, int H, int GS) {}\n"
)


def is_error(data, code):
    return (isinstance(data, dict) and isinstance(data.get("error"), dict) and
            data["error"].get("code") == code and isinstance(data["error"].get("message"), str))



def submit(c, token, gpu="H200", mode="test"):
    """Submit GOOD_SOURCE; returns the new id or None."""
    st, _, data, _ = c.submit(token, [("leaderboard", "fp8_quant"), ("gpu", gpu), ("mode", mode)],
                              [("file", "k.cu", GOOD_SOURCE.encode())])
    return data["id"] if st == 202 and isinstance(data, dict) else None


def claim(c, runner, gpu="H200", name="box"):
    """Claim one job for gpu; returns the job or None."""
    st, _, data, _ = c.post_json("/api/v1/runner/claim", {"runner": name, "gpu": gpu, "arch": "sm_90a"}, runner)
    return data["job"] if st == 200 and isinstance(data, dict) else None


def claim_resp(c, token, gpu="H200"):
    """Claim one job for gpu; returns the whole answer (status, headers, JSON, raw)."""
    return c.post_json("/api/v1/runner/claim", {"runner": "h200-test", "gpu": gpu, "arch": "sm_90a"}, token)


def serve_gpu(srv, c, gpu="B200", name="seen"):
    """A runner token for gpu that asks for its work once (call it while no
    job of that type is queued, or it takes one). For 5 minutes (or the
    lease length if longer) waits and streams on that type's jobs park as
    usual: for a type no runner asked for, a ?wait=1 is answered at once
    with a note."""
    tok = srv.cli("runner", "add", name, "--gpu", gpu, "--db", srv.db)[1].strip()
    st = c.post_json("/api/v1/runner/claim", {"runner": name, "gpu": gpu, "arch": "sm_100a"}, tok)[0]
    return st == 204


def serve_fails(srv, tag, extra_args, env_extra=None, boards=None):
    """Run `serve` in a configuration that must be refused; returns (rc, stderr)."""
    d = os.path.join(srv.tmp, "bad-" + tag)
    os.makedirs(d, exist_ok=True)
    env = dict(os.environ)
    env.pop("KJUDGE_ADMIN_TOKEN", None)
    env.update(env_extra or {})
    args = [BIN, "serve", "--port", str(srv.port), "--db", os.path.join(d, "k.db"),
            "--config", os.path.join(d, "k.conf"), "--leaderboards", boards or os.path.join(ROOT, "leaderboards"),
            "--web", os.path.join(ROOT, "web")] + extra_args
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=20, env=env, cwd=d)
    except subprocess.TimeoutExpired:
        return None, "still running after 20 s"
    return p.returncode, p.stderr


with open(os.path.join(ROOT, "leaderboards", "fp8_quant", "leaderboard.json")) as _f:
    BOARD = json.load(_f)
DEFAULT_MEDIANS = (2000.0, 4000.0, 56000.0)


def geomean(xs):
    """The score the server computes: exp(mean(log)), kept within [min, max] (equal medians give that value)."""
    g = math.exp(sum(math.log(x) for x in xs) / len(xs))
    return min(max(g, min(xs)), max(xs))


def bench_entry(i, median):
    """Benchmark shape i of fp8_quant timed as runner/judge.c reports it."""
    c = BOARD["benchmarks"][i]
    return {"index": i, "shape": {v: c[v] for v in BOARD["vars"]}, "status": "pass", "median_ns": median,
            "mean_ns": median * 1.002, "stdev_ns": median * 0.004, "min_ns": median * 0.99, "max_ns": median * 1.05,
            "q1_ns": median * 0.998, "q3_ns": median * 1.003, "ci_lo_ns": median * 0.999, "ci_hi_ns": median * 1.001,
            "n": 312, "stop_reason": "ci_converged", "floor_ns": 1958.5, "below_floor": False, "wall_s": 0.6,
            "wall_ms_per_call": 1.9, "verified_on_gpu": True}


def result_body(verdict, score=None, mode="test", medians=None, gpu="NVIDIA H200"):
    """A result for GOOD_SOURCE on fp8_quant as kjudge-runner writes it (runner/judge.c).

    Every test shape passes unless the verdict is wrong_answer (test 0 fails). An accepted
    benchmark or leaderboard result times the board's three benchmark shapes: medians given,
    else three equal to score, else DEFAULT_MEDIANS; score_ns is their geometric mean. Test
    mode and failing verdicts have no score. internal_error is what the runner posts when
    the judge itself fails."""
    if verdict == "internal_error":
        return {"verdict": verdict, "message": "test result", "score_ns": None}
    tests = [{"index": i, "shape": {v: c[v] for v in BOARD["vars"]}, "seed": c["seed"], "status": "pass"}
             for i, c in enumerate(BOARD["tests"])]
    if verdict == "wrong_answer":
        tests = [dict(tests[0], status="fail", message="x_q: 1 of 256 elements differ",
                      mismatch={"buffer": "x_q", "count": 1, "total": 256, "max_abs_err": 0.5, "max_rel_err": 0.5,
                                "first": [{"index": [0, 3], "expected": 1.0, "got": 1.5}]})]
    r = {"verdict": verdict, "message": "test result", "mode": mode, "leaderboard": "fp8_quant",
         "compile": {"ok": verdict != "compile_error", "arch": "sm_90a", "log": "COMPILE-LOG-MARKER",
                     "seconds": 0.1, "kernels": []},
         "tests": tests if verdict in ("accepted", "wrong_answer") else [], "benchmarks": [], "score_ns": None,
         "system": {"gpu": gpu, "arch": "sm_90a"}}
    if verdict == "accepted" and mode != "test":
        medians = tuple(medians or ((score,) * 3 if score else DEFAULT_MEDIANS))
        r["benchmarks"] = [bench_entry(i, m) for i, m in enumerate(medians)]
        r["score_ns"] = geomean(medians)
    return r


def make_users(srv, *names):
    """A token per name (checked: `user add` prints exactly one)."""
    out = []
    for name in names:
        rc, tok, err = srv.cli("user", "add", name, "--db", srv.db)
        check(rc == 0 and len(tok.strip()) == 64 and tok.count("\n") == 1, "user add %s prints one token" % name,
              (rc, tok, err))
        out.append(tok.strip())
    return out


def make_runners(srv, *names):
    """A runner token per name, each bound to H200 and B200."""
    out = []
    for name in names:
        rc, tok, err = srv.cli("runner", "add", name, "--gpu", "H200,B200", "--db", srv.db)
        check(rc == 0 and len(tok.strip()) == 64, "runner add %s" % name, (rc, err))
        out.append(tok.strip())
    return out


def serve_b200(c, runner):
    """A runner asks for B200 work and gives back the job it got, if any: B200
    then has a runner seen, so a ?wait=1 on a queued B200 job parks (for a
    GPU type no runner asked for, it is answered at once with a note)."""
    st, _, data, _ = claim_resp(c, runner, "B200")
    if st == 200:
        job = data["job"]
        c.post_json("/api/v1/runner/jobs/%d/release?attempt=%d" % (job["id"], job["attempt"]), {}, runner)
    return st in (200, 204)


def submit_and_finish(c, token, runner, verdict, score, mode="leaderboard", gpu="H200", medians=None):
    st, _, data, _ = c.submit(token, [("leaderboard", "fp8_quant"), ("gpu", gpu), ("mode", mode)],
                              [("file", "k.cu", GOOD_SOURCE.encode())])
    if not check(st == 202, "submit (%s, %s) -> 202" % (mode, verdict), (st, data)):
        return None, None
    sid = data["id"]
    st, _, job, _ = claim_resp(c, runner, gpu)
    check(st == 200 and job["job"]["id"] == sid, "claim the new job", (st, job))
    job = job["job"] if st == 200 else {}
    body = result_body(verdict, score, mode, medians)
    st, _, data, _ = c.post_json("/api/v1/runner/jobs/%d/result?attempt=%d" % (sid, job.get("attempt", 1)), body,
                                 runner)
    check(st == 200, "post result %s" % verdict, (st, data))
    return sid, job
