#!/usr/bin/env python3
"""profile_round.py - profile and sanitize modes on a GPU host, through a real
server and a real runner (`make gpu-test` runs it after test_gpu.py when
KJ_GPU_PROFILE=1; it needs ncu and compute-sanitizer, else it says skipped):

1. fp8_quant's examples/fast.cu in benchmark mode, then in profile mode: the
   profile has every benchmark shape, and each shape's DRAM throughput from
   Nsight Compute is within 10% of what the timing implies (the board's
   bytes over the benchmark median); the report downloads as an artifact
   (its owner only) and `ncu --import` reads it;
2. sanitize mode: fast.cu and the template are clean under memcheck;
   tests/gpu/tool/race.cu gets a racecheck finding at its marked line;
   tests/gpu/tool/oob_read.cu gets a memcheck finding at its marked line;
   tests/gpu/tool/null_malloc.cu (a store through NULL) is a runtime_error
   in seconds under each of the four tools;
3. a hang (tests/gpu/cases/infinite_loop.cu) in profile mode ends at the
   time limit (KJUDGE_TOOL_LIMIT_S of the runner);
3b. sharing (docs/operator-tools.md): while a sanitize job of a kernel
   that prints until the tool's limit (bench/tool_flood_print.cu) runs,
   another user's test job (the template) is judged beside it (accepted,
   in under 10 s, while the sanitize job still runs) and the same user's
   second sanitize job stays queued (one tool job per user);
4. every test-mode exploit of tests/exploits gets its expected verdict in
   profile and sanitize modes (kjudge-runner eval).
Wall times of each mode for fast.cu are printed and written with everything
else to $KJ_PROFILE_OUT (default /tmp/profile_round.json).
Prints "profile_round: N passed, N failed, N skipped"."""
import json, os, shutil, subprocess, sys, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from kjhttp import http, submit  # noqa: E402
from kjservice import NO_RATE_LIMITS, Service  # noqa: E402
import kjcorpus as corpus  # noqa: E402

SERVER, RUNNER = os.path.join(ROOT, "bin", "kjudge-server"), os.path.join(ROOT, "bin", "kjudge-runner")
LB = os.path.join(ROOT, "leaderboards", "fp8_quant")
FAST = os.path.join(LB, "examples", "fast.cu")
counts = {"passed": 0, "failed": 0, "skipped": 0}
report = {}


def check(ok, what, detail=""):
    counts["passed" if ok else "failed"] += 1
    print("  %s %s%s" % ("ok  " if ok else "FAIL", what, "" if ok or not detail else "\n       " + detail[:2000]))


def marked_line(path, mark):
    for i, line in enumerate(open(path), 1):
        if "// " + mark in line:
            return i
    raise ValueError("%s has no '// %s' line" % (path, mark))


def judged(base, token, path, mode, **fields):
    t0 = time.time()
    st, sub = submit(base, token, path, mode, **fields)
    if st != 202:
        return None, 0.0, sub
    st, res = http("GET", base + "/api/v1/submissions/%d?wait=1&timeout=900" % sub["id"], token)
    return sub["id"], time.time() - t0, res


def download(url, token):
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def findings(res):
    out = []
    for g in ((res or {}).get("result") or res or {}).get("sanitize", {}).get("groups", []):
        out += g.get("findings", [])
    return out


def result_of(res):
    return (res or {}).get("result") or res or {}


def board_bytes(shape):
    T, H, GS = shape["T"], shape["H"], shape["GS"]
    return T * H * 4 + T * H * 4 + T * (H // GS) * 4


def round_server(ncu):
    # Service: the runner's environment without the caller's proxies (a
    # proxy setting would send its loopback requests away) and tokens.
    with Service(runner="real", runner_name="gpu0", rate_flags=NO_RATE_LIMITS, prefix="kjudge-profile-",
                 runner_env={"KJUDGE_TOOL_LIMIT_S": "40"}) as svc:
        round_jobs(svc, ncu)
        if counts["failed"]:
            svc.print_logs()


def round_jobs(svc, ncu):
    base, tmp = svc.base, svc.tmp
    alice, bob = svc.user("alice"), svc.user("bob")
    spec = json.load(open(os.path.join(LB, "leaderboard.json")))
    walls = {}
    # 1. benchmark, then profile
    _, walls["benchmark"], bres = judged(base, alice, FAST, "benchmark")
    bres = result_of(bres)
    check(bres.get("verdict") == "accepted", "fast.cu benchmark mode accepted", json.dumps(bres)[:1500])
    sid, walls["profile"], pres = judged(base, alice, FAST, "profile")
    pres_all = pres
    pres = result_of(pres)
    report["profile_result"] = pres
    prof = pres.get("profile") or {}
    check(pres.get("verdict") == "accepted" and len(prof.get("shapes", [])) == len(spec["benchmarks"]),
          "fast.cu profile mode: every benchmark shape profiled", json.dumps(pres)[:3000])
    check(pres_all.get("score_ns") is None, "a profile result has no score")
    for sh in prof.get("shapes", []):
        i = sh["benchmark"]
        med = bres["benchmarks"][i].get("median_ns") if i < len(bres.get("benchmarks", [])) else None
        l = (sh.get("launches") or [{}])[0]
        ncu_gbs = l.get("achieved_gbs")
        if not med or not ncu_gbs:
            check(False, "shape %d: a median and a DRAM rate" % i, json.dumps(sh)[:800])
            continue
        timed_gbs = board_bytes(spec["benchmarks"][i]) / med
        ratio = ncu_gbs / timed_gbs
        report.setdefault("bandwidth", []).append({"shape": sh.get("shape"), "median_ns": med,
                                                   "timed_gbs": timed_gbs, "ncu_gbs": ncu_gbs,
                                                   "ncu_duration_ns": l.get("duration_ns"), "ratio": ratio})
        print("     %s: timed %.0f ns -> %.0f GB/s; ncu %.0f ns, DRAM %.0f GB/s (ratio %.3f)" %
              (sh.get("shape"), med, timed_gbs, l.get("duration_ns", 0), ncu_gbs, ratio))
        if i == len(spec["benchmarks"]) - 1:  # the bandwidth-bound shape (256 MB, beyond L2)
            check(abs(ratio - 1) <= 0.10, "%s: ncu's DRAM throughput within 10%% of the timing's" % sh.get("shape"),
                  "ratio %.3f" % ratio)
    url = base + "/api/v1/submissions/%d/artifacts/profile.ncu-rep" % (sid or 0)
    st, body = download(url, alice)
    check(st == 200 and len(body) > 1000, "the owner downloads profile.ncu-rep (%d bytes)" % len(body))
    st2, _ = download(url, bob)
    st3, _ = download(url, None)
    check(st2 == 404 and st3 == 404, "others get 404 (%d, %d)" % (st2, st3))
    if st == 200:
        rep = os.path.join(tmp, "d.ncu-rep")
        open(rep, "wb").write(body)
        p = subprocess.run([ncu, "--import", rep, "--page", "details"], capture_output=True, text=True)
        check(p.returncode == 0 and "quant_fast" in p.stdout, "ncu --import reads the download", p.stderr[-500:])
    # 2. sanitize
    _, walls["sanitize"], sres = judged(base, alice, FAST, "sanitize")
    sres = result_of(sres)
    report["sanitize_fast"] = sres
    check(sres.get("verdict") == "accepted" and (sres.get("sanitize") or {}).get("clean") is True,
          "fast.cu clean under memcheck", json.dumps(sres)[:1500])
    _, _, tres = judged(base, alice, os.path.join(LB, "template.cu"), "sanitize")
    check((result_of(tres).get("sanitize") or {}).get("clean") is True, "the template clean under memcheck",
          json.dumps(result_of(tres))[:1500])
    race = os.path.join(HERE, "tool", "race.cu")
    _, _, rres = judged(base, alice, race, "sanitize", tool="racecheck")
    report["sanitize_race"] = result_of(rres)
    want = marked_line(race, "RACE")
    hit = [f for f in findings(rres) if want in (f.get("line"), f.get("line2"))]
    check(hit, "race.cu: a racecheck finding at line %d" % want, json.dumps(result_of(rres))[:1500])
    # compute-sanitizer writes its log as it goes: each finding names the
    # test whose call wrote it (runner/sanitize.h's marks)
    check(hit and all(isinstance(f.get("test"), int) for f in findings(rres)),
          "race.cu: every finding names its test (%s)" % sorted({f.get("test") for f in findings(rres)}, key=str),
          json.dumps(findings(rres))[:1500])
    oob = os.path.join(HERE, "tool", "oob_read.cu")
    t0 = time.time()
    _, _, ores = judged(base, alice, oob, "sanitize")
    report["sanitize_oob"] = result_of(ores)
    want = marked_line(oob, "OOB")
    hit = [f for f in findings(ores) if f.get("line") == want]
    check(hit, "oob_read.cu: a memcheck finding at line %d (%.1f s)" % (want, time.time() - t0),
          json.dumps(result_of(ores))[:1500])
    check(hit and isinstance(hit[0].get("test"), int),
          "oob_read.cu: the finding names its test (%s)" % (hit[0].get("test") if hit else None),
          json.dumps(hit)[:800])
    ov = result_of(ores)
    check(ov.get("verdict") == "runtime_error" and ("submission.cu:%d" % want) in ov.get("message", ""),
          "oob_read.cu: a runtime error naming the access memcheck stopped the kernel at",
          "%s: %s" % (ov.get("verdict"), ov.get("message")))
    # a kernel that faults (a store through a failed device malloc's NULL)
    # is a runtime error in seconds under every tool, as in test mode; the
    # tools other than memcheck once hung after the fault until their limit
    nm = os.path.join(HERE, "tool", "null_malloc.cu")
    for tool in ("memcheck", "racecheck", "initcheck", "synccheck"):
        t0 = time.time()
        _, _, nres = judged(base, alice, nm, "sanitize", tool=tool)
        took = time.time() - t0
        nv = result_of(nres)
        report["sanitize_null_" + tool] = nv
        check(nv.get("verdict") == "runtime_error" and took < 30,
              "null_malloc.cu under %s: runtime_error in %.1f s (under 30 s)" % (tool, took),
              "%s: %s" % (nv.get("verdict"), nv.get("message")))
    # 3. a hang under the profiler
    t0 = time.time()
    _, _, hres = judged(base, alice, os.path.join(ROOT, "tests", "gpu", "cases", "infinite_loop.cu"), "profile")
    took = time.time() - t0
    check(result_of(hres).get("verdict") == "time_limit" and took < 40 + 30,
          "a hang in profile mode ends at the time limit (%.1f s, limit 40 s)" % took, json.dumps(result_of(hres))[:800])
    # 3b. a test job beside a sanitize job that prints until its limit
    printer = os.path.join(ROOT, "bench", "tool_flood_print.cu")
    st, ps = submit(base, alice, printer, "sanitize")
    st2, ps2 = submit(base, alice, printer, "sanitize")
    end = time.time() + 60
    while st == 202 and time.time() < end:
        _, v = http("GET", base + "/api/v1/submissions/%d" % ps["id"], alice)
        if v.get("status") == "running":
            break
        time.sleep(0.2)
    time.sleep(3)  # into its printing
    sid, took, tres = judged(base, bob, os.path.join(LB, "template.cu"), "test")
    _, v1 = http("GET", base + "/api/v1/submissions/%d" % ps["id"], alice)
    _, v2 = http("GET", base + "/api/v1/submissions/%d" % ps2["id"], alice) if st2 == 202 else (0, {})
    check(result_of(tres).get("verdict") == "accepted" and took < 10 and v1.get("status") == "running",
          "a test job is judged beside a printing sanitize job (%.1f s; the sanitize job %s)" % (
              took, v1.get("status")), json.dumps(result_of(tres))[:800])
    check(v2.get("status") == "queued", "the same user's second sanitize job waits (%s)" % v2.get("status"))
    report["beside_sanitize_s"] = took
    report["walls_s"] = walls
    print("     wall time for fast.cu: " + ", ".join("%s %.1f s" % kv for kv in walls.items()))


def eval_result(path, mode, extra):
    p = subprocess.run([RUNNER, "eval", path, "--leaderboard", "fp8_quant", "--mode", mode, "--json",
                        "--time-limit", "30"] + extra, capture_output=True, text=True, cwd=ROOT, timeout=120)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {"verdict": "(no result: %s)" % p.stderr[-300:]}


def exploit_ok(e, mode, res):
    """Profile mode: the test-mode verdict. Sanitize mode: that too, or a
    runtime error when memcheck stopped the submission's kernel at an invalid
    access of its own (the result lists it): memcheck catches more than the
    test does, never less."""
    v = res.get("verdict")
    if v == e.expect:
        return True
    san = res.get("sanitize") or {}
    return (mode == "sanitize" and v == "runtime_error" and e.expect == "wrong_answer" and
            san.get("errors", 0) > 0 and "memcheck stopped the kernel" in res.get("message", ""))


def round_exploits():
    from concurrent.futures import ThreadPoolExecutor
    jobs = [(e, m) for e in corpus.load() if e.mode == "test" for m in ("profile", "sanitize")]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda em: eval_result(em[0].path, em[1], []), jobs))
    report["exploits"] = []
    for (e, m), res in zip(jobs, got):
        v = res.get("verdict")
        report["exploits"].append({"name": e.name, "mode": m, "expect": e.expect, "got": v,
                                   "message": res.get("message", "")[:300]})
        check(exploit_ok(e, m, res), "exploit %s in %s mode: %s (got %s)" % (e.name, m, e.expect, v),
              res.get("message", "")[:500])


def main():
    ncu, san = shutil.which("ncu"), shutil.which("compute-sanitizer")
    if ncu is None or san is None:
        counts["skipped"] += 1
        print("  skip: ncu and compute-sanitizer are needed")
    else:
        try:
            round_server(ncu)
        except Exception as e:  # a crash of the round is a failure, with its reason
            check(False, "the server round ran", repr(e))
        try:
            round_exploits()
        except Exception as e:
            check(False, "the exploit round ran", repr(e))
    out = os.environ.get("KJ_PROFILE_OUT", "/tmp/profile_round.json")
    json.dump(report, open(out, "w"), indent=1)
    print("profile_round: %d passed, %d failed, %d skipped" % (counts["passed"], counts["failed"], counts["skipped"]))
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
