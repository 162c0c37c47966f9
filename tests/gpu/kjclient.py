"""A tiny kjudge API client for the GPU tests and the benchmarks (stdlib only):
JSON requests with a bearer token, multipart submissions, a free port."""
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
