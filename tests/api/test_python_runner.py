#!/usr/bin/env python3
"""test_python_runner.py - the runner's side of Python submissions that
needs no GPU.

1. The trusted harness of the Python run box (runner/pybox_harness.py,
   which the runner embeds) run in this interpreter with a stand-in for
   PyTorch: _kj_start registers its callback; LOAD imports a KernelBot-form
   file (from task import input_t, output_t) written to the box's /tmp
   folder; CALL builds the board's tuple (tensors over the box's buffers,
   ints for shape variables) and runs custom_kernel on the box's stream;
   COLLECT leaves a returned given output alone and moves a new tensor into
   its buffer; a wrong count, shape, dtype or a non-tensor is a message
   naming the buffer (the exception's own line first); an exception in
   custom_kernel or at import is the submission's (1), never a crash; a
   start whose PyTorch does not import writes why into the box's buffer.
2. kjudge-runner eval of a .py file: without a Python environment it says
   how to name one (--python / KJUDGE_PYTHON) and exits 2; an interpreter
   without PyTorch, or a program that is no interpreter, is refused with a
   message naming what is missing.
Ends with "test_python_runner: N passed, N failed, N skipped".
"""
import ctypes
import os
import subprocess
import sys
import tempfile
import threading
import time
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from kjcheck import check, run_groups  # noqa: E402
from kjservice import ROOT  # noqa: E402

RUNNER = os.path.join(ROOT, "bin", "kjudge-runner")
HARNESS = os.path.join(ROOT, "runner", "pybox_harness.py")


class FakeTensor:
    """Enough of a CUDA tensor for the harness: a pointer, a shape, a dtype."""
    def __init__(self, ptr, shape, dtype="float32", device="cuda:0"):
        self.ptr, self.shape, self.dtype, self.device = ptr, tuple(shape), dtype, device
        self.copied_from = None

    def data_ptr(self):
        return self.ptr

    def view(self, dtype):
        return FakeTensor(self.ptr, self.shape, "bfloat16", self.device)

    def reshape(self, shape):
        return FakeTensor(self.ptr, shape, self.dtype, self.device)

    def copy_(self, src, non_blocking=False):
        self.copied_from = src
        COPIES.append((self.ptr, src))


COPIES = []
STREAMS = []


def fake_torch():
    t = types.ModuleType("torch")
    t.__version__ = "0.0-stand-in"
    t.bfloat16 = "bfloat16"
    typestr = {"<f4": "float32", "<f2": "float16", "<u2": "uint16", "<i4": "int32", "<i8": "int64"}

    def as_tensor(obj, device=None):
        cai = obj.__cuda_array_interface__
        return FakeTensor(cai["data"][0], cai["shape"], typestr.get(cai["typestr"], cai["typestr"]), device)

    class Stream:
        def __init__(self, handle, device=None):
            self.handle = handle

    class StreamCtx:
        def __init__(self, s):
            self.s = s

        def __enter__(self):
            STREAMS.append(self.s.handle)

        def __exit__(self, *a):
            return False

    t.as_tensor = as_tensor
    t.is_tensor = lambda x: isinstance(x, FakeTensor)
    t.cuda = types.SimpleNamespace(ExternalStream=Stream, stream=StreamCtx, set_device=lambda d: None)
    return t


def fake_tqdm():
    """tqdm's contract that matters here: a bar made while the class's
    monitor_interval is not 0 starts a monitor thread that lives on."""
    std = types.ModuleType("tqdm.std")

    class tqdm:
        monitor_interval = 10
        monitor = None

        def __init__(self, iterable=None, **kw):
            self.iterable = iterable
            if type(self).monitor_interval and tqdm.monitor is None:
                stop = threading.Event()
                tqdm.monitor = threading.Thread(target=stop.wait, name="tqdm_monitor", daemon=True)
                tqdm.monitor.stop = stop
                tqdm.monitor.start()

        def __iter__(self):
            return iter(self.iterable or ())

    std.tqdm = tqdm
    top = types.ModuleType("tqdm")
    top.std, top.tqdm = std, tqdm
    return top, std


def start_harness():
    sys.modules["torch"] = fake_torch()
    sys.modules["tqdm"], sys.modules["tqdm.std"] = fake_tqdm()
    ns = {"__name__": "kjbox"}
    with open(HARNESS) as f:
        exec(compile(f.read(), HARNESS, "exec"), ns)
    slot = ctypes.c_uint64(0)
    ns["_kj_start"](ctypes.addressof(slot), None)
    return ns, slot


def arg(a, ptr, dims, name, dtype=0, kind=0, ival=0):
    a.kind, a.dtype, a.ndim, a.ptr, a.ival = kind, dtype, len(dims), ptr, ival
    for i, d in enumerate(dims):
        a.dims[i] = d
    a.name = name.encode()


def fp8_io(ns):
    """The fp8_quant interface: (x, x_q, x_s) -> (x_q, x_s), T=2 H=256 GS=128."""
    io = ns["_IO"]()
    io.stream, io.device, io.nargs, io.nret = 0x1234, 0, 3, 2
    arg(io.args[0], 0x1000, (2, 256), "x")
    arg(io.args[1], 0x2000, (2, 256), "x_q")
    arg(io.args[2], 0x3000, (2, 2), "x_s")
    arg(io.rets[0], 0x2000, (2, 256), "x_q")
    arg(io.rets[1], 0x3000, (2, 2), "x_s")
    return io


def load(ns, io, src, tmp):
    ns["_kj"]["fn"] = None
    os.environ["KJ_TEST_TMP"] = tmp
    code = src.encode()
    buf = ctypes.create_string_buffer(code)
    io.src, io.src_len = ctypes.addressof(buf), len(code)
    return ns["_op"](2, ctypes.addressof(io)), buf


def test_harness():
    ns, slot = start_harness()
    check(slot.value != 0, "_kj_start writes the callback's address into the box's slot")
    with tempfile.TemporaryDirectory(prefix="kjudge-pybox-") as tmp:
        ns["_SUBMISSION_DIR"] = tmp  # the box's /tmp/submission, here a scratch folder
        io = fp8_io(ns)
        op = lambda code: ns["_op"](code, ctypes.addressof(io))  # noqa: E731
        check(op(1) == 0 and b"torch 0.0-stand-in" in io.versions, "BIND: device set, versions reported",
              io.versions)
        given = ("#!POPCORN leaderboard fp8_quant\nfrom task import input_t, output_t\n"
                 "def custom_kernel(data: input_t) -> output_t:\n"
                 "    x, x_q, x_s = data\n    return x_q, x_s\n")
        rc, keep = load(ns, io, given, tmp)
        check(rc == 0, "LOAD imports a KernelBot-form file", io.msg)
        check(os.path.exists(os.path.join(tmp, "submission.py")), "the file exists for inspect (Triton reads it)")
        del COPIES[:]
        check(op(3) == 0 and op(4) == 0 and COPIES == [], "given outputs returned as they are: nothing copied",
              io.msg)
        check(STREAMS and STREAMS[-1] == 0x1234, "custom_kernel runs on the box's stream", STREAMS)
        new = given.replace("return x_q, x_s", "return FakeTensor(0x9000, x_q.shape), x_s").replace(
            "from task", "from torch_stub import FakeTensor\nfrom task")
        sys.modules["torch_stub"] = types.SimpleNamespace(FakeTensor=FakeTensor)
        rc, keep = load(ns, io, new, tmp)
        del COPIES[:]
        check(rc == 0 and op(3) == 0 and op(4) == 0 and len(COPIES) == 1 and COPIES[0][0] == 0x2000,
              "a new tensor returned is moved into the output buffer", (io.msg, COPIES))
        cases = [
            ("return x_q", "must return 2 tensors (x_q, x_s); it returned FakeTensor"),
            ("return x_q, x_s, x", "must return 2 tensors (x_q, x_s); it returned a tuple of 3"),
            ("return FakeTensor(0x9000, (512,)), x_s", "returned x_q with shape (512,); the board's is (2, 256)"),
            ("return FakeTensor(0x9000, (2, 256), 'float16'), x_s", "returned x_q as float16; the board's is float32"),
            ("return FakeTensor(0x9000, (2, 256), 'float32', 'cpu'), x_s", "returned x_q on cpu, not on the GPU"),
            ("return 3, x_s", "returned a int as x_q, not a tensor"),
        ]
        for ret, want in cases:
            rc, keep = load(ns, io, new.replace("return FakeTensor(0x9000, x_q.shape), x_s", ret), tmp)
            got = op(3) if rc == 0 else rc
            got = op(4) if got == 0 else got
            msg = io.msg.decode()
            check(got == 1 and want in msg.splitlines()[0], "custom_kernel doing '%s': %s" % (ret, want), msg[:600])
        rc, keep = load(ns, io, given.replace("    x, x_q, x_s = data", "    raise ValueError('boom')"), tmp)
        check(rc == 0 and op(3) == 1 and io.msg.decode().startswith("ValueError: boom"),
              "an exception in custom_kernel is the submission's, its own line first", io.msg[:300])
        rc, keep = load(ns, io, "import sys\nsys.exit(3)\n", tmp)
        check(rc == 1 and "SystemExit" in io.msg.decode(), "sys.exit at import is the submission's failure",
              io.msg[:300])
        rc, keep = load(ns, io, "x = 1\n", tmp)
        check(rc == 1 and "custom_kernel" in io.msg.decode(), "a file without custom_kernel is refused at LOAD",
              io.msg[:300])
        rc, keep = load(ns, io, "def custom_kernel(:\n", tmp)
        check(rc == 1 and "SyntaxError" in io.msg.decode().split("Traceback")[0], "a syntax error names itself first",
              io.msg[:300])
        # the shape variables as ints
        io.nargs = 4
        arg(io.args[3], 0, (), "GS", kind=1, ival=128)
        rc, keep = load(ns, io, given.replace("    x, x_q, x_s = data", "    x, x_q, x_s, gs = data\n"
                                              "    assert gs == 128 and isinstance(gs, int)"), tmp)
        check(rc == 0 and op(3) == 0 and op(4) == 0, "a shape variable arrives as a Python int", io.msg[:300])
        io.nargs = 3
        # Work left running past the call: a thread, at import or in a call.
        spin = ("import threading, time\n_stop = []\n"
                "def _bg():\n    while not _stop:\n        time.sleep(0.01)\n")
        rc, keep = load(ns, io, spin + "threading.Thread(target=_bg, name='late-writer').start()\n" + given, tmp)
        msg = io.msg.decode()
        sys.modules["submission"]._stop.append(1)
        for t in threading.enumerate():
            if t.name == "late-writer":
                t.join(5)
        check(rc == 1 and "left 1 thread running after its import (late-writer)" in msg,
              "a thread started at import and left running is refused at LOAD", msg[:300])
        rc, keep = load(ns, io, spin + given.replace(
            "    x, x_q, x_s = data", "    threading.Thread(target=_bg, name='after-call').start()\n"
                                     "    x, x_q, x_s = data"), tmp)
        got = op(3)
        msg = io.msg.decode()
        sys.modules["submission"]._stop.append(1)
        check(rc == 0 and got == 1 and "left 1 thread running after the call (after-call)" in msg,
              "a thread that outlives custom_kernel is the submission's runtime error", msg[:300])
        for t in threading.enumerate():
            if t.name in ("late-writer", "after-call"):
                t.join(5)
        # A progress bar in a call (Helion's and Inductor's compiles make
        # them): the harness set tqdm's monitor_interval to 0 at its start,
        # so no monitor thread outlives the call (on the H200 one did, and
        # every Helion entry was a runtime error).
        rc, keep = load(ns, io, given.replace("    x, x_q, x_s = data", "    import tqdm\n"
                                              "    for _ in tqdm.tqdm(range(3)):\n        pass\n"
                                              "    x, x_q, x_s = data"), tmp)
        got = op(3)
        bar = sys.modules["tqdm"].tqdm
        check(rc == 0 and got == 0 and bar.monitor_interval == 0 and bar.monitor is None,
              "a tqdm progress bar in custom_kernel starts no monitor thread (monitor_interval %s)" %
              bar.monitor_interval, io.msg.decode()[:300])
        # A process forked in custom_kernel that returns ends in the harness
        # (exit 0) instead of going on as the box; exit 7 would be this test.
        parent = os.getpid()
        rc, keep = load(ns, io, given.replace("    x, x_q, x_s = data", "    import os\n    os.fork()\n"
                                              "    x, x_q, x_s = data"), tmp)
        got = op(3)
        if os.getpid() != parent:
            os._exit(7)
        status = None
        for _ in range(500):
            done, st = os.waitpid(-1, os.WNOHANG)
            if done:
                status = os.waitstatus_to_exitcode(st)
                break
            time.sleep(0.01)
        check(rc == 0 and got == 0 and status == 0, "a forked copy that returns from custom_kernel exits in the "
              "harness, not as a second box", "parent rc %s/%s, child exit %s (None: still running after 5 s)"
              % (rc, got, status))


def test_start_failure():
    """A box whose PyTorch does not import: the harness writes why into the
    box's buffer (the box's stderr goes nowhere) and raises."""
    ns, _ = start_harness()
    sys.modules["torch"] = None  # `import torch` now raises ImportError
    slot, why = ctypes.c_uint64(0), ctypes.create_string_buffer(400)
    try:
        ns["_kj_start"](ctypes.addressof(slot), None, None, ctypes.addressof(why), len(why))
        raised = False
    except ImportError:
        raised = True
    finally:
        sys.modules["torch"] = fake_torch()
    text = why.value.decode()
    check(raised and slot.value == 0 and text.startswith("ModuleNotFoundError") and "torch" in text,
          "a start that cannot import PyTorch says why in the box's buffer", text[:300])


def eval_py(env_extra, args=()):
    env = dict(os.environ)
    env.pop("KJUDGE_PYTHON", None)
    env.update(env_extra)
    src = os.path.join(ROOT, "leaderboards", "fp8_quant", "template.py")
    p = subprocess.run([RUNNER, "eval", src, "--leaderboard", "fp8_quant", *args], capture_output=True,
                       text=True, timeout=60, env=env, cwd=ROOT)
    return p.returncode, p.stdout + p.stderr


def test_environment():
    rc, out = eval_py({})
    check(rc == 2 and "--python PATH (or KJUDGE_PYTHON)" in out, "a .py file without a Python environment: "
          "exit 2 and how to name one", out[-600:])
    rc, out = eval_py({"KJUDGE_PYTHON": "/bin/true"})
    check(rc == 2 and "did not answer as a Python interpreter" in out, "a program that is no interpreter is refused",
          out[-600:])
    with tempfile.TemporaryDirectory(prefix="kjudge-pyenv-") as tmp:
        # An interpreter with no PyTorch: this machine's own, in a fresh venv.
        venv = os.path.join(tmp, "venv")
        made = subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], capture_output=True).returncode == 0
        exe = os.path.join(venv, "bin", "python3")
        if made:
            rc, out = eval_py({"KJUDGE_PYTHON": exe})
            check(rc == 2 and ("has no PyTorch" in out or "has no shared libpython" in out),
                  "an interpreter without PyTorch (or without a shared libpython) is refused, naming it", out[-600:])
        else:
            check(False, "python3 -m venv works here")


if __name__ == "__main__":
    sys.exit(run_groups("test_python_runner", globals()))
