#!/usr/bin/env python3
"""test_cli.py - bin/kjudge, the command-line client, against a real server.

Starts bin/kjudge-server on a loopback port (copies of fp8_quant: one open,
one past its deadline, one with a single GPU type) and a fake runner
(fakerunner.py) that posts events and results through the runner protocol,
then runs every command of the client as a separate process, each user with
its own config folder: login (token, standard input, invite, a refused
token), whoami, boards, board, template, submit (progress in a pipe and in
a pseudo-terminal, --json, --no-wait, the verdicts' evidence, directives,
exit codes), submissions (filters, pages), show (source, diffs), events,
withdraw, rankings and the admin commands, and the bash completion
(deploy/bash-completion/kjudge: commands, options, boards, GPU types and
submission ids from the server), with 403, 404, 409, 422 and 429
(Retry-After) on the way. The errors before the server is reached (no
config, unreachable, TLS, a stranger's answer, 401, usage) are
test_cli_errors.py's. The token is never printed except by
`login --invite`. Python 3 standard library only; ends with
"test_cli: N passed, N failed, N skipped" and exits 1 on failure.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import check, summary  # noqa: E402
from kjservice import BIN  # noqa: E402
from kjtest import Server  # noqa: E402
from fakerunner import FakeRunner  # noqa: E402
from kjcli import (BOARD_DIR, KJ, REFERENCE, SECRETS, TEMPLATE, Cli, api, copy_board,  # noqa: E402
                   sub_id, test_no_secret_printed, write)


# ---------------------------------------------------------------------------
# login, whoami, the config file
# ---------------------------------------------------------------------------

def test_login(t):
    url, alice = t["url"], t["alice"]
    rc, out, err = alice.run("login", url, "--token", "f" * 64)
    check(rc == 2 and "HTTP 401 invalid_token" in err and not os.path.exists(alice.config),
          "login with a refused token: exit 2, 401 named, nothing saved", (rc, out, err))
    rc, out, err = alice.run("login", url + "/", "--token", t["tok_alice"])
    check(rc == 0 and out.startswith("logged in to %s as alice (user); saved in %s" % (url, alice.config)),
          "login --token: exit 0, who and where", (rc, out, err))
    st = os.stat(alice.config)
    check(st.st_mode & 0o777 == 0o600 and os.stat(os.path.dirname(alice.config)).st_mode & 0o777 == 0o700,
          "the config file is 0600 in a 0700 folder", oct(st.st_mode))
    text = open(alice.config).read()
    check("url = %s\n" % url in text and "token = %s\n" % t["tok_alice"] in text,
          "the config holds the URL (no trailing /) and the token", text.replace(t["tok_alice"], "T"))
    rc, out, err = alice.run("whoami")
    check(rc == 0 and out == "alice (user) at %s\n" % url, "whoami", (rc, out, err))
    rc, out, err = alice.run("--json", "whoami")
    check(rc == 0 and json.loads(out).get("name") == "alice" and json.loads(out).get("role") == "user",
          "--json whoami prints the server's /me", out)

    bob = t["bob"]
    rc, out, err = bob.run("login", url, stdin=t["tok_bob"] + "\n")
    check(rc == 0 and "as bob (user)" in out, "login reads the token from standard input", (rc, out, err))
    rc, out, err = bob.run("login", url, stdin="")
    check(rc == 2 and "no token given" in err, "login with nothing on standard input: usage, exit 2",
          (rc, err))

    st, _, d, _ = api(t["port"]).post_json("/api/v1/invites", {}, t["tok_admin"], runner=False)
    carol = t["carol"]
    rc, out, err = carol.run("login", url, "--invite", d["code"], "--name", "carol", record=False)
    tok = re.search(r"shown this once \(keep it to log in elsewhere\): ([0-9a-f]{64})\n", out)
    check(rc == 0 and "logged in to %s as carol (user)" % url in out and tok and out.count(tok.group(1)) == 1,
          "login --invite creates the account and shows its token once", (rc, out, err))
    if tok:
        SECRETS.append(tok.group(1))
        check("token = %s" % tok.group(1) in open(carol.config).read(), "and saves it")
    rc, out, err = carol.run("whoami")
    check(rc == 0 and out.startswith("carol (user)"), "the invited account works", (rc, out, err))
    rc, out, err = t["fresh"].run("login", url, "--invite", "0" * 32, "--name", "dave")
    check(rc == 2 and "HTTP 403 bad_invite" in err, "a bad invite: 403 named, exit 2", (rc, err))

    admin = t["admin"]
    rc, out, err = admin.run("login", url, "--token", t["tok_admin"])
    check(rc == 0 and "as admin (admin)" in out, "the admin logs in", (rc, out, err))

    env = {"KJUDGE_URL": url, "KJUDGE_TOKEN": t["tok_bob"]}
    rc, out, err = t["fresh"].run("whoami", env=env)
    check(rc == 0 and out.startswith("bob (user)"), "KJUDGE_URL and KJUDGE_TOKEN without a config", (rc, out, err))
    rc, out, err = alice.run("whoami", env={"KJUDGE_TOKEN": t["tok_bob"]})
    check(rc == 0 and out.startswith("bob (user)"), "KJUDGE_TOKEN overrides the config", (rc, out, err))
    loose = Cli(t["tmp"], "loose")
    os.makedirs(os.path.dirname(loose.config))
    shutil.copy(alice.config, loose.config)
    os.chmod(loose.config, 0o644)
    rc, out, err = loose.run("whoami")
    check(rc == 0 and "readable by other users; run: chmod 600" in err, "a loose config file is warned about",
          (rc, err))


# ---------------------------------------------------------------------------
# Boards, template, rankings
# ---------------------------------------------------------------------------

def test_boards(t):
    alice, c = t["alice"], api(t["port"])
    rc, out, err = alice.run("boards")
    lines = out.splitlines()
    check(rc == 0 and lines[0].split() == ["name", "title", "gpus", "deadline", "tests", "shapes"] and
          any(l.startswith("fp8_quant ") and "H200, B200" in l and "2027-03-15T00:00:00Z" in l and
              l.split()[-2:] == ["5", "3"] for l in lines), "boards: a table", out)
    wide = max(len(l) for l in lines)
    rc, out = alice.run_pty("boards", cols=80)
    narrow = out.replace("\r", "").splitlines()
    check(rc == 0 and wide > 80 and all(len(l) <= 80 for l in narrow) and
          any(l.startswith("fp8_quant ") and "..." in l and l.split()[-2:] == ["5", "3"] for l in narrow),
          "boards on an 80-column terminal: the titles are cut to fit (%d columns in a pipe)" % wide, out)
    rc, out, err = alice.run("boards", env={"COLUMNS": "90"})
    check(rc == 0 and all(len(l) <= 90 for l in out.splitlines()), "boards fits $COLUMNS in a pipe", out)
    rc, out, err = alice.run("--json", "boards")
    check(rc == 0 and out == c.get("/api/v1/leaderboards")[3].decode() + "\n", "--json boards is the server's JSON",
          out[:200])
    rc, out, err = t["fresh"].run("boards", env={"KJUDGE_URL": t["url"]})
    check(rc == 0 and "fp8_quant" in out, "boards needs no token", (rc, err))
    rc, out, err = alice.run("board", "fp8_quant")
    check(rc == 0 and out.startswith("fp8_quant: FP8 per-group activation quantization\n") and
          "kernel arguments: (const float* x, float* x_q, float* x_s, int T, int H, int GS)" in out and
          "time limits: test " in out and "4242" in out and "54352" in out and
          "kjudge template fp8_quant" in out, "board: statement, signature, shapes, seeds", out[:600])
    rc, out, err = alice.run("board", "nope")
    check(rc == 2 and "not found (HTTP 404 unknown_leaderboard): no leaderboard named 'nope'" in err,
          "an unknown board: 404 named, exit 2", (rc, err))
    rc, out, err = alice.run("board", "Bad!")
    check(rc == 2 and "is not a leaderboard name" in err, "a malformed name is a usage error", (rc, err))

    rc, out, err = alice.run("template", "fp8_quant")
    check(rc == 0 and out == TEMPLATE, "template prints the starter byte for byte", (rc, len(out)))
    dst = os.path.join(alice.home, "mine.cu")
    rc, out, err = alice.run("template", "fp8_quant", "-o", dst)
    check(rc == 0 and open(dst).read() == TEMPLATE and "wrote template.cu of fp8_quant to" in err,
          "template -o FILE", (rc, err))
    open(dst, "w").write("my work")
    rc, out, err = alice.run("template", "fp8_quant", "-o", dst)
    check(rc == 2 and "exists; add --force" in err and open(dst).read() == "my work",
          "template -o refuses to replace a file", (rc, err))
    rc, out, err = alice.run("template", "fp8_quant", "--output=" + dst, "--force")
    check(rc == 0 and open(dst).read() == TEMPLATE, "--force replaces it", (rc, err))
    rc, out, err = alice.run("template", "fp8_quant", "--reference")
    check(rc == 2 and "HTTP 403 not_published" in err, "the reference is not public", (rc, err))
    rc, out, err = t["admin"].run("template", "fp8_quant", "--reference")
    check(rc == 0 and out.encode() == REFERENCE, "an admin downloads the reference", rc)


# ---------------------------------------------------------------------------
# submit
# ---------------------------------------------------------------------------

def check_order(out, parts, what):
    """One check: every part appears in out, in this order."""
    at, missing = 0, None
    for p in parts:
        i = out.find(p, at)
        if i < 0:
            missing = "missing %r after offset %d in:\n%s" % (p, at, out)
            break
        at = i + len(p)
    return check(missing is None, what, missing or "")


def test_submit_pipe(t):
    alice = t["alice"]
    f = write(alice.home, "quant.cu", "// FAKE:accept\n" + TEMPLATE)
    check(t["runner"].hold_now(), "the fake runner holds (no claim in flight)")
    rc, out, err = alice.run_held(["submit", f, "--gpu", "H200", "--mode", "leaderboard"], t["runner"].hold)
    sid = sub_id(out)
    check(rc == 0 and sid, "submit: accepted -> exit 0", (rc, out, err))
    check_order(out, ["submitted #%d: fp8_quant on H200 (leaderboard mode)\n" % sid,
                      "queued: position 1 on H200\n", "compiling for sm_90a\n",
                      "compiled in 0.41 s: quant (16 registers)\n", "test 0 T=1 H=256 GS=64 (1 of 5): pass\n",
                      "test 4 ", " (5 of 5): pass\n", "shape ", " (1 of 3): median 1.234 us (95% CI 1.224 us - 1.246 us, n=3",
                      " (3 of 3): ", "verdict: accepted: all 5 tests passed; 3 benchmark shapes timed\n",
                      "#%d fp8_quant on H200, leaderboard mode, by alice: accepted\n" % sid,
                      "score 12.321 us (geometric mean of the shape medians), rank #1 of 1\n",
                      "shape  ", "median", "95% CI of the median", "floor", "n  launch\n",
                      "T=256 H=4096 GS=128", "1.234 us", "1.224 us - 1.246 us", "412 ns",
                      "quant grid(128,1,1) block(32,8,1) smem 0\n"],
                "in a pipe: one line per event in order, then the timing table")
    check(sum(l.startswith("test ") for l in out.splitlines()) == 5 and
          sum(re.match(r"shape \d T=.* \(\d of 3\): median", l) is not None for l in out.splitlines()) == 3,
          "exactly one line per test and per shape", out)
    check("\r" not in out and "\x1b" not in out and err == "", "no terminal control codes in a pipe, nothing on stderr",
          (out, err))
    t["accepted"] = sid
    return sid


def test_submit_pty(t):
    alice = t["alice"]
    f = write(alice.home, "slow.cu", "// FAKE:slow\n" + TEMPLATE)
    check(t["runner"].hold_now(), "the fake runner holds (no claim in flight)")
    rc, out = alice.run_pty("submit", f, "--gpu", "H200", "--mode", "leaderboard", hold=t["runner"].hold,
                            until="queued, position")
    sid = sub_id(out)
    check(rc == 0 and sid, "submit on a terminal: exit 0", (rc, out))
    head = "#%d fp8_quant on H200 (leaderboard mode): " % sid
    check_order(out, ["\r\x1b[K" + head + "queued, position 1 on H200",
                      "\r\x1b[K" + head + "compiling for sm_90a",
                      "\r\x1b[K  compiled in 0.41 s: quant (16 registers)\r\n",
                      "\r\x1b[K" + head + "tests 1/5", "\r\x1b[K" + head + "tests 3/5",
                      "\r\x1b[K" + head + "tests 5/5",
                      "\r\x1b[K  shape ", "(1 of 3): median 1.234 us", "\r\x1b[K" + head + "tests 5/5, shapes 1/3",
                      "\r\x1b[K  shape ", "(3 of 3)", "\r\x1b[K" + head + "tests 5/5, shapes 3/3", "\r\x1b[K",
                      "#%d fp8_quant on H200, leaderboard mode, by alice: accepted\r\n" % sid,
                      "score ", "95% CI of the median"],
                "on a terminal: one status line rewritten in place, shapes with medians kept")
    check("test 0 T=1 H=256 GS=64 (1 of 5): pass" not in out and "verdict: accepted" not in out,
          "passing tests and the verdict event are not kept as lines on a terminal", out)
    status = [seg for seg in re.split(r"\r|\n", out) if seg.startswith("\x1b[K#")]
    check(status and all(len(seg) - 3 < 100 for seg in status), "status lines fit the terminal's width", status)
    t["pty_sub"] = sid


def test_submit_failures(t):
    alice = t["alice"]
    cases = [
        ("wrong", 1, ["verdict: wrong_answer", "by alice: wrong_answer\n", "test 2 (T=16 H=1024 GS=64): fail:",
                      "x_q: 12 of 1024 elements differ (max abs err 0.5, max rel err 0.1)",
                      "at [0, 17] expected 1.5 got 2\n", "at [3, 4] expected -448 got nan\n"]),
        ("compile", 1, ["compile failed: k.cu(3): error: identifier \"oops\" is undefined\n", ": compile_error\n",
                        "compile log:\n  k.cu(3): error: identifier \"oops\" is undefined\n"
                        "  1 error detected in the compilation of \"k.cu\".\n"]),
        ("crash", 1, ["test 1 T=4 H=512 GS=128 (2 of 5): error: CUDA_ERROR_ILLEGAL_ADDRESS", ": runtime_error\n",
                      "test 1 (T=4 H=512 GS=128): error: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access"]),
    ]
    for kind, want_rc, parts in cases:
        f = write(alice.home, kind + ".cu", "// FAKE:%s\n" % kind + TEMPLATE)
        rc, out, err = alice.run("submit", f, "--gpu", "H200")
        check(rc == want_rc, "%s: exit %d (the submission failed)" % (kind, want_rc), (rc, out, err))
        check_order(out, parts, "%s: the evidence is shown" % kind)
        t[kind] = sub_id(out)


def test_submit_json(t):
    alice, c = t["alice"], api(t["port"])
    f = write(alice.home, "j.cu", TEMPLATE)
    rc, out, err = alice.run("--json", "submit", f, "--gpu", "B200", "--mode", "leaderboard")
    try:
        d = json.loads(out)
    except ValueError:
        d = {}
    got = c.get("/api/v1/submissions/%d" % d.get("id", 0), t["tok_alice"])[2]
    check(rc == 0 and d.get("status") == "done" and d == got and out.count("\n") == 1,
          "--json submit prints only the final submission, as the server sends it", (rc, out[:300], err))
    rc, out, err = alice.run("submit", f, "--gpu", "B200", "--no-wait", "--json")
    d = json.loads(out) if out.startswith("{") else {}
    check(rc == 0 and d.get("status") == "queued" and d.get("urls", {}).get("self"),
          "--no-wait --json prints the 202 answer", (rc, out, err))
    rc, out, err = alice.run("submit", f, "--gpu", "B200", "--no-wait")
    check(rc == 0 and re.match(r"submitted #\d+: fp8_quant on B200 \(test mode\); follow it with: kjudge events \d+\n$", out),
          "--no-wait returns at once with the id", (rc, out, err))


def test_submit_directives(t):
    alice, srv = t["alice"], t["srv"]
    f = write(alice.home, "d.cu", "//!kjudge gpu B200\n//!kjudge mode benchmark\n" + TEMPLATE)
    rc, out, err = t["rl"].run("submit", f, "--no-wait")
    sid = sub_id(out)
    check(rc == 0 and "fp8_quant on B200 (benchmark mode)" in out, "board, gpu and mode from the file's lines",
          (rc, out, err))
    if sid:
        row = srv.row(sid)
        check(row["gpu"] == "B200" and row["mode"] == "benchmark", "the server stored them", dict(row))
    rc, out, err = t["rl"].run("submit", f, "--no-wait")
    check(rc == 2 and "rate limited (HTTP 429 rate_limited)" in err and
          re.search(r"retry after \d+ s \(Retry-After\)", err), "429: rate limited, with Retry-After", (rc, err))
    rc, out, err = alice.run("submit", f, "--gpu", "H200")
    check(rc == 2 and "refused (HTTP 422 gpu_mismatch): line 1: the file names gpu 'B200' but the request says "
          "'H200'" in err, "422: a flag against the file's line", (rc, err))
    f2 = write(alice.home, "nog.cu", TEMPLATE)
    rc, out, err = alice.run("submit", f2)
    check(rc == 2 and "leaderboard fp8_quant runs on H200, B200: choose one with --gpu" in err,
          "no GPU type named on a board with two: usage error", (rc, err))
    rc, out, err = alice.run("submit", f2, "--leaderboard", "solo_quant")
    check(rc == 2 and "HTTP 422 leaderboard_mismatch" in err, "a board flag against the file's line", (rc, err))
    f3 = write(alice.home, "solo.cu", TEMPLATE.replace("//!kjudge leaderboard fp8_quant", "//!kjudge leaderboard solo_quant"))
    rc, out, err = alice.run("submit", f3)
    check(rc == 0 and "solo_quant on H200 (test mode)" in out and ": accepted\n" in out,
          "a board with one GPU type needs no --gpu", (rc, out, err))
    f4 = write(alice.home, "noboard.cu", TEMPLATE.replace("//!kjudge leaderboard fp8_quant\n", ""))
    rc, out, err = alice.run("submit", f4, "--gpu", "H200")
    check(rc == 2 and "name the leaderboard: --leaderboard NAME" in err, "no board anywhere: usage error", (rc, err))
    rc, out, err = alice.run("submit", os.path.join(alice.home, "missing.cu"))
    check(rc == 2 and "cannot read" in err and "missing.cu" in err, "a missing file", (rc, err))
    rc, out, err = alice.run("submit", f2, "--gpu", "H200", "--mode", "fast")
    check(rc == 2 and "--mode must be test, benchmark, leaderboard, profile or sanitize" in err, "a bad --mode", (rc, err))


def test_submit_python(t):
    """A Python file in KernelBot's form: board and GPU from its #!POPCORN lines
    (B200_Nebius mapped, the note printed), the flag winning, errors; and
    `template --lang python`."""
    alice, srv = t["alice"], t["srv"]
    py = ("#!POPCORN leaderboard fp8_quant\n#!POPCORN gpu B200_Nebius\n"
          "from task import input_t, output_t\n\ndef custom_kernel(data: input_t) -> output_t:\n"
          "    x, x_q, x_s = data\n    return x_q, x_s\n")
    f = write(alice.home, "q.py", py)
    rc, out, err = alice.run("submit", f)
    sid = sub_id(out)
    check(rc == 0 and "fp8_quant on B200 (test mode)" in out and
          "note: line 2: gpu B200_Nebius is GPU type B200" in out and ": accepted\n" in out,
          "submit q.py: board and GPU type from its #!POPCORN lines, the mapping noted", (rc, out, err))
    if sid:
        row = srv.row(sid)
        check(row["lang"] == "python" and row["gpu"] == "B200" and row["file_name"] == "q.py",
              "stored as python on B200", dict(row))
    rc, out, err = alice.run("submit", f, "--gpu", "H200")
    check(rc == 2 and "HTTP 400 gpu_mismatch" in err and "'B200_Nebius'" in err and "'H200'" in err,
          "a --gpu against the file's line: 400 naming both", (rc, err))
    f2 = write(alice.home, "nog.py", py.replace("#!POPCORN gpu B200_Nebius\n", ""))
    rc, out, err = alice.run("submit", f2)
    check(rc == 2 and 'choose one with --gpu or a line "#!POPCORN gpu NAME"' in err,
          "no GPU on a board with two: the Python line is suggested", (rc, err))
    f3 = write(alice.home, "nob.py", py.replace("#!POPCORN leaderboard fp8_quant\n", ""))
    rc, out, err = alice.run("submit", f3)
    check(rc == 2 and '"#!POPCORN leaderboard NAME"' in err, "no board: the Python line is suggested", (rc, err))
    f4 = write(alice.home, "nok.py", py.replace("def custom_kernel", "def kernel"))
    rc, out, err = alice.run("submit", f4)
    check(rc == 2 and "HTTP 400 no_custom_kernel" in err, "no custom_kernel: the server's 400", (rc, err))
    want = open(os.path.join(BOARD_DIR, "template.py")).read()
    rc, out, err = alice.run("template", "fp8_quant", "--lang", "python")
    check(rc == 0 and out == want, "template --lang python prints template.py", (rc, out[:200], err))
    dst = os.path.join(alice.home, "t.py")
    rc, out, err = alice.run("template", "fp8_quant", "--lang", "python", "-o", dst)
    check(rc == 0 and open(dst).read() == want and "wrote template.py of fp8_quant" in err,
          "template --lang python -o FILE", (rc, err))
    rc, out, err = alice.run("template", "fp8_quant", "--lang", "cuda")
    check(rc == 0 and out == TEMPLATE, "--lang cuda is template.cu", (rc, err))
    rc, out, err = alice.run("template", "fp8_quant", "--lang", "ptx")
    check(rc == 0 and out == open(os.path.join(BOARD_DIR, "template.ptx")).read(),
          "--lang ptx is template.ptx", (rc, out[:200], err))
    for args, needle in [(["--lang", "rust"], "--lang must be cuda, python or ptx"),
                         (["--lang", "python", "--reference"], "--reference goes without --lang python")]:
        rc, out, err = alice.run("template", "fp8_quant", *args)
        check(rc == 2 and needle in err, "template %s: usage error" % " ".join(args), (rc, err))
    rc, out, err = alice.run("submit", write(alice.home, "t2.py", want))
    check(rc == 0 and "fp8_quant on H200 (test mode)" in out, "the template as it is is accepted", (rc, out, err))


# ---------------------------------------------------------------------------
# submissions, show, events, withdraw, rankings
# ---------------------------------------------------------------------------

def test_lists(t):
    alice, admin, c = t["alice"], t["admin"], api(t["port"])
    mine = [s["id"] for s in c.get("/api/v1/submissions?limit=500", t["tok_alice"])[2]["submissions"]]
    rc, out, err = alice.run("submissions")
    rows = [l for l in out.splitlines()[2:] if l.strip()]
    check(rc == 0 and [int(r.split()[0]) for r in rows] == mine[:20], "submissions: newest first", (out, mine))
    rc, out, err = alice.run("submissions", "--mode", "leaderboard", "--gpu", "H200", "--verdict", "accepted")
    rows = [l for l in out.splitlines()[2:] if l.strip()]
    check(rc == 0 and rows and all(" H200 " in r and " leaderboard " in r and " accepted " in r for r in rows),
          "filters", out)
    rc, out, err = alice.run("submissions", "--limit", "2")
    m = re.search(r"\(more: add --cursor (\S+)\)", out)
    check(rc == 0 and len(out.splitlines()) == 5 and m, "--limit 2 shows two and how to go on", out)
    if m:
        rc, out, err = alice.run("submissions", "--limit", "2", "--cursor", m.group(1))
        check(rc == 0 and [int(l.split()[0]) for l in out.splitlines()[2:4]] == mine[2:4], "--cursor goes on", out)
    rc, out, err = alice.run("--json", "submissions", "--limit", "3")
    d = json.loads(out) if rc == 0 else {}
    check([s["id"] for s in d.get("submissions", [])] == mine[:3] and d.get("next_cursor"),
          "--json submissions: one page as the server sends it", out[:200])
    rc, out, err = alice.run("submissions", "--user", "bob")
    check(rc == 2 and "HTTP 403 forbidden" in err, "a user cannot list another's", (rc, err))
    rc, out, err = admin.run("submissions", "--user", "alice", "--limit", "500")
    check(rc == 0 and len([l for l in out.splitlines()[2:] if l.strip()]) == len(mine) and " alice " in out,
          "an admin lists alice's", out[:300])


def test_show(t):
    alice, bob, c = t["alice"], t["bob"], api(t["port"])
    sid, wrong = t["accepted"], t["wrong"]
    rc, out, err = alice.run("show", str(sid))
    check(rc == 0 and out.startswith("#%d fp8_quant on H200, leaderboard mode, by alice: accepted\n" % sid) and
          "rank #1 of" in out and "95% CI of the median" in out, "show: summary, rank and timings", out)
    rc, out, err = alice.run("show", str(wrong))
    check(rc == 0 and "at [0, 17] expected 1.5 got 2" in out, "show of a failure: its evidence (exit 0)", (rc, out))
    rc, out, err = alice.run("show", str(sid), "--source")
    check(rc == 0 and out == "// FAKE:accept\n" + TEMPLATE, "show --source, byte for byte", rc)
    rc, out, err = alice.run("--json", "show", str(sid))
    check(rc == 0 and json.loads(out) == c.get("/api/v1/submissions/%d" % sid, t["tok_alice"])[2],
          "--json show is the server's JSON", out[:200])
    rc, out, err = alice.run("show", str(t["pty_sub"]), "--diff")
    check(rc == 0 and "--- a/quant.cu (#%d)\n+++ b/slow.cu (#%d)\n" % (sid, t["pty_sub"]) in out and
          "-// FAKE:accept\n+// FAKE:slow\n" in out, "show --diff: against the previous submission", out)
    rc, out, err = alice.run("show", str(wrong), "--diff", str(sid))
    check(rc == 0 and "--- a/quant.cu (#%d)\n+++ b/wrong.cu (#%d)\n" % (sid, wrong) in out and
          "-// FAKE:accept\n+// FAKE:wrong\n" in out, "show ID --diff ID2: any two of one's own", out)
    rc, out, err = alice.run("show", str(sid), "--diff", str(sid))
    check(rc == 0 and "have the same source" in out, "the same source twice", out)
    rc, out, err = bob.run("show", str(sid))
    check(rc == 0 and "by alice: accepted" in out, "anyone may read the public view", (rc, err))
    head = [l for l in out.splitlines() if l.startswith("shape ")]
    check(head and head[0].split() == ["shape", "median"] and " -  " not in out,
          "the public view's timing table leaves out the columns bob may not see (no column of '-')", out)
    rc, out, err = bob.run("show", str(sid), "--source")
    check(rc == 2 and "is not shown to you" in err, "but not another's source", (rc, err))
    rc, out, err = alice.run("show", "999999")
    check(rc == 2 and "not found (HTTP 404 not_found): no submission '999999'" in err, "404: no such submission",
          (rc, err))
    rc, out, err = alice.run("show", "abc")
    check(rc == 2 and "name a submission by its number" in err, "show abc: usage error", (rc, err))
    rc, out, err = alice.run("--json", "show", "1", "--diff", "2")
    check(rc == 2 and "drop --json" in err, "--json with a pairwise diff is refused", (rc, err))


def test_events(t):
    alice, bob, c = t["alice"], t["bob"], api(t["port"])
    sid = t["wrong"]
    rc, out, err = alice.run("events", str(sid))
    # A finished job's replay starts at its compile (no "no longer waiting" line), and a test
    # is named by the same index from 0 as in the verdict.
    want = ["compiling for sm_90a", "compiled in 0.41 s: quant (16 registers)",
            "test 0 T=1 H=256 GS=64 (1 of 5): pass", "test 1 T=4 H=512 GS=128 (2 of 5): pass",
            "test 2 T=16 H=1024 GS=64 (3 of 5): fail: x_q: 12 of 1024 elements differ",
            "verdict: wrong_answer: test 2: x_q: 12 of 1024 elements differ"]
    check(rc == 0 and out.splitlines() == want, "events: the recorded events, one line each, numbered as the verdict",
          out)
    rc, out, err = alice.run("--json", "events", str(sid))
    check(rc == 0 and json.loads(out) == c.get("/api/v1/submissions/%d/events" % sid, t["tok_alice"])[2],
          "--json events is the server's JSON", out[:200])
    rc, out, err = bob.run("events", str(sid))
    check(rc == 2 and "not found (HTTP 404 not_found)" in err,
          "another user's events: 404, as for an id that does not exist", (rc, err))


def test_withdraw_rankings(t):
    alice, c = t["alice"], api(t["port"])
    rc, out, err = alice.run("rankings", "fp8_quant")
    check(rc == 0 and out.startswith("fp8_quant on H200 (also: B200, with --gpu)\n") and
          re.search(r"\n\s+1  alice\s+12\.321 us\s+%d\s" % t["accepted"], out) and
          "shape 1: T=256 H=4096 GS=128" in out, "rankings: the first GPU type, a table, the shapes", out)
    rc, out, err = alice.run("--json", "rankings", "fp8_quant", "--gpu", "B200")
    check(rc == 0 and json.loads(out) == c.get("/api/v1/leaderboards/fp8_quant/rankings?gpu=B200")[2],
          "--json rankings", out[:200])
    rc, out, err = alice.run("rankings", "fp8_quant", "--gpu", "A100")
    check(rc == 2 and "bad request (HTTP 400 unknown_gpu)" in err, "a GPU type the board lacks", (rc, err))
    rc, out, err = alice.run("withdraw", str(t["wrong"]), "--yes")
    check(rc == 2 and "refused in the current state (HTTP 409 not_ranked)" in err, "409: not ranked", (rc, err))
    # Withdrawing cannot be undone: without --yes a pipe is refused, a terminal is asked.
    rc, out, err = alice.run("withdraw", str(t["accepted"]))
    check(rc == 2 and "cannot be undone: add --yes" in err and out == "", "withdraw without --yes in a pipe: refused",
          (rc, out, err))
    rc, out = alice.run_pty("withdraw", str(t["accepted"]), answer="n\n")
    check(rc == 2 and "This cannot be undone. [y/N]" in out and "not withdrawn" in out,
          "withdraw on a terminal asks, and 'n' keeps it", (rc, out))
    rc, out, err = alice.run("rankings", "fp8_quant")
    check(rc == 0 and re.search(r"\n\s+1  alice\s+12\.321 us\s+%d\s" % t["accepted"], out),
          "withdraw: a refused or declined one is still ranked", out)
    rc, out = alice.run_pty("withdraw", str(t["accepted"]), answer="y\n")
    check(rc == 0 and "withdrew #%d from the rankings at " % t["accepted"] in out, "withdraw on a terminal: 'y' does it",
          (rc, out))
    rc, out, err = alice.run("withdraw", "--yes", str(t["pty_sub"]))
    check(rc == 0 and out.startswith("withdrew #%d from the rankings at " % t["pty_sub"]), "withdraw --yes",
          (rc, out, err))
    rc, out, err = alice.run("withdraw", str(t["accepted"]), "--yes")
    check(rc == 0 and "was already withdrawn" in out, "withdrawing again", (rc, out))
    rc, out, err = alice.run("rankings", "fp8_quant")
    check(rc == 0 and "(none)" in out, "withdrawn submissions leave the rankings", out)
    rc, out, err = alice.run("submissions", "--mode", "leaderboard", "--gpu", "H200")
    check("accepted (withdrawn)" in out, "the list marks them", out)
    rc, out, err = alice.run("show", str(t["accepted"]))
    check("withdrawn from the rankings by its owner at" in out and "rank #" not in out, "show marks it", out)


# ---------------------------------------------------------------------------
# admin
# ---------------------------------------------------------------------------

def test_admin(t):
    admin, alice, bob = t["admin"], t["alice"], t["bob"]
    rc, out, err = admin.run("admin", "users")
    line = [l for l in out.splitlines() if l.startswith("alice ")]
    n = len(api(t["port"]).get("/api/v1/submissions?limit=500", t["tok_alice"])[2]["submissions"])
    check(rc == 0 and line and line[0].split()[1:3] == ["user", "no"] and line[0].split()[4] == str(n),
          "admin users: alice with her submission count", out)
    rc, out, err = alice.run("admin", "users")
    check(rc == 2 and "not allowed (HTTP 403 forbidden): only an admin may do this" in err,
          "403: a user cannot", (rc, err))
    rc, out, err = admin.run("admin", "stats")
    check(rc == 0 and out.startswith("users: ") and "fp8_quant    leaderboard  accepted" in out and
          "\nqueues:\n" in out and re.search(r"\nH200\s+\d+\s+\d+\s+(-|\d+ s)\n", out) and
          re.search(r"\nfake-0\s+H200\s+(idle|active)\s+\d{4}-", out), "admin stats", out)
    rc, out, err = admin.run("--json", "admin", "stats")
    check(rc == 0 and "by_leaderboard" in json.loads(out).get("submissions", {}), "--json admin stats", out[:200])
    rc, out, err = admin.run("admin", "invite", "--days", "2")
    m = re.search(r"invite code \(single use, valid until \S+\): (\S+)\nthe newcomer runs: kjudge login %s "
                  r"--invite \S+ --name NAME\n" % re.escape(t["url"]), out)
    check(rc == 0 and m, "admin invite prints the code and the command", out)
    rc, out, err = admin.run("admin", "invite", "--days", "0")
    check(rc == 2 and "--days must be 1 to 365" in err, "a bad --days", (rc, err))
    rc, out, err = admin.run("admin", "ban", "bob")
    check(rc == 0 and out == "banned bob\n", "admin ban", (rc, out, err))
    rc, out, err = bob.run("whoami")
    check(rc == 2 and "not allowed (HTTP 403 banned): this account is banned" in err, "a banned user is told", (rc, err))
    rc, out, err = admin.run("admin", "unban", "bob")
    check(rc == 0 and bob.run("whoami")[0] == 0, "admin unban", (rc, out, err))
    rc, out, err = admin.run("admin", "disqualify", str(t["crash"]), "--reason", "copied")
    check(rc == 0 and out.startswith("disqualified #%d" % t["crash"]), "admin disqualify", (rc, out, err))
    rc, out, err = alice.run("show", str(t["crash"]))
    check("disqualified: copied" in out, "the owner sees the reason", out)
    rc, out, err = admin.run("admin", "disqualify", str(t["crash"]))
    check(rc == 2 and "--reason TEXT" in err, "disqualify needs a reason", (rc, err))
    rc, out, err = admin.run("admin", "publish", "fp8_quant")
    check(rc == 2 and "refused in the current state (HTTP 409 deadline_not_passed)" in err,
          "409: publishing before the deadline", (rc, err))
    rc, out, err = admin.run("admin", "publish", "closed_quant")
    check(rc == 0 and out.startswith("the sources of closed_quant are published"), "admin publish", (rc, out, err))
    rc, out, err = alice.run("template", "closed_quant", "--reference")
    check(rc == 0 and out.encode() == REFERENCE, "then a user downloads its reference", rc)
    rc, out, err = admin.run("admin", "reload")
    check(rc == 0 and out.startswith("reloaded 3 leaderboards\nunchanged: closed_quant fp8_quant solo_quant"),
          "admin reload", (rc, out, err))
    rc, out, err = admin.run("admin", "frobnicate")
    check(rc == 2 and "unknown subcommand" in err, "an unknown admin subcommand", (rc, err))


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------

COMPLETION = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                          "deploy", "bash-completion", "kjudge")


def complete(user, *words):
    """What deploy/bash-completion/kjudge offers for `kjudge WORDS` (the last word being completed)."""
    script = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _kjudge; '
              'printf "%s\\n" "${COMPREPLY[@]}"')
    p = subprocess.run(["bash", "-c", script, "complete", COMPLETION, KJ] + list(words), env=user.env,
                       capture_output=True, text=True, timeout=60)
    return sorted(x for x in p.stdout.split("\n") if x), p.stderr


def test_completion(t):
    alice, c = t["alice"], api(t["port"])
    got, err = complete(alice, "")
    check({"submit", "show", "boards", "board", "rankings", "admin", "help"} <= set(got) and not err,
          "completion: the commands, from kjudge --help", (got, err[-200:]))
    boards = sorted(b["name"] for b in c.get("/api/v1/leaderboards")[2]["leaderboards"])
    got, _ = complete(alice, "board", "")
    check(got == boards and "solo_quant" in got, "completion: board names from the server", got)
    got, _ = complete(alice, "--json", "rankings", "cl")
    check(got == ["closed_quant"], "completion: a board's prefix, --json before the command", got)
    got, _ = complete(alice, "submit", "x.cu", "--gpu", "")
    check(got == ["B200", "H200"], "completion: GPU types from the boards", got)
    got, _ = complete(alice, "submit", "x.cu", "--mode", "")
    check(got == sorted(["test", "benchmark", "leaderboard", "profile", "sanitize"]),
          "completion: modes from the command's usage", got)
    got, _ = complete(alice, "submit", "--le")
    check(got == ["--leaderboard"], "completion: a command's options from kjudge help COMMAND", got)
    mine = sorted(str(s["id"]) for s in c.get("/api/v1/submissions?limit=50", t["tok_alice"])[2]["submissions"])
    got, _ = complete(alice, "show", "")
    check(got == mine and len(mine) > 1, "completion: your submission ids (%d) from the server" % len(mine), got[:5])
    got, _ = complete(alice, "admin", "p")
    check(got == ["publish"], "completion: admin's subcommands", got)
    got, _ = complete(t["fresh"], "board", "")
    check(got == [], "completion: nothing (and no error text) without a configured server", got)


def run_all(t):
    test_login(t)
    test_boards(t)
    test_submit_pipe(t)
    test_submit_pty(t)
    test_submit_failures(t)
    test_submit_json(t)
    test_submit_directives(t)
    test_submit_python(t)
    test_lists(t)
    test_show(t)
    test_events(t)
    test_withdraw_rankings(t)
    test_admin(t)
    test_completion(t)
    test_no_secret_printed()


def main():
    if not check(all(os.access(b, os.X_OK) for b in (BIN, KJ)), "%s and %s are built" % (BIN, KJ)):
        return summary("test_cli")
    with tempfile.TemporaryDirectory(prefix="kjudge-cli-") as tmp:
        boards = os.path.join(tmp, "boards")
        os.makedirs(boards)
        shutil.copytree(BOARD_DIR, os.path.join(boards, "fp8_quant"))
        copy_board(boards, "closed_quant", deadline="2020-01-01T00:00:00Z")
        copy_board(boards, "solo_quant", gpus=["H200"])
        srv = Server(tmp, extra=["--leaderboards", boards],
                     rate_flags=["--rate-limit-test", "0", "--rate-limit-benchmark", "1",
                                 "--rate-limit-leaderboard", "0"])
        if not check(srv.start(), "the server starts"):
            return summary("test_cli")
        runner = None
        try:
            t = {"tmp": tmp, "srv": srv, "port": srv.port, "url": "http://127.0.0.1:%d" % srv.port,
                 "tok_admin": srv.printed().strip()}
            for name in ["alice", "bob", "rl"]:
                t["tok_" + name] = srv.cli("user", "add", name, "--db", srv.db)[1].strip()
            tok_runner = srv.cli("runner", "add", "fake-0", "--gpu", "H200,B200", "--db", srv.db)[1].strip()
            SECRETS.extend([t["tok_admin"], t["tok_alice"], t["tok_bob"], t["tok_rl"], tok_runner])
            for name in ["alice", "bob", "carol", "admin", "fresh"]:
                t[name] = Cli(tmp, name)
            t["rl"] = Cli(tmp, "rl", env={"KJUDGE_URL": t["url"], "KJUDGE_TOKEN": t["tok_rl"]})
            runner = FakeRunner(srv.port, tok_runner, name="fake-0").start()
            t["runner"] = runner
            run_all(t)
        finally:
            if runner is not None:
                runner.stop()
            srv.stop()
    return summary("test_cli")


if __name__ == "__main__":
    sys.exit(main())
