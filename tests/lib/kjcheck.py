"""kjcheck.py - the one pass/fail/skip counter of the Python tests.

Every test script under tests/api, tests/gpu and tests/oracle counts its
checks here and ends with the line tests/run-cpu.sh and tests/gpu/run.sh
add up: "NAME: N passed, N failed, N skipped". A failed check prints
"FAIL what: detail"; a skip prints "SKIP what" and is never a pass.
Python 3 standard library only.
"""
import sys


class Counter:
    """Counts checks. verbose=True also prints "ok   what" for each pass
    (the GPU tests do, so a long run shows its progress)."""

    def __init__(self, verbose=False, limit=400):
        self.passed = 0
        self.failed = 0
        self.skipped = 0
        self.verbose = verbose
        self.limit = limit  # characters of a failure's detail printed (None: all)

    def check(self, cond, what, detail=""):
        if cond:
            self.passed += 1
            if self.verbose:
                print("ok   %s" % what, flush=True)
        else:
            self.failed += 1
            text = str(detail) if self.limit is None else str(detail)[:self.limit]
            print("FAIL %s%s" % (what, (": " + text) if detail else ""), flush=True)
        return cond

    def skip(self, what, why=None):
        self.skipped += 1
        print("SKIP %s%s" % (what, (": " + why) if why else ""), flush=True)

    def line(self, name):
        return "%s: %d passed, %d failed, %d skipped" % (name, self.passed, self.failed, self.skipped)

    def summary(self, name):
        """Print the summary line; returns the exit status (1 if anything failed)."""
        print(self.line(name), flush=True)
        return 1 if self.failed else 0


# The counter of the running script: one process runs one test script.
Counts = Counter()


def check(cond, what, detail=""):
    return Counts.check(cond, what, detail)


def skip(what, why=None):
    Counts.skip(what, why)


def summary(name):
    return Counts.summary(name)


def groups(module_globals, argv=None):
    """The test_* functions of a script in file order, or only those whose
    name contains argv[1] when one is given (to run one group alone)."""
    argv = sys.argv if argv is None else argv
    fns = [f for n, f in module_globals.items() if n.startswith("test_") and callable(f)]
    if len(argv) > 1:
        fns = [f for f in fns if argv[1] in f.__name__]
    return fns


def run_groups(name, module_globals, argv=None):
    """Run the script's groups (see groups()), each alone; a group that
    raises is a failure, never a pass. Prints the summary line; returns the
    exit status."""
    argv = sys.argv if argv is None else argv
    fns = groups(module_globals, argv)
    if not fns:
        check(False, "a group of %s matches %r" % (name, argv[1]))
    for fn in fns:
        try:
            fn()
        except Exception as e:
            check(False, "%s ran" % fn.__name__, repr(e))
    return summary(name)
