"""A tiny kjudge API client for the GPU tests and the benchmarks (stdlib only):
JSON requests with a bearer token, multipart submissions, a free port, and
waiting until a started runner has asked the server for work."""
import json, os, socket, time, urllib.error, urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http(method, url, token=None, body=None, ctype=None, timeout=900):
    """(status, decoded JSON body) for one request; HTTP errors are returned, not raised."""
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


def submit(base, token, path, mode, leaderboard="fp8_quant", gpu="H200"):
    """POST path as a multipart submission; returns (status, JSON)."""
    boundary = "kjudge%d" % time.time_ns()
    data = b"".join(('--%s\r\nContent-Disposition: form-data; name="%s"\r\n\r\n%s\r\n' % (boundary, k, v)).encode()
                    for k, v in (("leaderboard", leaderboard), ("gpu", gpu), ("mode", mode)))
    data += ('--%s\r\nContent-Disposition: form-data; name="file"; filename="%s"\r\n'
             'Content-Type: text/plain\r\n\r\n' % (boundary, os.path.basename(path))).encode()
    data += open(path, "rb").read() + ("\r\n--%s--\r\n" % boundary).encode()
    return http("POST", base + "/api/v1/submissions", token, data, "multipart/form-data; boundary=" + boundary)


def wait_runner(base, gpu="H200", timeout=180, proc=None):
    """Block until some runner has asked base for gpu jobs (GET /api/v1/gpus lists it).

    A job submitted before any runner asked is answered at once with a
    "no runner" note instead of being waited on, so a test that starts a
    runner waits here first. Raises RuntimeError on timeout or if proc (the
    runner's Popen) exits first."""
    end = time.time() + timeout
    while time.time() < end:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("the runner exited (status %d) before asking for work" % proc.returncode)
        try:
            st, d = http("GET", base + "/api/v1/gpus", timeout=5)
        except OSError:
            st, d = 0, None
        if st == 200 and any(g.get("gpu") == gpu and g.get("runners") for g in d.get("gpus", [])):
            return
        time.sleep(0.2)
    raise RuntimeError("no runner asked for %s jobs within %d s" % (gpu, timeout))
