"""Process and directory helpers both sides use: the parent (sandbox, box) and run_many's harness, which kills and
reaps what a program left and removes its directory."""

import os
import shutil
import signal
import sys


def _signal(kill, pid: int) -> None:
    try:
        kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _processes() -> dict[int, list[bytes]]:
    """Live (not zombie) processes: pid -> the fields of /proc/PID/stat after the name (0 state, 1 ppid, ...)."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != b"Z":
                found[int(entry)] = fields
    return found


def _rmtree(path: str) -> None:
    """Remove the scratch dir, even after the program made parts of it read-only (chmod 0, etc.)."""

    def retry(func, p, _exc):
        for q in (os.path.dirname(p), p):
            if not os.path.islink(q):  # never chmod through a link the program planted
                try:
                    os.chmod(q, 0o700)
                except OSError:
                    pass
        func(p)

    kwargs = {"onexc": retry} if sys.version_info >= (3, 12) else {"onerror": retry}
    shutil.rmtree(path, **kwargs)
