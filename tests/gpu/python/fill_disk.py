# expect: runtime_error  mode: test  why: writes its /tmp full in custom_kernel; the box's private tmpfs and file-size limit stop it with an OSError, and nothing of it outlives the box
#!POPCORN leaderboard fp8_quant
import os
from task import input_t, output_t
import torch


def custom_kernel(data: input_t) -> output_t:
    block = b"\0" * (16 << 20)
    for i in range(1 << 12):  # 64 GiB if nothing stopped it
        with open("/tmp/fill-%d" % i, "wb") as f:
            for _ in range(8):
                f.write(block)
    return data[1], data[2]
