#!/usr/bin/env python3
"""test_ties.py - the published resolution and tied ranks (docs/timing.md).

Starts bin/kjudge-server on the repository's boards. fp8_quant publishes a
resolution_pct for H200 in its leaderboard.json and none for B200; the test
reads the value from the file. Fake runner results with chosen scores go in
through the runner API, then GET .../rankings must: carry resolution_pct
(a number on H200, null on B200); give entries whose score is less than
the resolution above the best score of their group the same rank, marked
tied, listed by time of submission (a later, faster one after an earlier,
slower one); keep ranks apart at exactly the resolution; on B200 tie only
equal scores; and say the same rank on each submission's page. Also the
board's page lists resolution_pct per GPU type, and a v2 result's shapes
in the rankings carry the corrected median with the raw one beside it
(an uncorrected one's shapes have no raw median), and anyone sees the
ranked v2 submission and its page with its corrected medians;
`kjudge rankings` marks tied ranks with "=" and names the resolution.
A second server on a copy of the board that ranks GPU time ("score":
"gpu_time", its own gpu_time_resolution_pct): its rankings say they hold
GPU time and tie by that resolution.
Python 3 standard library only; ends with "test_ties: N passed, N failed,
N skipped" and exits 1 on failure.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check  # noqa: E402
from kjhttp import Client  # noqa: E402
from kjservice import BIN, ROOT  # noqa: E402
from kjtest import BOARD, claim_resp as claim, geomean, result_body  # noqa: E402
import kjtest  # noqa: E402

RES = BOARD.get("resolution_pct", {}).get("H200")


def finish(srv, c, user, runner, score, gpu="H200", body=None):
    """Submit in leaderboard mode and post an accepted result whose three medians equal score."""
    sid = kjtest.submit(c, user, gpu=gpu, mode="leaderboard")
    st, _, job, _ = claim(c, runner, gpu)
    if not check(sid is not None and st == 200 and job["job"]["id"] == sid, "submit and claim", (sid, st)):
        return None
    if body is None:  # measured with the same timing as v2_body's (a ranking never mixes two)
        body = result_body("accepted", score, "leaderboard", gpu="NVIDIA %s" % gpu)
        body["timing"] = {"protocol": "v2", "corrected": False, "wall_s": 2.0}
    st, _, data, _ = c.post_json("/api/v1/runner/jobs/%d/result?attempt=%d" % (sid, job["job"]["attempt"]),
                                 body, runner)
    check(st == 200, "result for score %s" % score, (st, data))
    return sid


def v2_body(medians, offset):
    """An accepted protocol-v2 result: raw medians, corrected = raw - offset, the timing object."""
    r = result_body("accepted", None, "leaderboard", medians)
    gpu = 2897.0
    for b in r["benchmarks"]:
        b["corrected_median_ns"] = b["median_ns"] - offset
        b["sets"] = 8
        b["visits"] = 4
    r["timing"] = {"protocol": "v2", "rounds": 4, "lanes": 4, "empty_every": 8, "empty_kernel_samples": 600,
                   "empty_kernel_run_ns": gpu + offset, "empty_kernel_gpu_ns": gpu,
                   "empty_kernel_gpu_source": "test", "corrected": True, "offset_ns": offset,
                   "raw_score_ns": geomean(medians), "wall_s": 2.0}
    r["score_ns"] = geomean([m - offset for m in medians])
    return r


def cli(srv, token, *args):
    """bin/kjudge against the test server as the user of token; its stdout."""
    env = dict(os.environ, KJUDGE_URL="http://127.0.0.1:%d" % srv.port, KJUDGE_TOKEN=token,
               HOME=srv.tmp, XDG_CONFIG_HOME=os.path.join(srv.tmp, "cfg"))
    p = subprocess.run([os.path.join(ROOT, "bin", "kjudge")] + list(args), capture_output=True, text=True,
                       env=env, timeout=60)
    check(p.returncode == 0, "kjudge %s" % " ".join(args), p.stderr)
    return p.stdout


def rankings(c, gpu):
    st, _, data, _ = c.get("/api/v1/leaderboards/fp8_quant/rankings?gpu=%s" % gpu)
    check(st == 200 and isinstance(data, dict), "rankings on %s -> 200" % gpu, (st, data))
    return data if isinstance(data, dict) else {}


def run(srv, c, users, runner):
    if not check(isinstance(RES, (int, float)) and 0 < RES < 5, "fp8_quant publishes resolution_pct for H200",
                 BOARD.get("resolution_pct")):
        return
    st, _, board, _ = c.get("/api/v1/leaderboards/fp8_quant")
    check(st == 200 and board.get("resolution_pct") == {"H200": RES, "B200": None},
          "the board's page lists resolution_pct per GPU type", board.get("resolution_pct"))
    check(board.get("score") == BOARD.get("score", "gpu_time"),
          "and the measure its leaderboard.json ranks (GPU time when it names none)", board.get("score"))

    a, b, d, e, f, g = users
    base = 100000.0  # every shape above its physical floor (server/result_floor.c)
    within = base * (1 + 0.6 * RES / 100)      # inside the resolution of base
    edge = base * (1 + RES / 100)              # exactly the resolution: not tied
    # Submission order: e (slower, within), a (base), f (edge, later), d (far).
    sid_e = finish(srv, c, e, runner, within)
    sid_a = finish(srv, c, a, runner, base)
    sid_f = finish(srv, c, f, runner, edge * 1.0000001)
    sid_d = finish(srv, c, d, runner, base * 2)
    data = rankings(c, "H200")
    check(data.get("resolution_pct") == RES, "rankings carry resolution_pct", data.get("resolution_pct"))
    rows = [(r["rank"], r["tied"], r["submission_id"]) for r in data.get("rankings", [])]
    want = [(1, True, sid_e), (1, True, sid_a), (3, False, sid_f), (4, False, sid_d)]
    check(rows == want, "scores closer than the resolution share rank 1, the earlier submission first; "
          "one at the resolution is not tied", (rows, want))
    for sid, rank in [(sid_e, 1), (sid_a, 1), (sid_f, 3)]:
        st, _, sub, _ = c.get("/api/v1/submissions/%d/detail" % sid)
        check(st == 200 and isinstance(sub.get("rank"), dict) and sub["rank"].get("rank") == rank and
              sub["rank"].get("of") == 4, "submission %d's page says rank %d of 4" % (sid, rank),
              sub.get("rank"))

    # A group is measured from its best score, not chained: g is within the
    # resolution of f but not of a, so it joins f's group.
    sid_g = finish(srv, c, g, runner, edge * (1 + 0.5 * RES / 100))
    rows = [(r["rank"], r["tied"], r["submission_id"]) for r in rankings(c, "H200").get("rankings", [])]
    check(rows == [(1, True, sid_e), (1, True, sid_a), (3, True, sid_f), (3, True, sid_g), (5, False, sid_d)],
          "groups are led by their best score", rows)

    # The client shows the tie ("1=") and the resolution.
    out = cli(srv, a, "rankings", "fp8_quant", "--gpu", "H200")
    lines = out.splitlines()
    check(len(lines) > 7 and lines[1].split()[:2] == ["rank", "user"] and
          lines[3].split()[:2] == ["1=", "erin"] and lines[4].split()[:2] == ["1=", "alice"] and
          lines[5].split()[:2] == ["3=", "frank"] and lines[7].split()[:2] == ["5", "dave"] and
          ("resolution %g %%: scores closer than that are tied" % RES) in out,
          "kjudge rankings marks ties with = and names the resolution", out)

    # B200: no resolution published, so only equal scores tie.
    sid_b1 = finish(srv, c, a, runner, base, gpu="B200")
    sid_b2 = finish(srv, c, b, runner, base * 1.0001, gpu="B200")
    sid_b3 = finish(srv, c, d, runner, base * 1.0001, gpu="B200")
    data = rankings(c, "B200")
    rows = [(r["rank"], r["tied"], r["submission_id"]) for r in data.get("rankings", [])]
    check("resolution_pct" in data and data["resolution_pct"] is None, "B200: resolution_pct null", data)
    check("resolution not measured on this GPU" in cli(srv, a, "rankings", "fp8_quant", "--gpu", "B200"),
          "kjudge rankings says when there is no resolution")
    check(rows == [(1, False, sid_b1), (2, True, sid_b2), (2, True, sid_b3)],
          "B200: a 0.01 % difference is a difference, equal scores tie", rows)

    # A v2 result: ranked by the corrected score; shapes show the corrected and raw medians.
    sid_v2 = finish(srv, c, b, runner, None, body=v2_body((3000.0, 5000.0, 40000.0), 50.0))
    data = rankings(c, "H200")
    row = [r for r in data.get("rankings", []) if r["submission_id"] == sid_v2]
    ok = check(len(row) == 1 and row[0]["rank"] == 1 and row[0]["tied"] is False,
               "the v2 result ranks first on its corrected score", row)
    if ok:
        check(abs(row[0]["score_ns"] - geomean([2950.0, 4950.0, 39950.0])) < 1e-6 and
              [s["median_ns"] for s in row[0]["shapes"]] == [2950.0, 4950.0, 39950.0] and
              [s["raw_median_ns"] for s in row[0]["shapes"]] == [3000.0, 5000.0, 40000.0],
              "its shapes: corrected medians, raw beside them", row[0])
    others = [r for r in data.get("rankings", []) if r["submission_id"] != sid_v2]
    check(others and all(r["shapes"] and all(set(s) - {"floor_ns"} == {"shape", "median_ns"} for s in r["shapes"])
                         for r in others),
          "an uncorrected result's shapes have no raw_median_ns (a floor_ns where the result has one)", others)
    # Anyone sees the ranked v2 submission as the rankings do: its medians and corrected medians.
    st, _, sub, _ = c.get("/api/v1/submissions/%d" % sid_v2)
    benches = (sub.get("result") or {}).get("benchmarks") if st == 200 else None
    check(isinstance(benches, list) and
          [sorted(b) for b in benches] == [["corrected_median_ns", "index", "median_ns", "shape"]] * 3 and
          [b["corrected_median_ns"] for b in benches] == [2950.0, 4950.0, 39950.0] and
          [b["median_ns"] for b in benches] == [3000.0, 5000.0, 40000.0],
          "the ranked view of a v2 submission: index, shape, median_ns, corrected_median_ns", (st, sub))
    st, _, sub, _ = c.get("/api/v1/submissions/%d/detail" % sid_v2)
    shapes = sub.get("shapes") if st == 200 else None
    check(isinstance(shapes, list) and
          [sorted(s) for s in shapes] == [["corrected_median_ns", "index", "median_ns", "shape"]] * 3 and
          [s["corrected_median_ns"] for s in shapes] == [2950.0, 4950.0, 39950.0] and
          sub.get("rank", {}).get("rank") == 1,
          "the v2 submission's page: corrected medians beside the medians, rank 1", (st, sub))


GPU_RES = 0.25  # the GPU-time resolution of the board copy gpu_time_run serves


def gpu_body(gpu_medians):
    """An accepted result ranked on GPU time: event medians 1.3 x the GPU-time ones, a
    GPU-time timing version (KJ_TIMING_VERSION_IS_GPU: above 100000)."""
    r = result_body("accepted", None, "leaderboard", tuple(1.3 * m for m in gpu_medians))
    for b, m in zip(r["benchmarks"], gpu_medians):
        b["gpu_median_ns"] = m
    r["score_ns"] = geomean(gpu_medians)
    r["timing"] = {"protocol": "v2", "version": 102001, "corrected": False, "wall_s": 2.0, "gpu_time": True,
                   "gpu_time_note": "test", "gpu_score_ns": r["score_ns"], "ranked": "gpu_time"}
    return r


def gpu_time_run(tmp):
    """A copy of fp8_quant that ranks GPU time ("score": "gpu_time") with its own
    gpu_time_resolution_pct on H200: the board's page lists both resolutions,
    its rankings say they hold GPU time and tie by the GPU-time resolution, and
    `kjudge rankings` names the measure."""
    boards = os.path.join(tmp, "boards")
    shutil.copytree(os.path.join(ROOT, "leaderboards", "fp8_quant"), os.path.join(boards, "fp8_quant"))
    path = os.path.join(boards, "fp8_quant", "leaderboard.json")
    with open(path) as f:
        spec = json.load(f)
    spec["score"] = "gpu_time"
    spec["gpu_time_resolution_pct"] = {"H200": GPU_RES}
    with open(path, "w") as f:
        json.dump(spec, f)
    srv = kjtest.Server(os.path.join(tmp, "gpu"), boards=boards)
    os.makedirs(srv.tmp)
    if not check(srv.start(), "a server on a board that ranks GPU time starts"):
        return
    try:
        c = Client(srv.port)
        users = [srv.cli("user", "add", n, "--db", srv.db)[1].strip() for n in ("hana", "ivan", "jo")]
        rc, out, _ = srv.cli("runner", "add", "r0", "--gpu", "H200", "--db", srv.db)
        runner = out.strip()
        st, _, board, _ = c.get("/api/v1/leaderboards/fp8_quant")
        check(st == 200 and board.get("score") == "gpu_time" and
              board.get("gpu_time_resolution_pct") == {"H200": GPU_RES, "B200": None} and
              board.get("resolution_pct") == BOARD.get("resolution_pct", {}) | {"B200": None},
              "the board's page: score gpu_time, both resolutions per GPU type", board)
        data = rankings(c, "H200")
        check(data.get("score") == "gpu_time" and data.get("resolution_pct") == GPU_RES,
              "before any result: the rankings hold the board's measure, GPU time, at its resolution", data)
        base = 20000.0
        sid_h = finish(srv, c, users[0], runner, None, body=gpu_body((base * 1.002,) * 3))  # within 0.25 %
        sid_i = finish(srv, c, users[1], runner, None, body=gpu_body((base,) * 3))
        sid_j = finish(srv, c, users[2], runner, None, body=gpu_body((base * 1.003,) * 3))  # beyond it
        data = rankings(c, "H200")
        rows = [(r["rank"], r["tied"], r["submission_id"]) for r in data.get("rankings", [])]
        check(data.get("score") == "gpu_time" and data.get("resolution_pct") == GPU_RES and
              rows == [(1, True, sid_h), (1, True, sid_i), (3, False, sid_j)],
              "GPU-time scores tie within the GPU-time resolution (0.2 % apart: tied; 0.3 %: not)", (data, rows))
        row = [r for r in data.get("rankings", []) if r["submission_id"] == sid_i]
        check(row and row[0]["score_ns"] == base and [s["median_ns"] for s in row[0]["shapes"]] == [base] * 3,
              "a GPU-time entry ranks and shows its GPU-time medians", row)
        out = cli(srv, users[0], "rankings", "fp8_quant", "--gpu", "H200")
        check("scores: GPU time" in out and ("resolution %g %%" % GPU_RES) in out,
              "kjudge rankings names the measure and its resolution", out)
    finally:
        srv.stop(signal.SIGKILL)


def main():
    if not os.access(BIN, os.X_OK):
        print("FAIL %s is not built (make bin/kjudge-server)" % BIN)
        print("test_ties: 0 passed, 1 failed, 0 skipped")
        return 1
    with tempfile.TemporaryDirectory(prefix="kjudge-ties-") as tmp:
        srv = kjtest.Server(tmp)
        if check(srv.start(), "the server starts"):
            try:
                c = Client(srv.port)
                users = []
                for name in ["alice", "bob", "dave", "erin", "frank", "gina"]:
                    rc, out, _ = srv.cli("user", "add", name, "--db", srv.db)
                    check(rc == 0, "user add %s" % name)
                    users.append(out.strip())
                rc, out, _ = srv.cli("runner", "add", "r0", "--gpu", "H200,B200", "--db", srv.db)
                check(rc == 0, "runner add")
                run(srv, c, users, out.strip())
                data = rankings(c, "H200")
                check(data.get("score") == "events", "rankings of event results say so", data.get("score"))
            finally:
                srv.stop(signal.SIGKILL)
        gpu_time_run(tmp)
    print("test_ties: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
