"""fakerunner.py - a runner for the API tests that judges nothing.

A thread that claims jobs over the runner protocol (docs/protocol.md) and,
for each, posts the progress events and the result a real runner would,
with short pauses so a client sees them arrive live. What it reports is
chosen by a marker in the submitted source:

    FAKE:accept      (default) every test passes, every shape is timed
    FAKE:wrong       test 2 fails with a mismatch (indices, values)
    FAKE:compile     the compile fails with a log
    FAKE:crash       test 1 fails with a CUDA error
    FAKE:slow        like accept, with longer pauses
    FAKE:scale=X     (with any of the above) every timed median times X

A profile or sanitize job gets a recorded H200 result instead
(tests/data/tool: profile_result.json, of benchmark shape 2, and
sanitize_race_result.json, racecheck's five findings of one race); with
FAKE:report in the source a profile job also uploads a report artifact;
with FAKE:tests a sanitize job's findings name test 1 (as a runner does
where compute-sanitizer writes its log as it goes: runner/sanitize.h).

Timed medians are 1234.5, 2234.5, ... ns, plus, for a shape bigger than the
L2, its time at 250 GB/s (the server refuses one below its physical floor).

A test may set before_event to a function(job, event name) that the
runner calls before it posts each event (e.g. to hold a job mid-way).

The shapes, seeds and counts come from the leaderboard's own JSON.
Python 3 standard library only.
"""
import json
import os
import re
import threading
import sys
import time

import kjtest  # noqa: F401  (puts tests/lib on sys.path)
from kjhttp import Client


# The server refuses a median below a shape's physical floor (server/result_floor.c): at
# most its bytes beyond a 64 MiB L2 at 6000 GB/s (an H200's bounds). Each timed median
# gets that shape's bytes beyond the L2 at 250 GB/s added, so FAKE:scale down to 0.05
# stays above it; shapes within the L2 keep their round figures.
FLOOR_L2_BYTES = 64 * 1024 * 1024
FAKE_GBS = 250.0


def shape_bytes(expr, shape):
    """The board's "bytes" expression (integer arithmetic) at shape; 0 when there is none."""
    if not expr:
        return 0
    env = dict(shape, min=min, max=max, ceil_div=lambda a, b: -(-a // b))
    try:
        return int(eval(expr.replace("/", "//"), {"__builtins__": {}}, env))
    except Exception:  # noqa: BLE001  (a board the fake does not understand: no extra time)
        return 0


def board_facts(c, board):
    """The board's test shapes with their seeds, its benchmark shapes, and each benchmark
    shape's bytes beyond the L2 over FAKE_GBS in ns."""
    st, _, d, _ = c.get("/api/v1/leaderboards/%s" % board)
    if st != 200:
        return [], [], []
    names = d["vars"]
    tests = [({k: t[k] for k in names}, t.get("seed")) for t in d["tests"]]
    shapes = [{k: b[k] for k in names} for b in d["benchmarks"]]
    extra = [max(0, shape_bytes(d.get("bytes"), s) - FLOOR_L2_BYTES) / FAKE_GBS for s in shapes]
    return tests, shapes, extra


class FakeRunner:
    def __init__(self, port, token, gpus=("H200", "B200"), name="fake-0", pause=0.03):
        self.c = Client(port)
        self.token = token
        self.gpus = gpus
        self.name = name
        self.pause = pause
        self.stop_flag = threading.Event()
        self.hold = threading.Event()   # set: claim nothing (a test wants a job to stay queued)
        self.held = threading.Event()   # set by the loop while it claims nothing for hold
        self.judged = []
        self.before_event = None
        self.th = threading.Thread(target=self.loop, daemon=True)

    def start(self):
        self.th.start()
        return self

    def stop(self):
        self.stop_flag.set()
        self.th.join(10)

    def hold_now(self, timeout=30):
        """Set hold and wait until the loop has seen it, so that no claim of
        the loop is in flight and a job submitted now stays queued (hold alone
        leaves a claim made just before it free to take that job). False when
        the loop did not get there within timeout."""
        self.held.clear()
        self.hold.set()
        return self.held.wait(timeout)

    def loop(self):
        while not self.stop_flag.is_set():
            if self.hold.is_set():
                self.held.set()
                time.sleep(0.02)
                continue
            took = False
            for gpu in self.gpus:
                try:
                    st, _, d, _ = self.c.post_json("/api/v1/runner/claim",
                                                   {"runner": self.name, "gpu": gpu, "arch": "sm_90a"},
                                                   self.token)
                except OSError:
                    st = 0
                if st == 200:
                    took = True
                    try:
                        self.judge(d["job"])
                    except OSError:
                        pass
            if not took:
                time.sleep(0.05)

    def event(self, job, name, data, pause):
        time.sleep(pause)
        if self.before_event is not None:
            self.before_event(job, name)
        self.c.post_json("/api/v1/runner/jobs/%d/events?attempt=%d" % (job["id"], job["attempt"]),
                         {"event": name, "data": data}, self.token)

    def recorded(self, job):
        """A profile or sanitize job: its recorded result, posted after its events."""
        name = "profile_result.json" if job["mode"] == "profile" else "sanitize_race_result.json"
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "tool", name)) as f:
            res = json.load(f)
        res["leaderboard"] = job["leaderboard"]
        if job["mode"] == "sanitize" and "FAKE:tests" in job["source"]:
            for g in res["sanitize"]["groups"]:
                for f in g["findings"]:
                    f["test"] = 1
        self.event(job, "compiling", {"arch": "sm_90a"}, self.pause)
        self.event(job, "compiled", res["compile"], self.pause)
        if job["mode"] == "profile" and "FAKE:report" in job["source"]:
            self.c.request("POST", "/api/v1/runner/jobs/%d/artifacts/profile.ncu-rep?attempt=%d" %
                           (job["id"], job["attempt"]), token=self.token, body=b"NCU-REP fake report " * 64,
                           headers={"Content-Type": "application/octet-stream"}, runner=True)
        self.event(job, "verdict", {"verdict": res["verdict"], "message": res.get("message", "")}, self.pause)
        return self.finish(job, res, self.pause)

    def judge(self, job):
        if job["mode"] in ("profile", "sanitize"):
            return self.recorded(job)
        src = job["source"]
        kind = "accept"
        for k in ("wrong", "compile", "crash", "slow"):
            if "FAKE:" + k in src:
                kind = k
        pause = self.pause * (6 if kind == "slow" else 1)
        m = re.search(r"FAKE:scale=([0-9]+(?:\.[0-9]+)?)", src)
        scale = float(m.group(1)) if m else 1.0
        tests, shapes, extra = board_facts(self.c, job["leaderboard"])
        res = {"mode": job["mode"], "leaderboard": job["leaderboard"], "tests": [], "benchmarks": [],
               "score_ns": None, "system": {"gpu": "NVIDIA %s (fake)" % job["gpu"], "arch": "sm_90a"}}
        self.event(job, "compiling", {"arch": "sm_90a"}, pause)
        if kind == "compile":
            log = "k.cu(3): error: identifier \"oops\" is undefined\n1 error detected in the compilation of \"k.cu\"."
            comp = {"ok": False, "arch": "sm_90a", "log": log, "seconds": 0.2, "kernels": []}
            self.event(job, "compiled", comp, pause)
            res.update(compile=comp, verdict="compile_error", message=log.split("\n")[0])
            return self.finish(job, res, pause)
        comp = {"ok": True, "arch": "sm_90a", "log": "", "seconds": 0.41,
                "kernels": [{"name": "quant", "lowered": "quant", "registers": 16, "smem_static": 0,
                             "stack_frame": 0, "spill_stores": 0, "spill_loads": 0, "barriers": 0}]}
        self.event(job, "compiled", comp, pause)
        res["compile"] = comp
        for i, (shape, seed) in enumerate(tests):
            e = {"index": i, "shape": shape, "seed": seed, "status": "pass", "message": ""}
            if kind == "wrong" and i == 2:
                e.update(status="fail", message="x_q: 12 of 1024 elements differ",
                         mismatch={"buffer": "x_q", "count": 12, "total": 1024, "max_abs_err": 0.5,
                                   "max_rel_err": 0.1,
                                   "first": [{"index": [0, 17], "expected": 1.5, "got": 2.0},
                                             {"index": [3, 4], "expected": -448.0, "got": "nan"}]})
            if kind == "crash" and i == 1:
                e.update(status="error", message="CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access "
                                                 "was encountered")
            res["tests"].append(e)
            self.event(job, "test", e, pause)
            if e["status"] != "pass":
                verdict = "wrong_answer" if kind == "wrong" else "runtime_error"
                msg = "test %d: %s" % (i, e["message"])
                self.event(job, "verdict", {"verdict": verdict, "message": msg}, pause)
                res.update(verdict=verdict, message=msg)
                return self.finish(job, res, pause)
        medians = []
        if job["mode"] != "test":
            for i, shape in enumerate(shapes):
                m = (1000.0 * (i + 1) + 234.5 + extra[i]) * scale
                b = {"index": i, "shape": shape, "status": "pass", "median_ns": m, "mean_ns": m + 2 * scale,
                     "stdev_ns": 4.0 * scale, "min_ns": m - 20 * scale, "max_ns": m + 40 * scale,
                     "q1_ns": m - 3 * scale, "q3_ns": m + 3 * scale,
                     "ci_lo_ns": m - 10 * scale, "ci_hi_ns": m + 12 * scale, "n": 300 + i, "stop_reason": "ci_converged",
                     "floor_ns": m / 3, "below_floor": False,
                     "launches": [{"kernel": "quant", "grid": [128 * (i + 1), 1, 1], "block": [32, 8, 1],
                                   "smem": 0}]}
                res["benchmarks"].append(b)
                medians.append(m)
                self.event(job, "benchmark", b, pause)
        if medians:
            g = 1.0
            for m in medians:
                g *= m
            res["score_ns"] = g ** (1.0 / len(medians))
        msg = "all %d tests passed" % len(tests) + ("; %d benchmark shapes timed" % len(medians) if medians else "")
        self.event(job, "verdict", {"verdict": "accepted", "message": msg}, pause)
        res.update(verdict="accepted", message=msg)
        return self.finish(job, res, pause)

    def finish(self, job, res, pause):
        time.sleep(pause)
        st, _, body, _ = self.c.post_json("/api/v1/runner/jobs/%d/result?attempt=%d" % (job["id"], job["attempt"]),
                                          res, self.token)
        if st != 200:
            print("fakerunner: result of job %d refused: %s %s" % (job["id"], st, body), file=sys.stderr)
        self.judged.append((job["id"], res["verdict"], st))
        return st
