"""Job set-up shared by the rule scripts: logging into the rule's log file and CPU threads."""

from __future__ import annotations

import atexit
import fcntl
import io
import json
import logging
import os
import signal
import struct
import subprocess
import sys
import termios
import time
import warnings

from . import warm_start

# The longest a job's exit waits for tee to take in what the job's processes wrote (tee_output).
TEE_DRAIN_S = 10


def setup(log_path: str, threads: int = 1, engines: bool = False) -> logging.Logger:
    """Send logging, warnings and stray prints to ``log_path``; pin torch to the job's threads if the
    job loaded it (a job that has no use for torch, a download or a figure, never imports it).

    ``engines``: for a job that runs engines (verl's trainer, vLLM), whose output, from child processes and C code,
    bypasses sys.stdout: the process's stdout and stderr themselves go to the log through tee (tee_output), so the
    engines' output is in the log, in the order it was written, and still on the job's own stdout (a SLURM job's
    output file, to watch it live).

    A job of a local mini study first hands itself to a warm interpreter and goes on in a fork of it, this call
    included, with the packages it imports already loaded (core.warm_start); its first log line says so, or why a
    job of such a run went on in its own process."""
    warm_start.hand_over()
    os.makedirs(os.path.dirname(log_path) or ".", exist_ok=True)
    if engines:
        stream = tee_output(log_path)
    else:
        stream = open(log_path, "a", buffering=1)
        sys.stdout = sys.stderr = stream
    logging.basicConfig(
        stream=stream, level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s", force=True
    )
    logging.captureWarnings(True)
    warnings.simplefilter("default")
    for noisy in ("httpx", "urllib3", "filelock"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(max(1, threads))
    log = logging.getLogger("entropy_rl")
    # The job's first line: its start-up ends here (benchmarks/study_time.py --startup).
    log.info(
        "job started%s",
        " in a fork of a warm interpreter"
        if warm_start.in_child()
        else f" cold: {warm_start.cold_reason}"
        if warm_start.cold_reason
        else "",
    )
    return log


class _Fallback(io.TextIOWrapper):
    """A line-buffered stream on descriptor 1 or 2 that, when tee is gone (killed by a signal other than the two it
    ignores: the pipe has no reader), points descriptors 1 and 2 back at the job's own stdout and stderr and writes
    there, so that the job's last words (an error, a traceback) reach its output rather than dying in BrokenPipeError."""

    def __init__(self, fd: int, saved: tuple[int, int]):
        super().__init__(io.FileIO(fd, "w", closefd=False), line_buffering=True, errors="backslashreplace")
        self._saved = saved

    def _fall_back(self) -> None:
        if os.fstat(1).st_ino != os.fstat(self._saved[0]).st_ino:
            os.dup2(self._saved[0], 1)
            os.dup2(self._saved[1], 2)
            os.write(2, b"[the log's tee has ended: what follows is on the job's output only, not in its log]\n")

    def write(self, text: str) -> int:
        try:
            return super().write(text)
        except BrokenPipeError:
            self._fall_back()
            return super().write(text)

    def flush(self) -> None:
        try:
            super().flush()
        except BrokenPipeError:
            self._fall_back()
            super().flush()


def tee_output(log_path: str):
    """Point file descriptors 1 and 2 at a pipe into ``tee -a log_path``, which copies to the original stdout, and
    sys.stdout and sys.stderr at them (line-buffered); returns sys.stderr. Descriptors, not Python's streams: child
    processes inherit them and C code writes to them. One pipe and one writer of the file (tee): the log's order is
    the order of the writes, and no process's line is cut by another's, for a write of up to the pipe's atomic size
    (PIPE_BUF, 4 KiB on Linux): a longer write (a long traceback line, a dumped config) may interleave with another
    process's. Should tee die (a signal other than SIGTERM and SIGINT, which it ignores), this process's own writes go
    to the job's output instead (``_Fallback``); its children's, which hold the pipe, are lost."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = os.dup(1), os.dup(2)  # the job's own stdout and stderr (children do not inherit these copies)
    read, pipe = os.pipe()
    # -p: tee goes on writing the log if its stdout is a pipe whose reader went away.
    tee = subprocess.Popen(["tee", "-a", "-p", log_path], stdin=read, stdout=saved[0], preexec_fn=_ignore_stop_signals)
    os.close(read)
    os.dup2(pipe, 1)
    os.dup2(pipe, 2)
    sys.stdout, sys.stderr = _Fallback(1, saved), _Fallback(2, saved)

    def close() -> None:
        # Python prints sys.exit's message and an uncaught exception's traceback before atexit: they are in the pipe.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except OSError:
                pass
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        # Wait until tee has read the pipe, not for it to end: it ends when no process holds the pipe, and one that an
        # engine started may outlive this one (multiprocessing's resource tracker, under vLLM, ends after it).
        deadline = time.monotonic() + TEE_DRAIN_S
        while tee.poll() is None and _unread(pipe) and time.monotonic() < deadline:
            time.sleep(0.01)
        os.close(pipe)
        try:
            tee.wait(timeout=0.5)  # no other process holds the pipe: tee ends now, what it read written
        except subprocess.TimeoutExpired:  # tee ends when they do; running on is no leak
            warnings.filterwarnings("ignore", f"subprocess {tee.pid} is still running", ResourceWarning)

    atexit.register(close)
    return sys.stderr


def _ignore_stop_signals() -> None:
    # In tee, before its exec (an ignored signal stays ignored across exec): a SLURM cancel signals every process of
    # the job, and tee must live on to write what the others left in the pipe; it ends at the pipe's end of file.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _unread(fd: int) -> int:
    """The bytes in the pipe ``fd`` is an end of, not yet read."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]


def log_throughput(log: logging.Logger, generated_tokens: int, seconds: float) -> None:
    """One line a job's log ends its generation with, which the GPU pilot's report reads (paper.cost.pilot_report): the
    tokens generated, the seconds it took, and the GPU memory in use on this job's device then (the engines' too:
    torch's device-wide free/total count every process), when torch has a GPU."""
    used = total = None
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        free, whole = torch.cuda.mem_get_info()
        used, total = round((whole - free) / 2**30, 2), round(whole / 2**30, 2)
    record = {
        "generated_tokens": int(generated_tokens),
        "seconds": round(float(seconds), 3),
        "gpu_memory_used_gb": used,
        "gpu_memory_total_gb": total,
    }
    log.info("throughput: %s", json.dumps(record))
