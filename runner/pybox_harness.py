# pybox_harness.py - the trusted side of a Python run box (runner/pybox.h).
# The runner embeds this file and runs it in the box's interpreter before
# CUDA starts; _kj_start imports PyTorch and Triton and registers _kj_op,
# which the box calls for each operation with a struct pybox_io (mirrored
# below with ctypes). Nothing here trusts the submission: its module is
# imported only by PYBOX_LOAD, after the box's sandbox is locked, and every
# exception it raises becomes a message.
import ctypes
import importlib.util
import os
import sys
import threading
import traceback
import types

_MAX = 16
_DTYPES = ["float32", "float16", "bfloat16", "float64", "int8", "uint8", "int32", "uint32", "int64"]
_TYPESTR = ["<f4", "<f2", "<u2", "<f8", "|i1", "|u1", "<i4", "<u4", "<i8"]


class _Arg(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int32), ("dtype", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("pad", ctypes.c_int32), ("dims", ctypes.c_int64 * 8), ("ptr", ctypes.c_uint64),
                ("ival", ctypes.c_int64), ("name", ctypes.c_char * 32)]


class _IO(ctypes.Structure):
    _fields_ = [("stream", ctypes.c_uint64), ("device", ctypes.c_int32), ("nargs", ctypes.c_int32),
                ("args", _Arg * _MAX), ("nret", ctypes.c_int32), ("pad", ctypes.c_int32),
                ("rets", _Arg * _MAX), ("src", ctypes.c_uint64), ("src_len", ctypes.c_uint64),
                ("versions", ctypes.c_char * 256), ("msg", ctypes.c_char * 2048)]


_SUBMISSION_DIR = "/tmp/submission"  # in the box's own /tmp
_CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
_kj = {"tensors": {}, "streams": {}, "module": None, "out": None}


class _Cai:
    """A device buffer of the box as __cuda_array_interface__ (no copy)."""
    def __init__(self, ptr, shape, typestr):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, False),
                                         "version": 3, "strides": None, "stream": None}


def _name(a):
    return a.name.decode("utf-8", "replace")


def _tensor(a):
    torch = _kj["torch"]
    shape = tuple(int(a.dims[i]) for i in range(a.ndim)) or (1,)
    key = (a.ptr, a.dtype, shape)
    t = _kj["tensors"].get(key)
    if t is None:
        if len(_kj["tensors"]) > 512:
            _kj["tensors"].clear()
        t = torch.as_tensor(_Cai(a.ptr, shape, _TYPESTR[a.dtype]), device="cuda:%d" % _kj["device"])
        if a.dtype == 2:
            t = t.view(torch.bfloat16)
        if a.ndim == 0:
            t = t.reshape(())
        _kj["tensors"][key] = t
    return t


def _stream(handle):
    s = _kj["streams"].get(handle)
    if s is None:
        s = _kj["torch"].cuda.ExternalStream(handle, device=_kj["device"])
        _kj["streams"][handle] = s
    return s


def _tail(limit=1800):
    """The exception's own line first (a message is cut at its end), then
    the traceback's last lines."""
    etype, value, _ = sys.exc_info()
    head = "".join(traceback.format_exception_only(etype, value)).strip()
    text = traceback.format_exc()
    return (head + "\n" + text[-(limit - len(head)):]) if len(head) < limit - 200 else head[:limit]


def _load(io):
    src = ctypes.string_at(io.src, io.src_len)
    task = types.ModuleType("task")
    task.input_t = tuple
    task.output_t = tuple
    sys.modules["task"] = task
    # Triton and Helion read a kernel's source back with inspect: the file
    # must exist. The box's /tmp is its own.
    path = os.path.join(_SUBMISSION_DIR, "submission.py")
    os.makedirs(_SUBMISSION_DIR, exist_ok=True)
    with open(path, "wb") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location("submission", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["submission"] = mod
    spec.loader.exec_module(mod)
    fn = getattr(mod, "custom_kernel", None)
    if not callable(fn):
        raise TypeError("the submission defines no custom_kernel(data) function")
    _kj["module"] = mod
    _kj["fn"] = fn


def _call(io):
    data = []
    for i in range(io.nargs):
        a = io.args[i]
        data.append(_tensor(a) if a.kind == 0 else int(a.ival))
    torch = _kj["torch"]
    with torch.cuda.stream(_stream(io.stream)):
        _kj["out"] = _kj["fn"](tuple(data))


def _collect(io):
    torch = _kj["torch"]
    out, _kj["out"] = _kj["out"], None
    n = io.nret
    if n == 1 and torch.is_tensor(out):
        out = (out,)
    if not isinstance(out, (tuple, list)) or len(out) != n:
        got = "a %s of %d" % (type(out).__name__, len(out)) if isinstance(out, (tuple, list)) else \
            type(out).__name__
        raise TypeError("custom_kernel must return %d tensor%s (%s); it returned %s" % (
            n, "" if n == 1 else "s", ", ".join(_name(io.rets[i]) for i in range(n)), got))
    with torch.cuda.stream(_stream(io.stream)):
        for i in range(n):
            r, want = out[i], io.rets[i]
            dst = _tensor(want)
            if not torch.is_tensor(r):
                raise TypeError("custom_kernel returned a %s as %s, not a tensor" % (
                    type(r).__name__, _name(want)))
            if r.data_ptr() == dst.data_ptr() and r.dtype == dst.dtype and r.shape == dst.shape:
                continue
            if tuple(r.shape) != tuple(dst.shape):
                raise ValueError("custom_kernel returned %s with shape %s; the board's is %s" % (
                    _name(want), tuple(r.shape), tuple(dst.shape)))
            if r.dtype != dst.dtype:
                raise ValueError("custom_kernel returned %s as %s; the board's is %s" % (
                    _name(want), str(r.dtype).replace("torch.", ""), _DTYPES[want.dtype]))
            if r.device != dst.device:
                raise ValueError("custom_kernel returned %s on %s, not on the GPU" % (_name(want), r.device))
            dst.copy_(r, non_blocking=True)


def _libcuda_path():
    """Where the driver library this process loaded lives: Triton links its
    launcher against it and would otherwise ask ldconfig."""
    if os.environ.get("TRITON_LIBCUDA_PATH"):
        return
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if "/" in line else ""
            if "/libcuda.so" in path:
                os.environ["TRITON_LIBCUDA_PATH"] = os.path.dirname(path)
                return


def _versions():
    v = ["python %d.%d.%d" % sys.version_info[:3]]
    for m in ("torch", "triton", "helion"):
        mod = sys.modules.get(m)
        if mod is not None:
            v.append("%s %s" % (m, getattr(mod, "__version__", "?")))
    return ", ".join(v)


def _after_submission(what):
    """After the submission's code ran (its import or a call): a process it
    forked that returned here ends now, before it can speak for the box on
    the box's pipes; a thread it started and left running is refused (it
    could do the call's work after the call's end event)."""
    if os.getpid() != _kj["pid"]:
        os._exit(0)
    left = [t for t in threading.enumerate() if t.is_alive() and t not in _kj["threads"]]
    if left:
        raise RuntimeError("the submission left %d thread%s running after %s (%s): its work must end "
                           "when custom_kernel returns" % (
                               len(left), "" if len(left) == 1 else "s",
                               what,
                               ", ".join(t.name for t in left[:4])))


def _op(op, addr):
    io = _IO.from_address(addr)
    try:
        if op == 1:
            _kj["device"] = io.device
            _kj["torch"].cuda.set_device(io.device)
            _libcuda_path()
            io.versions = _versions().encode("utf-8", "replace")[:250]
        elif op == 2:
            try:
                _load(io)
            finally:
                _after_submission("its import")
        elif op == 3:
            try:
                _call(io)
            finally:
                _after_submission("the call")
        elif op == 4:
            try:
                _collect(io)
            finally:
                _after_submission("the call")
        else:
            io.msg = b"unknown operation"
            return 2
        return 0
    except BaseException:  # the submission's: SystemExit and KeyboardInterrupt too
        if os.getpid() != _kj["pid"]:
            os._exit(0)
        _kj["out"] = None
        io.msg = _tail().encode("utf-8", "replace")[:2040]
        return 1


def _give_tmp(uid):
    """What the imports made in the box's /tmp (Triton's and Inductor's cache
    folders: Helion makes them at import), as root, handed to the uid the
    box drops to (runner/sandbox.h's SANDBOX_UID), which must write there.
    Only in a box, whose /tmp is its own; nothing to do where it is not
    root."""
    if os.geteuid() != 0:
        return
    for root, dirs, files in os.walk("/tmp"):
        for name in dirs + files:
            try:
                os.lchown(os.path.join(root, name), uid, uid)
            except OSError:
                pass
    for d in (os.environ["TRITON_CACHE_DIR"], os.environ["TORCHINDUCTOR_CACHE_DIR"]):
        try:
            os.makedirs(d, exist_ok=True)
            os.chown(d, uid, uid)
        except OSError:
            pass


def _kj_start(slot, site, box_uid=None, why=0, why_len=0, helion=1):
    """Import what the box needs and register the callback at slot (Helion
    only when helion is 1: runner/pybox.h). A failure (PyTorch missing,
    broken) is written, NUL-terminated, into the box's buffer at why
    (why_len bytes): the box's stderr goes nowhere."""
    try:
        _start(slot, site, box_uid, helion)
    except BaseException:
        if why and why_len > 1:
            text = _tail(why_len - 200).encode("utf-8", "replace")[:why_len - 1]
            ctypes.memmove(why, text + b"\0", len(text) + 1)
        raise


def _start(slot, site, box_uid, helion=1):
    if site:
        import site as _site
        _site.addsitedir(site)
    os.environ.setdefault("TRITON_CACHE_DIR", "/tmp/triton-cache")
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", "/tmp/inductor-cache")
    os.environ["HOME"] = "/tmp"
    import torch  # noqa: F401  (every library mapped before the lock)
    _kj["torch"] = torch
    try:
        import triton  # noqa: F401
        import triton.language  # noqa: F401
    except ImportError:
        pass
    if helion:  # 12 s on the H200: only for a source that names it (or one not known yet)
        try:
            import helion  # noqa: F401
            import helion.language  # noqa: F401
        except ImportError:
            pass
    try:  # the progress bars of Helion's and Inductor's compiles: no monitor
        import tqdm.std  # thread, which would outlive the call that made the bar
        tqdm.std.tqdm.monitor_interval = 0
    except ImportError:
        pass
    if box_uid is not None:  # in a box: its own /tmp, the launcher's tmpfs
        _give_tmp(box_uid)
    _kj["pid"] = os.getpid()
    _kj["threads"] = set(threading.enumerate())  # the libraries' own, before the submission's
    cb = _CB(_op)
    _kj["cb"] = cb  # kept alive for the box's life
    ctypes.c_uint64.from_address(slot).value = ctypes.cast(cb, ctypes.c_void_p).value
