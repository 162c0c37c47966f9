# expect: runtime_error  mode: test  why: resets the device's primary context through ctypes' libcuda in the middle of the job: the box's buffers are gone, the job ends as the submission's error and the runner judges the next one
#!POPCORN leaderboard fp8_quant
import ctypes
from task import input_t, output_t
import torch

_cu = ctypes.CDLL("libcuda.so.1")


def custom_kernel(data: input_t) -> output_t:
    x, x_q, x_s = data
    dev = ctypes.c_int()
    _cu.cuCtxGetDevice(ctypes.byref(dev))
    _cu.cuDevicePrimaryCtxReset_v2(dev)
    return x_q, x_s
