"""A local job's start-up without its imports: the job goes on in a fork of a warm interpreter.

A mini study is some 340 short jobs, each a fresh Python that imports torch, transformers, verl and math-verify (about
5 s on 2 cores) before its first line of work: a fifth of the study's job-seconds (issue 59). Where a run's jobs run on
this machine, the first job starts a server (``core.warm_server``) that imports those packages once (``PRELOAD``) and
forks for each job. The job's own process, the one Snakemake started, hands its script, working directory,
environment, umask, signal dispositions and standard streams to the fork, forwards the signals it gets, and ends as
the fork ended (its exit status, or killed by the same signal): to Snakemake it is the job, one process per job.

Where it runs, decided once Snakemake has chosen its executor (``begin``, from the Snakefile's ``onstart``): a local
run at mini scale, unless ``ENTROPY_RL_WARM_START=0`` or ``--config warm_start=false``; the run's token
(``ENTROPY_RL_WARM_RUN``) marks its jobs and names its server, which ``end`` stops when the run ends. A job still runs
cold, whatever its environment says, under SLURM, inside a container, at any scale but mini, or where its BLAS or
OpenMP threads are not 1 (the server's are 1, and a forked interpreter keeps its pools); and wherever handing over
fails before the fork has started its work. Its log's first line says which (``logs.setup``).

Nothing of a job's outcome depends on the server once its fork runs: a waiter forked for that job alone is the fork's
parent and reports its status, and the fork reports its own exit as well, so a server killed mid-job changes nothing.
What else keeps a fork the same as a fresh process is the server's to do; its docstring lists it. Linux only (pidfds).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import resource
import secrets
import select
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ENABLE = "ENTROPY_RL_WARM_START"  # "0": every job cold (the user's switch; no value turns warm start on anywhere)
RUN = "ENTROPY_RL_WARM_RUN"  # set by begin() for a run whose jobs go warm: its token, in every job's environment
CHILD = "ENTROPY_RL_WARM_CHILD"  # set in a forked job's environment: it is the job, and hands over no further
START_S = 120.0  # the longest a job waits for a server to import PRELOAD (about 6 s on 2 cores) before it runs alone
STOP_S = 10.0  # the longest end() waits for a server to go
SUN_PATH = 107  # the longest path a Unix socket binds to (sockaddr_un.sun_path, less its terminating NUL)
KEEP_LOGS_S = 7 * 86400  # a server's log is kept this long after its run (a failed run's evidence), then pruned
# What a job imports before its work: the trainer's (torch, transformers, verl's losses, math-verify), the study's
# (pandas, scipy, seaborn) and Snakemake's preamble. An import the child finds here costs it nothing.
PRELOAD = (
    *("torch", "transformers", "verl.trainer.ppo.core_algos", "verl.workers.config", "verl.utils.torch_functional"),
    *("math_verify", "pandas", "pyarrow.parquet", "scipy.optimize", "scipy.stats", "matplotlib.pyplot", "seaborn"),
    *("snakemake.iocontainers", "snakemake.logging"),
)
PRELOAD_ENV = "ENTROPY_RL_WARM_PRELOAD"  # a comma-separated list in its place (the tests' servers import less)
# Thread pools sized at import from these (Snakemake sets each to the job's threads): the server's are 1.
THREADS = (
    *("OMP_NUM_THREADS", "GOTO_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"),
    "NUMEXPR_NUM_THREADS",
)
# Set by Snakemake for each job (its threads and temporary directory): a child takes them from its own job.
PER_JOB = frozenset({*THREADS, "TMPDIR", "TMP", "TEMP", CHILD})
# Forwarded to the fork as they come (a job not ignoring them would end or stop by them); SIGCONT resumes it.
FORWARDED = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2)
FORWARDED += (signal.SIGALRM,)
STOPPING = (signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU)

_tried = False
cold_reason: str | None = None  # why this job, handed over where its run goes warm, runs in its own process


def preload() -> tuple[str, ...]:
    return tuple(filter(None, os.environ[PRELOAD_ENV].split(","))) if PRELOAD_ENV in os.environ else PRELOAD


def in_child() -> bool:
    return os.environ.get(CHILD) == "1"


def begin(local_mini: bool) -> bool:
    """At a run's start, once Snakemake has chosen its executor: its jobs go warm where they run here at mini scale
    (``local_mini``) and the user has not set ENTROPY_RL_WARM_START=0. An inherited token is dropped either way."""
    os.environ.pop(RUN, None)
    if not local_mini or os.environ.get(ENABLE) == "0":
        return False
    _prune()
    os.environ[RUN] = secrets.token_hex(6)
    return True


def end() -> None:
    """At a run's end (success or error): its servers stop, and their lock files go; their logs stay a week."""
    token = os.environ.pop(RUN, None)
    if token:
        stop(token)


def stop(token: str) -> None:
    """The run's servers asked to stop; once each has let go of its lock, its lock and socket files go."""
    for folder in _folders():
        for address in folder.glob(f"{token}.*.sock"):
            with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.connect(str(address))
                _send(sock, {"stop": True}, fds=[])
                sock.settimeout(STOP_S)
                while sock.recv(4096):  # the server closes it as it goes
                    pass
        deadline = time.monotonic() + STOP_S
        for lock in folder.glob(f"{token}.*.lock"):
            while not _remove_if_free(lock) and time.monotonic() < deadline:
                time.sleep(0.05)


def _remove_if_free(lock: Path) -> bool:
    """Remove a server's lock file and socket if no server holds the lock; whether it did."""
    try:
        with open(lock, "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            lock.with_suffix(".sock").unlink(missing_ok=True)
            lock.unlink(missing_ok=True)
            return True
    except BlockingIOError:
        return False


def hand_over() -> None:
    """In a job that Snakemake started (its script's ``__main__`` has the preamble's ``__real_file__``) of a run that
    goes warm: run the job in a fork of the run's warm server and end as it ended; never returns then. Returns at once
    in the fork itself, outside a Snakemake script, or where the run is cold; returns after setting ``cold_reason``
    where this job may not or could not be handed over, having started nothing of its work elsewhere."""
    global _tried, cold_reason
    main = sys.modules.get("__main__")
    script = getattr(main, "__real_file__", None)
    if _tried or in_child() or script is None or not hasattr(main, "snakemake") or not os.environ.get(RUN):
        return
    _tried = True  # once, at the script's first call: a job that went on here has done its imports by the next
    cold_reason = _refusal(main.snakemake)
    if cold_reason:
        return
    try:
        handed = _hand_over(os.path.abspath(script))
    except Exception as error:  # noqa: BLE001 (before the fork is released, any failure runs the job here)
        handed = f"handing over failed ({type(error).__name__}: {error})"
    if isinstance(handed, str):
        cold_reason = handed
        return
    handed.wait_and_end()


def _refusal(smk) -> str | None:
    if "SLURM_JOB_ID" in os.environ:
        return "a SLURM job"
    if {"APPTAINER_CONTAINER", "SINGULARITY_CONTAINER"} & set(os.environ):
        return "inside a container"
    scale = (getattr(smk, "config", None) or {}).get("scale", "mini")
    if scale != "mini":
        return f"scale {scale}"
    threads = {k: os.environ.get(k) for k in THREADS}
    if threads["OMP_NUM_THREADS"] != "1" or set(threads.values()) - {None, "1"}:
        wanted = ", ".join(f"{k}={v}" for k, v in threads.items() if v not in (None, "1")) or "OMP_NUM_THREADS unset"
        return f"its thread pools are not 1 thread ({wanted}), the warm server's are"
    return None


def _hand_over(script: str) -> Handed | str:
    address = _address()
    if address is None:
        return "no folder of this user's alone for the warm server's socket"
    ignored = [s for s in _catchable() if signal.getsignal(s) is signal.SIG_IGN]
    masks = {"ignored": ignored, "blocked": sorted(signal.pthread_sigmask(signal.SIG_BLOCK, []))}
    request = {"script": script, "cwd": os.getcwd(), "env": dict(os.environ), "umask": _umask(), **masks}
    why = "no warm server started"
    for attempt in range(2):  # no server, one ending or retired (a loaded file changed): start one, and once only
        sock = _connect(address, _start_server(address) if attempt else None)
        if sock is None:
            why = f"the warm server ended before serving (its log: {address.with_suffix('.log')})" if attempt else why
            continue
        try:
            _send(sock, request, fds=[0, 1, 2])
            replies = _Replies(sock)
            first = replies.next_line(block=True)
            if first is None or "refused" in first or len(replies.fds) != 2:
                why = (first or {}).get("refused", "the warm server closed the connection")
                sock.close()
                if first is None or first.get("retired"):  # closed unserved (it was ending), or retired: the
                    continue  # next attempt starts a server, one that imports the modules as they now read
                break
            handed = Handed(sock, replies, *replies.fds)
            sock.sendall(b"g")  # the fork starts the job's work: from here on, the job's outcome is the fork's
            return handed
        except (OSError, ValueError, KeyError) as error:
            why = f"{type(error).__name__}: {error}"
            sock.close()
    return f"no warm server took the job: {why}"


@dataclass
class Handed:
    """A job handed over: the connection its waiter and fork report on, and the two processes' pidfds."""

    sock: socket.socket
    replies: _Replies
    child: int  # pidfd of the fork running the job
    waiter: int  # pidfd of its waiter (the fork's parent, which reports its wait status)

    def wait_and_end(self) -> None:
        global cold_reason
        before = {sig: signal.getsignal(sig) for sig in FORWARDED + STOPPING + (signal.SIGCONT,)}
        for sig, handler in before.items():
            if handler is not signal.SIG_IGN:  # a signal the job ignores, its fork ignores too
                signal.signal(sig, self._forward)
        status = self._wait()
        if status is None:
            print(
                "warm start: the job's fork and its waiter ended without a status (killed): failing the job",
                file=sys.stderr,
            )
            status = {"exit": 1}
        elif status.get("unstarted"):  # its waiter died before the fork began the job: nothing ran; run it here
            for sig, handler in before.items():
                signal.signal(sig, handler)
            self.sock.close()
            cold_reason = "the warm server's waiter ended before the job began"
            return
        _end_as(status)

    def _forward(self, signum: int, _frame) -> None:
        with contextlib.suppress(ProcessLookupError, OSError):
            signal.pidfd_send_signal(self.child, signum)
        if signum in STOPPING:  # stop as a cold job would, after its fork; SIGCONT resumes this process, then it
            os.kill(os.getpid(), signal.SIGSTOP)

    def _wait(self) -> dict | None:
        """The waiter's report of the fork's wait status; where the waiter died without one, the fork's own report
        once the fork has ended (None if it died unreported too)."""
        open_, waiter_gone = True, False
        while True:
            watch = ([self.sock] if open_ else []) + ([] if waiter_gone else [self.waiter])
            ready = select.select(watch, [], [], 0.1 if waiter_gone else None)[0]
            if self.sock in ready:
                open_ = self.replies.read()
            if self.waiter in ready:  # it wrote its status, if it did, before it ended: take all that has arrived
                waiter_gone = True
                while open_ and select.select([self.sock], [], [], 0)[0]:
                    open_ = self.replies.read()
            if self.replies.status is not None:
                return self.replies.status
            if waiter_gone and (self.replies.own is not None or _ended(self.child)):
                while open_ and select.select([self.sock], [], [], 0)[0]:
                    open_ = self.replies.read()
                return self.replies.own  # the waiter was killed: the fork's own word is all there is


class _Replies:
    """Lines of JSON on the job's connection: the server's or the waiter's first (with two pidfds), the fork's own
    report of its end (``own``), the waiter's of its wait status (``status``)."""

    def __init__(self, sock: socket.socket):
        self.sock, self.buffer, self.fds = sock, b"", []
        self.lines: list[dict] = []
        self.own: dict | None = None
        self.status: dict | None = None

    def read(self) -> bool:
        """Take what has arrived; False at the end of the connection."""
        data, fds, _, _ = socket.recv_fds(self.sock, 1 << 12, 4)
        self.fds += fds
        self.buffer += data
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            message = json.loads(line)
            self.own = message.get("own", self.own)
            self.status = message.get("status", self.status)
            self.lines.append(message)
        return bool(data)

    def next_line(self, block: bool) -> dict | None:
        while not self.lines:
            if not block or not self.read():
                return None
        return self.lines.pop(0)


def _end_as(status: dict) -> None:
    """End as the fork ended: by the same signal (a death by SIGKILL too), or with its exit status."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    sig = status.get("signal")
    if sig:
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # neither can be caught, blocked or ignored
            signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        _soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
        resource.setrlimit(resource.RLIMIT_CORE, (0, hard))  # the fork dumped its core, if it did
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)  # not reached: its default action ends a process
    os._exit(status.get("exit", 1))


def _ended(pidfd: int) -> bool:
    return bool(select.select([pidfd], [], [], 0)[0])


def _catchable() -> list[int]:
    return [s for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


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


def _folders() -> list[Path]:
    return [Path(base) / f"entropy-rl-warm-{os.getuid()}" for base in dict.fromkeys((tempfile.gettempdir(), "/tmp"))]


def _address() -> Path | None:
    """The socket of the run's server for this interpreter, working directory, environment (less each job's own) and
    resource limits, in a folder of this user's alone; None where there is none (another user's folder, or no path
    short enough)."""
    env = sorted((k, v) for k, v in os.environ.items() if k not in PER_JOB)
    limits = [resource.getrlimit(getattr(resource, n)) for n in sorted(dir(resource)) if n.startswith("RLIMIT_")]
    key = hashlib.sha256(json.dumps([sys.executable, os.getcwd(), env, preload(), limits]).encode()).hexdigest()[:16]
    for folder in _folders():
        path = folder / f"{os.environ[RUN]}.{key}.sock"
        if len(str(path).encode()) > SUN_PATH:
            continue  # a socket's path is at most 107 bytes: a long TMPDIR falls back to /tmp
        folder.mkdir(mode=0o700, exist_ok=True)
        st = folder.lstat()
        private = stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077
        return path if private else None  # a server there could be anyone's: no warm start
    return None


def _start_server(address: Path) -> subprocess.Popen:
    log = open(address.with_suffix(".log"), "a")  # noqa: SIM115 (the server's, held open by it)
    # One thread: every pool its imports size from these at 1 (a fork takes its job's torch threads in logs.setup),
    # and pyarrow's jemalloc without its purging thread.
    malloc = ",".join(filter(None, [os.environ.get("JE_ARROW_MALLOC_CONF"), "background_thread:false"]))
    env = {**os.environ, **dict.fromkeys(THREADS, "1"), "JE_ARROW_MALLOC_CONF": malloc}
    command = [sys.executable, "-m", "entropy_rl.core.warm_server", str(address)]
    streams = {"stdin": subprocess.DEVNULL, "stdout": log, "stderr": subprocess.STDOUT}
    server = subprocess.Popen(command, env=env, start_new_session=True, close_fds=True, **streams)
    log.close()
    return server


def _prune() -> None:
    """Week-old files of servers gone without ``end`` (their runs killed): logs, and locks no server holds with their
    sockets."""
    now = time.time()
    for folder in _folders():
        for path in folder.glob("*") if folder.is_dir() else ():
            with contextlib.suppress(OSError):
                if now - path.stat().st_mtime < KEEP_LOGS_S:
                    continue
                if path.suffix == ".lock":
                    _remove_if_free(path)
                elif path.suffix == ".log":
                    path.unlink()


def _send(sock: socket.socket, message: dict, fds: list[int]) -> None:
    payload = json.dumps(message).encode()
    data = len(payload).to_bytes(4, "big") + payload
    socket.send_fds(sock, [data], fds) if fds else sock.sendall(data)


def line(message: dict) -> bytes:
    return json.dumps(message).encode() + b"\n"
