# expect: runtime_error  mode: test  why: allocates 24 GiB of host memory; the box's limit (cgroup, or RLIMIT_DATA without one) gives a MemoryError long before the host runs short
#!POPCORN leaderboard fp8_quant
from task import input_t, output_t
import torch

_keep = []


def custom_kernel(data: input_t) -> output_t:
    for _ in range(24):  # 24 GiB: over the box's 16 GiB, and safe for the host if nothing stops it
        b = bytearray(1 << 30)
        b[::4096] = b"\1" * len(b[::4096])
        _keep.append(b)
    return data[1], data[2]
