#!/usr/bin/env python3
"""test_popcorn.py - popcorn-cli's requests against kjudge's /popcorn/ routes.

Replays the requests popcorn-cli makes (docs/popcorn.md, the client's
src/service/mod.rs at the pinned commit), byte for byte where it matters:
its reqwest client sends "x-popcorn-cli-id" and "accept: */*" on every
request, and a submission is one multipart part named "file" with the
file's base name, no part Content-Type, a boundary of four 16-digit hex
groups joined by "-", and a Content-Length; URLs are POPCORN_API_URL +
"/leaderboards", "/gpus/{lb}", "/submission/{lb lower-cased}/{gpu}/{mode
lower-cased}", "/user/submissions?leaderboard=L&limit=N",
"/user/submissions/{id}", "/auth/init?provider=P". Against a real server
on a loopback port with the fake-GPU runner (build/kjudge-runner-fakegpu)
judging H200 jobs: lists; the cli id (a user token) missing, unknown or a
runner's is 401/403 with "detail"; unknown leaderboard, GPU or mode and a
file over the limit are 4xx with "detail"; a .py upload keeps its name; a
full round (submit, poll as the client does, read the result) ends with
what the client prints: the geomean line and the runs JSON for an accepted
leaderboard-mode kernel, "Submission N failed: wrong_answer: ..." for a
wrong one. Python 3 standard library only; ends with "test_popcorn: N
passed, N failed, N skipped".
"""
import decimal
import json
import os
import secrets
import sys
import time
from http.client import HTTPConnection

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import check, run_groups  # noqa: E402
from kjhttp import Client  # noqa: E402
from kjservice import ROOT, Service  # noqa: E402
from kjtest import GOOD_SOURCE, claim_resp, result_body  # noqa: E402

EXAMPLES = os.path.join(ROOT, "leaderboards", "fp8_quant", "examples")
MAX_SOURCE = 1024 * 1024  # KJ_MAX_SOURCE_BYTES
POLL_S = 0.2              # the client polls every 5 s; the same requests, sooner
ROUND_S = 240             # a judged round on a loaded machine


class Popcorn:
    """popcorn-cli's HTTP requests to POPCORN_API_URL = http://127.0.0.1:port/popcorn."""

    def __init__(self, port, cli_id):
        self.port, self.cli_id = port, cli_id
        self.base = "/popcorn"

    def request(self, method, url, body=None, ctype=None):
        """(status, headers lower-cased, JSON or None, raw) for one request as reqwest sends it."""
        conn = HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.putrequest(method, url, skip_host=True, skip_accept_encoding=True)
            if self.cli_id is not None:
                conn.putheader("x-popcorn-cli-id", self.cli_id)
            if ctype is not None:
                conn.putheader("content-type", ctype)
            if body is not None:
                conn.putheader("content-length", str(len(body)))
            conn.putheader("accept", "*/*")
            conn.putheader("host", "127.0.0.1:%d" % self.port)
            conn.endheaders(body)
            resp = conn.getresponse()
            raw = resp.read()
            headers = {k.lower(): v for k, v in resp.getheaders()}
        finally:
            conn.close()
        try:
            data = json.loads(raw) if raw else None
        except ValueError:
            data = None
        return resp.status, headers, data, raw

    def leaderboards(self):
        return self.request("GET", self.base + "/leaderboards")

    def gpus(self, lb):
        return self.request("GET", "%s/gpus/%s" % (self.base, lb))

    def submit(self, file_name, content, lb, gpu, mode, streaming=False):
        boundary = "-".join("%016x" % secrets.randbits(64) for _ in range(4))
        body = (("--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"%s\"\r\n\r\n"
                 % (boundary, file_name)).encode() + content + ("\r\n--%s--\r\n" % boundary).encode())
        url = "%s/%s%s/%s/%s" % (self.base, "" if streaming else "submission/", lb.lower(), gpu,
                                 mode.lower())
        return self.request("POST", url, body, "multipart/form-data; boundary=" + boundary)

    def submissions(self, lb, limit=50):
        return self.request("GET", "%s/user/submissions?leaderboard=%s&limit=%d" % (self.base, lb, limit))

    def submission(self, sid):
        return self.request("GET", "%s/user/submissions/%d" % (self.base, sid))


def detail(data):
    """The message the client prints for an error body (its "detail")."""
    return data.get("detail") if isinstance(data, dict) else None


def rust_f64(x):
    """f64's Display in Rust: the shortest round-trip digits, never an exponent."""
    if x == int(x):
        return str(int(x))
    return format(decimal.Decimal(repr(x)), "f")


def client_output(d):
    """What the client's submit prints for a finished submission (format_submission_details)."""
    runs = [{"mode": r.get("mode", ""), "secret": bool(r.get("secret", False)), "runner": r.get("runner", ""),
             "score": r.get("score"), "passed": bool(r.get("passed", False)),
             "start_time": r.get("start_time"), "end_time": r.get("end_time")} for r in d.get("runs", [])]
    text = json.dumps({"submission_id": d["id"], "leaderboard": d["leaderboard_name"],
                       "file_name": d["file_name"], "done": d["done"], "runs": runs}, indent=2)
    lines = ["Geomean score (%s) on %s: %s s" % ("secret" if r["secret"] else "public", r["runner"],
                                                rust_f64(r["score"]))
             for r in runs if r["mode"] == "leaderboard" and r["score"] is not None]
    return "\n".join(lines) + "\n\n" + text if lines else text


def poll(pc, sid):
    """Poll as submit_solution_background does until done or a failed status:
    ("done", details) or (status, details); None when it took too long."""
    start = time.time()
    seen = []
    while time.time() - start < ROUND_S:
        st, _, d, raw = pc.submission(sid)
        if st != 200 or not isinstance(d, dict):
            check(False, "poll submission %d" % sid, (st, raw[:300]))
            return None
        status = (d.get("job") or {}).get("status") or ("done" if d.get("done") else "pending")
        if not seen or seen[-1] != status:
            seen.append(status)
        if status in ("failed", "timed_out", "hacked"):
            return status, d
        if d.get("done"):
            return "done", d
        time.sleep(POLL_S)
    check(False, "submission %d finished within %d s" % (sid, ROUND_S),
          "statuses seen: %s after %.1f s" % (seen, time.time() - start))
    return None


def test_lists_and_auth():
    with Service(prefix="kjudge-popcorn-") as s:
        tok = s.user("alice")
        rtok = s.server.runner_token("r-1", "H200")
        pc = Popcorn(s.port, tok)
        st, h, d, raw = pc.leaderboards()
        names = [b.get("name") for b in d] if isinstance(d, list) else []
        check(st == 200 and "fp8_quant" in names and h.get("content-type", "").startswith("application/json"),
              "GET leaderboards lists the boards", (st, raw[:200]))
        # The client fails the whole list unless each has a task object and string name/description.
        check(all(isinstance(b.get("task"), dict) and isinstance(b.get("name"), str)
                  and isinstance(b.get("description"), str) for b in d or [None]),
              "each board has task, name, description", raw[:300])
        st, _, d, raw = pc.gpus("fp8_quant")
        check(st == 200 and d == ["H200", "B200"], "GET gpus/fp8_quant: the board's GPU types", (st, raw))
        st, _, d, raw = Popcorn(s.port, None).gpus("FP8_QUANT")
        check(st == 200 and d == ["H200", "B200"], "gpus: the board found without regard to case, no cli id",
              (st, raw))
        st, _, d, raw = pc.gpus("no_such_board")
        check(st == 404 and "no_such_board" in (detail(d) or ""), "gpus of an unknown board: 404 with detail",
              (st, raw))

        src = open(os.path.join(EXAMPLES, "fast.cu"), "rb").read()
        for who, cli_id, want, code in (("no cli id", None, 401, "missing_cli_id"),
                                        ("an unknown cli id", "0" * 64, 401, "invalid_token"),
                                        ("a cli id with a space", "ab cd", 401, "invalid_token"),
                                        ("a runner's token", rtok, 403, "forbidden")):
            st, _, d, raw = Popcorn(s.port, cli_id).submit("fast.cu", src, "fp8_quant", "H200", "test")
            check(st == want and (d or {}).get("error", {}).get("code") == code and detail(d),
                  "submit with %s: %d %s with detail" % (who, want, code), (st, raw[:300]))
            st, _, d, raw = Popcorn(s.port, cli_id).submission(1)
            check(st == want and detail(d), "GET user/submissions/1 with %s: %d" % (who, want), (st, raw[:300]))
        check(s.server.rows() == [], "no submission stored by the refused requests", s.server.rows())

        st, _, d, raw = Popcorn(s.port, None).request("GET", "/popcorn/auth/init?provider=discord")
        check(st == 404 and "~/.popcorn.yaml" in (detail(d) or ""),
              "auth/init: 404 saying to put the token in ~/.popcorn.yaml", (st, raw[:300]))
        st, _, d, raw = pc.submit("fast.cu", src, "fp8_quant", "H200", "profile", streaming=True)
        check(st == 404 and "profile" in (detail(d) or ""), "the streamed profile route: 404 with detail",
              (st, raw[:300]))
        st, _, d, raw = pc.request("DELETE", "/popcorn/user/submissions/1")
        check(st == 405 and detail(d), "DELETE user/submissions/1: 405 with detail (submissions are kept)",
              (st, raw[:300]))
        st, _, d, raw = pc.request("POST", "/popcorn/user/join", b'{"code":"x"}', "application/json")
        check(st == 404 and detail(d), "POST user/join: 404 with detail", (st, raw[:300]))


def test_bad_submissions():
    with Service(prefix="kjudge-popcorn-") as s:
        pc = Popcorn(s.port, s.user("alice"))
        src = open(os.path.join(EXAMPLES, "fast.cu"), "rb").read()
        for what, lb, gpu, mode, want, code in (
                ("an unknown leaderboard", "no_such_board", "H200", "test", 422, "unknown_leaderboard"),
                ("an unknown GPU", "fp8_quant", "MI300", "test", 422, "unknown_gpu"),
                ("an unknown GPU with a provider suffix", "fp8_quant", "A100_Modal", "test", 422, "unknown_gpu"),
                ("an unknown mode", "fp8_quant", "H200", "script", 400, "bad_mode")):
            st, _, d, raw = pc.submit("fast.cu", src, lb, gpu, mode)
            check(st == want and (d or {}).get("error", {}).get("code") == code and detail(d),
                  "submit to %s: %d %s with detail" % (what, want, code), (st, raw[:300]))
        st, _, d, raw = pc.request("POST", "/popcorn/submission/fp8_quant/H200", b"", "multipart/form-data; b=x")
        check(st in (400, 404) and detail(d), "submit URL without a mode: 4xx", (st, raw[:300]))
        big = b"//" + b"x" * MAX_SOURCE + b"\n"
        st, _, d, raw = pc.submit("big.cu", big, "fp8_quant", "H200", "test")
        check(st == 413 and detail(d), "a file over the 1 MiB limit: 413 with detail", (st, raw[:300]))
        check(s.server.rows() == [], "nothing stored by the refused submissions", s.server.rows())

        # A Python file (KernelBot's form): the route passes it and its name to the
        # submission path, which decides its language: queued as submission.py on
        # B200 (B200_Nebius), which no runner serves here: the client sees
        # "pending" and its place in the queue.
        py = (b"#!POPCORN leaderboard fp8_quant\n#!POPCORN gpu B200_Nebius\n"
              b"def custom_kernel(data):\n    return data\n")
        st, _, d, raw = pc.submit("submission.py", py, "fp8_quant", "B200_Nebius", "test")
        det = (d or {}).get("details") or {}
        q = (d or {}).get("runner_queue") or {}
        check(st == 202 and det.get("file_name") == "submission.py" and det.get("gpu_type") == "B200"
              and q.get("gpu") == "B200" and q.get("queued_jobs") == 1,
              "a .py upload to B200_Nebius: 202, B200, its name kept, 1 queued job", (st, raw))
        st, _, d, raw = pc.submission(det.get("id") or 0)
        check(st == 200 and d.get("file_name") == "submission.py" and d.get("code") == py.decode()
              and d.get("done") is False and d["job"]["status"] == "pending" and d.get("runs") == [],
              "the .py submission as the client polls it: pending, its name and code", (st, raw[:400]))

        # The name of the upload is kept: a CUDA file under another name.
        st, _, d, raw = pc.submit("my kernel v2.cu", src, "fp8_quant", "B200_Nebius", "test")
        sid = ((d or {}).get("details") or {}).get("id") or 0
        check(st == 202 and d["details"]["file_name"] == "my_kernel_v2.cu" and d["details"]["gpu_type"] == "B200",
              "a .cu upload to B200_Nebius: 202 on B200, its (sanitized) name kept", (st, raw))
        st, _, d, raw = pc.submission(sid)
        check(st == 200 and d.get("file_name") == "my_kernel_v2.cu" and d["job"]["status"] == "pending"
              and d.get("done") is False and (d.get("runner_queue") or {}).get("queued_jobs") == 2,
              "polled: pending, second in the B200 queue (after the .py)", (st, raw[:400]))
        st, _, d, raw = Popcorn(s.port, s.user("bob")).submission(sid)
        check(st == 404 and detail(d), "another user's cli id: 404", (st, raw[:200]))


def test_round():
    with Service(runner="fake", gpu="H200", prefix="kjudge-popcorn-") as s:
        tok = s.user("alice")
        pc = Popcorn(s.port, tok)
        c = Client(s.port)

        # Judged by the fake-GPU runner (build/kjudge-runner-fakegpu), which
        # answers compile_error, or runtime_error for a "fakegpu:verdict" line.
        wrong = open(os.path.join(EXAMPLES, "wrong.cu"), "rb").read()
        crash = wrong + b"// fakegpu:verdict=runtime_error\n"
        st, _, d, raw = pc.submit("wrong.cu", wrong, "FP8_QUANT", "H200_Modal", "Test")
        a = ((d or {}).get("details") or {}).get("id")
        check(st == 202 and isinstance(a, int) and d["details"]["gpu_type"] == "H200",
              "submit wrong.cu to FP8_QUANT/H200_Modal/test: 202 with details.id on H200", (st, raw[:300]))
        st, _, d, raw = pc.submit("crash.cu", crash, "fp8_quant", "H200", "benchmark")
        b = ((d or {}).get("details") or {}).get("id")
        check(st == 202 and isinstance(b, int), "submit crash.cu in benchmark mode: 202", (st, raw[:300]))
        for sid, verdict in ((a, "compile_error"), (b, "runtime_error")):
            got = poll(pc, sid) if isinstance(sid, int) else None
            if got is None:
                continue
            status, d = got
            err = d["job"].get("error") or ""
            _, _, native, _ = c.get("/api/v1/submissions/%d" % sid, token=tok)
            check(status == "failed" and err.startswith(verdict + ": ") and "fakegpu" in err
                  and (native or {}).get("verdict") == verdict,
                  "#%d: job failed with the verdict the runner gave (%s) and its message" % (sid, verdict),
                  (d.get("job"), (native or {}).get("verdict")))
            check(d.get("done") is True and len(d.get("runs") or []) == 1 and d["runs"][0]["passed"] is False
                  and d["runs"][0]["runner"] == "H200",
                  "#%d: done, one run on H200, not passed" % sid, d)
            print("Submission %d %s: %s" % (sid, status, err.splitlines()[0]), flush=True)

        # Accepted in leaderboard mode on B200: this test is the runner (the
        # fake-GPU runner never accepts), through the runner API.
        rtok = s.server.runner_token("hand", "B200")
        st, _, d, raw = pc.submit("k.cu", GOOD_SOURCE.encode(), "fp8_quant", "B200_Nebius", "leaderboard")
        g = ((d or {}).get("details") or {}).get("id")
        check(st == 202 and isinstance(g, int), "submit k.cu to fp8_quant/B200_Nebius/leaderboard: 202", (st, raw))
        st, _, job, raw = claim_resp(c, rtok, "B200")
        check(st == 200 and job["job"]["id"] == g, "the B200 job claimed", (st, raw[:200]))
        if st == 200:
            st, _, d, raw = c.post_json("/api/v1/runner/jobs/%d/result?attempt=%d" % (g, job["job"]["attempt"]),
                                        result_body("accepted", None, "leaderboard", gpu="NVIDIA B200"), rtok)
            check(st == 200, "its accepted result posted", (st, raw[:200]))
        got = poll(pc, g) if isinstance(g, int) else None
        score = None
        if got is not None:
            status, d = got
            _, _, native, _ = c.get("/api/v1/submissions/%d" % g, token=tok)
            runs = d.get("runs") or [{}]
            want = native.get("score_ns") / 1e9 if isinstance(native, dict) and native.get("score_ns") else None
            check(status == "done" and d["job"]["status"] == "succeeded" and d["job"]["error"] is None
                  and len(d["runs"]) == 1, "k.cu: done, job succeeded, one run", d)
            check(runs[0].get("mode") == "leaderboard" and runs[0].get("runner") == "B200"
                  and runs[0].get("passed") is True and d.get("leaderboard_name") == "fp8_quant"
                  and d.get("file_name") == "k.cu" and d.get("code") == GOOD_SOURCE,
                  "the run: leaderboard on B200, passed; board, file name and code", d)
            score = runs[0].get("score")
            check(want is not None and isinstance(score, float) and abs(score - want) <= 1e-12 * want,
                  "its score is the kjudge score in seconds (15 digits)", (score, want))
            out = client_output(d)
            first = "Geomean score (public) on B200: %s s" % rust_f64(score or 0)
            check(out.startswith(first + "\n\n{") and '"done": true' in out,
                  "the client prints the geomean line and the runs", out[:400])
            print(out.splitlines()[0], flush=True)

        st, _, d, raw = pc.submissions("FP8_QUANT")
        ids = [x.get("id") for x in d] if isinstance(d, list) else []
        check(st == 200 and ids == [g, b, a], "user/submissions?leaderboard=FP8_QUANT: all three, newest first",
              (st, raw[:300]))
        if st == 200 and ids == [g, b, a]:
            check(d[0]["runs"] == [{"gpu_type": "B200", "score": score}] and d[0]["done"] is True
                  and d[0]["submission_time"].endswith("Z") and d[2]["runs"][0]["score"] is None,
                  "listed: gpu_type and score per run, done, submission_time", d)
        st, _, d, raw = pc.submissions("fp8_quant", limit=1)
        check(st == 200 and [x.get("id") for x in d or []] == [g], "limit=1: the newest only", (st, raw[:200]))
        st, _, d, raw = Popcorn(s.port, s.user("bob")).submissions("fp8_quant")
        check(st == 200 and d == [], "another user's list: empty", (st, raw[:200]))
        st, _, d, raw = pc.submissions("fp8_quant", limit=0)
        check(st == 400 and detail(d), "limit=0: 400", (st, raw[:200]))
        st, _, d, raw = pc.submissions("nope")
        check(st == 404 and detail(d), "an unknown board's submissions: 404", (st, raw[:200]))


if __name__ == "__main__":
    sys.exit(run_groups("test_popcorn", globals()))
