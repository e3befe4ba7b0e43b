"""The trusted side's handle on the untrusted worker (copied next to the tests as ``judge_remote``).

``SubmissionProxy`` stands in for the learner's module: ``submission.plan(...)`` encodes the
arguments as plain data, sends them to the worker (``worker.py``), waits for the answer under the
case's time limit and decodes it without unpickling anything. The worker runs in a folder of its
own, in its own session, with a memory cap (``RLIMIT_AS`` per process and the sum of the resident
memory of every process it started, checked while it runs), a CPU time cap, a process cap and no
descriptors but its socket and output pipe. When it runs past the limit, over memory, or dies,
every process it started is killed (this process is their subreaper, so even those that started
a new session are found) and a fresh worker serves the next case.
"""
from __future__ import annotations

import codecs
import ctypes
import json
import math
import os
import resource
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

MAX_FRAME = 8 * 1024 * 1024
OUTPUT_KILL_BYTES = 64 * 1024 * 1024
MAX_DEATHS = 3
POLL_S = 0.05
WORKER_SOURCE_ENV = "JUDGE_WORKER_SOURCE"
_PAGE = os.sysconf("SC_PAGE_SIZE")

try:
    _libc = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover - not Linux
    _libc = None


# --- what a call can end with (all raised on the trusted side) --------------------------------

class CaseTimeout(BaseException):
    """The learner's calls in this case ran past the case's limit (the worker was killed)."""


class RunOut(BaseException):
    """The whole run's time limit passed (the worker was killed)."""


class FunctionHung(BaseException):
    """The function already ran out of time in ``STRIKES`` earlier cases: this case is not run
    again (so one infinite loop costs a few limits, not the whole run's)."""

    def __init__(self, name: str, cases: list[str]):
        super().__init__(name)
        self.name, self.cases = name, list(cases)


STRIKES = 2   # timeouts of one function before its later cases are judged "timed out" at once


class WorkerDied(Exception):
    def __init__(self, exit_code: int | None):
        super().__init__(f"worker exited ({exit_code})")
        self.exit_code = exit_code


class MemoryLimit(Exception):
    def __init__(self, used_mb: float, limit_mb: int):
        super().__init__(f"memory {used_mb:.0f} MB over {limit_mb} MB")
        self.used_mb, self.limit_mb = used_mb, limit_mb


class OutputLimit(Exception):
    pass


class BadReply(Exception):
    """The worker's answer was not a valid message (too large, not JSON, not plain data)."""


class SkipRest(BaseException):
    """The worker died too often: the cases left are not run."""


class SubmissionError(Exception):
    """An exception raised by the learner's code, described by the worker (type, message, line)."""

    def __init__(self, info: dict):
        self.info = info
        super().__init__(info.get("message", ""))

    def __str__(self) -> str:
        return str(self.info.get("message", ""))


class SubmissionValueError(SubmissionError, ValueError):
    """The learner's ``ValueError`` (so that ``expect_value_error`` sees one)."""


class ImportFailed(Exception):
    def __init__(self, info: dict):
        super().__init__(info.get("kind", "exception"))
        self.info = info


# --- plain-data codec -----------------------------------------------------------------------

def encode(value, depth: int = 0):
    """Trusted arguments to the worker's format (plain data only)."""
    if depth > 64:
        raise TypeError("arguments nested too deeply")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [encode(v, depth + 1) for v in value]
    if isinstance(value, tuple):
        return {"t": [encode(v, depth + 1) for v in value]}
    if isinstance(value, dict):
        return {"d": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}
    raise TypeError(f"cannot send a {type(value).__name__} to the worker")


def decode(value, depth: int = 0):
    """The worker's answer to trusted plain data; anything else raises :class:`BadReply`.

    The result is built only from ``None``, ``bool``, ``int``, ``float``, ``str``, ``list``,
    ``tuple`` and ``dict`` of exactly those types: no learner object ever reaches a comparison.
    """
    if depth > 80:
        raise BadReply("nesting")
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return value
    if kind is list:
        return [decode(v, depth + 1) for v in value]
    if kind is dict and len(value) == 1:
        if type(value.get("t")) is list:
            return tuple(decode(v, depth + 1) for v in value["t"])
        if type(value.get("d")) is list:
            out = {}
            for pair in value["d"]:
                if type(pair) is not list or len(pair) != 2:
                    raise BadReply("dict item")
                key = decode(pair[0], depth + 1)
                if not _hashable(key):            # a list, a dict, or a tuple holding one
                    raise BadReply("dict key")
                out[key] = decode(pair[1], depth + 1)
            return out
    raise BadReply("value")


def _hashable(value) -> bool:
    try:
        hash(value)
        return True
    except TypeError:
        return False


def _text(value, limit: int = 2000) -> str:
    return value[:limit] if type(value) is str else ""


def _line(value) -> int | None:
    return value if type(value) is int and 0 < value < 10**9 else None


def exception_info(raw) -> dict:
    """A learner exception described by the worker, reduced to checked plain fields."""
    raw = raw if type(raw) is dict else {}
    info = {"type": _text(raw.get("type"), 100) or "?", "base": _text(raw.get("base"), 40),
            "message": _text(raw.get("message")), "line": _line(raw.get("line"))}
    if "code" in raw:
        code = raw.get("code")
        info["code"] = code if code is None or type(code) is int else _text(code, 200)
    return info


# --- processes ------------------------------------------------------------------------------

def _proc_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state) for every process we can see."""
    table = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        rest = stat[stat.rfind(b")") + 2:].split()
        try:
            table[int(name)] = (int(rest[1]), rest[0].decode())
        except (IndexError, ValueError):
            continue
    return table


def descendants(root: int) -> list[int]:
    table = _proc_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _state) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def resident_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm", "rb") as fh:
                total += int(fh.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total * _PAGE / 1e6


def kill_descendants(keep: set[int] | None = None) -> None:
    """SIGKILL every process below this one (orphans come back to us: we are their subreaper),
    until none is left; reap those that are our children."""
    me = os.getpid()
    for _ in range(50):
        pids = [p for p in descendants(me) if not keep or p not in keep]
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for pid in pids:
            try:
                os.waitpid(pid, os.WNOHANG)
            except (ChildProcessError, OSError):
                pass
        time.sleep(0.002)
    # Zombies left over (killed orphans that became our children) are reaped here.
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break


def become_subreaper() -> None:
    if _libc is not None:
        _libc.prctl(36, 1, 0, 0, 0)   # PR_SET_CHILD_SUBREAPER
        _libc.prctl(4, 0, 0, 0, 0)    # PR_SET_DUMPABLE 0: no /proc/<pid>/fd, mem, environ to others


def _count_own_processes() -> int:
    uid = os.getuid()
    n = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    n += 1
            except OSError:
                pass
    return n


# --- paths the worker may read --------------------------------------------------------------

def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def sandbox_paths(protected: list[str]) -> tuple[list[str], list[str], str | None]:
    """(import path for the worker, read-only roots, reason Landlock cannot be used or None)."""
    protected = [p for p in protected if p]
    path = []
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        if any(_inside(p, entry) or _inside(entry, p) for p in protected):
            # The project itself (or a folder holding it) is not the worker's to read; a virtual
            # environment inside the project is fine when it is the interpreter's own prefix.
            if not any(_inside(entry, pre) and not any(_inside(p, pre) for p in protected)
                       for pre in (sys.prefix, sys.exec_prefix)):
                continue
        path.append(os.path.realpath(entry))
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                              sys.base_exec_prefix)}
    reason = None
    for pre in prefixes:
        if any(_inside(p, pre) for p in protected):
            reason = "python_holds_project"
    system = ["/lib", "/lib64", "/lib32", "/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/local/lib",
              "/etc/ld.so.cache", "/etc/localtime", "/usr/share/zoneinfo", "/dev/null",
              "/dev/urandom"]
    ro = sorted(prefixes) + path + [p for p in system if os.path.exists(p)]
    return path, ro, reason


# --- the worker -----------------------------------------------------------------------------

class Worker:
    """One running worker process and its socket."""

    def __init__(self, source: str, submission: bytes, limits: dict, config: dict):
        self.folder = tempfile.mkdtemp(prefix="practice-worker-")
        Path(self.folder, "submission.py").write_bytes(submission)
        parent_sock, child_sock = socket.socketpair()
        out_r, out_w = os.pipe()
        memory = int(limits["memory_mb"]) * 1024 * 1024
        cpu_s = max(1, int(math.ceil(limits["run_s"])) + 2)
        nproc = _count_own_processes() + int(limits.get("processes", 64))
        child_fd = child_sock.fileno()

        def preexec() -> None:
            for res, value in ((resource.RLIMIT_AS, memory), (resource.RLIMIT_CPU, cpu_s),
                               (resource.RLIMIT_NPROC, nproc), (resource.RLIMIT_CORE, 0),
                               (resource.RLIMIT_FSIZE, 64 * 1024 * 1024),
                               (resource.RLIMIT_NOFILE, 256)):
                try:
                    resource.setrlimit(res, (value, value))
                except (ValueError, OSError):
                    pass
            if _libc is not None:
                _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die with the judge
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

        env = {"PATH": "/usr/bin:/bin", "HOME": self.folder, "TMPDIR": self.folder,
               "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "OMP_NUM_THREADS": "1",
               "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        cmd = [sys.executable, "-I", "-S", "-B", "-u", "-X", "utf8", "-c", source, str(child_fd)]
        try:
            self.proc = subprocess.Popen(cmd, cwd=self.folder, env=env, stdin=subprocess.DEVNULL,
                                         stdout=out_w, stderr=out_w, pass_fds=(child_fd,),
                                         start_new_session=True, preexec_fn=preexec)
        finally:
            child_sock.close()
            os.close(out_w)
        self.sock = parent_sock
        self.sock.setblocking(False)
        self.out = out_r
        os.set_blocking(out_r, False)
        self.buffer = b""
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.sock, selectors.EVENT_READ, "sock")
        self.sel.register(self.out, selectors.EVENT_READ, "out")
        self.output_sink = None
        self.eof = False
        self.send(dict(config, rw=[self.folder]))

    # framing
    def send(self, obj) -> None:
        body = json.dumps(obj, ensure_ascii=True).encode("ascii")
        data = struct.pack(">I", len(body)) + body
        view = memoryview(data)
        deadline = time.monotonic() + 5
        while view:
            try:
                n = self.sock.send(view)
                view = view[n:]
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise WorkerDied(None)
                time.sleep(0.001)
            except OSError:
                raise WorkerDied(self.exit_code()) from None

    def _frame(self):
        if len(self.buffer) < 4:
            return None
        (size,) = struct.unpack(">I", self.buffer[:4])
        if size > MAX_FRAME:
            raise BadReply("too_large")
        if len(self.buffer) < 4 + size:
            return None
        body, self.buffer = self.buffer[4:4 + size], self.buffer[4 + size:]
        try:
            return json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise BadReply("json") from None

    def drain_output(self) -> None:
        while True:
            try:
                chunk = os.read(self.out, 65536)
            except BlockingIOError:
                return
            except OSError:
                return
            if not chunk:
                return
            if self.output_sink is not None:
                self.output_sink(chunk)

    def receive(self, deadline: float, limit_kind: str, memory_mb: int):
        """The next message, or raise on timeout, death, memory or a bad reply."""
        last_check = time.monotonic()
        while True:
            frame = self._frame()
            if frame is not None:
                self.drain_output()
                return frame
            now = time.monotonic()
            if now >= deadline:
                raise RunOut() if limit_kind == "run" else CaseTimeout()
            if self.eof:
                self.drain_output()
                raise WorkerDied(self.exit_code())
            for key, _ in self.sel.select(timeout=min(POLL_S, deadline - now)):
                if key.data == "out":
                    self.drain_output()
                else:
                    try:
                        chunk = self.sock.recv(1 << 20)
                    except BlockingIOError:
                        continue
                    except OSError:
                        chunk = b""
                    if not chunk:
                        self.eof = True
                    self.buffer += chunk
                    if len(self.buffer) > MAX_FRAME + 4:
                        raise BadReply("too_large")
            if time.monotonic() - last_check >= POLL_S:
                last_check = time.monotonic()
                used = resident_mb(descendants(os.getpid()))
                if used > memory_mb:
                    raise MemoryLimit(used, memory_mb)

    def exit_code(self) -> int | None:
        try:
            return self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> int | None:
        """Kill the worker and everything it started; return its exit status."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.kill()
        except OSError:
            pass
        code = self.exit_code()
        kill_descendants()
        for closer in (self.sel.close, self.sock.close, lambda: os.close(self.out)):
            try:
                closer()
            except OSError:
                pass
        _remove_tree(self.folder)
        return code


def _remove_tree(folder: str) -> None:
    import shutil
    shutil.rmtree(folder, ignore_errors=True)


class Manager:
    """Starts workers as needed and runs the learner's calls under the limits."""

    def __init__(self, submission: bytes, limits: dict, protected: list[str], run_deadline: float,
                 landlock: bool = True):
        self.submission = submission
        self.limits = limits
        self.run_deadline = run_deadline
        self.source = Path(os.environ.get(WORKER_SOURCE_ENV) or
                           Path(__file__).with_name("worker.py")).read_text(encoding="utf-8")
        path, ro, reason = sandbox_paths(protected)
        if not landlock:
            reason = "disabled (PRACTICE_NO_LANDLOCK=1)"
        self.config = {"path": path, "ro": ro, "landlock": reason is None}
        self.landlock_reason = reason
        self.landlock: str | None = None
        self.worker: Worker | None = None
        self.functions: list[str] = []
        self.deaths = 0
        self.case_id = ""
        self.hung: dict[str, list[str]] = {}     # function -> cases in which it ran out of time
        self.case_used = 0.0
        self.output = bytearray()
        self.output_bytes = 0
        self.output_keep = int(limits.get("output_keep", 4096))

    # output of the current case
    def _sink(self, chunk: bytes) -> None:
        self.output_bytes += len(chunk)
        room = self.output_keep - len(self.output)
        if room > 0:
            self.output += chunk[:room]

    def start_case(self, case_id: str = "") -> None:
        self.case_id = case_id
        self.case_used = 0.0
        self.output = bytearray()
        self.output_bytes = 0

    def case_output(self) -> tuple[str, int]:
        text = codecs.decode(bytes(self.output), "utf-8", "replace")
        if self.output_bytes > len(self.output):
            return text, self.output_bytes
        return text, len(text)

    def start(self) -> None:
        """Start a worker and import the submission; raise ImportFailed when that fails."""
        self.stop()
        worker = Worker(self.source, self.submission, self.limits, self.config)
        worker.output_sink = self._sink
        self.worker = worker
        deadline = min(time.monotonic() + float(self.limits["case_s"]), self.run_deadline)
        memory = int(self.limits["memory_mb"])
        try:
            hello = worker.receive(time.monotonic() + 10, "case", memory)
            status = hello.get("hello", {}).get("landlock") if type(hello) is dict else None
            self.landlock = status if type(status) is str else "?"
            reply = worker.receive(deadline, "case", memory)
        except (CaseTimeout, RunOut):
            self.stop()
            raise ImportFailed({"kind": "timeout", "limit_s": float(self.limits["case_s"])}) from None
        except MemoryLimit:
            self.stop()
            raise ImportFailed({"kind": "memory"}) from None
        except BadReply:
            self.stop()
            raise ImportFailed({"kind": "bad_reply"}) from None
        except WorkerDied as exc:
            code = self.stop()
            raise ImportFailed({"kind": "no_collect",
                                "exit_code": exc.exit_code if exc.exit_code is not None else code}) from None
        if type(reply) is dict and type(reply.get("imported")) is list:
            self.functions = [n for n in reply["imported"] if type(n) is str]
            return
        info = exception_info(reply.get("import_error") if type(reply) is dict else None)
        self.stop()
        base = info.get("base")
        if base == "SystemExit":
            raise ImportFailed({"kind": "exit", "code": info.get("code")})
        if base == "MemoryError":
            raise ImportFailed({"kind": "memory"})
        raise ImportFailed({"kind": "exception", "type": info["type"], "message": info["message"],
                            "line": info["line"]})

    def stop(self) -> int | None:
        worker, self.worker = self.worker, None
        return worker.stop() if worker is not None else None

    def call(self, name: str, args: tuple, kwargs: dict):
        if len(self.hung.get(name, ())) >= STRIKES:
            raise FunctionHung(name, self.hung[name])
        if self.worker is None:
            if self.deaths >= MAX_DEATHS:
                raise SkipRest()
            try:
                self.start()
            except ImportFailed as exc:
                raise SubmissionError({"type": "ImportError", "base": "Exception",
                                       "message": f"restart failed: {exc.info.get('kind')}",
                                       "line": None}) from None
        worker = self.worker
        message = {"call": name, "args": encode(list(args)), "kwargs": encode(dict(kwargs))}
        case_left = float(self.limits["case_s"]) - self.case_used
        now = time.monotonic()
        kind = "case" if now + case_left <= self.run_deadline else "run"
        deadline = min(now + case_left, self.run_deadline)
        started = time.monotonic()
        try:
            worker.send(message)
            reply = worker.receive(deadline, kind, int(self.limits["memory_mb"]))
        except CaseTimeout:
            self.hung.setdefault(name, []).append(self.case_id)
            self.stop()
            raise
        except (RunOut, MemoryLimit, BadReply):
            self.stop()
            raise
        except WorkerDied as exc:
            self.deaths += 1
            self.stop()
            raise WorkerDied(exc.exit_code) from None
        finally:
            self.case_used += time.monotonic() - started
        if self.output_bytes > OUTPUT_KILL_BYTES:
            self.stop()
            raise OutputLimit()
        if type(reply) is not dict or len(reply) == 0:
            self.stop()
            raise BadReply("shape")
        if "ok" in reply:
            return decode(reply["ok"])
        if "raised" in reply:
            info = exception_info(reply["raised"])
            if info["base"] == "ValueError":
                raise SubmissionValueError(info)
            raise SubmissionError(info)
        if "bad_type" in reply:
            raise ReturnTypeError(_text(reply.get("bad_type"), 100) or "?",
                                  _text(reply.get("path"), 200) or "result")
        if "no_function" in reply:
            raise NoFunction(name)
        self.stop()
        raise BadReply("shape")


class ReturnTypeError(Exception):
    def __init__(self, type_name: str, path: str):
        super().__init__(type_name)
        self.type_name, self.path = type_name, path


class NoFunction(Exception):
    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


class RemoteFunction:
    """A callable that runs the learner's function of that name in the worker."""

    def __init__(self, manager: Manager, name: str):
        self._manager, self.__name__ = manager, name

    def __call__(self, *args, **kwargs):
        return self._manager.call(self.__name__, args, kwargs)

    def __repr__(self) -> str:
        return f"<learner function {self.__name__}>"


def make_proxy(manager: Manager) -> types.ModuleType:
    """A module object named ``submission`` whose callables are the learner's, run remotely."""
    module = types.ModuleType("submission", "The learner's module, run in the untrusted worker.")

    def __getattr__(name: str):
        if name in manager.functions:
            return RemoteFunction(manager, name)
        raise AttributeError(name)

    module.__getattr__ = __getattr__
    return module
