# expect: time_limit  mode: test  time_limit: 20  why: never returns from custom_kernel
#!POPCORN leaderboard fp8_quant
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    while True:
        pass
