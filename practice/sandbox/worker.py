"""The untrusted worker: the only process that runs the learner's code.

Started by the trusted side (``judge_remote.py``) as ``python -I -S -B -u -c <this file's text>``
in an empty folder that holds only ``submission.py``, with its own session, resource limits and
no descriptors but the socket (its number is ``sys.argv[1]``) (and /dev/null or the output pipe on 0, 1 and 2).

Protocol (both ways): frames of a 4-byte big-endian length and a UTF-8 JSON body.

1. The trusted side sends ``{"path": [...], "ro": [...], "rw": [...], "landlock": bool}``.
2. The worker restricts itself (capabilities dropped when it runs as root, then Landlock when the
   kernel offers it), answers ``{"hello": {"landlock": <status>}}``, imports ``submission`` and
   answers ``{"imported": [callable names]}`` or ``{"import_error": {...}}``.
3. Then for each ``{"call": name, "args": ..., "kwargs": ...}`` one answer: ``{"ok": value}``,
   ``{"bad_type": type name, "path": where}``, ``{"raised": {...}}`` or ``{"no_function": name}``.

Values are plain data: None, bool, int, float (NaN and infinities kept), str, lists, tuples
(``{"t": [...]}``) and dicts (``{"d": [[key, value], ...]}``). Nothing here is trusted: the
learner's code can replace any of it, so the trusted side decodes every answer defensively.
"""
import json
import os
import struct
import sys

FD = int(sys.argv[1]) if len(sys.argv) > 1 else 3
SUBMISSION = os.path.abspath("submission.py")


def _read_exact(n):
    chunks = []
    while n:
        chunk = os.read(FD, n)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def recv():
    (size,) = struct.unpack(">I", _read_exact(4))
    return json.loads(_read_exact(size).decode("utf-8"))


def send(obj):
    body = json.dumps(obj, ensure_ascii=True).encode("ascii")
    data = struct.pack(">I", len(body)) + body
    view = memoryview(data)
    while view:  # os.write may write less than asked: loop on the rest
        n = os.write(FD, view)
        view = view[n:]


# --- plain-data codec -----------------------------------------------------------------------

class BadType(Exception):
    def __init__(self, name, path):
        super().__init__(name)
        self.name, self.path = name, path


_NUMPY_SCALARS = {"float64": float, "float32": float, "float16": float, "longdouble": float,
                  "int64": int, "int32": int, "int16": int, "int8": int, "uint64": int,
                  "uint32": int, "uint16": int, "uint8": int, "bool_": bool, "bool": bool}


def _type_name(value):
    try:
        name = type.__dict__["__name__"].__get__(type(value))
        return name if type(name) is str else "?"
    except BaseException:  # noqa: BLE001
        return "?"


def encode(value, path="result", depth=0):
    if depth > 64:
        raise BadType("nesting", path)
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return value
    if kind is list:
        return [encode(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
    if kind is tuple:
        return {"t": [encode(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]}
    if kind is dict:
        return {"d": [[encode(k, f"{path} key", depth + 1), encode(v, f"{path}[{k!r}]", depth + 1)]
                      for k, v in list(value.items())]}
    module = getattr(kind, "__module__", "")
    if module == "numpy":
        name = _type_name(value)
        if name in _NUMPY_SCALARS:
            return encode(_NUMPY_SCALARS[name](value.item()), path, depth + 1)
        if name == "ndarray":
            return encode(value.tolist(), path, depth + 1)
    raise BadType(_type_name(value), path)


def decode(value):
    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, dict):
        if "t" in value:
            return tuple(decode(v) for v in value["t"])
        return {decode(k): decode(v) for k, v in value["d"]}
    return value


# --- describing the learner's exceptions ----------------------------------------------------

_BASES = ("ValueError", "NotImplementedError", "MemoryError", "RecursionError", "SystemExit",
          "KeyboardInterrupt", "TypeError", "ZeroDivisionError", "AssertionError")


def _safe_str(exc):
    try:
        text = str(exc)
        return text if type(text) is str else "?"
    except BaseException:  # noqa: BLE001 - a raising __str__
        return "<__str__ raised>"


def describe(exc):
    line = None
    try:
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == SUBMISSION:
                line = tb.tb_lineno
            tb = tb.tb_next
    except BaseException:  # noqa: BLE001
        pass
    base = "Exception"
    try:
        import builtins
        for name in _BASES:
            if isinstance(exc, getattr(builtins, name)):
                base = name
                break
    except BaseException:  # noqa: BLE001
        pass
    info = {"type": _type_name(exc), "base": base, "message": _safe_str(exc)[:2000], "line": line}
    if base == "SystemExit":
        try:
            code = exc.code
            info["code"] = code if type(code) in (int, str) or code is None else _type_name(code)
        except BaseException:  # noqa: BLE001
            info["code"] = None
    return info


# --- sandbox ------------------------------------------------------------------------------

def _drop_capabilities(libc):
    """As root: drop every capability, so that the worker cannot reach other processes' /proc
    entries, ptrace them or bypass file permissions, and its process limit applies."""
    import ctypes
    PR_CAPBSET_DROP = 24
    for cap in range(64):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header = Header(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (Data * 2)()
    if libc.capset(ctypes.byref(header), data) != 0:
        return False
    return True


_FS_FILE = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)
_READ = (1 << 0) | (1 << 2) | (1 << 3)                  # execute, read file, read dir


def _landlock(ro, rw):
    """Restrict this process (and its children) to reading ``ro`` and writing ``rw`` only.
    Returns a status string: ``"abi<N>"`` when applied, else why not."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        return "unavailable"
    fs = (1 << 13) - 1
    if abi >= 2:
        fs |= 1 << 13
    if abi >= 3:
        fs |= 1 << 14
    if abi >= 5:
        fs |= 1 << 15
    net = 3 if abi >= 4 else 0
    scoped = 3 if abi >= 6 else 0

    class Ruleset(ctypes.Structure):
        _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]

    class Beneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]

    attr = Ruleset(fs, net, scoped)
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    ruleset = libc.syscall(444, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return "create_failed"
    try:
        for paths, access in ((ro, _READ & fs), (rw, fs)):
            for path in paths:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    allowed = access if os.path.isdir(path) else access & _FS_FILE
                    rule = Beneath(allowed, fd)
                    libc.syscall(445, ctypes.c_int(ruleset), ctypes.c_int(1), ctypes.byref(rule),
                                 ctypes.c_uint32(0))
                finally:
                    os.close(fd)
        if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
            return "no_new_privs_failed"
        if libc.syscall(446, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            return "restrict_failed"
    finally:
        os.close(ruleset)
    return f"abi{abi}"


def _sandbox(config):
    status = "disabled"
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(38, 1, 0, 0, 0)  # no new privileges, whatever happens next
        if os.geteuid() == 0:
            _drop_capabilities(libc)
        if config.get("landlock"):
            status = _landlock(config.get("ro", []), config.get("rw", []))
    except Exception as exc:  # noqa: BLE001 - report, never crash before the hello
        status = "error:" + type(exc).__name__
    return status


# --- main loop ----------------------------------------------------------------------------

def _call(module, msg):
    name = msg.get("call")
    fn = getattr(module, name, None) if type(name) is str else None
    if fn is None or not callable(fn):
        return {"no_function": name}
    args = decode(msg.get("args", []))
    kwargs = decode(msg.get("kwargs", {"d": []}))
    try:
        result = fn(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - every learner exception, KeyboardInterrupt too
        return {"raised": describe(exc)}
    try:
        return {"ok": encode(result)}
    except BadType as bad:
        return {"bad_type": bad.name, "path": bad.path}
    except BaseException as exc:  # noqa: BLE001 - e.g. an int too long to print
        return {"bad_type": _type_name(result), "path": "result", "why": _type_name(exc)}


def _flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001
            pass


def main():
    config = recv()
    sys.path[:] = [p for p in sys.path if p] + list(config.get("path", []))
    sys.dont_write_bytecode = True
    status = _sandbox(config)
    send({"hello": {"landlock": status}})
    try:
        sys.set_int_max_str_digits(10000)
    except AttributeError:
        pass
    sys.path.insert(0, os.getcwd())
    try:
        import submission  # noqa: F401 - the learner's file
    except BaseException as exc:  # noqa: BLE001
        info = describe(exc)
        if isinstance(exc, SyntaxError):
            info["line"] = exc.lineno
        _flush()
        send({"import_error": info})
        return
    names = []
    for key in list(vars(submission)):
        try:
            if type(key) is str and callable(getattr(submission, key)):
                names.append(key)
        except BaseException:  # noqa: BLE001
            pass
    _flush()
    send({"imported": names})
    while True:
        try:
            msg = recv()
        except EOFError:
            return
        reply = _call(submission, msg)
        _flush()
        send(reply)


main()
os._exit(0)
