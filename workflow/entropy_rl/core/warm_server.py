"""The warm server of a run's local jobs (core.warm_start): PRELOAD imported once, then a fork for each job.

``python -m entropy_rl.core.warm_server ADDRESS``, started by the run's first job. One server per address (a lock);
it serves until ``IDLE_S`` pass with no new job, until ``warm_start.end`` stops it at the run's end, or until a loaded
module's file changes (an upgrade: the next job starts a server that imports it as it now reads).

For each job it forks a waiter, which forks the job's process (the child) and is its parent: the waiter reports the
child's wait status to the job, kills the child if the job's process is gone (its connection closes), and ends with
it. The server itself runs no job and holds no job's outcome; a failure in its code for one connection is logged and
that job runs cold. It checks that it has one thread before it serves and before each fork, and refuses to serve
(each job then runs cold at once) otherwise.

What keeps a child the same as a fresh process running the job:
- only third-party packages are preloaded: the workflow's own modules are imported afresh in each child (those
  imported by this module and warm_start aside), so an edited module is what the next job runs;
- one interpreter, working directory, environment (less each job's threads and temporary directory) and resource
  limits per server; the child takes its job's environment, umask, working directory, standard streams (buffered as
  a fresh process buffers them), ignored signals and signal mask, and ``tempfile``'s folder from its job's TMPDIR;
- a process group of its own, so that a signal to the server's group or the waiter's reaches no job;
- Python's, NumPy's and torch's global generators seeded afresh from the OS, as each seeds them in a fresh process
  (CPython re-seeds ``random`` at a fork; NumPy's and torch's are re-seeded here: children of one server would
  otherwise draw the same numbers); the job's torch threads are set in ``logs.setup``; the BLAS and OpenMP pools
  are 1 thread, as a job's (warm_start refuses any other count);
- its end is an interpreter's: threading's shutdown (its exit hooks, which stop executors, then a join of the
  non-daemon threads), then the exit handlers, latest first. Of those the server's imports registered, those with no
  arguments are per-process clean-ups (logging's flush, weakref's and multiprocessing's finalizers, ...) and run in
  the child as in a fresh process; one registered with arguments names a thing of the server's (matplotlib's
  temporary configuration folder under an unwritable HOME) and does not, nor does a finalizer of an object the server
  made. An uncaught KeyboardInterrupt ends it by SIGINT, as CPython does;
- ``gc.freeze()`` before serving, so that children do not copy the preloaded objects' pages by collecting them.
A child shares the server's hash seed (PYTHONHASHSEED, where set, is part of the server's environment, so of its
address) and pyarrow's jemalloc runs without its purging thread.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import gc
import importlib
import json
import os
import runpy
import select
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
import traceback
import weakref
from pathlib import Path

from .warm_start import CHILD, _catchable, line, preload

IDLE_S = 120.0  # a server with no new job for this long ends (a mini job runs up to about 80 s)


def serve(address: Path) -> None:
    lock = open(address.with_suffix(".lock"), "w")  # noqa: SIM115 (held for the server's life)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # another job started one first
        return
    started, before = time.monotonic(), dict(os.environ)
    with _recorded_exit_handlers() as handlers:
        for name in preload():
            importlib.import_module(name)
    # What the imports set in the environment (verl's Ray settings, say): a fresh process that imports them has it too.
    imports_set = {k: v for k, v in os.environ.items() if before.get(k) != v}
    gc.collect()
    gc.freeze()
    loaded, threads = _loaded_files(), _threads()
    refusing = f"the warm server has {threads} threads after its imports, not 1" if threads != 1 else None
    print(
        f"pid {os.getpid()}: {len(sys.modules)} modules loaded in {time.monotonic() - started:.1f} s"
        f"{f'; {refusing}: serving no job' if refusing else ''}",
        flush=True,
    )
    address.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(address))
    listener.listen(64)
    bound = address.stat().st_ino  # the socket's file, which only this server may remove
    signal.signal(signal.SIGTERM, _stop)
    last, serving = time.monotonic(), True
    try:
        while serving and time.monotonic() - last < IDLE_S:
            _reap()
            if not select.select([listener], [], [], 1.0)[0]:
                continue
            conn, _ = listener.accept()
            last = time.monotonic()
            try:
                serving, refusing = _serve_one(
                    conn, listener, lock, (address, bound), refusing, loaded, handlers, imports_set
                )
            except Exception:  # noqa: BLE001 (one connection's failure: that job runs cold; the server goes on)
                traceback.print_exc()
            finally:
                conn.close()
    finally:
        _retire((address, bound), listener, lock)


def _serve_one(conn, listener, lock, address, refusing, loaded, handlers, imports_set) -> tuple[bool, str | None]:
    """One connection: a stop, a job forked or refused. Returns (whether to go on serving, why jobs are refused)."""
    if _peer_uid(conn) != os.getuid():  # the folder is private; this is the second lock on the door
        return True, refusing
    request, fds = _receive(conn)
    try:
        if request.get("stop"):
            print("stopped: the run ended", flush=True)
            return False, refusing
        if _loaded_files() != loaded:  # serve no more: the job starts the next server, once this one lets go
            print("a loaded module's file changed: serving no more", flush=True)
            _retire(address, listener, lock)
            conn.sendall(line({"refused": "the warm server retired (a loaded module's file changed)", "retired": True}))
            return False, refusing
        threads = _threads()
        if refusing is None and threads != 1:
            refusing = f"the warm server has {threads} threads, not 1"
            print(f"{refusing}: serving no more jobs", flush=True)
        if refusing:
            conn.sendall(line({"refused": refusing}))
            return True, refusing
        if os.fork() == 0:
            _waiter(conn, fds, request, listener, lock, handlers, imports_set)
        return True, refusing
    finally:
        for fd in fds:
            os.close(fd)


def _waiter(conn, fds, request, listener, lock, handlers, imports_set) -> None:
    """In the waiter: fork the child, hand the job its pidfd and the waiter's own, start the child when the job says
    so, then report its wait status, killing it if the job's process goes first. Never returns."""
    try:
        listener.close()
        lock.close()  # the lock is the server's alone: nothing of a job holds it after the server ends
        os.setsid()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        release, start = os.pipe()
        child = os.fork()
        if child == 0:
            os.close(start)
            _child(request, fds, conn, release, handlers, imports_set)
        for fd in (release, *fds):  # the job's streams are the child's: the waiter holds none of them open
            os.close(fd)
        pidfd, own = os.pidfd_open(child), os.pidfd_open(os.getpid())
        socket.send_fds(conn, [line({"pid": child})], [pidfd, own])
        if conn.recv(1) != b"g":  # the job did not take it (it runs cold): the child goes, having run nothing
            os.kill(child, signal.SIGKILL)
        else:
            os.write(start, b"g")
        os.close(start)
        job_gone = False
        while not select.select([pidfd] + ([] if job_gone else [conn]), [], [])[0].count(pidfd):
            if not conn.recv(4096):  # the job's process is gone (killed outright): so goes its work
                job_gone = True
                os.kill(child, signal.SIGKILL)
        _, status = os.waitpid(child, 0)
        ended = {"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status) else {"exit": os.WEXITSTATUS(status)}
        conn.sendall(line({"status": ended}))
    finally:
        os._exit(0)


def _child(request: dict, fds: list[int], conn, release: int, handlers: list, imports_set: dict[str, str]) -> None:
    """In the child: wait for the job's word, become the job, run its script, and end as an interpreter ends."""
    code, interrupted = 1, False
    try:
        go = os.read(release, 1)
        if go != b"g":  # the waiter died first: nothing of the job has run, and the job may run it itself
            conn.sendall(line({"own": {"unstarted": True}}))
            os._exit(0)
        os.close(release)
        os.setpgid(0, 0)
        _become(request, fds, imports_set)
        _fresh_state(handlers)
        try:
            runpy.run_path(request["script"], run_name="__main__")
            code = 0
        except SystemExit as stop:
            code = _exit_code(stop)
        except KeyboardInterrupt:
            traceback.print_exc()
            interrupted = True
        except BaseException:  # noqa: BLE001 (as a fresh interpreter: any exception's traceback, status 1)
            traceback.print_exc()
        _finalize()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        with contextlib.suppress(Exception):
            conn.sendall(line({"own": {"signal": signal.SIGINT} if interrupted else {"exit": code}}))
        if interrupted:  # CPython ends a process that a KeyboardInterrupt ended by SIGINT itself
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        os._exit(code)


def _become(request: dict, fds: list[int], imports_set: dict[str, str]) -> None:
    for target, fd in zip((0, 1, 2), fds):
        os.dup2(fd, target)
        os.close(fd)
    fds.clear()
    ignored = set(request["ignored"])
    for sig in _catchable():
        current = signal.getsignal(sig)
        if current not in (signal.SIG_IGN, signal.SIG_DFL, signal.default_int_handler, _stop):
            continue  # a handler an import installed: a fresh process's imports install it too
        want = (
            signal.SIG_IGN if sig in ignored else signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL
        )
        if current is not want:
            with contextlib.suppress(OSError, ValueError):
                signal.signal(sig, want)
    signal.pthread_sigmask(signal.SIG_SETMASK, request["blocked"])
    os.umask(request["umask"])
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update({**imports_set, **request["env"], CHILD: "1"})
    tempfile.tempdir = None  # gettempdir reads the job's TMPDIR
    encoding = sys.stdout.encoding
    sys.stdin = sys.__stdin__ = open(0, closefd=False, encoding=encoding)  # noqa: SIM115
    sys.stdout = sys.__stdout__ = open(1, "w", buffering=1 if os.isatty(1) else -1, closefd=False, encoding=encoding)  # noqa: SIM115
    sys.stderr = sys.__stderr__ = open(2, "w", buffering=1, closefd=False, encoding=encoding, errors="backslashreplace")  # noqa: SIM115
    sys.argv = [request["script"]]
    sys.path[0] = os.path.dirname(request["script"])


def _fresh_state(handlers: list) -> None:
    """A fresh process's random state and exit handlers (the module docstring)."""
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()  # from the OS, as NumPy seeds its global generator at import
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.seed()  # from the OS, as torch (2.13) seeds its default generator in every process
    atexit._clear()
    for func in handlers:
        atexit.register(func)
    for info in list(weakref.finalize._registry.values()):
        info.atexit = False  # the server's objects' finalizers are the server's


def _finalize() -> None:
    """CPython's order at an interpreter's end: threading's shutdown, then the exit handlers."""
    try:
        threading._shutdown()
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
    atexit._run_exitfuncs()


def _exit_code(stop: SystemExit) -> int:
    if stop.code is None:
        return 0
    if isinstance(stop.code, int):
        return stop.code & 0xFF
    print(stop.code, file=sys.stderr)
    return 1


@contextlib.contextmanager
def _recorded_exit_handlers():
    """The exit handlers registered inside: those registered with no arguments (per-process clean-ups)."""
    recorded: list = []
    register, unregister = atexit.register, atexit.unregister

    def record(func, *args, **kwargs):
        if not args and not kwargs:
            recorded.append(func)
        return register(func, *args, **kwargs)

    def forget(func):
        recorded[:] = [f for f in recorded if f != func]
        return unregister(func)

    atexit.register, atexit.unregister = record, forget
    try:
        yield recorded
    finally:
        atexit.register, atexit.unregister = register, unregister


def _stop(_signum, _frame) -> None:
    raise SystemExit(0)


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _retire(address: tuple[Path, int], listener: socket.socket, lock) -> None:
    """Stop taking jobs: the socket's file removed (if it is still this server's), the lock released."""
    path, bound = address
    with contextlib.suppress(OSError):
        if path.stat().st_ino == bound:
            path.unlink()
    listener.close()
    lock.close()


def _peer_uid(conn: socket.socket) -> int:
    _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return uid


def _loaded_files() -> dict[str, tuple[int, int]]:
    """Each loaded module's file, with its modification time and size."""
    out = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path:
            with contextlib.suppress(OSError):
                st = os.stat(path)
                out[path] = (st.st_mtime_ns, st.st_size)
    return out


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
    try:
        size = int.from_bytes(data[:4], "big")
        while len(data) < 4 or len(data) - 4 < size:
            chunk = conn.recv(max(1, size + 4 - len(data)))
            if not chunk:
                raise ValueError("the request was cut short")
            data += chunk
            size = int.from_bytes(data[:4], "big")
        request = json.loads(data[4:])
        if not request.get("stop") and len(fds) != 3:
            raise ValueError("a job's request carries three descriptors")
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return request, fds


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
