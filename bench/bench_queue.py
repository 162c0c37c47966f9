#!/usr/bin/env python3
"""bench/bench_queue: scheduling through a real server and real runners.

Prints one table of four parts:
  1. warm test-mode latency (template.cu), split into its steps as the
     submission's event stream shows them: POST answered, compile started
     (the claim and the boxes' fork come first), compiled, last test, the
     verdict event, and the result stored; then the time from the verdict
     event to the stored result (the result is posted before the boxes are
     torn down, so no teardown sits in it) and, from the runner's log
     ("torn down job=N in X s"), the teardown that follows the post; median
     of n, on an idle system: each job is sent once the last one's boxes
     are torn down (a job sent at once would create its contexts while the
     last one's are destroyed, as in part 2);
  2. test-mode jobs per minute per GPU: a burst of jobs, first POST to last
     verdict;
  3. a flood, three times: --queue-rule fair with the runner judging test
     jobs in the gaps of timed jobs (its default), fair without them
     (--gap-seconds 0) and fifo without them (the rule before); a heavy user submits
     30 test jobs a minute plus a template bomb (tests/exploits/template_bomb.cu)
     every 10 s, a third user a leaderboard job (examples/fast.cu) every 15 s,
     and a light user one test job every 5 s (more samples than the one a
     minute of the goal, same load): the light user's verdict latency p50 and
     p99, the leaderboard jobs' p50 and max, and the verdicts per kind of
     job (the flood must be judged, not only answered);
  4. scaling from one GPU to two (jobs per minute with two runners over one),
     only with two GPUs ("not measured: one GPU" otherwise);
  5. a slow compile ahead of light jobs, with compile-ahead (--ahead 2, the
     runner's default) and without (--ahead 0): one job whose compile runs
     into the compile box's 60 s limit (bench/slow_compile.cu), then, once
     it is claimed, one light test job a second for SLOW_N seconds: their
     verdict latency p50 and max, and whether the slow one's compile held
     the GPU (its verdict and when it came). GPU only.
  6. --tools: the tool flood instead of parts 1-5 (docs/operator-tools.md):
     two users each keep two sanitize jobs of a kernel that prints until
     the tool's limit (bench/tool_flood_print.cu) and two profile jobs of
     the fp8_quant examples (examples/fast.cu, benchmark shape 0) queued,
     a third submits one test job every TOOL_LIGHT_EVERY s, a fourth a
     leaderboard job (examples/fast.cu) every TOOL_LB_EVERY s (both for
     KJ_BENCH_TOOL_FLOOD_S, default 40); the runner's tool limit is KJ_BENCH_TOOL_LIMIT_S
     (default 15). First a quiet run (the leaderboard jobs alone), then the
     flood under the rules of this tree (--queue-rule fair, the runner's
     default --share); --today adds the same flood under the rule before
     (--queue-rule fair-prev, --share test=alone,sanitize=alone,
     profile=alone). Prints the light user's test verdict p50/p99, the
     leaderboard scores' largest drift from the quiet run's median against
     the board's resolution_pct, and the jobs lost (not done after the
     drain) or charged twice (attempts > 1). KJ_BENCH_SHARE=MODE=HOW,...
     gives the runner of this tree's run that --share (e.g. profile=side).
Goals: light p99 < 5 s during the flood (and the tool flood); warm test p50
< 0.5 s idle; >= 100 test jobs/min/GPU; two GPUs >= 1.8x one; tool flood:
leaderboard drift within the board's resolution, no job lost or charged
twice.

--fake runs without a GPU: build/kjudge-runner-fakegpu (runner/serve.c as
shipped, its judge replaced by a sleep that each source names with a
"fakegpu:seconds=N" line: test 0.3 s, bomb 3 s, leaderboard 4 s; its
boxes' teardown a sleep of 0.28 s, an H200's), two fake runners for the
scaling row. Its figures measure the server and the
protocol, not a GPU. KJ_BENCH_FLOOD_S (default 40) sets each flood's
length, KJ_BENCH_N (default 8) the latency samples, KJ_BENCH_BURST
(default 40) the throughput burst, KJ_BENCH_DRAIN_S (default 30) how long
the jobs of a flood may take to finish after it; KJ_BENCH_LOGS names a folder that gets
each service's server and runner log. --smoke (make test,
tests/api/test_benches.py) is --fake with one latency sample, a burst of 3,
floods of 2 s and fake jobs of 0.05-0.3 s: every part in about 20 s.
"""
import argparse, http.client as httpc, json, os, re, shutil, statistics, subprocess, sys, tempfile, threading, time
from urllib.parse import urlparse

from bench_common import ROOT, RUNNER, SERVER, LB, free_port, http, submit, wait_runner

FAKE_RUNNER = os.path.join(ROOT, "build", "kjudge-runner-fakegpu")
BOMB = os.path.join(ROOT, "tests", "exploits", "template_bomb.cu")
SLOW = os.path.join(ROOT, "bench", "slow_compile.cu")
SLOW_N = int(os.environ.get("KJ_BENCH_SLOW_N", "5"))
FLOOD_S = float(os.environ.get("KJ_BENCH_FLOOD_S", "40"))
N = int(os.environ.get("KJ_BENCH_N", "8"))
BURST = int(os.environ.get("KJ_BENCH_BURST", "40"))
DRAIN_S = float(os.environ.get("KJ_BENCH_DRAIN_S", "30"))
FAKE_S = {"test": 0.3, "bomb": 3.0, "leaderboard": 4.0, "print": 4.0, "profile": 1.5}
PRINT = os.path.join(ROOT, "bench", "tool_flood_print.cu")
TOOL_FLOOD_S = float(os.environ.get("KJ_BENCH_TOOL_FLOOD_S", "40"))
TOOL_LIMIT_S = float(os.environ.get("KJ_BENCH_TOOL_LIMIT_S", "15"))
TOOL_DRAIN_S = float(os.environ.get("KJ_BENCH_TOOL_DRAIN_S", "150"))
TOOL_LIGHT_EVERY = 3.0
TOOL_LB_EVERY = 15.0
TOOL_QUIET_N = int(os.environ.get("KJ_BENCH_TOOL_QUIET_N", "3"))
# The rule before one tool job per user and the sharing policy (--today).
TODAY = {"rule": "fair-prev", "runner": ["--share", "test=alone,sanitize=alone,profile=alone"]}
FAKE_TEARDOWN_S = 0.28  # a warm test job's teardown on an H200 (run box's CUDA context, reaping, cgroup)


class Service:
    """kjudge-server (--queue-rule rule, no rate limits) and one runner per GPU."""

    def __init__(self, rule, gpus, fake, runner_args=(), runner_env=None):
        self.rule, self.gpus, self.fake, self.runner_args = rule, gpus, fake, list(runner_args)
        self.runner_env = runner_env or {}

    def __enter__(self):
        self.tmp = tempfile.mkdtemp(prefix="kjudge-bench-queue-")
        port = free_port()
        db, conf = os.path.join(self.tmp, "k.db"), os.path.join(self.tmp, "k.conf")
        with open(conf, "w") as f:
            f.write("admin_token = %s\n" % os.urandom(16).hex())
        os.chmod(conf, 0o600)
        self.base = "http://127.0.0.1:%d" % port
        self.log = open(os.path.join(self.tmp, "log"), "w")
        self.procs = [subprocess.Popen(
            [SERVER, "serve", "--port", str(port), "--db", db, "--config", conf, "--queue-rule", self.rule,
             "--rate-limit-test", "0", "--rate-limit-benchmark", "0", "--rate-limit-leaderboard", "0",
             "--rate-limit-profile", "0", "--rate-limit-sanitize", "0",
             "--leaderboards", os.path.join(ROOT, "leaderboards"),
             "--openapi", os.path.join(ROOT, "server", "openapi.json")], cwd=ROOT,
            stdout=subprocess.DEVNULL, stderr=self.log)]
        try:
            self.start_rest(db)
        except Exception:
            self.__exit__()
            raise
        return self

    def start_rest(self, db):
        for _ in range(100):
            try:
                if http("GET", self.base + "/healthz", timeout=2)[0] == 200:
                    break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError("the server did not start: %s" % self.log_tail())
        run = lambda *a: subprocess.run([SERVER, *a, "--db", db], capture_output=True, text=True).stdout.strip()
        self.tok = {u: run("user", "add", u) for u in ("light", "heavy", "third", "toola", "toolb")}
        rtok = run("runner", "add", "bench", "--gpu", "H200")
        env = dict(os.environ, KJUDGE_RUNNER_TOKEN=rtok, **self.runner_env)
        if self.fake:
            env["KJUDGE_FAKE_TEARDOWN_S"] = str(FAKE_TEARDOWN_S)
        for g in range(self.gpus):
            argv = ([FAKE_RUNNER] if self.fake else [RUNNER]) + [
                "serve", "--server", self.base, "--name", "bench-%d" % g,
                "--leaderboards", os.path.join(ROOT, "leaderboards")] + ([] if self.fake else ["--gpu", str(g)]) + \
                self.runner_args
            self.procs.append(subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                               stderr=self.log))
        try:
            wait_runner(self.base, "H200", timeout=60, proc=self.procs[-1])
        except RuntimeError as e:
            raise RuntimeError("%s: %s" % (e, self.log_tail()))
        time.sleep(0.5)  # every runner's first claim is parked

    def log_text(self):
        self.log.flush()
        with open(os.path.join(self.tmp, "log"), errors="replace") as f:
            return f.read()

    def log_tail(self):
        return "log:\n" + "".join(self.log_text().splitlines(True)[-15:])

    def __exit__(self, *exc):
        for p in self.procs[1:] + self.procs[:1]:
            p.terminate()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        if not self.log.closed:
            self.log.close()
        keep = os.environ.get("KJ_BENCH_LOGS")  # a folder for the server's and runners' logs
        if keep:
            os.makedirs(keep, exist_ok=True)
            shutil.copy(os.path.join(self.tmp, "log"),
                        os.path.join(keep, "queue-%s%s-%dgpu-%d.log" % (self.rule, "".join("-" + a.strip("-") for a in self.runner_args),
                                                                      self.gpus, int(time.time()))))
        shutil.rmtree(self.tmp, ignore_errors=True)


def sources(fake):
    """Path per kind of job; in --fake mode copies that name their fake time."""
    src = {"test": os.path.join(LB, "template.cu"), "bomb": BOMB,
           "leaderboard": os.path.join(LB, "examples", "fast.cu"), "print": PRINT,
           "profile": os.path.join(LB, "examples", "fast.cu")}
    if not fake:
        return src
    d = tempfile.mkdtemp(prefix="kjudge-bench-src-")
    out = {}
    for k, p in src.items():
        out[k] = os.path.join(d, k + "-" + os.path.basename(p))
        with open(p) as f, open(out[k], "w") as g:
            g.write(f.read() + "\n// fakegpu:seconds=%g\n" % FAKE_S[k])
    return out


MODE_OF = {"leaderboard": "leaderboard", "print": "sanitize", "profile": "profile"}


def post(svc, user, src, kind):
    extra = {"shape": "0"} if kind == "profile" else {}  # one shape: seconds under ncu, not minutes
    st, d = submit(svc.base, svc.tok[user], src[kind], MODE_OF.get(kind, "test"), **extra)
    if st != 202:
        raise RuntimeError("submit %s: HTTP %d %s" % (kind, st, d))
    return d["id"]


def stream_steps(svc, sid, t_post):
    """Seconds from POST to the first of each event of sid's stream, as they arrive."""
    u = urlparse(svc.base)
    c = httpc.HTTPConnection(u.hostname, u.port, timeout=120)
    c.request("GET", "/api/v1/submissions/%d/events" % sid,
              headers={"Authorization": "Bearer " + svc.tok["light"], "Accept": "text/event-stream"})
    r = c.getresponse()
    seen, event = {}, None
    while True:
        line = r.fp.readline()
        if not line:
            break
        line = line.decode().rstrip("\r\n")
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line == "" and event:
            seen.setdefault(event, []).append(time.time() - t_post)
            if event in ("verdict", "timeout", "stopping", "error"):
                break
            event = None
    c.close()
    return seen


def torn_down(svc, sids, wait_s=10):
    """Seconds each of sids' teardown took, from the runner's log lines
    "torn down job=N in X s" (waiting up to wait_s for the last ones)."""
    want, got = set(sids), {}
    deadline = time.time() + wait_s
    while True:
        for m in re.finditer(r"torn down job=(\d+) in ([0-9.]+) s", svc.log_text()):
            if int(m.group(1)) in want:
                got[int(m.group(1))] = float(m.group(2))
        if len(got) == len(want) or time.time() > deadline:
            return got
        time.sleep(0.1)


def latency_split(svc, src):
    """(step, median seconds) rows of the warm test-mode latency."""
    rows, sids = [], []
    for i in range(N + 1):
        t0 = time.time()
        sid = post(svc, "light", src, "test")
        t_post = time.time() - t0
        seen = stream_steps(svc, sid, t0)
        # The runner sends the verdict event, posts the result and only then
        # tears its boxes down: the user's verdict is the stored result.
        st, d = http("GET", svc.base + "/api/v1/submissions/%d?wait=1&timeout=120" % sid, svc.tok["light"])
        t_done = time.time() - t0 if st == 200 and d.get("status") == "done" else None
        torn_down(svc, [sid], wait_s=5)  # an idle system: the last job's boxes are gone
        time.sleep(0.2)
        if i == 0:
            continue  # warm-up
        sids.append(sid)
        first = lambda e: seen.get(e, [None])[0]
        last = lambda e: seen.get(e, [None])[-1]
        verdict = first("verdict")
        rows.append({"POST answered (from POST)": t_post,
                     "compile started (claim, boxes forked) (from POST)": first("compiling"),
                     "compiled (from POST)": first("compiled"), "last test (from POST)": last("test"),
                     "verdict event (from POST)": verdict,
                     "result stored, the user's verdict (from POST)": t_done,
                     "verdict event to result stored (no teardown in it)":
                         t_done - verdict if t_done is not None and verdict is not None else None})
    torn = torn_down(svc, sids)
    for r, sid in zip(rows, sids):
        r["boxes torn down after the result (runner log)"] = torn.get(sid)
    out = []
    for k in rows[0]:
        v = [r[k] for r in rows if r[k] is not None]
        out.append((k, statistics.median(v) if v else None))
    return out


class Watch:
    """Polls every job it is given until done; keeps (kind, seconds POST to seen done)."""

    def __init__(self, svc):
        self.svc, self.pending, self.done, self.mu = svc, [], [], threading.Lock()
        self.detail = {}  # sid: (kind, the stored submission once done)
        self.stop = False
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def add(self, user, kind, sid, t0):
        with self.mu:
            self.pending.append((user, kind, sid, t0))

    def loop(self):
        while not self.stop:
            with self.mu:
                todo = list(self.pending)
            for job in todo:
                user, kind, sid, t0 = job
                st, d = http("GET", self.svc.base + "/api/v1/submissions/%d" % sid, self.svc.tok[user], timeout=30)
                if st == 200 and d.get("status") == "done":
                    with self.mu:
                        self.pending.remove(job)
                        self.done.append((kind, time.time() - t0, d.get("verdict")))
                        self.detail[sid] = (kind, d)
            time.sleep(0.05)

    def wait_all(self, timeout):
        end = time.time() + timeout
        while time.time() < end:
            with self.mu:
                if not self.pending:
                    return True
            time.sleep(0.1)
        return False

    def close(self):
        self.stop = True
        self.t.join(30)


def burst(svc, src, n):
    """Jobs per minute for n test jobs submitted at once."""
    w = Watch(svc)
    t0 = time.time()
    for _ in range(n):
        w.add("light", "test", post(svc, "light", src, "test"), t0)
    ok = w.wait_all(600)
    el = time.time() - t0
    w.close()
    return n / el * 60 if ok else None


def pct(v, p):
    if not v:
        return None
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def flood(svc, src):
    w = Watch(svc)
    t0 = time.time()
    plan = []  # (time offset, user, kind)
    t = 0.0
    while t < FLOOD_S:
        plan.append((t, "heavy", "test"))
        t += 2.0
    plan += [(t, "heavy", "bomb") for t in range(1, int(FLOOD_S), 10)]
    plan += [(t + 0.5, "third", "leaderboard") for t in range(0, int(FLOOD_S), 15)]
    plan += [(t + 3.3, "light", "test") for t in range(0, int(FLOOD_S), 5)]
    plan.sort()
    for off, user, kind in plan:
        d = t0 + off - time.time()
        if d > 0:
            time.sleep(d)
        ts = time.time()
        w.add(user, kind if user != "light" else "light", post(svc, user, src, kind), ts)
    drained = w.wait_all(DRAIN_S)
    with w.mu:
        done, left = list(w.done), [(u, k, time.time() - t) for u, k, _, t in w.pending]
    w.close()
    # A light job still queued at the end counts with its age then (a lower bound).
    cut = [a for _, k, a in left if k == "light"]
    light = [s for k, s, _ in done if k == "light"] + cut
    lb = [s for k, s, _ in done if k == "leaderboard"]
    nlight = sum(1 for _, u, _ in plan if u == "light")
    verdicts = {}
    for k, _, v in done:
        verdicts.setdefault(k, {}).setdefault(v, 0)
        verdicts[k][v] += 1
    return {"verdicts": verdicts,
            "light_p50": pct(light, 50), "light_p99": pct(light, 99), "light_n": len(light) - len(cut),
            "light_sent": nlight, "light_cut": len(cut),
            "lb_p50": pct(lb, 50), "lb_max": max(lb) if lb else None, "lb_n": len(lb),
            "unfinished": len(left), "drained": drained}


def slow_ahead(svc, src):
    """Part 5: light test jobs behind a compile that runs into its limit."""
    w = Watch(svc)
    t0 = time.time()
    slow = post(svc, "heavy", dict(src, slow=SLOW), "slow")
    w.add("heavy", "slow", slow, t0)
    # Once it is claimed (its compile started), the light jobs come.
    end = time.time() + 30
    while time.time() < end:
        st, d = http("GET", svc.base + "/api/v1/submissions/%d" % slow, svc.tok["heavy"])
        if st == 200 and d.get("status") != "queued":
            break
        time.sleep(0.05)
    for i in range(SLOW_N):
        w.add("light", "light", post(svc, "light", src, "test"), time.time())
        time.sleep(1.0)
    w.wait_all(90)
    with w.mu:
        done = list(w.done)
    w.close()
    light = [s for k, s, _ in done if k == "light"]
    slow_done = [(s, v) for k, s, v in done if k == "slow"]
    return {"light_p50": pct(light, 50), "light_max": max(light) if light else None,
            "light_n": len(light), "slow": slow_done[0] if slow_done else None}


def score_of(d):
    """A leaderboard job's score (ns), None without one."""
    v = d.get("score_ns")
    if v is None and isinstance(d.get("result"), dict):
        v = d["result"].get("score_ns")
    return v


def quiet_scores(svc, src):
    """Part 6's quiet run: TOOL_QUIET_N leaderboard jobs one after the other."""
    out = []
    for _ in range(TOOL_QUIET_N):
        w = Watch(svc)
        sid = post(svc, "third", src, "leaderboard")
        w.add("third", "leaderboard", sid, time.time())
        w.wait_all(300)
        with w.mu:
            d = w.detail.get(sid, (None, {}))[1]
        w.close()
        if score_of(d) is not None:
            out.append(score_of(d))
    return out


def tool_flood(svc, src):
    """Part 6: the tool flood (see the top)."""
    w = Watch(svc)
    t0 = time.time()
    end = t0 + TOOL_FLOOD_S
    sent = []  # (user, kind, sid)
    mu = threading.Lock()

    def send(user, kind):
        sid = post(svc, user, src, kind)
        w.add(user, kind if user != "light" else "light", sid, time.time())
        with mu:
            sent.append((user, kind, sid))
        return sid

    def keeper(user):
        mine = {"print": [], "profile": []}
        while time.time() < end:
            with w.mu:
                pending = {sid for _, _, sid, _ in w.pending}
            for kind in mine:
                mine[kind] = [s for s in mine[kind] if s in pending]
                while len(mine[kind]) < 2 and time.time() < end:
                    mine[kind].append(send(user, kind))
            time.sleep(0.3)

    keepers = [threading.Thread(target=keeper, args=(u,), daemon=True) for u in ("toola", "toolb")]
    for k in keepers:
        k.start()
    plan = [(t, "light", "test") for t in frange(1.0, TOOL_FLOOD_S, TOOL_LIGHT_EVERY)]
    plan += [(t, "third", "leaderboard") for t in frange(2.0, TOOL_FLOOD_S, TOOL_LB_EVERY)]
    plan.sort()
    for off, user, kind in plan:
        d = t0 + off - time.time()
        if d > 0:
            time.sleep(d)
        send(user, kind)
    for k in keepers:
        k.join(60)
    drained = w.wait_all(TOOL_DRAIN_S)
    with w.mu:
        done, left = list(w.done), [(u, k, time.time() - t) for u, k, _, t in w.pending]
        detail = dict(w.detail)
    w.close()
    cut = [a for _, k, a in left if k == "light"]
    light = [s for k, s, _ in done if k == "light"] + cut
    scores = [score_of(d) for k, d in detail.values() if k == "leaderboard" and score_of(d) is not None]
    twice = sum(1 for _, d in detail.values() if (d.get("attempts") or 0) > 1)
    verdicts = {}
    for k, _, v in done:
        verdicts.setdefault(k, {}).setdefault(v, 0)
        verdicts[k][v] += 1
    return {"light_p50": pct(light, 50), "light_p99": pct(light, 99), "light_n": len(light) - len(cut),
            "light_sent": sum(1 for u, _, _ in sent if u == "light"), "light_cut": len(cut),
            "scores": scores, "lb_sent": sum(1 for _, k, _ in sent if k == "leaderboard"),
            "tools_sent": sum(1 for u, _, _ in sent if u.startswith("tool")),
            "lost": len(left), "twice": twice, "drained": drained, "verdicts": verdicts}


def frange(a, b, step):
    out = []
    while a < b:
        out.append(a)
        a += step
    return out


def resolution_pct():
    with open(os.path.join(LB, "leaderboard.json")) as f:
        return (json.load(f).get("resolution_pct") or {}).get("H200")


def tools_part(args, src, rows):
    """Part 6 (--tools): quiet run, the flood, and with --today the flood under the rule before."""
    env = {"KJUDGE_TOOL_LIMIT_S": "%g" % TOOL_LIMIT_S}
    quiet = []
    if not args.fake:
        with Service("fair", 1, args.fake, runner_env=env) as svc:
            quiet = quiet_scores(svc, src)
    q = statistics.median(quiet) if quiet else None
    res = resolution_pct()
    rows.append(("tool flood: quiet run", "leaderboard score median (n=%d)" % len(quiet),
                 "%.1f ns" % q if q else "not measured: --fake (no scores)"))
    share = os.environ.get("KJ_BENCH_SHARE")  # e.g. profile=side: the runner's --share for this run
    runs = [("this tree (fair, --share %s)" % (share or "default"), "fair", ["--share", share] if share else [])]
    if args.today:
        runs.append(("the rule before (fair-prev, no sharing)", TODAY["rule"], TODAY["runner"]))
    for name, rule, extra in runs:
        with Service(rule, 1, args.fake, extra, runner_env=env) as svc:
            f = tool_flood(svc, src)
        what = "tool flood %.0f s, tool limit %g s, %s (1 GPU)" % (TOOL_FLOOD_S, TOOL_LIMIT_S, name)
        rows.append((what, "light test p50 / p99 (%d of %d done%s)" % (
            f["light_n"], f["light_sent"], "; the rest counted at their age: a lower bound" if f["light_cut"] else ""),
            "%s / %s" % (fmt(f["light_p50"], " s"), fmt(f["light_p99"], " s"))))
        drift = max(abs(s - q) / q * 100 for s in f["scores"]) if q and f["scores"] else None
        rows.append((what, "leaderboard scores: largest drift from the quiet median (n=%d of %d; resolution %s%%)" % (
            len(f["scores"]), f["lb_sent"], res), "-" if drift is None else "%.2f%%%s" % (
                drift, "" if res is None else (" (within)" if drift <= res else " (OUTSIDE)"))))
        rows.append((what, "jobs lost (not done %.0f s after) / charged twice (attempts > 1)" % TOOL_DRAIN_S,
                     "%d / %d" % (f["lost"], f["twice"])))
        rows.append((what, "verdicts of the jobs done, per kind (%d tool jobs sent)" % f["tools_sent"], "; ".join(
            "%s: %s" % (k, ", ".join("%d %s" % (n, v) for v, n in sorted(vs.items(), key=str)))
            for k, vs in sorted(f["verdicts"].items()))))


def gpu_count():
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
        return sum(1 for l in out.splitlines() if l.startswith("GPU "))
    except (OSError, subprocess.TimeoutExpired):
        return 0


def fmt(x, unit=""):
    return "-" if x is None else ("%.3f%s" % (x, unit) if x < 10 else "%.1f%s" % (x, unit))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fake", action="store_true", help="fake runners (no GPU): the server and protocol only")
    ap.add_argument("--smoke", action="store_true", help="--fake at the smallest sizes, for make test")
    ap.add_argument("--tools", action="store_true", help="only the tool flood (part 6)")
    ap.add_argument("--today", action="store_true", help="--tools: also the flood under the rule before")
    args = ap.parse_args()
    if args.smoke:
        global N, BURST, FLOOD_S, DRAIN_S, FAKE_S, FAKE_TEARDOWN_S
        args.fake = True
        N, BURST, FLOOD_S, DRAIN_S = 1, 3, 2.0, 20.0
        FAKE_S, FAKE_TEARDOWN_S = {"test": 0.05, "bomb": 0.3, "leaderboard": 0.3, "print": 0.3,
                                   "profile": 0.2}, 0.02
    exe = FAKE_RUNNER if args.fake else RUNNER
    if not os.access(exe, os.X_OK):
        sys.exit("%s is not built" % exe)
    ngpu = 2 if args.fake else gpu_count()
    if ngpu < 1:
        sys.exit("no GPU (nvidia-smi -L lists none); --fake runs without one")
    src = sources(args.fake)
    print("\n%s\n| part | measure | value |\n|---|---|---|" % (
        "bench/bench_queue (fake runners: server and protocol only, no GPU)" if args.fake else "bench/bench_queue"), flush=True)

    class Rows:  # each row printed as it is measured: a run cut short keeps what it had
        def append(self, r):
            print("| %s | %s | %s |" % r, flush=True)
    rows = Rows()
    if args.tools:
        tools_part(args, src, rows)
        return
    with Service("fair", 1, args.fake) as svc:
        for step, v in latency_split(svc, src):
            rows.append(("warm test latency, idle (1 GPU, n=%d, median)" % N, step, fmt(v, " s")))
        one = burst(svc, src, BURST)
        rows.append(("throughput (1 GPU, %d test jobs at once)" % BURST, "test jobs/min/GPU", fmt(one)))
    for rule, gaps in (("fair", True), ("fair", False), ("fifo", False)):
        with Service(rule, 1, args.fake, [] if gaps else ["--gap-seconds", "0"]) as svc:
            f = flood(svc, src)
        what = "flood %.0f s, --queue-rule %s, %s (1 GPU)" % (FLOOD_S, rule, "test jobs in gaps" if gaps else
                                                               "no gap jobs")
        rows.append((what, "light test p50 / p99 (%d of %d done%s)" % (
            f["light_n"], f["light_sent"], "; the rest counted at their age: a lower bound" if f["light_cut"] else ""),
            "%s / %s" % (fmt(f["light_p50"], " s"), fmt(f["light_p99"], " s"))))
        rows.append((what, "leaderboard p50 / max (n=%d)" % f["lb_n"],
                     "%s / %s" % (fmt(f["lb_p50"], " s"), fmt(f["lb_max"], " s"))))
        rows.append((what, "jobs unfinished %.0f s after the flood" % DRAIN_S, str(f["unfinished"])))
        rows.append((what, "verdicts of the jobs done, per kind", "; ".join(
            "%s: %s" % (k, ", ".join("%d %s" % (n, v) for v, n in sorted(vs.items(), key=str)))
            for k, vs in sorted(f["verdicts"].items()))))
    if ngpu >= 2:
        with Service("fair", 2, args.fake) as svc:
            two = burst(svc, src, BURST * 2)
        rows.append(("scaling", "2 GPUs / 1 GPU (jobs per minute, all GPUs)",
                     "%.2fx" % (two / one) if one and two else "-"))
    else:
        rows.append(("scaling", "2 GPUs / 1 GPU", "not measured: one GPU"))
    if args.fake:
        rows.append(("slow compile", "light jobs behind it", "not measured: --fake (its judge compiles nothing)"))
        return
    for ahead in (2, 0):
        with Service("fair", 1, args.fake, ["--ahead", str(ahead)]) as svc:
            f = slow_ahead(svc, src)
        what = "slow compile (60 s limit), then %d light test jobs, --ahead %d" % (SLOW_N, ahead)
        rows.append((what, "light test p50 / max (%d of %d done)" % (f["light_n"], SLOW_N),
                     "%s / %s" % (fmt(f["light_p50"], " s"), fmt(f["light_max"], " s"))))
        rows.append((what, "the slow job: verdict, seconds POST to done",
                     "%s, %s" % (f["slow"][1], fmt(f["slow"][0], " s")) if f["slow"] else "not done"))


if __name__ == "__main__":
    main()
