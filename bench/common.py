"""Helpers shared by the benchmarks: paths, running the runner, a real server."""
import json, os, socket, subprocess, tempfile, time, urllib.request, urllib.error

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNNER = os.path.join(ROOT, "bin", "kjudge-runner")
SERVER = os.path.join(ROOT, "bin", "kjudge-server")
LB = os.path.join(ROOT, "leaderboards", "fp8_quant")


def evaluate(path, mode, *extra, env=None):
    p = subprocess.run([RUNNER, "eval", path, "--leaderboard", "fp8_quant", "--mode", mode, "--json", *extra],
                       cwd=ROOT, capture_output=True, text=True, env=env)
    if p.returncode not in (0, 1):
        raise RuntimeError("eval failed: " + p.stderr[-2000:])
    return json.loads(p.stdout)


def http(method, url, token=None, body=None, ctype=None, timeout=900):
    req = urllib.request.Request(url, data=body, method=method)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    if ctype:
        req.add_header("Content-Type", ctype)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def submit(base, token, path, mode):
    b = "kjbench%d" % time.time_ns()
    data = b"".join(('--%s\r\nContent-Disposition: form-data; name="%s"\r\n\r\n%s\r\n' % (b, k, v)).encode()
                    for k, v in (("leaderboard", "fp8_quant"), ("gpu", "H200"), ("mode", mode)))
    data += ('--%s\r\nContent-Disposition: form-data; name="file"; filename="%s"\r\n\r\n'
             % (b, os.path.basename(path))).encode() + open(path, "rb").read() + ("\r\n--%s--\r\n" % b).encode()
    return http("POST", base + "/api/v1/submissions", token, data, "multipart/form-data; boundary=" + b)


class Service:
    """A real kjudge-server on a free loopback port plus one runner on GPU 0."""

    def __enter__(self):
        self.tmp = tempfile.mkdtemp(prefix="kjudge-bench-")
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        db, conf = os.path.join(self.tmp, "k.db"), os.path.join(self.tmp, "k.conf")
        with open(conf, "w") as f:
            f.write("admin_token = %s\n" % os.urandom(16).hex())
        self.base = "http://127.0.0.1:%d" % port
        log = open(os.path.join(self.tmp, "log"), "w")
        self.procs = [subprocess.Popen([SERVER, "serve", "--port", str(port), "--db", db, "--config", conf,
                                        "--leaderboards", os.path.join(ROOT, "leaderboards")], cwd=ROOT,
                                       stdout=subprocess.DEVNULL, stderr=log)]
        for _ in range(100):
            try:
                if http("GET", self.base + "/healthz", timeout=2)[0] == 200:
                    break
            except OSError:
                time.sleep(0.1)
        run = lambda *a: subprocess.run([SERVER, *a, "--db", db], capture_output=True, text=True).stdout.strip()
        self.user = run("user", "add", "bench")
        env = dict(os.environ, KJUDGE_RUNNER_TOKEN=run("runner", "add", "bench-gpu0"))
        self.procs.append(subprocess.Popen([RUNNER, "serve", "--server", self.base, "--gpu", "0", "--leaderboards",
                                            os.path.join(ROOT, "leaderboards")], cwd=ROOT, env=env,
                                           stdout=subprocess.DEVNULL, stderr=log))
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.terminate()
            p.wait(timeout=30)
