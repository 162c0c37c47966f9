#!/usr/bin/env python3
"""test_web_python.py - Python submissions on the web site, in headless
Chromium (Selenium, as test_web.py).

Starts a server with fp8_quant (which takes Python) and a copy of it that
takes CUDA only, ranks one Python and one CUDA submission, then checks: the
submit page's language picker (PTX with its editor mode and template.ptx;
Python offered only where the board takes
it; choosing it puts the editor in CodeMirror's Python mode, the file name
in .py, and "Start from the template" loads template.py); a .py file
uploaded in the browser switches to Python and is stored as python; the
board page offers template.py and shows custom_kernel's tuple; the
rankings table has a language column with a badge per entry; the
submission page says the language. KJUDGE_SCREENS=DIR saves screenshots at
1366x900 and 390x844. Ends with "test_web_python: N passed, N failed, N
skipped".
"""
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_web  # noqa: E402  (re-executes under .venv-browser when Selenium is missing here)
from test_web import Browser, sign_in  # noqa: E402
from kjcheck import check, skip, summary  # noqa: E402
from kjhttp import Client  # noqa: E402
from kjservice import ROOT, BIN  # noqa: E402
from kjtest import DEFAULT_MEDIANS, GOOD_SOURCE, claim, make_runners, make_users, result_body  # noqa: E402
import kjtest  # noqa: E402

SIZES = [("laptop", (1366, 900)), ("phone", (390, 844))]
CUDA_ONLY = "cuda_quant"
PY = ("#!POPCORN leaderboard fp8_quant\n#!POPCORN gpu H200\nfrom task import input_t, output_t\n\n"
      "def custom_kernel(data: input_t) -> output_t:\n    x, x_q, x_s = data\n    return x_q, x_s\n")



def scaled(score):
    """Medians of the board's three shapes that are physically possible (the
    server refuses times under a shape's floor), ordered as score orders them."""
    return tuple(m * score / 3000.0 for m in DEFAULT_MEDIANS)

def shot(b, name):
    d = os.environ.get("KJUDGE_SCREENS")
    if d:
        os.makedirs(d, exist_ok=True)
        b.save_full(os.path.join(d, name + ".png"))


def rank_two(srv, c, alice, bob, runner):
    """alice's Python and bob's CUDA submission, accepted in leaderboard mode."""
    for tok, name, src, score in [(alice, "q.py", PY, 3000.0), (bob, "k.cu", GOOD_SOURCE, 4000.0)]:
        st, _, d, _ = c.submit(tok, [("leaderboard", "fp8_quant"), ("gpu", "H200"), ("mode", "leaderboard")],
                               [("file", name, src.encode())])
        job = claim(c, runner, "H200") if st == 202 else None
        ok = job is not None and c.post_json("/api/v1/runner/jobs/%d/result?attempt=%d" % (job["id"], job["attempt"]),
                                             result_body("accepted", None, "leaderboard", medians=scaled(score)), runner)[0] == 200
        if not check(ok, "rank %s" % name, (st, d)):
            return False
    return True


def test_submit_page(b, c, alice):
    b.go("#/submit?board=" + CUDA_ONLY)
    b.wait(lambda x: x.js("return !!document.getElementById('f-lang')"), "the submit form")
    check(b.js("return document.querySelector('#f-lang option[value=python]').disabled") is True,
          "submit: Python is not offered on a CUDA-only board")
    b.js("const s = document.getElementById('f-board'); s.value = 'fp8_quant'; s.dispatchEvent(new Event('change'))")
    check(b.js("return document.querySelector('#f-lang option[value=python]').disabled") is False,
          "submit: Python is offered on fp8_quant")
    b.wait(lambda x: x.js("return !!document.querySelector('.CodeMirror')"), "the editor")
    b.js("const s = document.getElementById('f-lang'); s.value = 'python'; s.dispatchEvent(new Event('change'))")
    check(b.js("return document.querySelector('.CodeMirror').CodeMirror.getOption('mode')") == "text/x-python",
          "submit: choosing Python puts the editor in Python mode")
    check(b.js("return document.getElementById('f-name').value").endswith(".py"), "submit: the file name is .py")
    b.js("window.confirm = () => true")
    b.js("[...document.querySelectorAll('button')].find(e => e.textContent.startsWith('Start from')).click()")
    check(b.wait(lambda x: "def custom_kernel" in x.js("return document.querySelector('.CodeMirror').CodeMirror"
                                                      ".getValue()"), "template.py in the editor"),
          "submit: the template button loads template.py")
    b.js("const s = document.getElementById('f-lang'); s.value = 'ptx'; s.dispatchEvent(new Event('change'))")
    check(b.js("return document.querySelector('.CodeMirror').CodeMirror.getOption('mode')") == "text/x-csrc" and
          b.js("return document.getElementById('f-name').value").endswith(".ptx"),
          "submit: choosing PTX puts the editor in C-like mode and names the file .ptx")
    b.js("[...document.querySelectorAll('button')].find(e => e.textContent.startsWith('Start from')).click()")
    check(b.wait(lambda x: ".version" in x.js("return document.querySelector('.CodeMirror').CodeMirror"
                                              ".getValue()"), "template.ptx in the editor"),
          "submit: the template button loads template.ptx")
    b.js("const s = document.getElementById('f-lang'); s.value = 'python'; s.dispatchEvent(new Event('change'))")
    for name, size in SIZES:
        b.size(*size)
        shot(b, "submit-python-" + name)
        w = b.js("return document.documentElement.scrollWidth")
        check(w <= size[0], "submit at %s: nothing wider than the window (%d px)" % (name, w))
        check(b.js("return [document.getElementById('f-tool'), document.getElementById('f-shape')]"
                   ".every(e => e.getBoundingClientRect().height === 0)"),
              "submit at %s: the sanitize and profile options are hidden in test mode" % name)
    b.size(*SIZES[0][1])
    # a .py uploaded through the file input
    path = os.path.join(tempfile.gettempdir(), "kj-web-upload.py")
    with open(path, "w") as f:
        f.write(PY)
    b.js("const s = document.getElementById('f-lang'); s.value = 'cuda'; s.dispatchEvent(new Event('change'))")
    from selenium.webdriver.common.by import By
    b.d.find_element(By.ID, "f-file").send_keys(path)
    check(b.wait(lambda x: x.js("return document.getElementById('f-lang').value") == "python", "lang python"),
          "submit: a .py file switches the language to Python")
    check(b.js("return document.querySelector('.CodeMirror').CodeMirror.getOption('mode')") == "text/x-python",
          "submit: and the editor's mode")
    b.js("document.querySelector('form.submit button[type=submit]').click()")
    ok = b.wait(lambda x: "#/submission/" in x.d.current_url, "the submission's page")
    sid = int(b.d.current_url.rsplit("/", 1)[1]) if ok else None
    check(ok, "submit: the .py is sent", b.text(".msg"))
    if sid:
        st, _, d, _ = c.get("/api/v1/submissions/%d" % sid, alice)
        check(st == 200 and d.get("lang") == "python" and d.get("file_name") == "kj-web-upload.py",
              "submit: stored as python", d)
        check(b.has_text("Python", "dl.facts"), "submission page: the language is shown")
    os.unlink(path)


def test_board_pages(b):
    b.go("#/board/fp8_quant")
    check(b.has_text("template.py", ".downloads"), "board: template.py to download")
    check(b.has_text("x, x_q, x_s = data", "aside.facts"), "board: custom_kernel's tuple is shown")
    b.go("#/board/fp8_quant/rankings/H200")
    check(b.wait(lambda x: len(x.texts("table.rank tbody tr")) == 2, "two rows"), "rankings: two rows")
    langs = b.texts("table.rank tbody td.lang")
    check(langs == ["Python", "CUDA"], "rankings: a language badge per row", langs)
    for name, size in SIZES:
        b.size(*size)
        b.go("#/board/fp8_quant/rankings/H200")
        b.wait(lambda x: len(x.texts("table.rank tbody tr")) == 2, "the rankings")
        shot(b, "rankings-" + name)
        wide = b.js("return document.documentElement.scrollWidth > window.innerWidth + 1")
        check(not wide, "rankings at %s: nothing wider than the window" % name)
        b.go("#/board/fp8_quant")
        b.has_text("In Python", "aside.facts")
        shot(b, "board-" + name)
    b.size(*SIZES[0][1])


def main():
    if not check(os.access(BIN, os.X_OK), "%s is built" % BIN):
        return summary("test_web_python")
    if not (shutil.which("chromium") or os.path.exists("/usr/bin/chromium")):
        skip("the web site in a browser", "no chromium")
        return summary("test_web_python")
    with tempfile.TemporaryDirectory(prefix="kjudge-webpy-") as tmp:
        boards = os.path.join(tmp, "boards")
        os.makedirs(boards)
        shutil.copytree(os.path.join(ROOT, "leaderboards", "fp8_quant"), os.path.join(boards, "fp8_quant"))
        shutil.copytree(os.path.join(ROOT, "leaderboards", "fp8_quant"), os.path.join(boards, CUDA_ONLY))
        p = os.path.join(boards, CUDA_ONLY, "leaderboard.json")
        spec = json.load(open(p))
        del spec["python"]
        spec["name"] = CUDA_ONLY
        json.dump(spec, open(p, "w"))
        srv = kjtest.Server(tmp, boards=boards)
        if not check(srv.start(), "the server starts"):
            return summary("test_web_python")
        b = None
        try:
            c = Client(srv.port)
            alice, bob = make_users(srv, "alice", "bob")
            runner, = make_runners(srv, "h200-0")
            if rank_two(srv, c, alice, bob, runner):
                b = Browser(srv.port, size=SIZES[0][1])
                if check(sign_in(b, alice), "signed in"):
                    test_board_pages(b)
                    test_submit_page(b, c, alice)
        finally:
            if b is not None:
                b.d.quit()
            srv.stop()
    return summary("test_web_python")


if __name__ == "__main__":
    sys.exit(main())
