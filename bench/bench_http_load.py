#!/usr/bin/env python3
"""bench_http_load.py - kjudge-server under HTTP load, next to nginx, with wrk on loopback.

`make bench-http` (no GPU needed). Installs wrk and nginx with apt-get when
they are missing and we are root (otherwise says what is missing and exits
2). Starts bin/kjudge-server on a fresh database in a temporary folder with
rate limits off, fills it through the API with ranked accepted submissions
(default 1,000 users x 10 leaderboard-mode submissions = 10,000; a fake
runner claims each job and posts an accepted result with a random score),
then measures with wrk:

  1. GET /api/v1/leaderboards/fp8_quant/rankings?gpu=H200: requests/s and
     p99 latency, alternating rounds with nginx serving the same bytes
     (saved from the server) as a static file, both with 2 workers;
  2. accepted POST /api/v1/submissions per second (multipart, test mode,
     a user token; a wrk Lua script counts the 202 answers).

Prints a Markdown table with the ratio to nginx and the goals (>= 50% of
nginx's rate, >= 500 accepted submissions/s). Options: --users N,
--per-user N, --seconds S (per wrk round), --rounds N, --keep (leave the
temporary folder). Exit 0 when both goals are met, 1 when not, 2 when it
could not run. --smoke (make test, tests/api/test_benches.py): 5 users x 2,
one round of 1 s with 8 connections, nothing installed; it exits 0 when
every answer was 2xx, the goals printed but not judged.
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "api"))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import kjservice  # noqa: E402
from kjhttp import free_port  # noqa: E402
from kjtest import DEFAULT_MEDIANS, result_body  # noqa: E402  (the API tests' realistic runner result)

SERVER = os.path.join(ROOT, "bin", "kjudge-server")
BOARD = "fp8_quant"
RANKINGS = "/api/v1/leaderboards/%s/rankings?gpu=H200" % BOARD
SOURCE = ("//!kjudge launch quant grid=(ceil_div(T*H/GS, 8)) block=(32, 8)\n"
          "extern \"C\" __global__ void quant(const float* x, float* x_q, float* x_s,\n"
          "                                  int T, int H, int GS) {}\n")
BOUNDARY = "----kjudgebench5f1c"


def ensure_tools(install=True):
    missing = [t for t, pkg in (("wrk", "wrk"), ("nginx", "nginx-light")) if shutil.which(t) is None and
               not os.path.exists("/usr/sbin/" + t)]
    if not missing:
        return True
    pkgs = ["nginx-light" if t == "nginx" else t for t in missing]
    if os.geteuid() != 0 or not install:
        print("http_load: missing %s; install with: apt-get install %s" % (", ".join(missing), " ".join(pkgs)))
        return False
    print("http_load: installing %s" % " ".join(pkgs), flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    r = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends"] + pkgs, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        print("http_load: apt-get failed: %s" % r.stderr[-500:])
        return False
    return True


def multipart(fields, fname, data):
    out = []
    for k, v in fields:
        out.append("--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s\r\n" % (BOUNDARY, k, v))
    out.append("--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"%s\"\r\n"
               "Content-Type: application/octet-stream\r\n\r\n%s\r\n--%s--\r\n" % (BOUNDARY, fname, data, BOUNDARY))
    return "".join(out).encode()


class Conn:
    """One keep-alive connection to the server."""

    def __init__(self, port):
        self.port = port
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def req(self, method, path, token=None, body=None, ctype="application/json"):
        h = {"Content-Type": ctype} if body is not None else {}
        if token:
            h["Authorization"] = "Bearer " + token
        for attempt in range(2):
            try:
                self.c.request(method, path, body=body, headers=h)
                r = self.c.getresponse()
                data = r.read()
                return r.status, (json.loads(data) if data and r.getheader("Content-Type", "").startswith(
                    "application/json") else data)
            except (http.client.HTTPException, OSError):
                self.c.close()
                self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                if attempt:
                    raise
        return None, None


def start_server(tmp, port):
    """tests/lib's server on port, without rate limits; returns it and its admin token."""
    srv = kjservice.Server(tmp, port=port)
    if not srv.start():
        srv.stop(signal.SIGKILL)
        raise RuntimeError("the server did not start; see %s/server.log" % tmp)
    return srv, srv.printed().strip()


def result(score):
    """An accepted leaderboard-mode result as the runner writes it: the shapes' medians of
    tests/api/kjtest.py's DEFAULT_MEDIANS (physically possible: the server refuses a median
    under a shape's floor) scaled by score / 1000 ns, so results differ as their scores do
    (the server checks it against the board and recomputes the score)."""
    return result_body("accepted", mode="leaderboard", medians=tuple(m * score / 1000.0 for m in DEFAULT_MEDIANS))


def fill(port, admin, runner, users, per_user):
    """users x per_user leaderboard-mode submissions, each judged accepted."""
    rnd = random.Random(7)
    c = Conn(port)
    tokens = []
    for i in range(users):
        st, d = c.req("POST", "/api/v1/users", admin, json.dumps({"name": "u%05d" % i}).encode())
        if st != 201:
            raise RuntimeError("POST /users -> %s %s" % (st, d))
        tokens.append(d["token"])
    body = multipart([("leaderboard", BOARD), ("gpu", "H200"), ("mode", "leaderboard")], "k.cu", SOURCE)
    ctype = "multipart/form-data; boundary=" + BOUNDARY

    def submit_all(part):
        cc = Conn(port)
        for tok in part:
            for _ in range(per_user):
                st, d = cc.req("POST", "/api/v1/submissions", tok, body, ctype)
                if st != 202:
                    raise RuntimeError("POST /submissions -> %s %s" % (st, d))

    def judge_all(n):
        cc = Conn(port)
        done = 0
        while done < n:
            st, d = cc.req("POST", "/api/v1/runner/claim", runner,
                           json.dumps({"runner": "bench", "gpu": "H200", "arch": "sm_90a"}).encode())
            if st == 204:
                time.sleep(0.01)
                continue
            if st != 200:
                raise RuntimeError("claim -> %s %s" % (st, d))
            job = d["job"]
            st, d = cc.req("POST", "/api/v1/runner/jobs/%d/result?attempt=%d" % (job["id"], job["attempt"]), runner,
                           json.dumps(result(rnd.uniform(1000.0, 100000.0))).encode())
            if st != 200:
                raise RuntimeError("result -> %s %s" % (st, d))
            done += 1

    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        futs = [ex.submit(submit_all, tokens[k::3]) for k in range(3)]
        futs.append(ex.submit(judge_all, users * per_user))
        for f in futs:
            f.result()


def wrk(url, seconds, conns, script=None):
    cmd = ["wrk", "-t2", "-c%d" % conns, "-d%ds" % seconds, "--latency"]
    if script:
        cmd += ["-s", script]
    out = subprocess.run(cmd + [url], capture_output=True, text=True, timeout=seconds + 60).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    m = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
    p99 = float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)] if m else float("nan")
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return rps, p99, int(non2xx.group(1)) if non2xx else 0, out


def start_nginx(tmp, port, body):
    www = os.path.join(tmp, "www")
    os.makedirs(os.path.join(www, "api/v1/leaderboards/%s" % BOARD))
    with open(os.path.join(www, "api/v1/leaderboards/%s/rankings" % BOARD), "wb") as f:
        f.write(body)
    for d, _, files in os.walk(tmp):
        os.chmod(d, 0o755)
        for x in files:
            os.chmod(os.path.join(d, x), 0o644)
    conf = os.path.join(tmp, "nginx.conf")
    with open(conf, "w") as f:
        f.write("""worker_processes 2;
daemon off;
pid %(t)s/nginx.pid;
error_log %(t)s/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  client_body_temp_path %(t)s/nginx-body;
  proxy_temp_path %(t)s/nginx-proxy;
  fastcgi_temp_path %(t)s/nginx-fcgi;
  uwsgi_temp_path %(t)s/nginx-uwsgi;
  scgi_temp_path %(t)s/nginx-scgi;
  server {
    listen 127.0.0.1:%(port)d;
    root %(www)s;
    location / { default_type application/json; try_files $uri =404; }
  }
}
""" % {"t": tmp, "port": port, "www": www})
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    p = subprocess.Popen([nginx, "-c", conf, "-p", tmp], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            c.request("GET", "/api/v1/leaderboards/%s/rankings?gpu=H200" % BOARD)
            r = c.getresponse()
            if r.status == 200 and r.read() == body:
                return p
        except OSError:
            time.sleep(0.05)
    p.kill()
    raise RuntimeError("nginx did not start; see %s/nginx-error.log" % tmp)


POST_LUA = """
wrk.method = "POST"
wrk.body = %s
wrk.headers["Content-Type"] = "multipart/form-data; boundary=%s"
wrk.headers["Authorization"] = "Bearer %s"
local threads = {}
function setup(thread) table.insert(threads, thread) end
accepted = 0
other = 0
function response(status, headers, body)
  if status == 202 then accepted = accepted + 1 else other = other + 1 end
end
function done(summary, latency, requests)
  local a, o = 0, 0
  for _, t in ipairs(threads) do a = a + t:get("accepted"); o = o + t:get("other") end
  io.write(string.format("ACCEPTED %%d OTHER %%d SECONDS %%f\\n", a, o, summary.duration / 1e6))
end
"""


def lua_string(b):
    return '"' + "".join("\\%03d" % c for c in b) + '"'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--per-user", type=int, default=10)
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="a run of seconds for make test (goals not judged)")
    a = ap.parse_args()
    if a.smoke:
        a.users, a.per_user, a.seconds, a.rounds, a.connections = 5, 2, 1, 1, 8
    if not os.access(SERVER, os.X_OK):
        print("http_load: %s is not built (make)" % SERVER)
        return 2
    if not ensure_tools(install=not a.smoke):
        return 2
    tmp = tempfile.mkdtemp(prefix="kjudge-http-load-")
    procs = []
    try:
        port, nport = free_port(), free_port()
        srv, admin = start_server(tmp, port)
        procs.append(srv.proc)
        runner = srv.runner_token("bench", "H200")
        t0 = time.time()
        fill(port, admin, runner, a.users, a.per_user)
        fill_s = time.time() - t0
        c = http.client.HTTPConnection("127.0.0.1", port)
        c.request("GET", RANKINGS)
        raw = c.getresponse().read()
        rows = len(json.loads(raw)["rankings"])
        print("filled %d ranked accepted submissions (%d users) through the API in %.1f s; rankings: %d rows, %d bytes"
              % (a.users * a.per_user, a.users, fill_s, rows, len(raw)), flush=True)
        ng = start_nginx(tmp, nport, raw)
        procs.append(ng)
        kj, nx = [], []
        for r in range(a.rounds):
            kj.append(wrk("http://127.0.0.1:%d%s" % (port, RANKINGS), a.seconds, a.connections))
            nx.append(wrk("http://127.0.0.1:%d%s" % (nport, RANKINGS), a.seconds, a.connections))
            print("round %d: kjudge %.0f req/s p99 %.2f ms; nginx %.0f req/s p99 %.2f ms"
                  % (r + 1, kj[-1][0], kj[-1][1], nx[-1][0], nx[-1][1]), flush=True)
        bad = sum(x[2] for x in kj + nx)
        ng.send_signal(signal.SIGQUIT)
        ng.wait(timeout=20)
        procs.remove(ng)

        user = Conn(port).req("POST", "/api/v1/users", admin, json.dumps({"name": "poster"}).encode())[1]["token"]
        script = os.path.join(tmp, "post.lua")
        with open(script, "w") as f:
            f.write(POST_LUA % (lua_string(multipart([("leaderboard", BOARD), ("gpu", "H200"), ("mode", "test")],
                                                     "k.cu", SOURCE)), BOUNDARY, user))
        posts = []
        for r in range(a.rounds):
            rps, p99, _, out = wrk("http://127.0.0.1:%d/api/v1/submissions" % port, a.seconds, 16, script)
            m = re.search(r"ACCEPTED (\d+) OTHER (\d+) SECONDS ([\d.]+)", out)
            posts.append((int(m.group(1)) / float(m.group(3)), p99, int(m.group(2))))
            print("round %d: %.0f accepted submissions/s, p99 %.2f ms, %d not accepted"
                  % (r + 1, posts[-1][0], p99, posts[-1][2]), flush=True)
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("kept %s" % tmp)
    med = lambda xs, i: statistics.median(x[i] for x in xs)
    ratio = med(kj, 0) / med(nx, 0)
    post_rate = med(posts, 0)
    print()
    print("| measure (median of %d rounds, %d s each, wrk -t2) | kjudge-server | nginx (static file) | ratio | goal |"
          % (a.rounds, a.seconds))
    print("|---|---|---|---|---|")
    print("| GET rankings, %d rows (%d bytes), -c%d: requests/s | %.0f | %.0f | %.2f | >= 0.50 |"
          % (rows, len(raw), a.connections, med(kj, 0), med(nx, 0), ratio))
    print("| GET rankings: p99 latency ms | %.2f | %.2f | | |" % (med(kj, 1), med(nx, 1)))
    print("| POST /submissions -c16: accepted/s | %.0f | | | >= 500 |" % post_rate)
    print("| POST /submissions: p99 latency ms | %.2f | | | |" % med(posts, 1))
    if bad or any(p[2] for p in posts):
        print("non-2xx answers: %d GET, %d POST" % (bad, sum(p[2] for p in posts)))
    if a.smoke:
        print("smoke run: the goals are not judged at this size")
        return 1 if bad or any(p[2] for p in posts) else 0
    return 0 if ratio >= 0.5 and post_rate >= 500 and not bad else 1


if __name__ == "__main__":
    sys.exit(main())
