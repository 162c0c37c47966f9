#!/usr/bin/env python3
"""test_metrics_api.py - GET /metrics, the client address behind a trusted proxy,
and the runners' start-up reports.

Starts bin/kjudge-server with trusted_proxies = 127.0.0.1 and
metrics_allow = 127.0.0.2 in its config file, then checks: who may read
/metrics (an admin token; no token from 127.0.0.2, or from a client that
127.0.0.1 forwards as 127.0.0.2; not from 127.0.0.3 claiming to be
127.0.0.2, nor a user or runner token); that every line of the answer is
valid Prometheus text format 0.0.4 (comments, one block per family,
samples of declared families, escaped label values, cumulative histogram
buckets ending in +Inf = _count); that the counters move with the
requests made (by route pattern and status, unmatched paths included) and
the gauges follow submissions, the queue, a runner's claim and a job's
verdict; POST /runner/hello (ready and refused, bad bodies refused and
not recorded); and that request logs carry the forwarded address.
Python 3 standard library only; ends with "test_metrics_api: N passed, N
failed, N skipped" and exits 1 on failure.
"""
import os
import re
import signal
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import Counts, check  # noqa: E402
from kjhttp import Client  # noqa: E402
from kjservice import BIN, NO_RATE_LIMITS  # noqa: E402
from kjtest import result_body  # noqa: E402
from kjtest import submit, claim  # noqa: E402
import kjdeploy  # noqa: E402
from kjdeploy import ADMIN, request  # noqa: E402

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(r"^(%s)(?:\{(%s(?:,%s)*)?\})? (-?[0-9.eE+-]+|\+Inf|-Inf|NaN)(?: -?[0-9]+)?$" % (NAME, LABEL, LABEL))
HELP = re.compile(r"^# HELP (%s) .*$" % NAME)
TYPE = re.compile(r"^# TYPE (%s) (counter|gauge|histogram|summary|untyped)$" % NAME)


def parse(text):
    """Check text against the exposition format. Returns (problems, samples)
    where samples maps (name, frozenset of label pairs) -> float."""
    problems, samples, types, done, current = [], {}, {}, set(), None
    if not text.endswith("\n"):
        problems.append("the text does not end with a newline")
    for n, line in enumerate(text.split("\n")[:-1], 1):
        if line.startswith("#"):
            m = HELP.match(line) or TYPE.match(line)
            if not m:
                problems.append("line %d: a comment that is neither HELP nor TYPE: %r" % (n, line))
                continue
            fam = m.group(1)
            if line.startswith("# TYPE"):
                if fam in types:
                    problems.append("line %d: a second TYPE for %s" % (n, fam))
                types[fam] = m.group(2)
            if fam != current:
                if fam in done:
                    problems.append("line %d: family %s appears in two blocks" % (n, fam))
                if current:
                    done.add(current)
                current = fam
            continue
        m = SAMPLE.match(line)
        if not m:
            problems.append("line %d: not a valid sample: %r" % (n, line))
            continue
        name, labels = m.group(1), m.group(2) or ""
        fam = re.sub(r"_(bucket|sum|count)$", "", name) if re.sub(r"_(bucket|sum|count)$", "", name) in types else name
        if fam not in types:
            problems.append("line %d: sample of undeclared family %s" % (n, name))
        if fam != current:
            problems.append("line %d: sample of %s outside its family's block" % (n, name))
        pairs = re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', labels)
        key = (name, frozenset(pairs))
        if key in samples:
            problems.append("line %d: duplicate sample %s" % (n, line))
        samples[key] = float(m.group(3))
    for fam, t in types.items():
        if t == "histogram":
            problems += check_histogram(fam, samples)
    return problems, samples


def check_histogram(fam, samples):
    out, series = [], {}
    for (name, labels), v in samples.items():
        if name == fam + "_bucket":
            d = dict(labels)
            le = d.pop("le")
            series.setdefault(frozenset(d.items()), []).append((float(le), v))
    for labels, buckets in series.items():
        buckets.sort()
        vals = [v for _, v in buckets]
        if vals != sorted(vals):
            out.append("%s%s: buckets are not cumulative" % (fam, dict(labels)))
        if not buckets or buckets[-1][0] != float("inf"):
            out.append("%s%s: no +Inf bucket" % (fam, dict(labels)))
        elif samples.get((fam + "_count", labels)) != buckets[-1][1]:
            out.append("%s%s: _count differs from the +Inf bucket" % (fam, dict(labels)))
        if (fam + "_sum", labels) not in samples:
            out.append("%s%s: no _sum" % (fam, dict(labels)))
    return out


def value(samples, name, **labels):
    want = set(labels.items())
    total = None
    for (n, ls), v in samples.items():
        if n == name and want <= set(ls):
            total = (total or 0) + v
    return total or 0


def scrape(srv, token=ADMIN, source=None, headers=None):
    st, h, raw = request(srv, "GET", "/metrics", token, headers=headers, source=source)
    return st, h, raw.decode("utf-8", "replace")


def test_access(srv, tokens):
    st, h, text = scrape(srv)
    check(st == 200 and h.get("content-type", "").startswith("text/plain; version=0.0.4"),
          "an admin reads /metrics as text/plain; version=0.0.4", (st, h.get("content-type")))
    st, _, text = scrape(srv, token=None)
    check(st == 401 and '"missing_token"' in text, "no token from 127.0.0.1 (not in metrics_allow): 401", (st, text))
    for role in ("user", "runner"):
        st, _, _ = scrape(srv, token=tokens[role])
        check(st == 403, "a %s token: 403" % role, st)
    st, _, text = scrape(srv, token=None, source="127.0.0.2")
    check(st == 200 and "kjudge_http_requests_total" in text, "no token from 127.0.0.2 (metrics_allow): 200", st)
    st, _, _ = scrape(srv, token=None, source="127.0.0.1", headers={"X-Forwarded-For": "127.0.0.2"})
    check(st == 200, "forwarded by the trusted proxy 127.0.0.1 as 127.0.0.2: 200", st)
    st, _, _ = scrape(srv, token=None, source="127.0.0.3", headers={"X-Forwarded-For": "127.0.0.2"})
    check(st == 401, "127.0.0.3 (not a trusted proxy) claiming to forward 127.0.0.2: 401", st)
    st, _, _ = scrape(srv, token=None, source="127.0.0.1", headers={"X-Forwarded-For": "127.0.0.2, 127.0.0.9"})
    check(st == 401, "a spoofed entry left of the real client does not count: 401", st)
    log = srv.server_log()
    check(re.search(r"GET /metrics status=200 ms=\S+ addr=127\.0\.0\.2 forwarded=1", log) is not None,
          "the request log shows the forwarded address", log[-600:])
    check(re.search(r"GET /metrics status=401 ms=\S+ addr=127\.0\.0\.3\b(?! forwarded)", log) is not None,
          "an untrusted peer is logged under its own address", log[-600:])


def test_format_and_counters(srv, c, tokens):
    st, _, text = scrape(srv)
    problems, s0 = parse(text)
    check(st == 200 and not problems, "every line is valid exposition format", problems[:5])
    for _ in range(3):
        request(srv, "GET", "/healthz")
    request(srv, "GET", "/api/v1/leaderboards/nope")
    request(srv, "GET", "/no/such/path")
    _, _, text = scrape(srv)
    problems, s1 = parse(text)
    check(not problems, "still valid after more requests", problems[:5])
    d = lambda name, **l: value(s1, name, **l) - value(s0, name, **l)  # noqa: E731
    check(d("kjudge_http_requests_total", route="/healthz", code="200", method="GET") == 3,
          "3 more GET /healthz counted with code 200", d("kjudge_http_requests_total", route="/healthz"))
    check(d("kjudge_http_requests_total", route="/api/v1/leaderboards/{name}", code="404") == 1,
          "a 404 counted under its route pattern", d("kjudge_http_requests_total", route="/api/v1/leaderboards/{name}"))
    check(d("kjudge_http_requests_total", route="unmatched", code="404") == 1, "an unmatched path counted as such")
    check(d("kjudge_http_requests_total", route="/metrics", code="200") >= 1, "the previous scrape is counted")
    check(d("kjudge_http_request_duration_seconds_count", route="/healthz") == 3,
          "the latency histogram counts the same requests")

    # Submissions, queue, runner, verdict, job duration.
    a, b = submit(c, tokens["user"]), submit(c, tokens["user"])
    _, _, text = scrape(srv)
    _, s2 = parse(text)
    key = dict(leaderboard="fp8_quant", gpu="H200", mode="test")
    check(value(s2, "kjudge_submissions", verdict="none", **key) - value(s1, "kjudge_submissions", verdict="none", **key) == 2,
          "two new submissions without a verdict", value(s2, "kjudge_submissions", **key))
    check(value(s2, "kjudge_queue_depth", gpu="H200") >= 2, "queue depth of H200", value(s2, "kjudge_queue_depth", gpu="H200"))
    check(value(s2, "kjudge_queue_oldest_age_seconds", gpu="H200") >= 0 and
          ("kjudge_queue_depth", frozenset({("gpu", "B200")})) in s2, "every GPU type of the boards is listed")
    job = claim(c, tokens["runner"], name="metrics-box")
    check(job is not None and job["id"] == a, "the runner claims the oldest job", job)
    st, _, _, _ = c.post_json("/api/v1/runner/jobs/%d/result?attempt=1" % a, result_body("accepted"), tokens["runner"])
    _, _, text = scrape(srv)
    problems, s3 = parse(text)
    check(not problems, "valid after a verdict", problems[:5])
    check(value(s3, "kjudge_submissions", verdict="accepted", **key) - value(s2, "kjudge_submissions", verdict="accepted", **key) == 1,
          "the verdict moves the submission to accepted")
    check(value(s3, "kjudge_job_duration_seconds_count", gpu="H200", mode="test") == 1,
          "one job duration observed", value(s3, "kjudge_job_duration_seconds_count"))
    check(value(s3, "kjudge_runner_state", runner="metrics-box", gpu="H200", state="idle") == 1 and
          value(s3, "kjudge_runner_state", runner="metrics-box", gpu="H200", state="silent") == 0,
          "the runner is idle after its claim", [k for k in s3 if k[0] == "kjudge_runner_state"])
    check(value(s3, "kjudge_runner_last_seen_seconds", runner="metrics-box") > 1.7e9, "its last contact time")
    check(value(s3, "kjudge_leaderboards") >= 1, "leaderboards loaded")
    del b


def test_hello(srv, c, tokens):
    bad = [({"state": "ready"}, 422), ({"state": "refused"}, 422), ({"state": "refused", "reason": ""}, 422),
           ({"state": "sleepy", "gpu": "H200"}, 422), ({"runner": "bad name!", "state": "ready", "gpu": "H200"}, 400),
           ({"runner": "n1", "state": "refused", "reason": "x" * 600}, 422), ({"runner": "n1"}, 400),
           ({"runner": "n1", "state": "ready", "gpu": "H 200"}, 400)]
    for body, want in bad:
        st, _, data, _ = c.post_json("/api/v1/runner/hello", body, tokens["runner"])
        check(st == want and isinstance(data, dict) and data["error"]["code"] == "bad_hello",
              "hello %s: %d bad_hello" % (body if len(str(body)) < 80 else "(long reason)", want), (st, data))
    st, _, _, _ = c.post_json("/api/v1/runner/hello", "[1]", tokens["runner"])
    check(st == 400, "hello with a JSON array: 400", st)
    st, _, _, _ = c.post_json("/api/v1/runner/hello", {"runner": "node7-gpu1", "state": "refused",
                                                       "reason": "no usable GPU 0: \"quoted\" \\ path\nnext"}, tokens["runner"])
    check(st == 204, "a refusal is recorded: 204", st)
    st, _, _, _ = c.post_json("/api/v1/runner/hello", {"runner": "node7-gpu0", "state": "ready", "gpu": "H200",
                                                       "arch": "sm_90a"}, tokens["runner"])
    check(st == 204, "a ready report: 204", st)
    _, _, text = scrape(srv)
    problems, s = parse(text)
    check(not problems, "valid with reasons that need escaping", problems[:5])
    hello = {dict(k[1])["runner"]: dict(k[1]) for k in s if k[0] == "kjudge_runner_hello"}
    check(set(hello) == {"node7-gpu0", "node7-gpu1"}, "only the good reports are listed", sorted(hello))
    r = hello.get("node7-gpu1", {})
    check(r.get("state") == "refused" and r.get("reason", "").startswith("no usable GPU 0: 'quoted' ' path.next"),
          "the refusal and its (printable) reason", r)
    check(hello.get("node7-gpu0", {}).get("state") == "ready" and hello["node7-gpu0"].get("gpu") == "H200",
          "the ready runner and its GPU type", hello.get("node7-gpu0"))
    log = srv.server_log()
    check("WARN runner: refused to start runner=node7-gpu1" in log and "reason=\"no usable GPU 0:" in log,
          "the refusal is logged as a warning with its reason", log[-400:])


def main():
    if not os.access(BIN, os.X_OK):
        print("FAIL %s is not built\ntest_metrics_api: 0 passed, 1 failed, 0 skipped" % BIN)
        return 1
    with tempfile.TemporaryDirectory(prefix="kjudge-metrics-") as tmp:
        srv = kjdeploy.Server(tmp, extra=NO_RATE_LIMITS, conf_lines=[
            "trusted_proxies = 127.0.0.1, ::1", "metrics_allow = 127.0.0.2"])
        if check(srv.start(), "the server starts with trusted_proxies and metrics_allow"):
            try:
                tokens = {"user": kjdeploy.cli("user", "add", "mia", "--db", srv.db)[1].strip(),
                          "runner": kjdeploy.cli("runner", "add", "gpu-host", "--gpu", "H200", "--db", srv.db)[1].strip()}
                c = Client(srv.port)
                test_access(srv, tokens)
                test_format_and_counters(srv, c, tokens)
                test_hello(srv, c, tokens)
            finally:
                srv.stop(signal.SIGTERM)
        d = os.path.join(tmp, "bad")
        os.makedirs(d)
        with open(os.path.join(d, "k.conf"), "w") as f:
            f.write("admin_token = %s\ntrusted_proxies = 10.0.0.0/8, nginx.local\n" % ADMIN)
        rc, _, err = kjdeploy.cli("serve", "--port", str(kjdeploy.free_port()), "--db", os.path.join(d, "k.db"),
                                  "--config", os.path.join(d, "k.conf"), timeout=20)
        check(rc == 1 and "trusted_proxies" in err and "nginx.local" in err,
              "serve refuses a trusted_proxies entry that is not an address, naming it", (rc, err[-300:]))
    print("test_metrics_api: %d passed, %d failed, %d skipped" % (Counts.passed, Counts.failed, Counts.skipped))
    return 1 if Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
