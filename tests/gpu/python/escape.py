# expect: accepted  mode: test  why: at import it looks for secrets, the network, other processes and the host's files; it raises if it finds any
#!POPCORN leaderboard fp8_quant
import os
import socket
import subprocess
from task import input_t, output_t
import torch

found = []
for k, v in os.environ.items():
    if "TOKEN" in k or "SECRET" in k or "KJUDGE_RUNNER" in k:
        found.append("env " + k)
for path in ("/etc/passwd", "/etc/kjudge", "/root", "/work", "/home", "/var/lib", "/proc/1/environ",
             "/proc/self/environ", "/sys/fs/cgroup", "/run"):
    try:
        if os.path.isdir(path):
            if os.listdir(path):
                found.append("dir " + path)
        else:
            with open(path, "rb") as f:
                if f.read(64):
                    found.append("file " + path)
    except OSError:
        pass
for host, port in (("127.0.0.1", 8080), ("127.0.0.1", 22), ("1.1.1.1", 443)):
    try:
        socket.create_connection((host, port), timeout=0.5).close()
        found.append("tcp %s:%d" % (host, port))
    except OSError:
        pass
try:
    if os.listdir("/proc"):
        found.append("proc")
except OSError:
    pass
try:
    out = subprocess.run(["ps", "aux"], capture_output=True, timeout=5).stdout
    if out.count(b"\n") > 3:
        found.append("ps sees processes")
except Exception:
    pass
try:
    import ctypes
    libc = ctypes.CDLL(None)
    if libc.ptrace(16, 1, 0, 0) == 0:   # PTRACE_ATTACH to init
        found.append("ptrace")
except Exception:
    pass
if found:
    raise RuntimeError("LEAK: " + ", ".join(found))


def custom_kernel(data: input_t) -> output_t:
    x, x_q, x_s = data
    T, H = x.shape
    G = x_s.shape[1]
    xg = x.view(T, G, H // G)
    s = xg.abs().amax(dim=2).clamp_min(1e-10) / 448.0
    x_s.copy_(s)
    x_q.copy_((xg / s.unsqueeze(2)).clamp(-448.0, 448.0).view(T, H))
    return x_q, x_s
