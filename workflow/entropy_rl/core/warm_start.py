"""A local job's start-up without its imports: the job goes on in a fork of a warm interpreter.

A mini study is some 340 short jobs, each a fresh Python that imports torch, transformers, verl and math-verify (about
5 s on 2 cores) before its first line of work: a fifth of the study's job-seconds (issue 59). Where Snakemake runs the
jobs on this machine (the Snakefile sets ``ENABLE`` at mini scale with the local executor; never at paper scale), the
first job starts a server that imports those packages once (``PRELOAD``) and then forks a child for each job. A job's
own process, the one Snakemake started, hands its script (Snakemake's copy with the preamble), working directory,
environment and standard streams to a child, forwards the signals it gets, waits, and ends with the child's status:
to Snakemake it is the job, one process per job as before.

What keeps a forked job the same as a fresh one:
- only third-party packages are preloaded: the workflow's own modules are imported afresh in each child (those
  imported by this module itself aside), so an edited module is what the next job runs;
- a server serves one interpreter, working directory and environment (less each job's thread and temporary directory
  variables, which the child takes from its job);
- Python and NumPy re-seed their global generators at a fork, from the OS as a fresh process seeds them; torch has
  drawn nothing and run no operation in the server, so its generator is as a fresh process's and no thread pool is
  forked; the child takes its job's torch threads in ``logs.setup`` and the variables the preload's imports set;
- the server ends, serving nothing more, when a file of a module it loaded has changed since (an upgrade);
- a child ends when its job's process does (the connection closes), and the server ends after ``IDLE_S`` without one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib
import json
import os
import runpy
import select
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

ENABLE = "ENTROPY_RL_WARM_START"  # "1": jobs hand over to a warm server; the Snakefile sets it (config mini.warm_start)
CHILD = "ENTROPY_RL_WARM_CHILD"  # set in a forked job's environment: it is the job, and hands over no further
START_S = 120.0  # the longest a job waits for a server to import PRELOAD (about 6 s on 2 cores) before it runs alone
SUN_PATH = 107  # the longest path a Unix socket binds to (sockaddr_un.sun_path, less its terminating NUL)
IDLE_S = 120.0  # a server with no job for this long ends (a mini job runs up to about 80 s)
# What a job imports before its work: the trainer's (torch, transformers, verl's losses, math-verify), the study's
# (pandas, scipy, seaborn) and Snakemake's preamble. An import the child finds here costs it nothing.
PRELOAD = (
    "torch", "transformers", "verl.trainer.ppo.core_algos", "verl.workers.config", "verl.utils.torch_functional",
    "math_verify", "pandas", "pyarrow.parquet", "scipy.optimize", "scipy.stats", "matplotlib.pyplot", "seaborn",
    "snakemake.iocontainers", "snakemake.logging",
)  # fmt: skip
PRELOAD_ENV = "ENTROPY_RL_WARM_PRELOAD"  # a comma-separated list in its place (the tests' servers import less)


def preload() -> tuple[str, ...]:
    return tuple(filter(None, os.environ[PRELOAD_ENV].split(","))) if PRELOAD_ENV in os.environ else PRELOAD


# Set by Snakemake for each job (its threads and temporary directory): a child takes them from its own job.
PER_JOB = frozenset(
    {"OMP_NUM_THREADS", "GOTO_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
     "NUMEXPR_NUM_THREADS", "TMPDIR", "TMP", "TEMP", CHILD}
)  # fmt: skip


_tried = False


def in_child() -> bool:
    return os.environ.get(CHILD) == "1"


def hand_over() -> None:
    """In a job that Snakemake started (its script's ``__main__`` has the preamble's ``__real_file__``), with warm
    start enabled: run the job in a fork of the warm server and exit with its status; never returns then. Returns at
    once in the forked child, where warm start is off, or outside a Snakemake script. With no server yet, the job
    starts one and waits for its imports (those it would have done itself); where none starts, it runs here."""
    global _tried
    main = sys.modules.get("__main__")
    script = getattr(main, "__real_file__", None)
    if _tried or in_child() or os.environ.get(ENABLE) != "1" or script is None or not hasattr(main, "snakemake"):
        return
    _tried = True  # once, at the script's first call: a job that went on here has done its imports by the next
    address = _address()
    if address is None:
        return
    request = json.dumps({"script": os.path.abspath(script), "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    for attempt in range(2):  # no server, or one that refused (a loaded file changed): start one, and once only
        sock = _connect(address, _start_server(address) if attempt else None)
        if sock is None:
            continue
        try:
            _send(sock, request, fds=[0, 1, 2])
            reply = _replies(sock)
            child = json.loads(next(reply))["pid"]
            break
        except (OSError, StopIteration, KeyError, ValueError):
            sock.close()
    else:
        return  # no server would take the job: it runs here, as it would have
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # Snakemake stops a job by signalling its process
        signal.signal(sig, lambda signum, _frame: os.kill(child, signum))
    try:
        status = json.loads(next(reply))
    except StopIteration:  # the server died with the child still running: the job's outcome is unknown
        status = {"exit": 1}
    sys.stdout.flush()
    sys.stderr.flush()
    if "signal" in status:  # end as the child ended: killed by the same signal
        signal.signal(status["signal"], signal.SIG_DFL)
        os.kill(os.getpid(), status["signal"])
    os._exit(status.get("exit", 1))


def _connect(address: Path, server: subprocess.Popen | None) -> socket.socket | None:
    """A connection to the server at ``address``; with ``server`` (one this job started), waiting up to START_S for it
    or for the one another job started first (``server`` then ends at once, with status 0)."""
    deadline = time.monotonic() + START_S
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(address))
            return sock
        except OSError:
            sock.close()
        if server is None or server.poll() not in (None, 0) or time.monotonic() > deadline:
            return None
        time.sleep(0.05)


def _address() -> Path | None:
    """The socket of the server for this interpreter, working directory and environment (less each job's own), in a
    folder of this user's alone; None where there is none (another user's folder, or no path short enough)."""
    env = sorted((k, v) for k, v in os.environ.items() if k not in PER_JOB)
    key = hashlib.sha256(json.dumps([sys.executable, os.getcwd(), env, preload()]).encode()).hexdigest()[:16]
    for base in dict.fromkeys((tempfile.gettempdir(), "/tmp")):
        folder = Path(base) / f"entropy-rl-warm-{os.getuid()}"
        if len(str(folder / f"{key}.sock").encode()) > SUN_PATH:
            continue  # a socket's path is at most 107 bytes: a long TMPDIR falls back to /tmp
        folder.mkdir(mode=0o700, exist_ok=True)
        st = folder.lstat()
        private = stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077
        return folder / f"{key}.sock" if private else None  # a server there could be anyone's: no warm start
    return None


def _start_server(address: Path) -> subprocess.Popen:
    log = open(address.with_suffix(".log"), "a")  # noqa: SIM115 (the server's, held open by it)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # a forked job sets its own torch threads (logs.setup)
    server = subprocess.Popen([sys.executable, "-m", __name__, str(address)], stdin=subprocess.DEVNULL, stdout=log,
                              stderr=subprocess.STDOUT, env=env, start_new_session=True, close_fds=True)  # fmt: skip
    log.close()
    return server


def serve(address: Path) -> None:
    """The server: one per address (a lock), PRELOAD imported, then a fork for each request until IDLE_S pass with
    no job, or a loaded module's file changes. Single-threaded, so that no other thread's lock is forked."""
    lock = open(address.with_suffix(".lock"), "w")  # noqa: SIM115 (held for the server's life)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # another job started one first
        return
    started, before = time.monotonic(), dict(os.environ)
    for name in preload():
        importlib.import_module(name)
    # What the imports set in the environment (verl's Ray settings, say): a fresh process that imports them has it too.
    imports_set = {k: v for k, v in os.environ.items() if before.get(k) != v}
    loaded = _loaded_files()
    print(f"pid {os.getpid()}: {len(sys.modules)} modules loaded in {time.monotonic() - started:.1f} s", flush=True)
    address.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(address))
    listener.listen(64)
    children: dict[int, socket.socket] = {}
    last, accepting = time.monotonic(), True
    try:
        while children or (accepting and time.monotonic() - last < IDLE_S):
            if not accepting:
                time.sleep(0.1)
            elif select.select([listener], [], [], 0.1)[0]:
                conn, _ = listener.accept()
                if _peer_uid(conn) != os.getuid():  # the folder is private; this is the second lock on the door
                    conn.close()
                    continue
                if _loaded_files() != loaded:  # serve no more; the jobs running finish and get their status
                    print("a loaded module's file changed: serving no more", flush=True)
                    accepting = _retire(address, listener, lock)
                    conn.close()  # after the lock is free: the job starts the next server
                    continue
                pid = _fork_job(conn, listener, lock, imports_set)
                if pid:
                    children[pid] = conn
            for pid, status in _reaped(children):
                with contextlib.suppress(OSError):
                    children[pid].sendall(json.dumps(status).encode() + b"\n")
                children.pop(pid).close()
                last = time.monotonic()
    finally:
        if accepting:
            _retire(address, listener, lock)


def _retire(address: Path, listener: socket.socket, lock) -> bool:
    """Stop taking jobs: the socket removed (if it is still this server's), the lock released. Returns False."""
    with contextlib.suppress(FileNotFoundError):
        if address.stat().st_ino == os.fstat(listener.fileno()).st_ino:
            address.unlink()
    listener.close()
    lock.close()
    return False


def _fork_job(conn: socket.socket, listener: socket.socket, lock, imports_set: dict[str, str]) -> int | None:
    try:
        request, fds = _receive(conn)
    except (OSError, ValueError):
        conn.close()
        return None
    pid = os.fork()
    if pid == 0:
        listener.close()
        lock.close()  # the lock is the server's alone: a child must not hold it after the server ends
        _run_job(request, fds, conn, imports_set)
    for fd in fds:
        os.close(fd)
    conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    return pid


def _run_job(request: dict, fds: list[int], conn: socket.socket, imports_set: dict[str, str]) -> None:
    """In the child: become the job (its streams, directory, environment, arguments), run its script, and exit."""
    code = 1
    try:
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
            os.close(fd)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update({**imports_set, **request["env"], CHILD: "1"})
        sys.argv = [request["script"]]
        sys.path[0] = os.path.dirname(request["script"])
        threading.Thread(target=_end_with_job, args=(conn,), daemon=True).start()
        try:
            runpy.run_path(request["script"], run_name="__main__")
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
            if not isinstance(stop.code, int | None):
                print(stop.code, file=sys.stderr)
        except BaseException:  # noqa: BLE001 (as a fresh interpreter: any exception's traceback, status 1)
            traceback.print_exc()
        for thread in threading.enumerate():  # as a fresh process's exit waits for its threads
            if thread is not threading.main_thread() and not thread.daemon:
                thread.join()
        import atexit

        atexit._run_exitfuncs()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _end_with_job(conn: socket.socket) -> None:
    """The child's watch on its job: the connection's end of file is the job's process gone (killed outright)."""
    with contextlib.suppress(OSError):
        while conn.recv(1):
            pass
    os.kill(os.getpid(), signal.SIGTERM)


def _reaped(children: dict[int, socket.socket]):
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in children:
            yield pid, ({"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status) else {"exit": os.WEXITSTATUS(status)})


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


def _send(sock: socket.socket, payload: bytes, fds: list[int]) -> None:
    socket.send_fds(sock, [len(payload).to_bytes(4, "big") + payload], fds)


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
    if len(fds) != 3 or len(data) < 4:
        raise ValueError("a request carries its length, its payload and three descriptors")
    size = int.from_bytes(data[:4], "big")
    while len(data) - 4 < size:
        chunk = conn.recv(size + 4 - len(data))
        if not chunk:
            raise ValueError("the request was cut short")
        data += chunk
    return json.loads(data[4:]), fds


def _replies(sock: socket.socket):
    """The server's lines to a job: its child's pid, then its status."""
    buffer = b""
    while True:
        while b"\n" not in buffer:
            chunk = sock.recv(4096)
            if not chunk:
                return
            buffer += chunk
        line, buffer = buffer.split(b"\n", 1)
        yield line


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
