#!/usr/bin/env python3
"""bench/bench_e2e_latency: wall time from POST to verdict through the real server
and a real runner on this machine's GPU, warm (one submission judged first),
for test mode (template.cu) and leaderboard mode (examples/fast.cu).
Prints a table: mode, file, n, median, min, max seconds. Goals: test < 1 s,
leaderboard < 10 s. KJ_BENCH_N sets n, KJ_BENCH_MODES=test (or leaderboard)
measures one mode only. --smoke (make test, tests/api/test_benches.py): the
fake-GPU runner (build/kjudge-runner-fakegpu, 0.05 s a job, every verdict
compile_error) instead of the GPU, n=2: the server, the protocol and the
table, no GPU timing."""
import argparse, os, sys, time
from bench_common import LB, Service, http, submit

N = int(os.environ.get("KJ_BENCH_N", "10"))
MODES = os.environ.get("KJ_BENCH_MODES", "test,leaderboard").split(",")  # a subset, for a quick look


def measure(svc, path, mode, n, want="accepted"):
    times = []
    for _ in range(n):
        t0 = time.time()
        st, sub = submit(svc.base, svc.user, path, mode)
        if st != 202:
            sys.exit("POST /submissions: HTTP %s %s" % (st, sub))
        st, res = http("GET", svc.base + "/api/v1/submissions/%d?wait=1&timeout=600" % sub["id"], svc.user)
        times.append(time.time() - t0)
        if res.get("verdict") != want:
            sys.exit("unexpected verdict %s: %s" % (res.get("verdict"), res.get("result", {}).get("message")))
    return sorted(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true", help="the fake-GPU runner, n=2: no GPU timing (make test)")
    args = ap.parse_args()
    n = 2 if args.smoke else N
    want = "compile_error" if args.smoke else "accepted"  # what the fake judge answers
    rows = []
    with Service(fake=args.smoke) as svc:
        measure(svc, os.path.join(LB, "template.cu"), "test", 1, want)  # warm-up
        for mode, name in (("test", "template.cu"), ("leaderboard", "examples/fast.cu")):
            if mode not in MODES:
                continue
            t = measure(svc, os.path.join(LB, name), mode, n, want)
            rows.append((mode, name, len(t), t[len(t) // 2], t[0], t[-1]))
    if args.smoke:
        print("smoke run: the fake-GPU runner; these times are the server's and the protocol's, no GPU's")
    print("| mode | file | n | median s | min s | max s |\n|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %s | %d | %.3f | %.3f | %.3f |" % r)


if __name__ == "__main__":
    main()
