#!/usr/bin/env python3
"""test_ahead.py - compile-ahead: a runner claims and compiles its next jobs
while its GPU judges the current one (runner/ahead.h says the rule).

Real processes: bin/kjudge-server on loopback with its SQLite file and the
real runner program without a GPU (build/kjudge-runner-fakegpu with
--ahead, tests/api/fakegpu.c). The compile-ahead process is the real one:
it compiles with NVRTC in real compile boxes; only the GPU's judging is the
fake's, which answers "judged a submission compiled ahead (N bytes of
cubin)" for a job handed over compiled. Checks:

- --ahead is checked like the other numbers (0 to 3);
- a submission that does not compile is judged without the GPU: NVRTC's
  own message, the events compiling, compiled, verdict, and the
  supervisor never judges it; --ahead 0 leaves it to the judge as before;
- a slow compile (an unrolled body of a thousand dependent statements,
  seconds of NVRTC) holds one compile-ahead slot only: test jobs
  submitted after it are compiled, judged and done first; it is judged
  when it has compiled;
- while the GPU judges a long job the next one is compiled (its
  "compiled" event is stored before the first ends) and judged right
  after; its fair-share clock starts when its GPU work does (the
  heartbeat's gpu_start: submissions.claimed_ms moves past its claim);
- a test job sent while a timed job runs is compiled ahead and judged in
  one of its gaps with that cubin (its GPU time from then); one given up
  in a gap is never offered again in that timed job's gaps, though the
  process may hold it again, and is judged after it;
- a stop while jobs are held gives every one back (queued again, no
  attempt charged), the runner exits 0 and the compile-ahead process
  with it; another runner then judges them;
- when the compile-ahead process dies, the runner claims its jobs itself
  and goes on judging.
Ends with "test_ahead: N passed, N failed, N skipped".
"""
import os
import signal
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import check  # noqa: E402
import kjrunner  # noqa: E402
from kjrunner import sub, submit, wait_status, wait_until  # noqa: E402
from kjrunner import done_at, status  # noqa: E402
from kjtest import GOOD_SOURCE  # noqa: E402

BAD_SOURCE = GOOD_SOURCE.replace("int GS) {}", "int GS) { undefined_thing(); }")
# A thousand dependent statements, unrolled by the preprocessor: seconds of
# NVRTC (about 4 s on a 2-core test machine), and it compiles.
SLOW_SOURCE = (
    "//!kjudge launch quant grid=(ceil_div(T*H/GS, 8)) block=(32, 8)\n"
    "#define R1 a = a * x[(int)a & 255] + 1.0f;\n"
    "#define R8 R1 R1 R1 R1 R1 R1 R1 R1\n"
    "#define R64 R8 R8 R8 R8 R8 R8 R8 R8\n"
    "#define R512 R64 R64 R64 R64 R64 R64 R64 R64\n"
    "extern \"C\" __global__ void quant(const float* x, float* x_q, float* x_s,\n"
    "                                  int T, int H, int GS) {\n"
    "    float a = x[threadIdx.x];\n"
    "    R512 R512\n"
    "    x_q[threadIdx.x] = a;\n"
    "}\n")


def runner(srv, rtok, tmp, name, args=()):
    r = kjrunner.Runner(os.path.join(tmp, name), "http://127.0.0.1:%d" % srv.port, rtok,
                        ["--ahead", "2"] + list(args), name=name)
    return r.start()



def result(srv, tok, sid):
    d = sub(srv, tok, sid)
    return (d.get("result") or {}) if isinstance(d, dict) else {}


def runner_events(srv, tok, sid):
    return [e.get("event") for e in kjrunner.events(srv, tok, sid) if e.get("event") != "queued"]



def helper_pid(r):
    """The compile-ahead process: the runner's one lasting child."""
    path = "/proc/%d/task/%d/children" % (r.proc.pid, r.proc.pid)
    try:
        with open(path) as f:
            kids = [int(x) for x in f.read().split()]
    except OSError:
        return None
    return kids[0] if len(kids) == 1 else None


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def claimed_ms(srv, sid):
    con = sqlite3.connect(srv.db, timeout=10)
    try:
        row = con.execute("SELECT claimed_ms FROM submissions WHERE id = ?", (sid,)).fetchone()
    finally:
        con.close()
    return row[0] if row else None


def test_args(srv, tok, rtok, tmp):
    for bad in ("-1", "4", "x", "1.5", ""):
        p = subprocess.run([kjrunner.FAKE, "serve", "--server", "http://127.0.0.1:9", "--ahead", bad],
                           capture_output=True, text=True, timeout=30)
        check(p.returncode == 2 and "--ahead" in p.stderr,
              "--ahead %r is refused with a message" % bad, (p.returncode, p.stderr[-300:]))


def test_compile_error(srv, tok, rtok, tmp):
    r = runner(srv, rtok, tmp, "cerr")
    try:
        b = submit(srv, tok, seconds=0.1, source=BAD_SOURCE)
        d = wait_status(srv, tok, b, "done", 30)
        res = (d or {}).get("result") or {}
        check(res.get("verdict") == "compile_error" and
              'identifier "undefined_thing" is undefined' in res.get("message", ""),
              "a submission that does not compile gets NVRTC's message", res)
        check("undefined_thing" in (res.get("compile") or {}).get("log", ""),
              "and its compile log", res.get("compile"))
        check(runner_events(srv, tok, b) == ["compiling", "compiled", "verdict"],
              "its events: compiling, compiled, verdict", runner_events(srv, tok, b))
        check(isinstance(res.get("system"), dict) and res["system"].get("gpu") == "NVIDIA H200",
              "its result names the runner's GPU, as a judged one does", res.get("system"))
        log = r.text()
        check(("judged job=%d verdict=compile_error without the GPU" % b) in log and
              ("judging job=%d " % b) not in log,
              "it never reached the GPU: the supervisor did not judge it", log[-800:])
        check(d.get("attempts", 0) <= 1, "one attempt", d)
    finally:
        r.stop()
    r0 = runner(srv, rtok, tmp, "cerr0", ["--ahead", "0"])
    try:
        b = submit(srv, tok, seconds=0.1, source=BAD_SOURCE)
        wait_status(srv, tok, b, "done", 30)
        check(result(srv, tok, b).get("message") == "fakegpu: nothing was compiled" and
              "ahead:" not in r0.text(),
              "--ahead 0: the judge takes it as before, no compile-ahead", (result(srv, tok, b), r0.text()[-400:]))
    finally:
        r0.stop()


def test_slow_compile(srv, tok, rtok, tmp):
    r = runner(srv, rtok, tmp, "slow")
    try:
        s = submit(srv, tok, seconds=0.1, source=SLOW_SOURCE)
        check(wait_until(lambda: ("claimed job=%d " % s) in r.text(), 15), "the slow one is claimed",
              r.text()[-400:])
        quick = [submit(srv, tok, seconds=0.1) for _ in range(3)]
        seen = done_at(srv, tok, [s] + quick)
        check(len(seen) == 4, "all four are done", (seen, r.text()[-1200:]))
        if len(seen) == 4:
            check(all(seen[q] < seen[s] for q in quick),
                  "the test jobs sent after the slow compile are done before it", (seen, r.text()[-1200:]))
        for q in quick:
            check(result(srv, tok, q).get("message", "").startswith("fakegpu: judged a submission compiled ahead"),
                  "each was compiled ahead and handed to the GPU compiled", result(srv, tok, q))
        msg = result(srv, tok, s).get("message", "")
        check(msg.startswith("fakegpu: judged a submission compiled ahead") and "bytes of cubin" in msg,
              "the slow one is judged once it has compiled", msg)
        check(runner_events(srv, tok, s)[:2] == ["compiling", "compiled"],
              "its compile events come from the compile-ahead process", runner_events(srv, tok, s))
    finally:
        r.stop()


def test_busy(srv, tok, rtok, tmp):
    r = runner(srv, rtok, tmp, "busy")
    try:
        a = submit(srv, tok, seconds=3)
        check(wait_until(lambda: status(srv, tok, a) == "running" and ("judging job=%d" % a) in r.text(), 15),
              "a long job is on the GPU", r.text()[-400:])
        b = submit(srv, tok, seconds=0.1)
        compiled = wait_until(lambda: "compiled" in runner_events(srv, tok, b), 10)
        t_compiled = time.time()
        check(compiled and status(srv, tok, a) == "running",
              "the next job is compiled while the GPU still judges the first", runner_events(srv, tok, b))
        held = claimed_ms(srv, b)
        seen = done_at(srv, tok, [a, b], 30)
        check(len(seen) == 2 and seen[b] > seen[a], "it is judged after the first",
              (seen, r.text()[-800:]))
        check(len(seen) == 2 and seen[b] - seen[a] < 1.5,
              "right after it (it waited compiled)", seen)
        start = claimed_ms(srv, b)
        check(held is not None and start is not None and start - held >= 1000 and
              start / 1000.0 >= t_compiled + 1.0,
              "its fair-share clock starts when its GPU work does (gpu_start), not at its claim",
              (held, start, t_compiled))
    finally:
        r.stop()


def test_gap(srv, tok, rtok, tmp):
    r = runner(srv, rtok, tmp, "gapahead")
    try:
        lb = submit(srv, tok, seconds=4, mode="leaderboard")
        check(wait_until(lambda: ("judging job=%d" % lb) in r.text(), 15), "a leaderboard job is judged",
              r.text()[-400:])
        t = submit(srv, tok, seconds=0.1)
        check(wait_until(lambda: ("compiled job=%d" % t) in r.text(), 15),
              "a test job sent during it is claimed and compiled ahead", r.text()[-600:])
        held = claimed_ms(srv, t)
        seen = done_at(srv, tok, [lb, t])
        log = r.text()
        check(len(seen) == 2 and seen[t] < seen[lb],
              "it is judged in a gap of the timed job, not after it", (seen, log[-800:]))
        check(("judging job=%d leaderboard=fp8_quant mode=test in a gap of job=%d" % (t, lb)) in log,
              "the runner says so", log[-800:])
        check(result(srv, tok, t).get("message", "").startswith("fakegpu: judged a submission compiled ahead"),
              "with the cubin compiled ahead", result(srv, tok, t))
        check(runner_events(srv, tok, t)[:2] == ["compiling", "compiled"] and
              runner_events(srv, tok, t).count("compiling") == 1,
              "its compile events once, from the compile-ahead process", runner_events(srv, tok, t))
        start = claimed_ms(srv, t)
        check(held is not None and start is not None and start > held,
              "its fair-share clock starts in the gap (gpu_start)", (held, start))
    finally:
        r.stop()
    r = runner(srv, rtok, tmp, "gapskip", ["--gap-seconds", "0.5"])
    try:
        lb = submit(srv, tok, seconds=4, mode="leaderboard")
        check(wait_until(lambda: ("judging job=%d" % lb) in r.text(), 15), "a leaderboard job is judged",
              r.text()[-400:])
        slow = submit(srv, tok, seconds=1.5)
        seen = done_at(srv, tok, [lb, slow])
        log = r.text()
        check(len(seen) == 2 and seen[slow] > seen[lb],
              "a test job slower than --gap-seconds is judged after the timed job", (seen, log[-1200:]))
        check(log.count("claimed job=%d " % slow) == 2,
              "given back, it was claimed and compiled ahead again", log[-1500:])
        check(log.count("judging job=%d leaderboard=fp8_quant mode=test in a gap" % slow) == 1,
              "yet it was tried in one gap only: the gaps' skip list reaches the process",
              log[-1500:])
        check(sub(srv, tok, slow).get("attempts", 9) <= 1, "no attempt charged for the gap", sub(srv, tok, slow))
    finally:
        r.stop()


def test_stop_holding(srv, tok, rtok, tmp):
    r = runner(srv, rtok, tmp, "stophold", ["--grace", "0"])
    check(wait_until(lambda: helper_pid(r) is not None, 10), "the compile-ahead process runs",
          r.text()[-400:])
    hp = helper_pid(r)
    a = submit(srv, tok, seconds=6)
    check(wait_until(lambda: ("judging job=%d" % a) in r.text(), 15), "a long job is judged", r.text()[-400:])
    b = submit(srv, tok, seconds=0.1)
    check(wait_until(lambda: ("compiled job=%d" % b) in r.text(), 15), "the next is compiled and held",
          r.text()[-600:])
    r.signal(signal.SIGTERM)
    rc = r.wait(30)
    log = r.text()
    check(rc == 0, "SIGTERM while a job is held ahead: the runner exits 0", (rc, log[-800:]))
    check(status(srv, tok, a) == "queued" and status(srv, tok, b) == "queued",
          "the judged job and the held one are both queued again at once",
          (sub(srv, tok, a), sub(srv, tok, b), log[-800:]))
    check(("gave job=%d back" % b) in log, "the compile-ahead process says it gave its job back",
          log[-800:])
    check(sub(srv, tok, b).get("attempts", 9) == 0, "no attempt is charged for the held one", sub(srv, tok, b))
    check(hp is not None and wait_until(lambda: not alive(hp), 10),
          "the compile-ahead process has ended with the runner", hp)
    r2 = runner(srv, rtok, tmp, "after", ["--ahead", "0"])
    try:
        check(wait_status(srv, tok, a, "done", 30).get("status") == "done" and
              wait_status(srv, tok, b, "done", 30).get("status") == "done",
              "both are judged by the next runner", r2.text()[-600:])
    finally:
        r2.stop()


def test_helper_dies(srv, tok, rtok, tmp):
    r = runner(srv, rtok, tmp, "orphan")
    try:
        check(wait_until(lambda: helper_pid(r) is not None, 10), "the compile-ahead process runs",
              r.text()[-400:])
        hp = helper_pid(r)
        if hp is not None:
            os.kill(hp, signal.SIGKILL)
        time.sleep(0.5)
        t = submit(srv, tok, seconds=0.1)
        d = wait_status(srv, tok, t, "done", 30)
        log = r.text()
        check(d.get("status") == "done" and result(srv, tok, t).get("message") == "fakegpu: nothing was compiled",
              "the runner goes on and judges the next job itself", (d, log[-800:]))
        check("claims its jobs itself from now on" in log, "and says why", log[-800:])
        check(r.poll() is None, "the runner still runs", log[-400:])
    finally:
        r.stop()


def main():
    return kjrunner.run_suite("test_ahead", [test_args, test_compile_error, test_slow_compile, test_busy,
                                             test_gap, test_stop_holding, test_helper_dies])


if __name__ == "__main__":
    sys.exit(main())
