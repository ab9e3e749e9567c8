"""Run untrusted, model-written Python for code rewards and code benchmarks.

Every call gets a fresh interpreter (``python -I -S``: stdlib only, no user site, no
PYTHON* variables) in its own session, scratch directory and minimal environment.
Protection is layered, and each layer is used when this machine allows it:

* root: the child runs as ``nobody`` (Popen ``user=``). Then it cannot signal, read or
  write anything of root's, and RLIMIT_NPROC applies, because the kernel exempts uid 0.
* ``unshare --user --map-current-user --pid --fork --kill-child --mount-proc --net``:
  the bootstrap is PID 1 (init) of a new PID namespace and the program is its child.
  There it can name no outside process. When init exits, the kernel kills everything
  the program spawned. Its /proc lists only its own processes. Its network namespace
  holds only a loopback that is down. This works unprivileged wherever user namespaces
  are enabled.
* Landlock (Linux 5.13 or later, unprivileged): no file writes outside the scratch
  directory; no file reads outside it either, but for what an interpreter needs (its prefix, the
  system's libraries under /usr, /lib, /lib64, the loader's cache, /proc, /dev/null and /dev/urandom),
  so a program reads neither the benchmark answers under results/ nor a file another user left in
  /tmp; no TCP bind or connect; and (ABI 6 or later) no signals to processes outside the sandbox.
* Without namespaces: an audit hook refuses sockets other than AF_UNIX, and exec. Native
  code such as ctypes can get past it, so it is a last resort.
* rlimits (CPU, AS, FSIZE, NPROC, NOFILE, CORE=0): a trusted bootstrap sets them inside
  the child before any untrusted code runs. The parent enforces wall time, then kills
  the process group and the namespace.

``isolation()`` names the layers in force. The same string is in every ``Result``.

``run_many`` grades a batch in one such sandbox, because its start-up (tens of ms) dwarfs a
tiny program. A trusted harness inside it forks one child per program, in turn, and as init (or a
subreaper) kills whatever the child left before the next starts. Programs of a batch share the
namespaces, the uid and the outer Landlock domain. Each child gets its own directory (removed
after it), rlimits and nested Landlock domain (writes only to its directory; ABI 6: no signals
to the harness). Its output goes through pipes to the harness, which appends it, length-framed,
to an unlinked results file that the parent opened. No child holds that file, and the harness
is non-dumpable, so its /proc entries and memory are closed to them: output cannot forge a
result. Children are forks of the harness, so no program's source, input or output ever sits in
the harness's Python objects (a child reads its own job; output passes through one buffer that
is zeroed after each program). If the harness dies, the parent re-runs what it did not report.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Sequence

from . import bootstrap as bootstrap_code
from . import confine as confine_code
from .batch import _batch
from .box import Result, _collect, _confined_text, _kill, _sandbox, _status, isolation

__all__ = ["Result", "check", "check_result", "isolation", "run", "run_many"]

_BOOTSTRAP = _confined_text(confine_code, bootstrap_code)


def run(
    program: str,
    stdin: str = "",
    *,
    timeout_s: float = 10.0,
    cpu_s: int | None = None,
    memory_mb: int = 1024,
    max_output_bytes: int = 64 * 1024,
    max_file_mb: int = 16,
    max_procs: int = 32,
    max_files: int = 256,
    files: dict[str, str] | None = None,
    namespaces: bool = True,
    landlock: bool = True,
) -> Result:
    """Run `program` as __main__ in a fresh sandboxed interpreter, with `stdin` as its standard input.

    `files` are extra files (name -> text) to put next to it in the scratch directory.
    Pass namespaces=False or landlock=False to turn a layer off. Tests use this to
    exercise the fallbacks. Safe to call from many threads at once.
    """
    with _sandbox(namespaces, landlock) as box:
        for name, text in {"main.py": program, **(files or {})}.items():
            if os.path.basename(name) != name or name in ("", ".", ".."):
                raise ValueError(f"sandbox files are plain names in the scratch dir, got {name!r}")
            box.write(name, text)
        cfg = {"program": "main.py", **box.policy(timeout_s, cpu_s, memory_mb, max_file_mb, max_procs, max_files)}
        with tempfile.TemporaryFile() as stdin_file:  # a file, not a pipe, so feeding stdin can't deadlock
            stdin_file.write(stdin.encode())
            stdin_file.seek(0)
            start = time.monotonic()
            proc = box.spawn(_BOOTSTRAP, cfg, stdin_file, subprocess.PIPE, subprocess.PIPE)
        try:
            out, err, truncated, timed_out = _collect(proc, start + timeout_s, max_output_bytes)
            wall = time.monotonic() - start
        finally:
            _kill(proc)
    rc = proc.returncode
    if box.prefix and rc > 128:  # the namespace init's report of a signal death (see _BOOTSTRAP)
        rc = 128 - rc
    rc = None if timed_out else rc
    return Result(_status(rc), rc, out, err, wall, truncated, isolation(namespaces, landlock), proc.pid)


def run_many(
    jobs: Sequence[tuple[str, str]],
    *,
    timeout_s: float = 10.0,
    cpu_s: int | None = None,
    memory_mb: int = 1024,
    max_output_bytes: int = 64 * 1024,
    max_file_mb: int = 16,
    max_procs: int = 32,
    max_files: int = 256,
    namespaces: bool = True,
    landlock: bool = True,
) -> list[Result]:
    """`run` for each (program, stdin) in `jobs`, in one sandbox: the results, in order.

    Each program runs in turn in a child forked from a harness inside the sandbox (see the module
    docstring), with `run`'s limits and meaning of each Result field, and these differences:
    `pid` is the batch's leader, the same for the whole batch. An exit code above 128 is reported
    as it is, where `run` with namespaces reads it as a signal. A child ends as `python main.py`
    would (non-daemon threads, atexit, a last collection, flushed streams, the same exit code) but
    skips tearing down the interpreter, so objects that modules still hold are not finalized. The
    programs of a batch share the harness's hash seed (str hashes, so set order, agree).
    If the harness dies (the batch's time is up, or a program killed it, which only the weakest
    layers allow), the program it was running runs again alone, in `run` (its Result then names
    `run`'s layers), and the ones after it in a new batch. Without a PID namespace or Landlock a
    program can also disturb the batch's directory; without a uid drop as well it runs as the
    caller's user, and can reach the caller's files and processes, results included.
    """
    limits = {
        "timeout_s": timeout_s,
        "cpu_s": cpu_s,
        "memory_mb": memory_mb,
        "max_output_bytes": max_output_bytes,
        "max_file_mb": max_file_mb,
        "max_procs": max_procs,
        "max_files": max_files,
    }
    jobs, results = list(jobs), []
    while len(results) < len(jobs):
        done, began_next, log = _batch(jobs[len(results) :], limits, namespaces, landlock)
        results += done
        if len(results) < len(jobs) and began_next:  # the harness died while this program ran
            results.append(run(*jobs[len(results)], **limits, namespaces=namespaces, landlock=landlock))
        elif not done and len(results) < len(jobs):
            raise RuntimeError(f"sandbox: the batch harness failed before its first program:\n{log[-2000:]}")
    return results


def check(candidate: str, tests: str, entry_point: str | None = None, **limits) -> bool:
    """True if `candidate` passes `tests` in the sandbox (``check_result``'s status is "ok")."""
    return check_result(candidate, tests, entry_point, **limits).status == "ok"


def check_result(candidate: str, tests: str, entry_point: str | None = None, **limits) -> Result:
    """The sandbox's Result of running `candidate` against `tests`. `limits` are passed on to `run`.

    With an `entry_point` (HumanEval): `tests` defines ``check(candidate)``, which is called
    on that function. Without one: `tests` is a script of asserts, or defines zero-argument
    ``test_*`` functions that are all called (pytest-style, as in KodCode). KodCode tests
    import the candidate ``from solution``, so the candidate is also written to solution.py.
    """
    if entry_point is None:
        runner = (
            "for _n, _t in list(globals().items()):\n    if _n.startswith('test_') and callable(_t):\n        _t()\n"
        )
    elif entry_point.isidentifier():
        runner = f"check({entry_point})\n"
    else:
        raise ValueError(f"entry_point must be an identifier, got {entry_point!r}")
    program = f"{candidate}\n\n{tests}\n\n{runner}"
    return run(program, files={"solution.py": candidate}, **limits)
