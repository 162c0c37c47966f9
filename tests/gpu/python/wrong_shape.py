# expect: runtime_error  mode: test  why: returns x_q flattened: the message names the shape
#!POPCORN leaderboard fp8_quant
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, x_q, x_s = data
    return x_q.view(-1).clone(), x_s
