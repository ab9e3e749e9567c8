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
  directory, no TCP bind or connect, and (ABI 6 or later) no signals to processes
  outside the sandbox.
* Without namespaces: an audit hook refuses sockets other than AF_UNIX, and exec. Native
  code such as ctypes can get past it, so it is a last resort.
* rlimits (CPU, AS, FSIZE, NPROC, NOFILE, CORE=0): a trusted bootstrap sets them inside
  the child before any untrusted code runs. The parent enforces wall time, then kills
  the process group and the namespace.

``isolation()`` names the layers in force. The same string is in every ``Result``.
"""

from __future__ import annotations

import functools
import json
import os
import pwd
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

NS_FLAGS = ("--user", "--map-current-user", "--pid", "--fork", "--kill-child", "--mount-proc", "--net")
ENV_PATH = "/usr/local/bin:/usr/bin:/bin"

# Landlock access bits (linux/landlock.h). Only writes are handled, so reads stay allowed everywhere.
_FS_WRITE = 0x1FF2  # WRITE_FILE, REMOVE_DIR/FILE, MAKE_CHAR/DIR/REG/SOCK/FIFO/BLOCK/SYM
_FS_REFER, _FS_TRUNCATE, _FS_WRITE_FILE = 1 << 13, 1 << 14, 1 << 1  # REFER needs ABI 2, TRUNCATE ABI 3
_NET_TCP = 0b11  # BIND_TCP | CONNECT_TCP (ABI 4)
_SCOPE = 0b11  # ABSTRACT_UNIX_SOCKET | SIGNAL (ABI 6)

# Runs inside the child, before the program. It only carries out the policy that the parent
# computed, so it stays small. The program then runs in this same interpreter: an audit hook
# would not survive an exec.
_BOOTSTRAP = r"""
import json, os, resource, sys
cfg = json.loads(sys.argv[1])
if cfg["landlock"]:
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    def call(nr, *args):
        if (ret := libc.syscall(ctypes.c_long(nr), *args)) < 0:
            raise OSError(ctypes.get_errno(), f"landlock syscall {nr} failed")
        return ret
    class Beneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]
    ll = cfg["landlock"]
    ruleset = call(444, (ctypes.c_uint64 * 3)(*ll["attr"]), ctypes.c_size_t(ll["size"]), ctypes.c_uint32(0))
    for path, allowed in ll["rules"]:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        call(445, ctypes.c_long(ruleset), ctypes.c_long(1), ctypes.byref(Beneath(allowed, fd)), ctypes.c_uint32(0))
        os.close(fd)
    if libc.prctl(38, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)):  # NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    call(446, ctypes.c_long(ruleset), ctypes.c_uint32(0))
    os.close(ruleset)
for name, soft, hard in cfg["rlimits"]:
    resource.setrlimit(getattr(resource, name), (soft, hard))
if cfg["audit"]:
    import socket
    def guard(event, args, unix=socket.AF_UNIX):
        if event.startswith("socket."):
            family = args[1] if event == "socket.__new__" else getattr(args[0] if args else None, "family", None)
            if family != unix:
                raise PermissionError(f"sandbox: no network ({event})")
        elif event in ("os.exec", "os.posix_spawn", "os.spawn", "os.system", "subprocess.Popen"):
            raise PermissionError(f"sandbox: a new program would shed this hook ({event})")
    sys.addaudithook(guard)
if os.getpid() == 1:
    # PID-namespace init. The kernel drops default-action signals that reach an init from its own
    # namespace, even the kernel's own SIGXCPU. So the program runs in a child, and init only
    # reaps. Init reports a signal death shell-style, as exit code 128 + signal.
    child = os.fork()
    while child:
        pid, status = os.wait()
        if pid == child:
            code = os.waitstatus_to_exitcode(status)
            os._exit(code if code >= 0 else 128 - code)
sys.argv = [cfg["program"]]
sys.path.insert(0, os.getcwd())
import runpy
runpy.run_path(cfg["program"], run_name="__main__")
"""


@dataclass(frozen=True)
class Result:
    status: str  # "ok" (exit 0) | "error" (exit != 0) | "killed" (died of a signal) | "timeout" (wall clock)
    returncode: int | None  # negative: the signal that ended it (with namespaces an exit code > 128 reads as one)
    stdout: str  # at most max_output_bytes of each stream, decoded with errors="replace"
    stderr: str
    wall_s: float
    truncated: bool  # True if a stream had more output than it kept
    isolation: str  # the layers in force, as isolation() names them
    pid: int  # the sandbox's leader process; it is also the session and process-group id


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
    prefix, python = _launcher(namespaces)
    abi = _landlock_abi() if landlock else 0
    user = _sandbox_user()
    scratch = tempfile.mkdtemp(prefix="sandbox-")
    try:
        for name, text in {"main.py": program, **(files or {})}.items():
            if os.path.basename(name) != name or name in ("", ".", ".."):
                raise ValueError(f"sandbox files are plain names in the scratch dir, got {name!r}")
            path = os.path.join(scratch, name)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            if user:
                os.chown(path, *user)
        if user:
            os.chown(scratch, *user)
        cpu = cpu_s or int(timeout_s) + 2  # by default a backstop: the wall clock should fire first
        cfg = {
            "program": "main.py",
            "audit": not prefix,
            "landlock": _landlock_policy(abi, scratch) if abi else None,
            # soft == hard, so the program cannot raise them back (except CPU: SIGXCPU, then SIGKILL 1 s later)
            "rlimits": [
                ("RLIMIT_CPU", cpu, cpu + 1),
                ("RLIMIT_AS", memory_mb << 20, memory_mb << 20),
                ("RLIMIT_FSIZE", max_file_mb << 20, max_file_mb << 20),
                ("RLIMIT_NPROC", max_procs, max_procs),
                ("RLIMIT_NOFILE", max_files, max_files),
                ("RLIMIT_CORE", 0, 0),
            ],
        }
        env = {"PATH": ENV_PATH, "HOME": scratch, "TMPDIR": scratch, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
        cmd = [*prefix, python, "-I", "-S", "-c", _BOOTSTRAP, json.dumps(cfg)]
        with tempfile.TemporaryFile() as stdin_file:  # a file, not a pipe, so feeding stdin can't deadlock
            stdin_file.write(stdin.encode())
            stdin_file.seek(0)
            start = time.monotonic()
            proc = subprocess.Popen(
                cmd, stdin=stdin_file, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=scratch, env=env,
                start_new_session=True, **_popen_user(user),
            )  # fmt: skip
        try:
            out, err, truncated, timed_out = _collect(proc, start + timeout_s, max_output_bytes)
            wall = time.monotonic() - start
        finally:
            _kill(proc)
    finally:
        _rmtree(scratch)
    rc = proc.returncode
    if prefix and rc > 128:  # the namespace init's report of a signal death (see _BOOTSTRAP)
        rc = 128 - rc
    status = "timeout" if timed_out else "ok" if rc == 0 else "killed" if rc < 0 else "error"
    return Result(
        status, None if timed_out else rc, out, err, wall, truncated, isolation(namespaces, landlock), proc.pid
    )


def check(candidate: str, tests: str, entry_point: str | None = None, **limits) -> bool:
    """True if `candidate` passes `tests` in the sandbox. `limits` are passed on to `run`.

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
    return run(program, files={"solution.py": candidate}, **limits).status == "ok"


def isolation(namespaces: bool = True, landlock: bool = True) -> str:
    """The layers in force, e.g. 'uid=nobody userns pidns netns landlock-abi7 rlimits python=/usr/bin/python3'."""
    prefix, python = _launcher(namespaces)
    abi = _landlock_abi() if landlock else 0
    user = _sandbox_user()
    layers = [f"uid={_user_name(user[0])}"] if user else []
    layers += ["userns", "pidns", "netns"] if prefix else ["audit-hook"]
    layers += [f"landlock-abi{abi}"] if abi else []
    return " ".join([*layers, "rlimits", f"python={python}"])


def _sandbox_user() -> tuple[int, int] | None:
    """(uid, gid) to drop to. Only root can drop, and only root needs to."""
    if os.geteuid() != 0:
        return None
    try:
        pw = pwd.getpwnam("nobody")
        return pw.pw_uid, pw.pw_gid
    except KeyError:
        return 65534, 65534


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _popen_user(user: tuple[int, int] | None) -> dict:
    # Popen drops privileges in C, between fork and exec. preexec_fn is not safe with threads.
    return {"user": user[0], "group": user[1], "extra_groups": []} if user else {}


@functools.cache
def _launcher(namespaces: bool) -> tuple[tuple[str, ...], str]:
    """(namespace prefix, python). Tries each combination under the real sandbox user, best first.

    As root the child runs as nobody, so sys.executable must be one that nobody can run.
    A pyenv or venv interpreter under /root (mode 0700) is not.
    """
    unshare = shutil.which("unshare", path=ENV_PATH) if namespaces else None
    prefixes = [(unshare, *NS_FLAGS)] if unshare else []
    pythons = dict.fromkeys(p for p in (sys.executable, shutil.which("python3", path=ENV_PATH)) if p)
    for prefix in [*prefixes, ()]:
        for python in pythons:
            probe = [*prefix, python, "-I", "-S", "-c", "import ctypes, json, resource, runpy"]
            quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
            try:
                done = subprocess.run(
                    probe, check=False, cwd="/", env={"PATH": ENV_PATH}, timeout=30, start_new_session=True,
                    **quiet, **_popen_user(_sandbox_user()),
                )  # fmt: skip
            except (OSError, subprocess.SubprocessError):
                continue
            if done.returncode == 0:
                return prefix, python
    raise RuntimeError("sandbox: found no Python interpreter that the sandbox user can run")


@functools.cache
def _landlock_abi() -> int:
    """The kernel's Landlock ABI version, or 0 if it has none."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
        return max(0, libc.syscall(ctypes.c_long(444), None, ctypes.c_size_t(0), ctypes.c_uint32(1)))
    except (OSError, AttributeError):
        return 0


def _landlock_policy(abi: int, scratch: str) -> dict:
    """Writes only beneath scratch (and to /dev/null). No TCP. No signals leave the sandbox."""
    fs = _FS_WRITE | (_FS_REFER if abi >= 2 else 0) | (_FS_TRUNCATE if abi >= 3 else 0)
    attr = [fs, _NET_TCP if abi >= 4 else 0, _SCOPE if abi >= 6 else 0]
    size = 8 if abi < 4 else 16 if abi < 6 else 24  # older kernels reject fields they don't know
    devnull = _FS_WRITE_FILE | (fs & _FS_TRUNCATE)
    return {"attr": attr, "size": size, "rules": [[scratch, fs], ["/dev/null", devnull]]}


def _collect(proc: subprocess.Popen, deadline: float, cap: int) -> tuple[str, str, bool, bool]:
    """Read both pipes until EOF and exit, or until the deadline. Keep `cap` bytes of each.

    The rest is read and thrown away, so a flood neither fills our memory nor blocks the child.
    """
    bufs = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    truncated = timed_out = False
    with selectors.DefaultSelector() as sel:
        for f in bufs:
            sel.register(f, selectors.EVENT_READ)
        while sel.get_map() and not timed_out:
            left = deadline - time.monotonic()
            timed_out = left <= 0
            for key, _ in sel.select(max(left, 0)):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    sel.unregister(key.fileobj)
                buf = bufs[key.fileobj]
                truncated |= len(buf) + len(chunk) > cap
                buf += chunk[: max(0, cap - len(buf))]
    if not timed_out:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
    for f in bufs:
        f.close()
    out, err = (bytes(b).decode("utf-8", "replace") for b in bufs.values())
    return out, err, truncated, timed_out


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL everything the sandbox started. Return once it is gone (bounded)."""
    # unshare's only child is the PID-namespace init. Killing it makes the kernel kill the whole
    # namespace, including processes that left our process group with setsid().
    for pid in _pids(field=1, value=proc.pid):
        _signal(os.kill, pid)
    _signal(os.killpg, proc.pid)  # the session's process group, which is all there is without namespaces
    proc.wait()
    deadline = time.monotonic() + 2.0
    while _pids(field=3, value=proc.pid) and time.monotonic() < deadline:
        time.sleep(0.01)


def _signal(kill, pid: int) -> None:
    try:
        kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _pids(field: int, value: int) -> list[int]:
    """Live (not zombie) processes whose /proc/PID/stat field after the name is `value`: 1 ppid, 2 pgrp, 3 session."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != b"Z" and int(fields[field]) == value:
                found.append(int(entry))
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
