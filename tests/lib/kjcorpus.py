"""kjcorpus.py - the one reader of the two verdict corpora: every *.cu (and
*.ptx) of tests/gpu/cases/ (the verdict corpus) or tests/exploits/ (the
exploit corpus) with what its first line says.

Read by tests/gpu/test_gpu.py (the verdict corpus on a GPU),
tests/gpu/test_exploits.py (the exploits on a GPU) and
tests/api/test_exploits_compile.py (the exploits without a GPU). The first
line of every file of both corpora is

    // expect: VERDICT  mode: MODE  [time_limit: S]  [min_median_us: N]  [line: L]  why: TEXT

VERDICT is the verdict `kjudge-runner eval` must give in MODE; time_limit is
passed as --time-limit (whole job, seconds); min_median_us is a lower bound
on every benchmark shape's median (for exploits that try to hide time);
line is the line of the file the compile log must name ("line L:", or
NVRTC's "submission.cu(L)").
Python 3 standard library only.
"""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXPLOITS = os.path.join(ROOT, "tests", "exploits")
CASES = os.path.join(ROOT, "tests", "gpu", "cases")
VERDICTS = ("accepted", "compile_error", "rejected", "wrong_answer", "runtime_error", "time_limit")
MODES = ("test", "benchmark", "leaderboard")
OPTIONS = {"time_limit": float, "min_median_us": float, "line": int}
HEADER = re.compile(r"^// expect: (?P<expect>\S+)\s+mode: (?P<mode>\S+)(?P<opts>.*?)\s+why: (?P<why>\S.*)$")
LAUNCH = re.compile(r"^//!kjudge\s+launch\s+([A-Za-z_]\w*)", re.M)
GPU_LINE = re.compile(r"^//!kjudge\s+gpu\s+(\S+)", re.M)


class Case:
    """One corpus file: name, path, expect, mode, time_limit, min_median_us, why, kernels."""

    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        first = text.split("\n", 1)[0]
        m = HEADER.match(first)
        if m is None:
            raise ValueError("%s: the first line is not '// expect: V  mode: M  ...  why: ...'" % self.name)
        self.expect, self.mode, self.why = m.group("expect"), m.group("mode"), m.group("why")
        if self.expect not in VERDICTS:
            raise ValueError("%s: unknown verdict %r" % (self.name, self.expect))
        if self.mode not in MODES:
            raise ValueError("%s: unknown mode %r" % (self.name, self.mode))
        self.time_limit = None
        self.min_median_us = None
        self.line = None
        for key, value in re.findall(r"(\w+):\s*(\S+)", m.group("opts")):
            if key not in OPTIONS:
                raise ValueError("%s: unknown header option %r" % (self.name, key))
            try:
                setattr(self, key, OPTIONS[key](value))
            except ValueError:
                raise ValueError("%s: bad value %r for %s" % (self.name, value, key))
        # The kernels the launch lines name (a template-id keeps only its name).
        self.kernels = LAUNCH.findall(text)

    def eval_args(self):
        """Extra `kjudge-runner eval` arguments this file needs."""
        return ["--time-limit", "%g" % self.time_limit] if self.time_limit else []

    def __repr__(self):
        return "Case(%s: %s in %s)" % (self.name, self.expect, self.mode)


    def names_line(self, log):
        """1 when log names this case's line (or the case names none)."""
        return self.line is None or ("line %d:" % self.line) in log or \
            ("submission.cu(%d)" % self.line) in log


def load(folder=EXPLOITS):
    """Every *.cu and *.ptx in folder, sorted by name; a malformed header raises ValueError."""
    return [Case(os.path.join(folder, f)) for f in sorted(os.listdir(folder))
            if f.endswith(".cu") or f.endswith(".ptx")]


def gpu_line(path):
    """The GPU type a source file's "//!kjudge gpu" line names (e.g. B200 for the tcgen05
    matmul), or None; any file, not only the corpora's."""
    with open(path, encoding="utf-8") as f:
        m = GPU_LINE.search(f.read())
    return m.group(1) if m else None


def by_name(name, folder=EXPLOITS):
    return Case(os.path.join(folder, name))
