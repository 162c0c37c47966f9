#!/usr/bin/env python3
"""emu.py - a CPU stand-in for `kjudge-runner eval FILE --dump DIR`.

    emu.py FILE --leaderboard NAME --dump DIR [--leaderboards DIR]
           [--cases tests|benchmarks|all] [--max-elems N]

Compiles FILE (and the board's generate.cu, when it has one) as C++ with
cudaemu.h, then for every chosen case fills the inputs, runs generate.cu's
launches and FILE's launches on the CPU, and writes DIR/manifest.json and
the raw buffers in the format the runner's --dump uses. It exists to test
tests/oracle/oracle.py and the boards' kernels on a machine without a GPU;
the judge never uses it.

Differences from the runner: the inputs come from Python's random module,
not the judge's Philox generator (same distributions, other values);
outputs are poisoned with NaN; only the kernels cudaemu.h can run (no warp
shuffles, atomics, half types) and only small cases in reasonable time
(every GPU thread is an OS thread). Needs g++ with C++20.
"""
import argparse
import array
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))

# dtype -> (C type, array typecode)
DTYPES = {
    "float32": ("float", "f"), "float64": ("double", "d"),
    "int8": ("signed char", "b"), "uint8": ("unsigned char", "B"),
    "int32": ("int", "i"), "uint32": ("unsigned int", "I"), "int64": ("long long", "q"),
}
LAUNCH = re.compile(r"^\s*//!kjudge\s+launch\s+(\S+)\s+(.*)$")
SMEM_DECL = re.compile(r"extern\s+__shared__\s+(?:__align__\(\s*\d+\s*\)\s+)?([\w:]+)\s+"
                       r"(?:__align__\(\s*\d+\s*\)\s+)?(\w+)\s*\[\s*\]\s*;")


def die(msg):
    print("emu: " + msg, file=sys.stderr)
    sys.exit(2)


def split_args(text):
    """'grid=(a, b) block=(c) smem=d' -> {'grid': ['a', 'b'], ...}."""
    out, i = {}, 0
    while i < len(text):
        m = re.match(r"\s*(\w+)\s*=\s*", text[i:])
        if not m:
            if text[i:].strip():
                die("cannot parse launch arguments: " + text)
            break
        key, i = m.group(1), i + m.end()
        depth, start = 0, i
        while i < len(text) and (depth > 0 or not text[i].isspace()):
            depth += text[i] == "("
            depth -= text[i] == ")"
            i += 1
        val = text[start:i].strip()
        if val.startswith("(") and val.endswith(")"):
            val = val[1:-1]
        parts, depth, cur = [], 0, ""
        for ch in val:
            if ch == "," and depth == 0:
                parts.append(cur.strip()); cur = ""; continue
            depth += ch == "("
            depth -= ch == ")"
            cur += ch
        parts.append(cur.strip())
        out[key] = parts
    return out


def cxx_expr(e):
    return "(" + re.sub(r"\b(min|max)\s*\(", r"emu_\1(", str(e)) + ")"


def launches(src, path):
    out = []
    for line in src.splitlines():
        if re.match(r"^\s*//!kjudge\s+workspace", line):
            die(f"{path}: workspace is not emulated")
        m = LAUNCH.match(line)
        if m:
            a = split_args(m.group(2))
            grid = (a.get("grid", []) + ["1", "1", "1"])[:3]
            block = (a.get("block", []) + ["1", "1", "1"])[:3]
            smem = a.get("smem", ["0"])[0]
            out.append((m.group(1), grid, block, smem))
    if not out:
        die(f"{path}: no //!kjudge launch line")
    return out


def program(src_path, spec, with_seed, workdir, tag, asan):
    """Write and compile the C++ driver for one .cu file; return the binary."""
    src = open(src_path).read()
    body = SMEM_DECL.sub(lambda m: f"{m.group(1)}* {m.group(2)} = "
                         f"reinterpret_cast<{m.group(1)}*>(emu_smem);", src)
    vars_ = spec["vars"]
    lines = ['#include "cudaemu.h"', f"#line 1 \"{src_path}\"", body, "",
             "static void *emu_read(const char *dir, const char *name, long *n) {",
             "    char p[4096]; snprintf(p, sizeof p, \"%s/%s.bin\", dir, name);",
             "    FILE *f = fopen(p, \"rb\"); if (!f) { perror(p); exit(2); }",
             "    fseek(f, 0, SEEK_END); *n = ftell(f); fseek(f, 0, SEEK_SET);",
             "    void *b = malloc(*n ? *n : 1); /* exact size, so --asan sees overruns */",
             "    if (fread(b, 1, *n, f) != (size_t)*n) exit(2); fclose(f); return b; }",
             "static void emu_write(const char *dir, const char *name, void *b, long n) {",
             "    char p[4096]; snprintf(p, sizeof p, \"%s/%s.bin\", dir, name);",
             "    FILE *f = fopen(p, \"wb\"); if (!f || fwrite(b, 1, n, f) != (size_t)n) exit(2);",
             "    fclose(f); free(b); }",
             "int main(int argc, char **argv) {",
             f"    if (argc != {3 + len(vars_)}) return 2;",
             "    const char *dir = argv[1];"]
    for i, v in enumerate(vars_):
        lines.append(f"    const long long {v} = atoll(argv[{2 + i}]);")
    lines.append(f"    const unsigned long long emu_seed = strtoull(argv[{2 + len(vars_)}], 0, 10);")
    lines.append("    (void)emu_seed;")
    args = []
    for i, b in enumerate(spec["buffers"]):
        ctype = DTYPES[b["dtype"]][0]
        lines.append(f"    long n{i}; {ctype} *b{i} = ({ctype} *)emu_read(dir, \"{b['name']}\", &n{i});")
        args.append(f"b{i}")
    args += [f"(int){v}" for v in vars_]
    if with_seed:
        args.append("emu_seed")
    for name, grid, block, smem in launches(src, src_path):
        dims = ", ".join(cxx_expr(e) for e in grid + block + [smem])
        lines.append(f"    emu_launch({dims}, {name}, {', '.join(args)});")
    for i, b in enumerate(spec["buffers"]):
        lines.append(f"    emu_write(dir, \"{b['name']}\", b{i}, n{i});")
    lines += ["    return 0;", "}"]
    cpp = os.path.join(workdir, tag + ".cpp")
    exe = os.path.join(workdir, tag)
    with open(cpp, "w") as f:
        f.write("\n".join(lines) + "\n")
    flags = ["-fsanitize=address", "-fno-omit-frame-pointer"] if asan else []
    r = subprocess.run(["g++", "-std=c++20", "-O1" if asan else "-O2", "-pthread", "-w"] + flags +
                       ["-I", HERE, cpp, "-o", exe],
                       capture_output=True, text=True)
    if r.returncode != 0:
        die(f"{src_path}: g++ failed:\n{r.stderr[-4000:]}")
    return exe


def shape_of(b, case):
    env = {"ceil_div": lambda a, c: -(-a // c), "min": min, "max": max}
    env.update({k: v for k, v in case.items() if k != "seed"})
    return [int(eval(str(e).replace("/", "//"), {"__builtins__": {}}, env)) for e in b["shape"]]


def fill(b, n, rng):
    code = DTYPES[b["dtype"]][1]
    init = b.get("init", {})
    d = init.get("dist")
    if b["role"] == "output":
        return array.array(code, [float("nan")] * n if code in "fd" else [0] * n)
    if d == "normal":
        return array.array(code, (rng.gauss(init["mean"], init["std"]) for _ in range(n)))
    if d == "uniform":
        return array.array(code, (rng.uniform(init["lo"], init["hi"]) for _ in range(n)))
    if d == "int":
        return array.array(code, (rng.randint(int(init["lo"]), int(init["hi"])) for _ in range(n)))
    return array.array(code, [0] * n)  # generated: zero-filled, then generate.cu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--leaderboard", required=True)
    ap.add_argument("--leaderboards", default=os.path.join(ROOT, "leaderboards"))
    ap.add_argument("--dump", required=True)
    ap.add_argument("--cases", choices=["tests", "benchmarks", "all"], default="all")
    ap.add_argument("--max-elems", type=int, default=0, help="skip cases with more elements")
    ap.add_argument("--asan", action="store_true", help="build with AddressSanitizer (catches "
                    "reads and writes outside the buffers)")
    o = ap.parse_args()

    bdir = os.path.join(o.leaderboards, o.leaderboard)
    spec = json.load(open(os.path.join(bdir, "leaderboard.json")))
    for b in spec["buffers"]:
        if b["dtype"] not in DTYPES:
            die(f"dtype {b['dtype']} is not emulated")
    os.makedirs(o.dump, exist_ok=True)
    work = tempfile.mkdtemp(prefix="kjemu.")
    try:
        gen = os.path.join(bdir, "generate.cu")
        gen_exe = program(gen, spec, True, work, "generate", o.asan) if os.path.exists(gen) else None
        exe = program(o.file, spec, False, work, "file", o.asan)
        kinds = {"tests": ["test"], "benchmarks": ["benchmark"], "all": ["test", "benchmark"]}[o.cases]
        cases = []
        for kind in kinds:
            for i, case in enumerate(spec[kind + "s"]):
                shapes = [shape_of(b, case) for b in spec["buffers"]]
                total = sum(eval("*".join(map(str, s)) or "1") for s in shapes)
                if o.max_elems and total > o.max_elems:
                    print(f"emu: skipping {kind} {i} ({total} elements)", file=sys.stderr)
                    continue
                sub = f"{kind}{i}"
                cdir = os.path.join(o.dump, sub)
                os.makedirs(cdir, exist_ok=True)
                seed = int(case["seed"])
                bufs = []
                for bi, (b, shp) in enumerate(zip(spec["buffers"], shapes)):
                    n = 1
                    for s in shp:
                        n *= s
                    rng = random.Random(f"{seed}/{bi}")
                    with open(os.path.join(cdir, b["name"] + ".bin"), "wb") as f:
                        fill(b, n, rng).tofile(f)
                    e = {"name": b["name"], "dtype": b["dtype"], "shape": shp, "role": b["role"],
                         "file": f"{sub}/{b['name']}.bin"}
                    if b["role"] == "output":
                        e["atol"] = b.get("atol", 0)
                        e["rtol"] = b.get("rtol", 0)
                    bufs.append(e)
                argv = [cdir] + [str(case[v]) for v in spec["vars"]] + [str(seed)]
                for x in ([gen_exe] if gen_exe else []) + [exe]:
                    r = subprocess.run([x] + argv)
                    if r.returncode != 0:
                        die(f"{kind} {i}: {os.path.basename(x)} exited {r.returncode}")
                cases.append({"kind": kind, "index": i,
                              "vars": {v: case[v] for v in spec["vars"]},
                              "seed": str(seed), "buffers": bufs})
                print(f"emu: {kind} {i} done", file=sys.stderr)
        with open(os.path.join(o.dump, "manifest.json"), "w") as f:
            json.dump({"leaderboard": o.leaderboard, "mode": "dump", "cases": cases}, f, indent=1)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
