#!/usr/bin/env python3
"""test_schema.py - a property-based run of the whole API from server/openapi.json.

Starts the server built with ASan and UBSan (build/kjudge-server-asan, else
bin/kjudge-server) on a loopback port with a temporary database, creates
two users, a user whose token POST /me/token may rotate and a runner, makes
submissions (one judged, one running, some queued), then runs schemathesis
(pinned in deploy/schema-requirements.txt, installed into .venv/ by
deploy/deps.sh) over every operation of the document for a bounded time,
with each route's token set by schema_hooks.py. Checks: no 5xx, every
status code, content type, header and body as the document says, auth
enforced, no sanitizer report and no crash of the server, a clean stop.
One result per API operation (passed when schemathesis found nothing
wrong with it), plus the server's own checks. Prints
"test_schema: N passed, N failed, N skipped"; exit 1 on failure.
KJ_SCHEMA_SECONDS (default 90) bounds the schemathesis run.
"""
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import kjcheck
import kjservice
import kjtest
from kjcheck import check
from kjhttp import Client

ROOT = kjservice.ROOT
VENV_ST = os.path.join(ROOT, ".venv", "bin", "st")
ASAN_BIN = os.path.join(ROOT, "build", "kjudge-server-asan")
SECONDS = int(os.environ.get("KJ_SCHEMA_SECONDS", "90"))
SANITIZER = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: \w+Sanitizer")
# What the run checks; `all` less the checks that need links between operations
# the document does not declare (use_after_free, ensure_resource_availability)
# and positive_data_acceptance (a valid-looking body for a resource that does
# not exist is refused with 404/409/422, as documented).
CHECKS = ("not_a_server_error,status_code_conformance,content_type_conformance,"
          "response_headers_conformance,response_schema_conformance,negative_data_rejection,"
          "missing_required_header,unsupported_method,allow_header_conformance,ignored_auth")


def setup_data(srv, c):
    """Users, a runner and submissions in every state; returns the tokens."""
    admin = srv.printed().strip()
    tokens = {"admin": admin}
    for name in ("st-alice", "st-bob", "st-rotor"):
        rc, out, err = srv.cli("user", "add", name, "--db", srv.db)
        check(rc == 0, "user add %s" % name, err)
        tokens[name] = out.strip()
    rc, out, err = srv.cli("runner", "add", "st-box", "--gpu", "H200", "--db", srv.db)
    check(rc == 0, "runner add st-box", err)
    tokens["runner"] = out.strip()
    ids = [kjtest.submit(c, tokens["st-alice"], mode=m) for m in ("test", "benchmark", "leaderboard")]
    ids.append(kjtest.submit(c, tokens["st-bob"]))
    check(all(ids), "submissions for the run", ids)
    job = kjtest.claim(c, tokens["runner"])
    if check(job is not None, "a job to judge", job):
        q = "?attempt=%d" % job["attempt"] if "attempt" in job else ""
        st, _, data, _ = c.post_json("/api/v1/runner/jobs/%d/events%s" % (job["id"], q),
                                     {"event": "compiled", "data": {"ok": True}}, tokens["runner"])
        check(st == 204, "an event for the judged job", (st, data))
        st, _, data, _ = c.post_json("/api/v1/runner/jobs/%d/result%s" % (job["id"], q),
                                     kjtest.result_body("accepted", 60000.0, mode=job.get("mode", "test")),
                                     tokens["runner"])
        check(st == 200, "a result for the judged job", (st, data))
    check(kjtest.claim(c, tokens["runner"]) is not None, "a job left running")
    return tokens


def run_schemathesis(srv, tokens, report_dir):
    env = dict(os.environ)
    env.update({
        "SCHEMATHESIS_HOOKS": "schema_hooks",
        "PYTHONPATH": os.path.dirname(os.path.abspath(__file__)),
        "KJ_ST_USER": tokens["st-alice"], "KJ_ST_ROTOR": tokens["st-rotor"],
        "KJ_ST_RUNNER": tokens["runner"], "KJ_ST_ADMIN": tokens["admin"],
    })
    cmd = [VENV_ST, "--config-file", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "schemathesis.toml"),
           "run", os.path.join(ROOT, "server", "openapi.json"),
           "--url", "http://127.0.0.1:%d" % srv.port,
           "--checks", CHECKS, "--max-time", str(SECONDS), "--workers", "1",
           "--request-timeout", "20", "--seed", os.environ.get("KJ_SCHEMA_SEED", "20261130"),
           "--report", "ndjson,junit", "--report-dir", report_dir,
           "--suppress-health-check", "all", "--no-color", "--output-truncate", "true"]
    # Run in the scratch folder: schemathesis keeps a cache of past failures in its cwd.
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=SECONDS + 300, cwd=srv.tmp)
    with open(os.path.join(srv.tmp, "schemathesis.out"), "w") as f:
        f.write(p.stdout + p.stderr)
    return p


def tally(p, report_dir):
    """One result per operation from the JUnit report; returns the request count."""
    out = p.stdout + p.stderr
    junit = glob.glob(os.path.join(report_dir, "*.xml"))
    if not check(junit, "schemathesis wrote its report (exit %d)" % p.returncode, out[-3000:]):
        return 0
    import xml.etree.ElementTree as ET
    root = ET.parse(junit[0]).getroot()
    for tc in root.iter("testcase"):
        name = tc.get("name")
        bad = [e for e in tc if e.tag in ("failure", "error")]
        detail = "; ".join((e.get("message") or e.text or "")[:600] for e in bad)
        check(not bad, "schema run: %s" % name, detail)
    m = re.search(r"API Operations:\s*\n?\s*Selected:\s*(\d+)/(\d+)", out)
    check(m is None or m.group(1) == m.group(2), "every operation of the document was run", m and m.group(0))
    reqs = 0
    for line in open(glob.glob(os.path.join(report_dir, "*.ndjson"))[0]) if glob.glob(
            os.path.join(report_dir, "*.ndjson")) else []:
        reqs += line.count('"response":')
    return reqs


def main():
    if not os.access(VENV_ST, os.X_OK):
        print("FAIL schemathesis is not installed in .venv (run deploy/deps.sh)")
        print("test_schema: 0 passed, 1 failed, 0 skipped")
        return 1
    if os.access(ASAN_BIN, os.X_OK):
        kjservice.BIN = ASAN_BIN
    with tempfile.TemporaryDirectory(prefix="kjudge-schema-") as tmp:
        srv = kjtest.Server(tmp)
        if not check(srv.start(), "the server starts", kjtest.Server.server_log(srv)[-2000:]
                     if os.path.exists(os.path.join(tmp, "server.log")) else ""):
            print("test_schema: %d passed, %d failed, %d skipped" % (kjcheck.Counts.passed,
                                                                    kjcheck.Counts.failed,
                                                                    kjcheck.Counts.skipped))
            return 1
        try:
            c = Client(srv.port)
            tokens = setup_data(srv, c)
            report_dir = os.path.join(tmp, "report")
            p = run_schemathesis(srv, tokens, report_dir)
            reqs = tally(p, report_dir)
            print("schemathesis: %d requests in at most %d s (%s)" % (reqs, SECONDS,
                  os.path.basename(kjservice.BIN)), flush=True)
            alive = check(srv.proc.poll() is None, "the server is still running after the run",
                          srv.server_log()[-3000:])
            if alive:
                st, _, _, _ = c.get("/healthz")
                check(st == 200, "the server still answers /healthz", st)
        finally:
            rc = srv.stop(signal.SIGTERM, timeout=30)
        log = srv.server_log()
        bad = [l for l in log.splitlines() if SANITIZER.search(l)]
        check(not bad, "no sanitizer report in the server log", "\n".join(bad[:10]))
        check(rc == 0, "the server stops cleanly on SIGTERM", rc)
        if kjcheck.Counts.failed:
            keep = os.path.join(ROOT, "build", "test-logs", "schema")
            subprocess.run(["rm", "-rf", keep])
            os.makedirs(os.path.dirname(keep), exist_ok=True)
            subprocess.run(["cp", "-r", tmp, keep])
            print("details (schemathesis output, server log, reports): %s" % keep)
    print("test_schema: %d passed, %d failed, %d skipped" % (kjcheck.Counts.passed, kjcheck.Counts.failed,
                                                            kjcheck.Counts.skipped))
    return 1 if kjcheck.Counts.failed else 0


if __name__ == "__main__":
    sys.exit(main())
