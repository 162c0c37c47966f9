#!/usr/bin/env python3
"""web_round.py - a small real round for the web site, on a GPU host.

Starts bin/kjudge-server and one bin/kjudge-runner on GPU 0 (its type from
nvidia-smi), makes two invites and registers alice and bob with them as a
newcomer would (POST /api/v1/register), then submits to fp8_quant: alice the
template (leaderboard mode), examples/wrong.cu and examples/broken.cu (test
mode) and examples/fast.cu (leaderboard mode) while following that one's
event stream live; bob examples/fast.cu (benchmark mode) and the template
(leaderboard mode). It prints every verdict, the live events with their
arrival times and the rankings, and leaves a backup of the database in
OUT (default $OUT or var/web-round), for tests/web_walk.py to serve and walk
through in Chromium on a machine without a GPU:

    python3 tests/gpu/web_round.py            # on the GPU host
    python3 tests/web_walk.py --db web-round.db --out screens/round   # anywhere

Needs bin/ built (make all). Python 3 standard library only.
"""
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from kjhttp import http, submit  # noqa: E402
from kjservice import Service  # noqa: E402

BOARD = os.path.join(ROOT, "leaderboards", "fp8_quant")


def gpu_type():
    name = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", "0"],
                          capture_output=True, text=True).stdout.strip()
    name = name[len("NVIDIA "):] if name.startswith("NVIDIA ") else name
    return name.split()[0] if name else "H200"


def follow(base, token, sid):
    """Print the submission's events as they arrive (Server-Sent Events)."""
    req = urllib.request.Request(base + "/api/v1/submissions/%d/events?stream=1" % sid,
                                 headers={"Authorization": "Bearer " + token})
    t0 = time.time()
    with urllib.request.urlopen(req, timeout=900) as r:
        event = None
        for raw in r:
            line = raw.decode().rstrip("\n")
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:") and event:
                print("  %6.2f s  %-10s %s" % (time.time() - t0, event, line[5:].strip()[:140]), flush=True)


def main():
    out = os.environ.get("OUT") or os.path.join(ROOT, "var", "web-round")
    os.makedirs(out, exist_ok=True)
    gpu = gpu_type()
    # The rate limits a real round has; one runner on GPU 0 for its type.
    with Service(runner="real", gpu=gpu, runner_name="round-gpu0", rate_flags=[], prefix="kjudge-round-") as svc:
        try:
            play(svc, gpu, out)
        finally:
            for log in ("server.log", "round-gpu0.log"):
                if os.path.exists(os.path.join(svc.tmp, log)):
                    shutil.copy(os.path.join(svc.tmp, log), os.path.join(out, log))


def play(svc, gpu, out):
    base, admin = svc.base, svc.server.printed().strip()
    users = {}
    for name in ("alice", "bob"):
        st, inv = http("POST", base + "/api/v1/invites", admin, b"{}", "application/json")
        st2, reg = http("POST", base + "/api/v1/register", None,
                        json.dumps({"name": name, "invite": inv["code"]}).encode(), "application/json")
        print("register %s with an invite: %d %d" % (name, st, st2), flush=True)
        users[name] = reg["token"]
    plan = [("alice", "template.cu", "leaderboard"), ("alice", "examples/wrong.cu", "test"),
            ("alice", "examples/broken.cu", "test"), ("bob", "examples/fast.cu", "benchmark"),
            ("bob", "template.cu", "leaderboard"), ("alice", "examples/fast.cu", "leaderboard")]
    for user, path, mode in plan:
        st, d = submit(base, users[user], os.path.join(BOARD, path), mode, gpu=gpu)
        if st != 202:
            print("submit %s %s: %d %s" % (user, path, st, d), flush=True)
            continue
        print("#%d %s %s (%s):" % (d["id"], user, path, mode), flush=True)
        if path == "examples/fast.cu" and mode == "leaderboard":
            follow(base, users[user], d["id"])
        st, s = http("GET", base + "/api/v1/submissions/%d?wait=1&timeout=600" % d["id"], users[user])
        print("  verdict %s, score %s" % (s.get("verdict"), s.get("score_ns")), flush=True)
    st, r = http("GET", base + "/api/v1/leaderboards/fp8_quant/rankings?gpu=" + gpu)
    for row in r.get("rankings", []):
        print("rank %d %s %.3f us (#%d)" % (row["rank"], row["user"], row["score_ns"] / 1000,
                                            row["submission_id"]), flush=True)
    dest = os.path.join(out, "web-round.db")
    if os.path.exists(dest):
        os.remove(dest)
    rc, _, err = svc.server.cli("backup", dest, "--db", svc.server.db, timeout=120)
    if rc != 0:
        raise RuntimeError("backup failed: " + err[-500:])
    print("database: %s" % dest, flush=True)


if __name__ == "__main__":
    main()
