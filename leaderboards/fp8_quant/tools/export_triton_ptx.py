#!/usr/bin/env python3
# export_triton_ptx.py - writes triton_ptx.ptx: fp8_quant's Triton kernel
# compiled to PTX without a GPU (Triton's compiler targets a named GPU), with
# the //!kjudge lines in front, ready to submit as a PTX file.
#
#   python3 -m venv /tmp/tv && /tmp/tv/bin/pip install triton
#   /tmp/tv/bin/python leaderboards/fp8_quant/tools/export_triton_ptx.py [OUT.ptx]
#
# What it changes in Triton's PTX, and why (docs/languages-cuda.md):
# - Triton appends two pointer parameters (global and profile scratch) to
#   every kernel. The board's signature has none, so they are dropped, after
#   checking that the kernel never reads them (else the export fails).
# - Triton writes ".target sm_90a" for compute capability 9.0; the kernel
#   uses nothing of sm_90a's own instructions, so it is written as sm_90,
#   which the PTX compiler also compiles for sm_100a (a B200).
# - PTX ISA 9.0 (.version 9.0), what the runner's CUDA 13.0 compiles.
# The integer arguments are not specialised (Triton would otherwise compile
# a variant for the value 1 or multiples of 16), so one PTX serves all shapes.
import os
import re
import sys

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
os.environ.setdefault("TRITON_DISABLE_LINE_INFO", "1")
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402

GS_P2 = 128   # largest group size the kernel takes (the board's shapes use 64 and 128)
BLOCK_R = 32  # groups per program; 4 warps
# PTX ISA of CUDA 13.0's PTX compiler (the runner's); Triton's bundled one is newer.
PTX_VERSION = 90


@triton.jit
def fp8_quant(x_ptr, q_ptr, s_ptr, T, H, GS, GS_P2: tl.constexpr, BLOCK_R: tl.constexpr):
    R = T * (H // GS)
    pid = tl.program_id(0)
    rows = pid.to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, GS_P2)
    row_ok = rows < R
    mask = row_ok[:, None] & (cols[None, :] < GS)
    offs = rows[:, None] * GS + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    a = tl.maximum(tl.max(tl.abs(x), axis=1), 1e-10)
    s = a / 448.0
    tl.store(s_ptr + rows, s, mask=row_ok)
    q = tl.minimum(tl.maximum(x / s[:, None], -448.0), 448.0)
    tl.store(q_ptr + offs, q, mask=mask)


HEADER = """//!kjudge leaderboard fp8_quant
//!kjudge launch fp8_quant grid=(ceil_div(T * (H / GS), {block_r})) block=(128) smem=({smem})
// Exported from a Triton kernel by export_triton_ptx.py (Triton {version});
// group size at most {gs_p2}; smem= is Triton's dynamic shared memory. Regenerate
// rather than edit.
"""


def drop_scratch(ptx: str) -> str:
    """Remove Triton's trailing scratch parameters when the body never reads them."""
    m = re.search(r"\.entry\s+(\w+)\s*\((.*?)\)", ptx, re.S)
    if m is None:
        sys.exit("export: no .entry in Triton's PTX")
    params = [p.strip() for p in m.group(2).split(",") if p.strip()]
    names = [p.split()[-1] for p in params]
    keep = 6  # x, x_q, x_s, T, H, GS
    for n in names[keep:]:
        if re.search(r"\[" + re.escape(n) + r"(\+\d+)?\]", ptx):
            sys.exit(f"export: the kernel reads its scratch parameter {n}; it needs a workspace")
    body = ",\n\t".join(params[:keep])
    return ptx[:m.start(2)] + "\n\t" + body + "\n" + ptx[m.end(2):]


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else "triton_ptx.ptx"
    sig = {"x_ptr": "*fp32", "q_ptr": "*fp32", "s_ptr": "*fp32",
           "T": "i32", "H": "i32", "GS": "i32", "GS_P2": "constexpr", "BLOCK_R": "constexpr"}
    src = triton.compiler.ASTSource(fn=fp8_quant, signature=sig,
                                    constexprs={"GS_P2": GS_P2, "BLOCK_R": BLOCK_R})
    k = triton.compile(src, target=GPUTarget("cuda", 90, 64), options={"num_warps": 4, "ptx_version": PTX_VERSION})
    ptx = drop_scratch(k.asm["ptx"])
    ptx = re.sub(r"^\.target\s+sm_90a", ".target sm_90", ptx, count=1, flags=re.M)
    with open(out, "w") as f:
        f.write(HEADER.format(block_r=BLOCK_R, smem=k.metadata.shared, version=triton.__version__,
                              gs_p2=GS_P2) + ptx)
    print(f"export: wrote {out} ({len(ptx)} bytes of PTX)")


if __name__ == "__main__":
    main()
