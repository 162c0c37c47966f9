#!/usr/bin/env python3
"""test_web.py - the web site as a participant sees it, in a real browser.

Headless Chromium (Debian's chromium and chromium-driver) driven by
Selenium (deploy/browser-requirements.txt, in .venv-browser/ made by
deploy/deps.sh --test; this script re-runs itself under that Python),
against a real bin/kjudge-server on a loopback port whose submissions are
judged by the fake runner of the API tests (tests/api/fakerunner.py)
through the runner protocol. It checks what a user sees, not the DOM's
shape:

- the boards on the home page with their leader and a ticking countdown;
- signing in with a token and registering with an invite (the token shown
  once), the token kept in sessionStorage only: never in a URL the browser
  requested, in localStorage or in a cookie;
- a board's statement and its rankings: the signed-in user's row marked,
  per-shape medians, the resolution per GPU type (ranks closer than it
  marked "=", none here), the best score over time (a chart and its
  records);
- the participant's and the board author's guides, linked from the footer
  and rendered from docs/participant.md and docs/boards.md (served under
  /static/docs/, nothing else there);
- a wrong answer's verdict and mismatches (indices, expected, got), a
  compile log whose line reference shows that line of the source, a CUDA
  error;
- a running job's progress (queue position, compile, each test, each
  shape) updating without a reload, while the fake runner is held between
  its events;
- a file uploaded in the submit form appearing, judged, in My submissions,
  with the filters working;
- the diff against a chosen earlier submission (and the line diff itself
  against a minimal edit count, on random inputs), the source highlighted
  and numbered, math in Markdown;
- a board whose description.md holds raw HTML (a meta refresh, an img with
  onerror, a script) and javascript:/data:/vbscript: links: the HTML shows
  as text, the page stays, those links lose their target;
- another user's source never shown; the admin page for an admin only;
- on a phone-sized screen the page does not overflow sideways (tables
  scroll inside their box);
- with the libraries missing (serve --vendor naming no folder) the pages
  still show everything as plain text;
- throughput (GB/s, % of the bound) beside the times; a wrong answer's
  sentence once, with absolute errors and the tolerance; a profile's short
  first view (the report offered only when stored); racecheck's alike rows
  grouped, their file:line showing the source line; the note of a GPU type
  no runner serves (on the job's page and that GPU's rankings); a queued
  previous submission named as queued; the top three per GPU on the home
  page and each ranked name leading to that user's entries; chart ticks
  without trailing zeros; the signature named as the template names it and
  the statement's curl example with this server's address; the submit form
  on the board last shown, with its template, showing the chosen mode's
  fields only;
- every page at laptop and phone width: no sideways overflow (tables scroll
  inside their box), no console error (no refused reference probe).

Set KJUDGE_SCREENS=DIR to also save screenshots (laptop 1366x800 and phone
390x844) there. Each check prints "ok" or "FAIL" with what it checked; ends
with "test_web: N passed, N failed, N skipped" and exits 1 on failure.
"""
import json
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VENV = os.path.join(ROOT, ".venv-browser")

try:
    import selenium  # noqa: F401
except ImportError:
    py = os.path.join(VENV, "bin", "python3")
    if os.path.exists(py) and os.path.realpath(sys.prefix) != os.path.realpath(VENV):
        os.execv(py, [py] + sys.argv)

sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts  # noqa: E402
from kjhttp import Client  # noqa: E402
from kjservice import BIN  # noqa: E402
from kjtest import GOOD_SOURCE  # noqa: E402
import kjtest  # noqa: E402
from fakerunner import FakeRunner  # noqa: E402

LAPTOP = (1366, 800)
PHONE = (390, 844)
SCREENS = os.environ.get("KJUDGE_SCREENS", "")
WAIT = 15


def see(cond, what, detail=""):
    """Count one check and print it: every check says what it looked at."""
    if cond:
        Counts.passed += 1
        print("ok   %s" % what, flush=True)
    else:
        Counts.failed += 1
        print("FAIL %s%s" % (what, (": " + str(detail)[:500]) if detail else ""), flush=True)
    return cond


def summary():
    print("test_web: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


class Browser:
    """One headless Chromium tab on the server at port."""

    def __init__(self, port, size=LAPTOP):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        o = webdriver.ChromeOptions()
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--lang=en-US",
                  "--disable-extensions", "--no-first-run", "--window-size=%d,%d" % size):
            o.add_argument(a)
        o.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        o.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
        self.d = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=o)
        self.base = "http://127.0.0.1:%d/" % port
        self.requests = []   # every URL the browser asked for, with its request headers
        self.size(*size)

    def size(self, w, h):
        self.d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": w, "height": h, "deviceScaleFactor": 1, "mobile": w < 600})

    def go(self, route):
        self.d.get(self.base + route)

    def js(self, script, *args):
        return self.d.execute_script(script, *args)

    def wait(self, cond, what, timeout=WAIT):
        """Wait until cond(self) is true (the page updates by itself); False on timeout."""
        end = time.time() + timeout
        while time.time() < end:
            try:
                if cond(self):
                    return True
            except Exception:  # an element not there yet
                pass
            time.sleep(0.05)
        print("     (waited %d s for %s)" % (timeout, what), flush=True)
        return False

    def text(self, css="body"):
        """textContent of the first element matching css ("" when none)."""
        return self.js("const e = document.querySelector(arguments[0]); return e ? e.textContent : ''", css) or ""

    def texts(self, css):
        return self.js("return [...document.querySelectorAll(arguments[0])].map(e => e.textContent)", css)

    def has_text(self, text, css="body"):
        return self.wait(lambda b: text in b.text(css), repr(text))

    def shot(self, name):
        if SCREENS:
            os.makedirs(SCREENS, exist_ok=True)
            self.d.save_screenshot(os.path.join(SCREENS, name + ".png"))

    def save_full(self, path):
        """A screenshot of the whole page, not only what fits the window."""
        import base64
        m = self.d.execute_cdp_cmd("Page.getLayoutMetrics", {})
        size = m.get("cssContentSize") or m["contentSize"]
        shot = self.d.execute_cdp_cmd("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 6000), "scale": 1}})
        with open(path, "wb") as f:
            f.write(base64.b64decode(shot["data"]))

    def collect(self):
        """Take the browser's network log into self.requests."""
        for entry in self.d.get_log("performance"):
            m = json.loads(entry["message"])["message"]
            if m.get("method") == "Network.requestWillBeSent":
                r = m["params"]["request"]
                self.requests.append((r["url"], r.get("headers", {})))

    def quit(self):
        try:
            self.collect()
        finally:
            self.d.quit()


def src(tag, extra=""):
    return "// %s\n%s" % (tag, extra) + GOOD_SOURCE


A1 = src("kernel by alice", "// FAKE:scale=1.0\n")
A2 = src("kernel by alice", "// FAKE:scale=0.8\n// unrolled by 4\n")
B1 = src("kernel by bob BOBSECRETMARKER", "// FAKE:scale=0.9\n")


class Site:
    """The server, its users and its data, judged by the fake runner."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.srv = kjtest.Server(tmp)
        self.ok = self.srv.start()
        self.c = Client(self.srv.port)
        self.ids = {}
        self.fr = None
        if not self.ok:
            return
        self.admin = self.srv.printed().strip()
        self.tok = {n: self.srv.cli("user", "add", n, "--db", self.srv.db)[1].strip() for n in ("alice", "bob")}
        runner = self.srv.cli("runner", "add", "fake-0", "--gpu", "H200,B200", "--db", self.srv.db)[1].strip()
        self.runner_tok = runner
        # H200 only: no runner serves B200, whose jobs wait with a note.
        self.fr = FakeRunner(self.srv.port, runner, gpus=("H200",), pause=0.01).start()

    def submit(self, user, source, mode="leaderboard", gpu="H200", name="kernel.cu", wait=True, extra=()):
        st, _, d, _ = self.c.submit(self.tok[user], [("leaderboard", "fp8_quant"), ("gpu", gpu), ("mode", mode)] +
                                    list(extra), [("file", name, source.encode())])
        sid = d["id"] if st == 202 else None
        if sid and wait:
            self.wait_done(user, sid)
        return sid

    def wait_done(self, user, sid, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            st, _, d, _ = self.c.get("/api/v1/submissions/%d" % sid, self.tok[user])
            if st == 200 and d.get("status") == "done":
                return d
            time.sleep(0.05)
        return None

    def fill(self):
        ids = self.ids
        ids["a1"] = self.submit("alice", A1)
        ids["b1"] = self.submit("bob", B1)
        ids["a2"] = self.submit("alice", A2)
        ids["wrong"] = self.submit("alice", src("wrong", "// FAKE:wrong\n"), mode="test")
        ids["cerr"] = self.submit("alice", src("oops", "// FAKE:compile\n"), mode="test")
        ids["crash"] = self.submit("alice", src("crash", "// FAKE:crash\n"), mode="benchmark")
        ids["bwrong"] = self.submit("bob", src("bob wrong BOBSECRETMARKER", "// FAKE:wrong\n"), mode="test")
        return all(ids.values())


def sign_in(b, token):
    """Through the sign-in form, as a person would."""
    b.go("#/signin")
    b.wait(lambda x: x.js("return !!document.getElementById('signin-token')"), "the sign-in form")
    from selenium.webdriver.common.by import By
    b.d.find_element(By.ID, "signin-token").send_keys(token)
    b.d.find_element(By.CSS_SELECTOR, "#signin-token").submit()
    return b.wait(lambda x: x.d.current_url.endswith("#/me") and x.text("#who .name"), "signed in")


# ---------------------------------------------------------------------------

def test_home(b, site):
    b.go("")
    see(b.has_text("FP8 per-group activation quantization", ".tiles"), "home: the boards are shown as tiles")
    b.wait(lambda x: x.js("return [...document.querySelectorAll('article.tile')].some(t => t.textContent.includes('fp8_quant'))"),
           "the fp8_quant tile")
    b.js("[...document.querySelectorAll('article.tile')].find(t => t.textContent.includes('fp8_quant')).id = 'fp8tile'")
    tile = "#fp8tile"
    b.wait(lambda x: x.texts(tile + " ol.top3 li"), "the top three")
    t = b.text(tile)
    top = b.texts(tile + " ol.top3 li")
    links = b.js("return [...document.querySelectorAll(arguments[0] + ' ol.top3 li a')].map(a => a.getAttribute('href'))", tile)
    see("2 ranked" in t and len(top) == 2 and top[0].startswith("alice ") and top[1].startswith("bob ") and
        links[0] == "#/user/alice" and links[2] == "#/user/bob",
        "home: fp8_quant's tile shows 2 ranked and its top three on H200 (alice, bob), names linking to their entries",
        (t, top, links))
    see(re.search(r"closes in \d+ d \d\d:\d\d:\d\d", t) is not None, "home: the tile shows a countdown to the deadline", t)
    first = b.text(tile + " .deadline")
    see(b.wait(lambda x: x.text(tile + " .deadline") != first, "the countdown to tick", 4),
        "home: the countdown ticks without a reload", first)
    see("Sign in" in b.text("#who"), "home: an anonymous visitor is offered to sign in")
    b.shot("laptop-home-anonymous")


def test_signin(b, site):
    ok = sign_in(b, site.tok["alice"])
    see(ok and b.text("#who .name") == "alice", "sign-in: the token form signs alice in and lands on My submissions")
    see(site.tok["alice"] not in b.d.current_url, "sign-in: the token is not in the URL")
    store = b.js("return [localStorage.length, document.cookie, sessionStorage.getItem('kjudge-token')]")
    see(store[0] == 0 and store[1] == "" and store[2] == site.tok["alice"],
        "sign-in: the token is in sessionStorage only (no localStorage, no cookie)", store[:2])


def test_board(b, site):
    b.go("#/board/fp8_quant")
    see(b.has_text("What to compute", ".md h2"), "board: the statement is rendered from its Markdown (headings)")
    see(b.wait(lambda x: x.js("return document.querySelectorAll('pre.sig .hljs-keyword, pre.sig .hljs-type').length > 0"),
               "the signature's highlighting"), "board: the kernel signature is shown, highlighted")
    href = b.js("return [...document.querySelectorAll('.downloads a')].map(a => a.getAttribute('href'))")
    see(href == ["/api/v1/leaderboards/fp8_quant/files/template.cu", "/api/v1/leaderboards/fp8_quant/files/template.py",
                 "/api/v1/leaderboards/fp8_quant/files/description.md"],
        "board: the templates (CUDA, Python) and the statement can be downloaded", href)
    t = b.text(".facts")
    see("4096" in t and "7168" in t and "atol 0.001" in t, "board: the timed shapes and tolerances are listed", t[:300])
    see(b.wait(lambda x: "void quant(" in x.text("pre.sig"), "the kernel's name"),
        "board: the signature names the kernel as the template does (quant)", b.text("pre.sig"))
    md = b.text(".md")
    see(b.d.current_url.split("#")[0].rstrip("/") + "/api/v1/submissions" in md and "HOST" not in md,
        "board: the statement's curl example has this server's address", md[md.find("curl"):][:200])
    see(href == [a for a in href if "reference" not in a] and "reference.cu" not in b.text(".downloads"),
        "board: the reference is not offered to alice (not public, not published)", b.text(".downloads"))
    res = b.text(".facts .resolution")
    see("H200 0.85 %" in res and "B200 not measured" in res,
        "board: the resolution per GPU type of the measure that ranks is stated (GPU time: H200 measured, "
        "B200 not)", res)
    t = b.text(".facts")
    see("geomean of the medians, each the GPU time of the call's kernels" in t,
        "board: the measure that ranks is stated (GPU time: fp8_quant names no \"score\")", t[-400:])
    b.shot("laptop-board-problem")

    b.go("#/board/fp8_quant/rankings")
    see(b.wait(lambda x: x.js("return !!document.querySelector('table.rank')"), "the rankings"), "rankings: the table is shown")
    me = b.text("table.rank tr.me")
    see("alice" in me and "you" in me, "rankings: the signed-in user's row is marked", me)
    heads = b.texts("table.rank th.shape")
    see(heads == ["T=256 H=4096 GS=128", "T=256 H=8192 GS=128", "T=4096 H=7168 GS=128"],
        "rankings: one column per timed shape", heads)
    rows = b.texts("table.rank tbody tr")
    see(len(rows) == 2 and "988 ns" in rows[0] and "1.111 \u00b5s" in rows[1] and "bob" in rows[1],
        "rankings: each row has its per-shape medians (alice 988 ns, bob 1.111 us on the first shape)", rows)
    ranks = b.js("return [...document.querySelectorAll('table.rank tbody tr')].map(r => r.cells[0].textContent)")
    res = b.text("p.resolution")
    see(ranks == ["1", "2"] and "Resolution on H200: 0.65 %" in res and "tied (rank marked =)" in res,
        "rankings: 12 % apart is no tie (ranks 1, 2), and the resolution on H200 is stated", (ranks, res))
    rates = b.texts("table.rank tbody tr:first-child td.num span.rate")
    see(len(rates) == 3 and all(re.fullmatch(r"[0-9.]+ [GT]B/s \u00b7 [0-9.]+ % of bound", r) for r in rates),
        "rankings: each shape's median has its throughput and the share of its bound (the result's floor) "
        "beside it", rates)
    see(b.js("return document.querySelector('table.rank tbody tr:nth-child(2) a').getAttribute('href')") == "#/user/bob",
        "rankings: a user's name leads to that user's entries")
    see(b.wait(lambda x: x.js("return !!document.querySelector('.chartwrap canvas')"), "the chart"),
        "rankings: the best score over time is drawn as a chart")
    ticks = b.js("const c = window.Chart && Chart.getChart(document.querySelector('.chartwrap canvas'));"
                 "return c ? c.scales.y.ticks.map(t => String(t.label)) : null")
    see(ticks and not any(re.search(r"\.\d*0 ", t) for t in ticks),
        "rankings: the chart's score labels have no trailing zeros (10 \u00b5s, not 10.000 \u00b5s)", ticks)
    rec = b.texts(".chart details tbody tr")
    see(len(rec) == 3 and "#%d" % site.ids["a2"] in rec[0] and "#%d" % site.ids["a1"] in rec[2],
        "rankings: the records list each improvement of the best score (3)", rec)
    b.shot("laptop-board-rankings")
    # A history over weeks (the times moved back in the browser's fetch: the
    # server's are all from this run): the time axis labels dates, no times.
    b.js("const f = window.fetch; window.fetch = async (u, o) => {"
         "  const r = await f(u, o); if (!String(u).includes('/history')) return r;"
         "  const j = await r.json(), day = 86400e3, back = (p, i) => {"
         "    p.submitted_at = new Date(Date.parse(p.submitted_at) - (20 - 6 * i) * day).toISOString(); };"
         "  (j.records || []).forEach(back); (j.users || []).forEach(x => (x.points || []).forEach(back));"
         "  return new Response(JSON.stringify(j), {status: 200, headers: {'Content-Type': 'application/json'}}); };"
         "location.hash = '#/board/fp8_quant'")
    b.wait(lambda x: x.js("return !document.querySelector('.chartwrap canvas')"), "the board page")
    b.js("location.hash = '#/board/fp8_quant/rankings'")
    b.wait(lambda x: x.js("return !!document.querySelector('.chartwrap canvas')"), "the chart again")
    xjs = ("const c = window.Chart && Chart.getChart(document.querySelector('.chartwrap canvas'));"
           "return c && c.scales.x.ticks.length ? c.scales.x.ticks.map(t => String(t.label)) : null")
    b.wait(lambda x: x.js(xjs), "the time axis")
    xt = b.js(xjs)
    see(xt and 2 <= len(xt) <= 6 and all(re.fullmatch(r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{1,2}", t)
                                         for t in xt),
        "rankings: over weeks the time axis labels dates (Nov 12), at most six", xt)
    b.go("#/board/fp8_quant/rankings")


def test_guides(b, site):
    """The participant's and the board author's guides: linked from every page's footer, rendered from docs/."""
    links = b.js("return [...document.querySelectorAll('footer [data-guide-link]')].map(a => a.getAttribute('href'))")
    see(links == ["#/guide/participant", "#/guide/boards"], "guides: the footer links both guides", links)
    for name in ("participant", "boards"):
        with open(os.path.join(ROOT, "docs", name + ".md")) as f:
            md = f.read()
        title = re.search(r"^# (.+)$", md, re.M).group(1)
        h2 = re.findall(r"^## (.+)$", md, re.M)
        b.go("#/guide/" + name)
        b.wait(lambda x: x.text("article.guide .md h1"), "the guide's title")
        got = b.text("article.guide .md h1")
        heads = b.texts("article.guide .md h2")
        see(got == title and heads == [re.sub(r"[`*]", "", t) for t in h2],
            "guides: #/guide/%s renders docs/%s.md (title and %d sections)" % (name, name, len(h2)), (got, heads[:3]))
    c = Client(site.srv.port)
    st, h, _, raw = c.get("/static/docs/boards.md")
    with open(os.path.join(ROOT, "docs", "boards.md"), "rb") as f:
        same = raw == f.read()
    see(st == 200 and same and h.get("content-type", "").startswith("text/markdown"),
        "guides: GET /static/docs/boards.md is the file itself, as Markdown", (st, h.get("content-type")))
    others = {p: c.get(p)[0] for p in ("/static/docs/protocol.md", "/static/docs/../docs/boards.md",
                                      "/static/docs/", "/static/docs/boards.md.orig")}
    see(all(v == 404 for v in others.values()), "guides: no other file is served under /static/docs/", others)


def test_markdown_math(b):
    res = b.d.execute_async_script("""
      const done = arguments[arguments.length - 1];
      Promise.all([import('/static/js/markdown.js'), import('/static/js/libs.js')]).then(async ([md, libs]) => {
        const [marked, katex] = await Promise.all([libs.lib('marked'), libs.lib('katex')]);
        const el = md.renderMarkdown('Sum $x_i^2$ over *i*, then\\n\\n$$\\\\sum_{i} a_i$$\\n\\nand `$HOME` costs $5 and $6.',
                                     {marked, katex, hljs: null});
        done([el.querySelectorAll('.katex').length, el.querySelectorAll('.katex-display').length,
              el.querySelector('code') ? el.querySelector('code').textContent : '', el.textContent]);
      }).catch(e => done(['error', String(e)]));""")
    see(res[0] == 2 and res[1] == 1, "markdown: $..$ and $$..$$ become KaTeX math (inline and display)", res)
    see(res[2] == "$HOME" and "costs $5 and $6" in res[3], "markdown: dollars in code and in prose stay text", res)


EVIL_MD = """# Hostile statement

Raw HTML must show as text.

<meta http-equiv=refresh content="0;url=http://127.0.0.2/">

An image <img src=x onerror="document.title='pwned'"> inline, and a <script>document.title='pwned'</script> block.

<iframe src="http://127.0.0.2/"></iframe>

- [js](javascript:alert(1)) and [JS](JaVaScRiPt:alert(2)) and [tab](<java\tscript:alert(3)>)
- [data](data:text/html,<b>x</b>) and [vb](vbscript:msgbox) and <javascript:alert(4)>
- [ref][evil] and ![pic](javascript:alert(5))
- [web](https://example.org/) and [mail](mailto:a@example.org) and [here](#/board/fp8_quant) and [file](files/template.cu)

[evil]: javascript:alert(6)

Math still works: $x_i^2$.
"""


def test_hostile_statement(tmp, b):
    """A board's description.md is untrusted text too: its raw HTML is shown as text (no meta
    refresh sends the tab away, no img with onerror, no iframe) and links whose scheme is not
    http(s) or mailto lose their target; ordinary links, relative ones and math stay."""
    boards = os.path.join(tmp, "evil-boards")
    shutil.copytree(os.path.join(ROOT, "leaderboards", "fp8_quant"), os.path.join(boards, "evil"))
    spec_path = os.path.join(boards, "evil", "leaderboard.json")
    spec = json.load(open(spec_path))
    spec["name"] = "evil"
    json.dump(spec, open(spec_path, "w"), indent=2)
    with open(os.path.join(boards, "evil", spec.get("description", "description.md")), "w") as f:
        f.write(EVIL_MD)
    os.makedirs(os.path.join(tmp, "evil"))
    srv = kjtest.Server(os.path.join(tmp, "evil"), boards=boards)
    if not see(srv.start(), "hostile statement: a server with a board whose description.md is hostile starts"):
        return
    try:
        page = "http://127.0.0.1:%d/#/board/evil" % srv.port
        b.d.get(page)
        shown = b.has_text("Raw HTML must show as text", ".md")
        time.sleep(1.0)  # a meta refresh of 0 s would have fired by now
        see(shown and b.d.current_url == page, "hostile statement: the page stays (no meta refresh)",
            b.d.current_url)
        md = b.js("""const md = document.querySelector('.md');
                     return md ? {meta: document.querySelectorAll('meta[http-equiv]').length,
                                  bad: md.querySelectorAll('meta, img[onerror], script, iframe').length,
                                  text: md.textContent, title: document.title,
                                  links: [...md.querySelectorAll('a')].map(a => [a.textContent, a.getAttribute('href')]),
                                  imgs: [...md.querySelectorAll('img')].map(i => i.getAttribute('src')),
                                  katex: md.querySelectorAll('.katex').length} : null""") or {}
        see(md.get("meta") == 0 and md.get("bad") == 0 and md.get("title") != "pwned",
            "hostile statement: no meta, img onerror, script or iframe element in the page", md)
        see('<meta http-equiv=refresh' in md.get("text", "") and "<img src=x onerror" in md.get("text", ""),
            "hostile statement: the raw HTML is shown as text", md.get("text", "")[:300])
        links = dict(md.get("links") or [])
        bad = [(t, h) for t, h in md.get("links") or []
               if h is not None and re.match(r"\s*(javascript|data|vbscript|file):", h, re.I)]
        see(md.get("links") and not bad and not any(re.match(r"\s*(javascript|data|vbscript):", s or "", re.I) for s in md.get("imgs", [])),
            "hostile statement: no link or image keeps a javascript:, data: or vbscript: target", md.get("links"))
        see(links.get("web") == "https://example.org/" and links.get("mail") == "mailto:a@example.org" and
            links.get("here") == "#/board/fp8_quant" and links.get("file") == "files/template.cu",
            "hostile statement: https, mailto and relative links stay", md.get("links"))
        see(all(t in md.get("text", "") for t in ("js", "JS", "data", "vb", "ref")) and md.get("katex") == 1,
            "hostile statement: the text of a dropped link stays, and math still renders", md.get("text", "")[-300:])
        if SCREENS:
            os.makedirs(SCREENS, exist_ok=True)
            b.save_full(os.path.join(SCREENS, "laptop-board-hostile.png"))
    finally:
        srv.stop(signal.SIGKILL)


def test_wrong_answer(b, site):
    b.go("#/submission/%d" % site.ids["wrong"])
    see(b.has_text("Why: wrong answer"), "wrong answer: the verdict is on its page")
    ev = b.text(".evidence")
    see("x_q" in ev and "12 of 1024 elements differ" in ev and "largest error 0.5 absolute" in ev,
        "wrong answer: the mismatch report (buffer, count, largest error) is shown", ev[:400])
    rows = b.texts(".mismatch tbody tr")
    see(rows == ["[0, 17]1.520.5", "[3, 4]-448nan-"],
        "wrong answer: the first mismatches with index, expected, got and the absolute error", rows)
    see("allowed |got \u2212 expected| \u2264 0.001 + 0.001 \u00d7 |expected|" in ev,
        "wrong answer: the board's tolerance for that buffer is stated", ev[:400])
    shown = b.js("return document.querySelector('main').innerText")
    see(shown.count("12 of 1024 elements differ") == 1,
        "wrong answer: its sentence is shown once on the page", shown.count("12 of 1024 elements differ"))
    see("test 2" in b.text(".verdict-msg") and "Test 2 (T=16 H=1024 GS=64)" in ev,
        "wrong answer: the failing test is named by its index and shape, as in the message", ev[:200])
    b.shot("laptop-wrong-answer")

    b.go("#/submission/%d" % site.ids["cerr"])
    see(b.has_text("Compiler output"), "compile error: the compiler's log is shown")
    ok = b.wait(lambda x: x.js("return document.querySelectorAll('.source tr[data-line]').length") > 0, "the source")
    lines = b.js("return document.querySelectorAll('.source tr[data-line]').length")
    see(ok and lines == len(src("oops", "// FAKE:compile\n").rstrip("\n").split("\n")),
        "compile error: the source is shown with one numbered row per line", lines)
    b.js("document.querySelector('.log button.linkish').click()")
    see(b.wait(lambda x: x.js("const r = document.querySelector('.source tr.hit'); return r && r.dataset.line") == "3",
               "line 3 to be shown"), "compile error: clicking k.cu(3) in the log shows line 3 of the source")
    b.go("#/submission/%d" % site.ids["crash"])
    see(b.has_text("CUDA_ERROR_ILLEGAL_ADDRESS", "pre.cuda-error"), "runtime error: the CUDA error is shown")


def test_live(b, site):
    """A job held between its events: the page follows it without a reload."""
    step = threading.Semaphore(0)
    live = {}

    def gate(job, name):
        if job["id"] == live.get("id"):
            step.acquire(timeout=60)
    see(site.fr.hold_now(), "live: the fake runner holds (no claim in flight)")
    site.fr.before_event = gate
    live["id"] = sid = site.submit("alice", src("live", "// FAKE:scale=0.7\n"), mode="benchmark", wait=False)
    b.go("#/submission/%d" % sid)
    see(b.has_text("position 1 on H200", ".live"), "live: a queued job shows its queue position", b.text(".live"))
    b.js("window.kjudgeNoReload = 42")
    site.fr.hold.clear()
    step.release()  # compiling
    see(b.has_text("compiling for sm_90a", ".live") and b.has_text("taken by a runner", ".live"),
        "live: 'compiling' appears when the runner takes the job, and the queue step is done")
    step.release()  # compiled
    see(b.has_text("quant (16 registers)", ".live"), "live: the compile result with the kernel's registers")
    see(b.text("h1 .badge") == "running", "live: the page's badge says running", b.text("h1 .badge"))
    step.release()  # test 0
    see(b.has_text("1 of 5 passed", ".live"), "live: the first test's result appears (1 of 5)")
    for _ in range(4):
        step.release()
    see(b.has_text("5 of 5 passed", ".live"), "live: every test appears as it passes (5 of 5)")
    step.release()  # benchmark 0
    see(b.has_text("1 of 3", ".live") and b.has_text("shape 0", ".live .step:nth-child(4) .rows"),
        "live: the first timed shape appears (1 of 3)")
    row = b.text(".live .step:nth-child(4) .row")
    see("median 864 ns" in row and "95% CI 857 ns" in row and "n=300" in row,
        "live: with its median, confidence interval and sample count", row)
    b.shot("laptop-live-job")
    for _ in range(3):  # benchmarks 1 and 2, verdict
        step.release()
    see(b.wait(lambda x: "accepted" in x.text("h1 .badge"), "the verdict"),
        "live: the verdict arrives and the page shows the result")
    see(b.js("return window.kjudgeNoReload") == 42, "live: all of it without reloading the page")
    see(b.has_text("Timings") and len(b.texts("section table tbody tr")) >= 3,
        "live: the timings table follows the verdict")
    site.fr.before_event = None
    for _ in range(10):
        step.release()


def test_submit(b, site):
    path = os.path.join(site.tmp, "browser_upload.cu")
    body = "// uploaded from the browser\n" + GOOD_SOURCE
    with open(path, "w") as f:
        f.write(body)
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    b.go("#/submit?board=fp8_quant")
    b.wait(lambda x: x.js("return !!document.getElementById('f-file')"), "the form")
    see(Select(b.d.find_element(By.ID, "f-board")).first_selected_option.get_attribute("value") == "fp8_quant",
        "submit: the board from the link is selected")
    Select(b.d.find_element(By.ID, "f-gpu")).select_by_value("H200")
    b.d.find_element(By.CSS_SELECTOR, "input[name=mode][value=test]").click()
    b.d.find_element(By.ID, "f-file").send_keys(path)
    see(b.wait(lambda x: "uploaded from the browser" in x.js(
        "const cm = document.querySelector('.CodeMirror'); return cm ? cm.CodeMirror.getValue() : document.getElementById('f-source').value"),
        "the file in the editor"), "submit: the uploaded file is shown in the editor")
    b.shot("laptop-submit")
    b.d.find_element(By.CSS_SELECTOR, "form.submit button[type=submit]").click()
    ok = b.wait(lambda x: re.search(r"#/submission/\d+$", x.d.current_url), "the submission's page")
    sid = int(re.search(r"(\d+)$", b.d.current_url).group(1)) if ok else 0
    see(ok, "submit: the browser lands on the new submission's page", b.d.current_url)
    see(b.wait(lambda x: "accepted" in x.text("h1 .badge"), "the verdict"), "submit: its verdict appears there")
    st, _, d, _ = site.c.get("/api/v1/submissions/%d" % sid, site.tok["alice"])
    see(st == 200 and d.get("source") == body and d.get("file_name") == "browser_upload.cu" and d.get("mode") == "test",
        "submit: the server stored the file as uploaded, with its name and mode", (st, d and d.get("file_name")))
    b.go("#/me")
    see(b.wait(lambda x: "#%d" % sid in x.text("table.subs"), "the list"), "my submissions: the uploaded file is listed")
    row = [r for r in b.texts("table.subs tbody tr") if r.startswith("#%d" % sid)]
    see(row and "browser_upload.cu" in row[0] and "accepted" in row[0],
        "my submissions: its row has the file name and verdict", row)
    b.shot("laptop-my-submissions")
    b.go("#/me?limit=3")
    b.wait(lambda x: len(x.texts("table.subs tbody tr")) == 3, "a page of 3")
    ids = lambda: [int(re.match(r"#(\d+)", r).group(1)) for r in b.texts("table.subs tbody tr")]
    firstn = ids()
    b.js("[...document.querySelectorAll('.pager a')].find(a => a.textContent.startsWith('Older')).click()")
    see(b.wait(lambda x: "cursor=" in x.d.current_url and ids() and ids()[0] != firstn[0], "the next page"),
        "my submissions: 'Older' shows the next page (the cursor is in the URL)")
    second = ids()
    see(len(second) == 3 and max(second) < min(firstn), "my submissions: the pages follow each other, older ids, "
        "no row twice", (firstn, second))
    b.d.back()
    see(b.wait(lambda x: "cursor=" not in x.d.current_url and ids() == firstn, "the first page"),
        "my submissions: Back returns to the newer page")
    b.go("#/me")
    b.wait(lambda x: x.js("return !!document.querySelector('select[name=verdict]')"), "the filters")
    Select(b.d.find_element(By.CSS_SELECTOR, "select[name=verdict]")).select_by_value("wrong_answer")
    see(b.wait(lambda x: "verdict=wrong_answer" in x.d.current_url and x.texts("table.subs tbody tr")
               and all("wrong answer" in r for r in x.texts("table.subs tbody tr")), "the filtered list"),
        "my submissions: the verdict filter shows only wrong answers", b.texts("table.subs tbody tr"))
    see("#%d" % sid not in b.text("table.subs") and "#%d" % site.ids["bwrong"] not in b.text("table.subs"),
        "my submissions: neither the accepted upload nor bob's wrong answer is in that list")


def test_diff(b, site):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    b.go("#/submission/%d" % site.ids["a2"])
    see(b.wait(lambda x: x.js("return !!document.getElementById('diff-against')"), "the diff picker"),
        "diff: a submission offers to compare with an earlier one")
    opts = [int(o.get_attribute("value")) for o in Select(b.d.find_element(By.ID, "diff-against")).options]
    see(opts == [site.ids["a1"]], "diff: only the same user's earlier submissions to the board are offered", opts)
    see(b.wait(lambda x: "+2" in x.text(".diffout") and "\u22121" in x.text(".diffout"), "the diff"),
        "diff: against #%d it counts +2 -1 lines" % site.ids["a1"], b.text(".diffout"))
    added, removed = b.texts(".diff tr.add td.src"), b.texts(".diff tr.del td.src")
    see(added == ["// FAKE:scale=0.8", "// unrolled by 4"] and removed == ["// FAKE:scale=1.0"],
        "diff: the added and removed lines are the ones that changed", (added, removed))
    see(b.js("return document.querySelectorAll('.source .code.hljs .hljs-keyword, .source .code.hljs .hljs-meta').length") > 0,
        "source: highlighted by highlight.js")
    heads = b.texts("section h2 + .scroll th")
    tim = b.js("const h = [...document.querySelectorAll('section h2')].find(e => e.textContent === 'Timings');"
               "return h ? [...h.parentElement.querySelectorAll('tbody tr')].map(r => [...r.cells].map(c => c.textContent)) : []")
    see(tim and all(re.search(r"[GT]B/s", r[2]) and re.fullmatch(r"[0-9.]+ %", r[3]) for r in tim),
        "timings: each shape has its throughput and the share of its bound", tim)
    b.shot("laptop-submission-accepted")
    cases = []
    rnd = random.Random(13)
    for _ in range(150):
        cases.append(["\n".join(rnd.choice("abcd") for _ in range(rnd.randint(0, 14))),
                      "\n".join(rnd.choice("abcd") for _ in range(rnd.randint(0, 14)))])
    got = b.d.execute_async_script("""
      const done = arguments[arguments.length - 1];
      import('/static/js/diff.js').then(m => done(arguments[0].map(([a, c]) => m.lineDiff(a, c))))
        .catch(e => done(String(e)));""", cases)
    bad = []
    for (a, c), ops in zip(cases, got if isinstance(got, list) else []):
        al, cl = (a.split("\n") if a else []), (c.split("\n") if c else [])
        if ([o["text"] for o in ops if o["op"] != "+"] != al or [o["text"] for o in ops if o["op"] != "-"] != cl or
                sum(o["op"] != " " for o in ops) != len(al) + len(cl) - 2 * lcs(al, cl)):
            bad.append((a, c, ops))
    see(isinstance(got, list) and not bad, "diff: on 150 random pairs the line diff rebuilds both texts with the fewest "
        "changed lines", bad[:1] or got)


def lcs(a, b):
    t = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            t[i][j] = t[i + 1][j + 1] + 1 if a[i] == b[j] else max(t[i + 1][j], t[i][j + 1])
    return t[0][0]


def test_others_hidden(b, site):
    b.go("#/submission/%d" % site.ids["b1"])
    see(b.has_text("bob", "dl.facts") and b.has_text("accepted", "h1"),
        "others: bob's ranked submission shows its user, verdict and score to alice")
    b.wait(lambda x: "visible to its author" in x.text(), "the note")
    html = b.d.page_source
    see("BOBSECRETMARKER" not in html and "visible to its author" in html and "Changes" not in b.text("main"),
        "others: bob's source is not shown to alice (nor its diff)")
    cols = b.js("const h = [...document.querySelectorAll('section h2')].find(e => e.textContent === 'Timings');"
                "if (!h) return null; const t = h.parentElement.querySelector('table');"
                "return [[...t.tHead.rows[0].cells].map(c => c.textContent),"
                "        [...t.tBodies[0].rows].map(r => [...r.cells].map(c => c.textContent))]")
    see(cols and cols[0] == ["shape", "median", "throughput"] and
        all(any(r[i] != "-" for r in cols[1]) for i in range(len(cols[0]))),
        "others: bob's timings leave out what alice may not see (no column of '-')", cols)
    b.go("#/submission/%d" % site.ids["bwrong"])
    see(b.has_text("no submission #%d that you may see" % site.ids["bwrong"]),
        "others: bob's unranked submission is not shown to alice at all")
    see("BOBSECRETMARKER" not in b.d.page_source, "others: nothing of it reaches alice's page")


def test_register(port, site):
    st, _, inv, _ = site.c.post_json("/api/v1/invites", {}, site.admin, runner=False)
    b = Browser(port)
    try:
        from selenium.webdriver.common.by import By
        b.go("#/signin")
        b.wait(lambda x: x.js("return !!document.getElementById('reg-name')"), "the form")
        b.d.find_element(By.ID, "reg-name").send_keys("newbie")
        b.d.find_element(By.ID, "reg-invite").send_keys(inv["code"])
        b.d.find_element(By.ID, "reg-invite").submit()
        see(b.has_text("Save this token now") and b.has_text("shown only this once"),
            "register: the invite makes an account and the page says to save the token")
        tok = b.text("#new-token")
        st, _, me, _ = site.c.get("/api/v1/me", tok)
        see(re.fullmatch(r"[0-9a-f]{64}", tok) and st == 200 and me.get("name") == "newbie",
            "register: the token shown is newbie's working token", (st, me))
        b.shot("laptop-registered")
        store = b.js("return [localStorage.length, document.cookie, sessionStorage.getItem('kjudge-token')]")
        see(store == [0, "", tok], "register: the token is in sessionStorage only", store[:2])
        b.d.refresh()
        see(b.wait(lambda x: x.text("#who .name") == "newbie", "the header"), "register: a reload keeps the tab signed in")
        b.js("document.querySelector('#who button').click()")
        see(b.wait(lambda x: x.js("return sessionStorage.getItem('kjudge-token')") is None and "Sign in" in x.text("#who"),
                   "signed out"), "sign out: the token leaves the tab")
        b.collect()
        return b.requests, tok
    finally:
        b.quit()


def test_admin(b, site):
    b.go("#/admin")
    see(b.has_text("This page is for admins"), "admin: alice does not get the admin page")
    see(b.js("return document.querySelector('#nav a[data-nav=admin]').hidden"), "admin: nor its link")
    b.js("sessionStorage.setItem('kjudge-token', arguments[0])", site.admin)
    b.d.refresh()
    see(b.wait(lambda x: "bob" in x.text("main section:last-child table"), "the accounts"),
        "admin: an admin sees the accounts")
    see(b.has_text("Queues and runners") and b.has_text("fake-0"), "admin: and the runners")
    b.js("[...document.querySelectorAll('form.card')].find(f => f.textContent.includes('Create invite'))"
         ".querySelector('button').click()")
    see(b.wait(lambda x: re.search(r"Code \(shown once\): [0-9a-f]{16,}", x.text("main")), "the invite"),
        "admin: creating an invite shows its code once")
    b.shot("laptop-admin")
    b.js("sessionStorage.setItem('kjudge-token', arguments[0])", site.tok["alice"])
    b.d.refresh()
    b.wait(lambda x: x.text("#who .name") == "alice", "alice again")


def test_tools(b, site):
    """Profile and sanitize results (the fake runner posts recorded H200 ones)."""
    pad = "".join("// line %d\n" % i for i in range(20))
    plain = site.submit("alice", src("prof", pad), mode="profile", extra=[("shape", "2")])
    rep = site.submit("alice", src("prof", "// FAKE:report\n" + pad), mode="profile", extra=[("shape", "2")])
    san = site.submit("alice", src("race", pad), mode="sanitize", extra=[("tool", "racecheck")])
    if not see(plain and rep and san, "tools: two profile jobs and a sanitize job judged", (plain, rep, san)):
        return
    site.ids.update(profile=plain, race=san)
    b.go("#/submission/%d" % plain)
    if not see(b.wait(lambda x: x.texts("table.profile th"), "the profile"), "profile: the summary is shown"):
        return
    heads = b.texts("table.profile th")
    see(heads == ["shape", "kernel", "time", "DRAM", "of bound", "occupancy", "top stall (cycles/issue)"],
        "profile: the first view is time, DRAM GB/s, % of the bound, occupancy and the top stall", heads)
    fit = b.js("const t = document.querySelector('table.profile'), c = t.querySelector('tbody code');"
               "return [t.parentElement.scrollWidth, t.parentElement.clientWidth, c.getClientRects().length]")
    see(fit[0] <= fit[1] and fit[2] == 1, "profile: the table fits its box on a laptop, the shape on one line", fit)
    see(b.js("const d = [...document.querySelectorAll('details')].find(e => e.textContent.startsWith('All counters'));"
             "return !!d && !d.open"), "profile: the other counters are under 'All counters', closed")
    see("Download the Nsight Compute report" not in b.text("main"), "profile: no report offered when none was stored")
    b.go("#/submission/%d" % rep)
    see(b.has_text("Download the Nsight Compute report (1.3 KiB)"), "profile: a stored report is offered, with its size")
    b.go("#/submission/%d" % san)
    see(b.has_text("Sanitizer (racecheck): 5 findings", "main"), "sanitize: the findings are shown")
    rows = b.js("return [...document.querySelectorAll('h3')].filter(e => e.textContent.startsWith('Race'))"
                ".map(e => [...e.nextElementSibling.querySelectorAll('tbody tr')].map(r => [...r.cells].map(c => c.textContent)))")
    heads = b.js("return [...document.querySelectorAll('h3')].filter(e => e.textContent.startsWith('Race'))"
                 ".map(e => [...e.nextElementSibling.querySelectorAll('th')].map(c => c.textContent))")
    see(heads == [["kernel", "where", "findings", "hazards"]], "sanitize: no empty column (racecheck has no thread)", heads)
    see(rows == [[["quant", "submission.cu:15 and submission.cu:19", "5", "111104"]]],
        "sanitize: five findings alike but for their hazard count are one row (5, hazards summed)", rows)
    see("does not say which one a finding came from" in b.text("main"),
        "sanitize: the page says what the findings cover (every test shape)")
    named = site.submit("alice", src("race", "// FAKE:tests\n" + pad), mode="sanitize", extra=[("tool", "racecheck")])
    if see(named, "tools: a sanitize job whose findings name their test"):
        b.go("#/submission/%d" % named)
        b.wait(lambda x: x.has_text("Sanitizer (racecheck): 5 findings", "main"), "the findings")
        rows = b.js("return [...document.querySelectorAll('h3')].filter(e => e.textContent.startsWith('Race'))"
                    ".map(e => [...e.nextElementSibling.querySelectorAll('tr')].map(r => [...r.cells].map(c => c.textContent)))")
        see(len(rows) == 1 and len(rows[0]) == 2 and rows[0][0][:2] == ["test", "kernel"] and
            rows[0][1][:2] == ["1", "quant"] and rows[0][1][-2:] == ["5", "111104"],
            "sanitize: a finding that names its test has a test column (numbered from 0)", rows)
        see("does not say which one a finding came from" not in b.text("main"),
            "sanitize: and no sentence saying the log does not tell")
        b.go("#/submission/%d" % san)
    b.wait(lambda x: x.js("return document.querySelectorAll('.source tr[data-line]').length") > 15, "the source")
    b.js("[...document.querySelectorAll('main button.linkish')].find(e => e.textContent === 'submission.cu:15').click()")
    see(b.wait(lambda x: x.js("const r = document.querySelector('.source tr.hit'); return r && r.dataset.line") == "15",
               "line 15 to be shown"), "sanitize: clicking submission.cu:15 shows line 15 of the source")


def test_unserved(b, site):
    """B200 has no runner: its job's page and its rankings say so; a submission after it
    names it as queued; a runner's hello for B200 ends the note."""
    from selenium.webdriver.support.ui import Select
    from selenium.webdriver.common.by import By
    qid = site.submit("alice", src("b200"), mode="test", gpu="B200", wait=False)
    site.ids["b200"] = qid
    b.go("#/submission/%d" % qid)
    see(b.has_text("no runner has asked for B200 jobs yet", ".live"),
        "unserved: the queued job's page says no runner serves B200", b.text(".live")[:300])
    b.go("#/board/fp8_quant/rankings/B200")
    see(b.has_text("No runner has asked for B200 jobs yet", "p.warn"), "unserved: B200's rankings say so too")
    b.go("#/board/fp8_quant/rankings/H200")
    b.wait(lambda x: x.js("return !!document.querySelector('table.rank')"), "the rankings")
    time.sleep(0.3)
    see(not b.js("return !!document.querySelector('p.warn')"), "unserved: H200's rankings (a runner serves it) do not")
    nid = site.submit("alice", src("after b200"), mode="test")
    b.go("#/submission/%d" % nid)
    see(b.wait(lambda x: x.js("return !!document.getElementById('diff-against')"), "the diff picker"), "unserved: the picker")
    label = [o.text for o in Select(b.d.find_element(By.ID, "diff-against")).options
             if o.get_attribute("value") == str(qid)]
    see(label == ["#%d \u00b7 test \u00b7 queued (previous)" % qid],
        "unserved: a previous submission still queued is named as queued", label)
    before = {g["gpu"]: g for g in site.c.get("/api/v1/gpus")[2]["gpus"]}
    st, _, d, _ = site.c.post_json("/api/v1/runner/hello", {"runner": "fake-0", "state": "ready", "gpu": "B200",
                                                            "arch": "sm_100a"}, site.runner_tok)
    gp = {g["gpu"]: g for g in site.c.get("/api/v1/gpus")[2]["gpus"]}
    see("note" in before.get("B200", {}) and "note" not in before.get("H200", {}),
        "unserved: GET /gpus notes B200 (no runner), not H200", before)
    see(st in (200, 204) and "note" in before.get("B200", {}) and "note" not in gp["B200"],
        "unserved: a runner's hello ready for B200 ends the note before its first claim", (st, d, gp.get("B200")))


def test_submit_form(b, site):
    """The form opens on the board last shown, with its template; only the chosen mode's fields show."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    b.go("#/board/fp8_quant/rankings/H200")
    b.wait(lambda x: x.js("return !!document.querySelector('table.rank')"), "the rankings")
    b.go("#/submit")
    b.wait(lambda x: x.js("return !!document.getElementById('f-board')"), "the form")
    see(Select(b.d.find_element(By.ID, "f-board")).first_selected_option.get_attribute("value") == "fp8_quant",
        "submit: without ?board= the board last shown is chosen, not the first by name")
    editor = "const cm = document.querySelector('.CodeMirror'); return cm ? cm.CodeMirror.getValue() : document.getElementById('f-source').value"
    see(b.wait(lambda x: "naive starting point for fp8_quant" in x.js(editor), "the template"),
        "submit: the editor starts with that board's template", b.js(editor)[:80])
    vis = lambda: b.js("return [!document.getElementById('f-tool').closest('.row').hidden,"
                       "!document.getElementById('f-shape').closest('.row').hidden]")
    first = vis()
    b.d.find_element(By.CSS_SELECTOR, "input[name=mode][value=sanitize]").click()
    san = vis()
    b.d.find_element(By.CSS_SELECTOR, "input[name=mode][value=profile]").click()
    see(first == [False, False] and san == [True, False] and vis() == [False, True],
        "submit: only the chosen mode's own fields show (tool for sanitize, shape for profile)", (first, san, vis()))


def test_sizes(b, site):
    """Every page at laptop and phone width: nothing sticks out sideways (wide tables
    scroll inside their box), and the browser logs no error."""
    b.d.get_log("browser")  # what earlier checks caused (a 404 they wanted) is not counted
    routes = [("", "home"), ("#/board/fp8_quant", "board-problem"),
              ("#/board/fp8_quant/rankings", "board-rankings"), ("#/board/fp8_quant/rankings/B200", "rankings-b200", "Rankings on B200"),
              ("#/submission/%d" % site.ids["wrong"], "wrong-answer"), ("#/submission/%d" % site.ids["a2"], "submission"),
              ("#/submission/%d" % site.ids["b1"], "others-ranked"), ("#/submission/%s" % site.ids.get("profile"), "profile"),
              ("#/submission/%s" % site.ids.get("race"), "sanitize"), ("#/submission/%s" % site.ids.get("b200"), "queued"),
              ("#/me", "my-submissions"), ("#/submit", "submit"), ("#/user/alice", "user")]
    over, errors = [], []
    for route, name, *text in routes:
        b.size(*LAPTOP)
        b.go(route)
        b.wait(lambda x: (text[0] in x.text("main")) if text else
               x.js("return !!document.querySelector('main table, main .tiles article, main form, main .live')"),
               "the content of " + (route or "home"))
        time.sleep(0.3)
        for (w, hgt), tag in ((LAPTOP, "laptop"), (PHONE, "phone")):
            b.size(w, hgt)
            time.sleep(0.15)
            # Anything sticking out on the right that is not inside a box that scrolls sideways.
            got = b.js("""
              const inScroller = e => { for (let p = e.parentElement; p; p = p.parentElement) {
                const o = getComputedStyle(p).overflowX; if (o !== 'visible') return true; } return false; };
              return [document.documentElement.scrollWidth, window.innerWidth,
                      [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > arguments[0] + 1
                        && !inScroller(e) && e.checkVisibility()).slice(0, 3).map(e => e.tagName + '.' + e.className)]""", w)
            if got[0] > w or got[1] != w or got[2]:
                over.append((tag, route, got))
            if route.endswith("rankings") and tag == "phone":
                sc = b.js("const e = document.querySelector('table.rank').closest('.scroll'); return [e.scrollWidth, e.clientWidth]")
                see(sc[0] > sc[1], "phone: the rankings table scrolls inside its box instead (%d > %d px)" % tuple(sc), sc)
            if SCREENS:  # the whole page, to look at
                os.makedirs(SCREENS, exist_ok=True)
                b.save_full(os.path.join(SCREENS, "%s-%s.png" % (tag, name)))
        errors += [(route, e["message"][:200]) for e in b.d.get_log("browser") if e.get("level") == "SEVERE"]
    b.size(*LAPTOP)
    see(not over, "sizes: %d pages fit 1366 and 390 px wide (no sideways overflow)" % len(routes), over)
    see(not errors, "sizes: no console error on any of them", errors)


def test_no_libraries(tmp, site):
    srv = kjtest.Server(tmp, extra=["--vendor", os.path.join(tmp, "no-such-folder")])
    if not see(srv.start(), "plain: the server starts without the libraries"):
        return
    b = Browser(srv.port)
    try:
        b.go("")
        b.js("sessionStorage.setItem('kjudge-token', arguments[0])", site.tok["alice"])
        b.go("#/board/fp8_quant")
        see(b.has_text("## What to compute", "pre.plain-md"), "plain: without marked the statement is its Markdown text")
        b.go("#/board/fp8_quant/rankings")
        see(b.wait(lambda x: len(x.texts(".chart details tbody tr")) == 3, "the records"),
            "plain: without Chart.js the history is a table, open")
        see(b.js("return !document.querySelector('canvas') && !!document.querySelector('.chart details[open]')") and
            "alice" in b.text("table.rank tr.me"), "plain: no chart, and the rankings still mark alice's row")
        b.shot("laptop-no-libraries-rankings")
        b.go("#/submission/%d" % site.ids["a2"])
        see(b.wait(lambda x: x.js("return document.querySelectorAll('.source tr[data-line]').length") > 3, "the source"),
            "plain: without highlight.js the source is plain numbered text")
        see(b.js("return !document.querySelector('.source .code.hljs') && "
                 "document.querySelector('.source tr[data-line=\"2\"] td.src').textContent") == "// FAKE:scale=0.8",
            "plain: with its text intact")
        b.go("#/submit")
        see(b.wait(lambda x: x.js("const t = document.getElementById('f-source'); return t && t.offsetParent !== null"),
                   "the textarea"), "plain: without CodeMirror the submit form has a plain text area")
    finally:
        b.quit()
        srv.stop(signal.SIGKILL)


def check_token_hygiene(requests, tokens):
    leaked = [u for u, _ in requests for t in tokens if t in u]
    see(requests and not leaked, "tokens: none of the %d URLs the browsers requested holds a token" % len(requests),
        leaked[:3])
    authed = [u for u, hdr in requests if any(k.lower() == "authorization" for k in hdr)]
    see(authed and all("/api/v1/" in u for u in authed),
        "tokens: the token went out only as an Authorization header to the API (%d requests)" % len(authed))


def main():
    if not os.access(BIN, os.X_OK):
        print("FAIL %s is not built" % BIN)
        return summary() or 1
    try:
        import selenium  # noqa: F401
    except ImportError:
        Counts.skipped += 1
        print("SKIP the browser tests: Selenium is missing (deploy/deps.sh --test puts it in .venv-browser/)")
        return summary()
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        Counts.skipped += 1
        print("SKIP the browser tests: chromium or chromedriver is missing (deploy/deps.sh --test installs them)")
        return summary()
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="kjudge-web-") as tmp:
        site = Site(tmp)
        b = None
        requests = []
        try:
            if not see(site.ok, "the server starts") or not see(site.fill(), "seven submissions judged by the fake runner"):
                return summary()
            b = Browser(site.srv.port)
            test_home(b, site)
            test_signin(b, site)
            test_board(b, site)
            test_guides(b, site)
            test_markdown_math(b)
            test_hostile_statement(tmp, b)
            test_wrong_answer(b, site)
            test_live(b, site)
            test_submit(b, site)
            test_diff(b, site)
            test_others_hidden(b, site)
            test_admin(b, site)
            test_tools(b, site)
            test_unserved(b, site)
            test_submit_form(b, site)
            test_sizes(b, site)
            reqs, newtok = test_register(site.srv.port, site)
            b.collect()
            requests = b.requests + reqs
            check_token_hygiene(requests, [site.tok["alice"], site.tok["bob"], site.admin, newtok])
        finally:
            if b:
                b.quit()
            if site.fr:
                site.fr.stop()
            site.srv.stop(signal.SIGKILL)
        if site.ok:
            test_no_libraries(tmp, site)
    print("     (browser suite took %.0f s)" % (time.time() - t0))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
