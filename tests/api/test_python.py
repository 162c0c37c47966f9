#!/usr/bin/env python3
"""test_python.py - Python submissions in KernelBot's form, over real HTTP.

Starts bin/kjudge-server on fp8_quant (which has a "python" block) and a
copy of it without one, then checks: a .py upload with "#!POPCORN" lines
and no fields (board and GPU type from the file, B200_Nebius mapped to B200
with a note), with the request's fields (which win; a file that disagrees
is a 400 naming both), recognised by content when the upload has no file
name; "lang" in the 202 answer, the submission, the listing, the claimed
job and the rankings row (CUDA ones say "cuda"); every bad file refused
with nothing stored (no custom_kernel, a bad "#!kjudge" line, no board or
GPU anywhere, a board without a "python" block, over the size limit); the
board's "python" interface in GET /leaderboards/NAME and its template.py.
PTX files (docs/languages-cuda.md): a .ptx upload, or one whose first
statement is ".version", is stored and claimed as lang "ptx"; a .ptx that
does not start so is a 400 with nothing stored; template.ptx is served where
the board has one, a 404 elsewhere. Groups run alone: `python3 tests/api/test_python.py rankings`. Python 3
standard library only; ends with "test_python: N passed, N failed, N
skipped".
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kjtest import DEFAULT_MEDIANS, is_error, result_body, claim, GOOD_SOURCE, make_users, make_runners  # noqa: E402
from kjcheck import check, run_groups  # noqa: E402
from kjhttp import Client  # noqa: E402
from kjservice import ROOT, BIN, Server  # noqa: E402

CUDA_ONLY = "cuda_quant"  # fp8_quant without its "python" block

PY = ("#!POPCORN leaderboard fp8_quant\n"
      "#!POPCORN gpu B200_Nebius\n"
      "#!POPCORN description ignored by KernelBot too\n"
      "from task import input_t, output_t\n"
      "import torch\n\n"
      "def custom_kernel(data: input_t) -> output_t:\n"
      "    x, x_q, x_s = data\n"
      "    return x_q, x_s\n")
BARE = "import torch\n\ndef custom_kernel(data):\n    return data[1], data[2]\n"


class Env:
    """The server, a client, two users and a runner, started once per group."""

    def __init__(self, tmp):
        boards = os.path.join(tmp, "boards")
        os.makedirs(boards)
        shutil.copytree(os.path.join(ROOT, "leaderboards", "fp8_quant"), os.path.join(boards, "fp8_quant"))
        shutil.copytree(os.path.join(ROOT, "leaderboards", "fp8_quant"), os.path.join(boards, CUDA_ONLY))
        p = os.path.join(boards, CUDA_ONLY, "leaderboard.json")
        spec = json.load(open(p))
        del spec["python"]
        spec["name"] = CUDA_ONLY
        json.dump(spec, open(p, "w"), indent=2)
        os.remove(os.path.join(boards, CUDA_ONLY, "template.ptx"))
        self.srv = Server(tmp, boards=boards)
        self.ok = check(self.srv.start(), "the server starts")
        if self.ok:
            self.c = Client(self.srv.port)
            self.alice, self.bob = make_users(self.srv, "alice", "bob")
            self.runner, = make_runners(self.srv, "gpuhost")

    def submit(self, fields, source, name="quant.py", token=None):
        data = source if isinstance(source, bytes) else source.encode()
        st, _, d, _ = self.c.submit(token or self.alice, fields, [("file", name, data)])
        return st, d



def scaled(score):
    """Medians of the board's three shapes that are physically possible (the
    server refuses times under a shape's floor), ordered as score orders them."""
    return tuple(m * score / 3000.0 for m in DEFAULT_MEDIANS)

def with_env(fn):
    def run():
        with tempfile.TemporaryDirectory(prefix="kjudge-python-") as tmp:
            env = Env(tmp)
            if env.ok:
                try:
                    fn(env)
                finally:
                    env.srv.stop()
    run.__name__ = fn.__name__
    return run


@with_env
def test_submit(e):
    st, d = e.submit([], PY)
    ok = check(st == 202 and d.get("leaderboard") == "fp8_quant" and d.get("gpu") == "B200" and
               d.get("lang") == "python" and d.get("mode") == "test",
               "a .py with #!POPCORN lines and no fields -> 202, board and GPU type from the file", (st, d))
    note = d.get("note", "") if ok else ""
    check("line 2: gpu B200_Nebius is GPU type B200" in note and "#!POPCORN description ignored" in note,
          "the 202 notes the GPU mapping and the ignored key", d)
    if not ok:
        return
    sid = d["id"]
    st, _, s, _ = e.c.get("/api/v1/submissions/%d" % sid, e.alice)
    check(st == 200 and s.get("lang") == "python" and s.get("file_name") == "quant.py" and
          s.get("source") == PY, "the submission says lang python, with its file and source", (st, s))
    st, _, lst, _ = e.c.get("/api/v1/submissions?leaderboard=fp8_quant", e.alice)
    rows = lst.get("submissions", []) if st == 200 else []
    check(any(r.get("id") == sid and r.get("lang") == "python" for r in rows),
          "the listing shows lang python", lst)
    st, d = e.submit([("leaderboard", "fp8_quant"), ("gpu", "H200")], GOOD_SOURCE, name="k.cu")
    cuda = d.get("id") if st == 202 else None
    check(st == 202 and d.get("lang") == "cuda" and "note" not in d, "a .cu is CUDA, without a note", (st, d))
    job = claim(e.c, e.runner, "B200")
    check(job is not None and job.get("id") == sid and job.get("lang") == "python" and
          job.get("source") == PY and job.get("file_name") == "quant.py",
          "the claimed job says lang python", job)
    job = claim(e.c, e.runner, "H200")
    check(job is not None and job.get("id") == cuda and job.get("lang") == "cuda",
          "a CUDA job says lang cuda", job)


@with_env
def test_fields_win(e):
    st, d = e.submit([("leaderboard", "fp8_quant"), ("gpu", "B200")], PY)
    check(st == 202 and d.get("gpu") == "B200", "fields that agree with the file (the mapped type)", (st, d))
    st, d = e.submit([("gpu", "B200_Nebius")], PY.replace("#!POPCORN gpu B200_Nebius\n", ""))
    check(st == 422 and is_error(d, "unknown_gpu"), "the request's own field is taken as it is", (st, d))
    st, d = e.submit([("leaderboard", "fp8_quant"), ("gpu", "H200")], BARE)
    check(st == 202 and d.get("gpu") == "H200" and d.get("lang") == "python" and "note" not in d,
          "a file without lines takes the request's fields", (st, d))
    before = e.srv.rows()
    for fields, code, needle in [
            ([("gpu", "H200")], "gpu_mismatch",
             "line 2: the file names gpu 'B200_Nebius' but the request says 'H200'"),
            ([("leaderboard", CUDA_ONLY)], "leaderboard_mismatch",
             "line 1: the file names leaderboard 'fp8_quant' but the request says '%s'" % CUDA_ONLY)]:
        st, d = e.submit(fields, PY)
        check(st == 400 and is_error(d, code) and needle in d["error"]["message"],
              "%s against the file -> 400 %s naming both" % (fields, code), (st, d))
    check(e.srv.rows() == before, "nothing stored by the conflicts")


@with_env
def test_detect_by_content(e):
    # curl -F file=@- names the file "-"; a browser's editor may send no name at all
    for name, want_name in [("-", "-"), ("", "submission.py")]:
        st, d = e.submit([], PY, name=name)
        ok = check(st == 202 and d.get("lang") == "python", "file name %r: Python by its content" % name, (st, d))
        if ok:
            s = e.c.get("/api/v1/submissions/%d" % d["id"], e.alice)[2]
            check(s.get("file_name") == want_name, "stored as %r" % want_name, s)
    st, d = e.submit([("leaderboard", "fp8_quant"), ("gpu", "H200")], BARE, name="")
    check(st == 202 and d.get("lang") == "python", "no name, def custom_kernel: Python", (st, d))
    # a .cu is CUDA whatever it holds
    src = "// def custom_kernel(data):\n" + GOOD_SOURCE
    st, d = e.submit([("leaderboard", "fp8_quant"), ("gpu", "H200")], src, name="k.cu")
    check(st == 202 and d.get("lang") == "cuda", "a .cu mentioning custom_kernel stays CUDA", (st, d))
    st, d = e.submit([("leaderboard", "fp8_quant"), ("gpu", "H200")], GOOD_SOURCE, name="")
    check(st == 202 and d.get("lang") == "cuda", "no name, CUDA content: CUDA", (st, d))


@with_env
def test_bad_files(e):
    before = e.srv.rows()
    lb = [("leaderboard", "fp8_quant"), ("gpu", "H200")]
    cases = [
        ("no custom_kernel", lb, "import torch\ndef kernel(data):\n    return data\n", 400, "no_custom_kernel",
         "defines no custom_kernel"),
        ("a #!kjudge launch line", lb, "import torch\n#!kjudge launch k grid=(1) block=(1)\n" + BARE, 422,
         "bad_directive", "line 2: unknown directive '#!kjudge launch'"),
        ("two boards in the file", [], "#!POPCORN leaderboard fp8_quant\n#!kjudge leaderboard matmul\n" + BARE,
         422, "bad_directive", "line 2: leaderboard 'matmul' disagrees with 'fp8_quant' on line 1"),
        ("no board anywhere", [("gpu", "H200")], BARE, 400, "missing_leaderboard", "#!POPCORN leaderboard NAME"),
        ("no GPU anywhere", [("leaderboard", "fp8_quant")], BARE, 400, "missing_gpu", "#!POPCORN gpu NAME"),
        ("a board without a python block", [("leaderboard", CUDA_ONLY), ("gpu", "H200")], BARE, 400,
         "unsupported_language", "leaderboard %s takes CUDA C++ only" % CUDA_ONLY),
        ("an unknown board", [("leaderboard", "nope"), ("gpu", "H200")], BARE, 422, "unknown_leaderboard", "nope"),
        ("over the size limit", lb, BARE + "#" * (1024 * 1024), 413, "too_large", None),
        ("a NUL byte", lb, BARE + "\0", 400, "invalid_source", None),
    ]
    for what, fields, src, status, code, needle in cases:
        st, d = e.submit(fields, src)
        check(st == status and is_error(d, code) and (needle is None or needle in d["error"]["message"]),
              "%s -> %d %s" % (what, status, code), (st, d))
    check(e.srv.rows() == before, "nothing stored by a refused file")


@with_env
def test_rankings(e):
    for tok, name, src, score in [(e.alice, "quant.py", PY, 3000.0), (e.bob, "k.cu", GOOD_SOURCE, 5000.0)]:
        st, d = e.submit([("leaderboard", "fp8_quant"), ("gpu", "H200"), ("mode", "leaderboard")], src,
                         name=name, token=tok)
        if name == "quant.py":  # its B200_Nebius line disagrees with the H200 field
            check(st == 400 and is_error(d, "gpu_mismatch"), "the field disagrees -> 400", (st, d))
            st, d = e.submit([("leaderboard", "fp8_quant"), ("mode", "leaderboard")],
                             PY.replace("B200_Nebius", "H200_Modal"), name=name, token=tok)
        if not check(st == 202, "submit %s in leaderboard mode" % name, (st, d)):
            return
        job = claim(e.c, e.runner, "H200")
        if not check(job is not None and job["id"] == d["id"], "claim it", job):
            return
        st = e.c.post_json("/api/v1/runner/jobs/%d/result?attempt=%d" % (job["id"], job["attempt"]),
                           result_body("accepted", None, "leaderboard", medians=scaled(score)), e.runner)[0]
        check(st == 200, "its accepted result is stored", st)
    st, _, d, _ = e.c.get("/api/v1/leaderboards/fp8_quant/rankings?gpu=H200")
    rows = d.get("rankings", d.get("entries", [])) if st == 200 else []
    langs = [(r.get("user"), r.get("lang")) for r in rows]
    check(langs == [("alice", "python"), ("bob", "cuda")], "the rankings rows carry lang", d)


@with_env
def test_board_interface(e):
    st, _, d, _ = e.c.get("/api/v1/leaderboards/fp8_quant")
    check(st == 200 and d.get("python") == {"args": ["x", "x_q", "x_s"], "returns": ["x_q", "x_s"]},
          "GET /leaderboards/fp8_quant shows its python interface", d.get("python") if st == 200 else d)
    st, _, d, _ = e.c.get("/api/v1/leaderboards/%s" % CUDA_ONLY)
    check(st == 200 and "python" in d and d["python"] is None, "a CUDA-only board says python: null",
          d.get("python") if st == 200 else d)
    st, h, _, raw = e.c.get("/api/v1/leaderboards/fp8_quant/files/template.py")
    check(st == 200 and b"def custom_kernel(data: input_t) -> output_t:" in raw and
          b"#!POPCORN leaderboard fp8_quant" in raw, "template.py is served", (st, raw[:200]))
    check(h.get("content-type", "").startswith("text/"), "as text", h.get("content-type"))
    st, _, d, _ = e.c.get("/api/v1/leaderboards/%s/files/template.py" % CUDA_ONLY)
    check(st == 404 and is_error(d, "no_file"), "a CUDA-only board has no template.py", (st, d))


@with_env
def test_ptx(e):
    tpl = open(os.path.join(ROOT, "leaderboards", "fp8_quant", "template.ptx")).read()
    fields = [("gpu", "H200")]
    st, d = e.submit(fields, tpl, name="quant.ptx")
    sid = d.get("id") if st == 202 else None
    check(st == 202 and d.get("lang") == "ptx" and d.get("leaderboard") == "fp8_quant",
          "a .ptx with //!kjudge lines -> 202, lang ptx, board from its line", (st, d))
    st, d = e.submit(fields, tpl, name="")
    check(st == 202 and d.get("lang") == "ptx", "no name, a first .version: PTX by its content", (st, d))
    if sid is not None:
        st, _, s, _ = e.c.get("/api/v1/submissions/%d" % sid, e.alice)
        check(st == 200 and s.get("lang") == "ptx" and s.get("source") == tpl,
              "the submission says lang ptx, with its source", (st, s.get("lang")))
        job = claim(e.c, e.runner, "H200")
        check(job is not None and job.get("id") == sid and job.get("lang") == "ptx",
              "the claimed job says lang ptx", job)
    before = e.srv.rows()
    st, d = e.submit(fields, GOOD_SOURCE, name="k.ptx")
    check(st == 400 and is_error(d, "bad_ptx") and ".version" in d.get("error", {}).get("message", ""),
          "a .ptx that is not PTX -> 400 bad_ptx", (st, d))
    check(e.srv.rows() == before, "and nothing is stored", (before, e.srv.rows()))
    st, _, _, raw = e.c.get("/api/v1/leaderboards/fp8_quant/files/template.ptx")
    check(st == 200 and raw.decode() == tpl, "template.ptx is served", (st, raw[:120]))
    st, _, d, _ = e.c.get("/api/v1/leaderboards/%s/files/template.ptx" % CUDA_ONLY)
    check(st == 404 and is_error(d, "no_file"), "a board without template.ptx: 404 no_file", (st, d))
    for board, want in (("fp8_quant", ["cuda", "python", "ptx"]), (CUDA_ONLY, ["cuda", "ptx"])):
        st, _, d, _ = e.c.get("/api/v1/leaderboards/" + board)
        check(st == 200 and d.get("langs") == want, "%s takes %s" % (board, want), d.get("langs"))


if __name__ == "__main__":
    if not os.access(BIN, os.X_OK):
        print("FAIL %s is not built" % BIN)
        print("test_python: 0 passed, 1 failed, 0 skipped")
        sys.exit(1)
    sys.exit(run_groups("test_python", globals()))
