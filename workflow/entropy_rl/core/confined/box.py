"""One sandbox, as ``sandbox`` and ``batch`` start it: the layers this machine allows (``isolation``), the launcher
and the scratch directory of each (``_Box``), the policy the confined code applies (``_Box.policy``, Landlock's rules),
reading a program's output and killing what it left, and what each program's run reports (``Result``).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import os
import pwd
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from .processes import _processes, _rmtree, _signal

NS_FLAGS = ("--user", "--map-current-user", "--pid", "--fork", "--kill-child", "--mount-proc", "--net")
ENV_PATH = "/usr/local/bin:/usr/bin:/bin"

# Landlock access bits (linux/landlock.h). Writes and reads are handled: each is allowed only beneath the rules' paths.
_FS_WRITE = 0x1FF2  # WRITE_FILE, REMOVE_DIR/FILE, MAKE_CHAR/DIR/REG/SOCK/FIFO/BLOCK/SYM
_FS_REFER, _FS_TRUNCATE, _FS_WRITE_FILE = 1 << 13, 1 << 14, 1 << 1  # REFER needs ABI 2, TRUNCATE ABI 3
_FS_READ_FILE, _FS_READ = 1 << 2, 0b1101  # READ_FILE; EXECUTE | READ_FILE | READ_DIR
_NET_TCP = 0b11  # BIND_TCP | CONNECT_TCP (ABI 4)
# What an interpreter reads after its start-up, when the program imports more of the standard library or a module
# loads a shared library: beneath these (where they exist) and beneath the interpreter's own prefix.
_READ_DIRS = ("/usr", "/lib", "/lib64", "/proc")
_READ_FILES = ("/etc/ld.so.cache", "/dev/urandom")
_SCOPE = 0b11  # ABSTRACT_UNIX_SOCKET | SIGNAL (ABI 6)

# The code that runs inside the sandbox, before and around the program, is this package's confine (the policy),
# bootstrap (run's), processes and harness (run_many's); its __init__ says how it is sent there.
_INLINED = "# inlined"


def _confined_text(*parts) -> str:
    """The text of the confined modules, joined, less their imports of one another (``# inlined``)."""
    text = (inspect.getsource(part) for part in parts)
    return "".join(line for t in text for line in t.splitlines(keepends=True) if not line.rstrip().endswith(_INLINED))


@dataclass(frozen=True)
class Result:
    status: str  # "ok" (exit 0) | "error" (exit != 0) | "killed" (died of a signal) | "timeout" (wall clock)
    returncode: int | None  # negative: the signal that ended it (with namespaces, run reads an exit code > 128 as one)
    stdout: str  # at most max_output_bytes of each stream, decoded with errors="replace"
    stderr: str
    wall_s: float
    truncated: bool  # True if a stream had more output than it kept
    isolation: str  # the layers in force, as isolation() names them
    pid: int  # the sandbox's leader process (for run_many: the batch's); also its session and process-group id


def _status(rc: int | None) -> str:
    """A Result's status from its returncode (None: the wall clock ran out)."""
    return "timeout" if rc is None else "ok" if rc == 0 else "killed" if rc < 0 else "error"


def isolation(namespaces: bool = True, landlock: bool = True, batch: bool = False) -> str:
    """The layers in force, e.g. 'uid=nobody userns pidns netns landlock-abi7 rlimits python=/usr/bin/python3'.

    batch=True: run_many's, which adds 'fork-per-program' and, with Landlock, 'nested-landlock'.
    """
    prefix, python = _launcher(namespaces)
    abi = _landlock_abi() if landlock else 0
    user = _sandbox_user()
    layers = [f"uid={_user_name(user[0])}"] if user else []
    layers += ["userns", "pidns", "netns"] if prefix else ["audit-hook"]
    layers += [f"landlock-abi{abi}"] if abi else []
    layers += (["nested-landlock"] if abi else []) + ["fork-per-program"] if batch else []
    return " ".join([*layers, "rlimits", f"python={python}"])


@dataclass(frozen=True)
class _Box:
    """One sandbox's launcher, layers and scratch directory."""

    prefix: tuple[str, ...]
    python: str
    abi: int
    user: tuple[int, int] | None
    scratch: str

    def write(self, name: str, text: str) -> None:
        path = os.path.join(self.scratch, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        if self.user:
            os.chown(path, *self.user)

    def policy(self, timeout_s, cpu_s, memory_mb, max_file_mb, max_procs, max_files) -> dict:
        """What the trusted code inside applies to a program before it runs."""
        cpu = cpu_s or int(timeout_s) + 2  # by default a backstop: the wall clock should fire first
        return {
            "audit": not self.prefix,
            "landlock": _landlock_policy(self.abi, self.scratch, self.python) if self.abi else None,
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

    def spawn(self, code: str, cfg: dict, stdin, stdout, stderr, pass_fds=()) -> subprocess.Popen:
        """Start `code` (given `cfg` as argv[1]) in the sandbox, in its own session, in the scratch dir."""
        env = {"PATH": ENV_PATH, "HOME": self.scratch, "TMPDIR": self.scratch, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
        cmd = [*self.prefix, self.python, "-I", "-S", "-c", code, json.dumps(cfg)]
        return subprocess.Popen(
            cmd,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            cwd=self.scratch,
            env=env,
            start_new_session=True,
            pass_fds=pass_fds,
            **_popen_user(self.user),
        )


@contextlib.contextmanager
def _sandbox(namespaces: bool, landlock: bool):
    """A _Box with a fresh scratch directory that the sandbox user owns; removed on exit."""
    prefix, python = _launcher(namespaces)
    abi = _landlock_abi() if landlock else 0
    user = _sandbox_user()
    scratch = tempfile.mkdtemp(prefix="sandbox-")
    try:
        if user:
            os.chown(scratch, *user)
        yield _Box(prefix, python, abi, user, scratch)
    finally:
        _rmtree(scratch)


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
                    probe,
                    check=False,
                    cwd="/",
                    env={"PATH": ENV_PATH},
                    timeout=30,
                    start_new_session=True,
                    **quiet,
                    **_popen_user(_sandbox_user()),
                )
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


def _landlock_policy(abi: int, scratch: str, python: str) -> dict:
    """Writes only beneath scratch (and to /dev/null); reads only beneath scratch and what ``python`` needs
    (``_READ_DIRS``, ``_READ_FILES``, its prefix). No TCP. No signals leave the sandbox.

    The first rule is the write and read scope: run_many's harness puts each program's own directory in it.
    """
    fs = _FS_WRITE | _FS_READ | (_FS_REFER if abi >= 2 else 0) | (_FS_TRUNCATE if abi >= 3 else 0)
    attr = [fs, _NET_TCP if abi >= 4 else 0, _SCOPE if abi >= 6 else 0]
    size = 8 if abi < 4 else 16 if abi < 6 else 24  # older kernels reject fields they don't know
    devnull = _FS_WRITE_FILE | _FS_READ_FILE | (fs & _FS_TRUNCATE)
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(python)))  # <prefix>/bin/python3.x
    reads = [[d, _FS_READ] for d in dict.fromkeys([*_READ_DIRS, prefix]) if os.path.isdir(d)]
    reads += [[f, _FS_READ_FILE] for f in _READ_FILES if os.path.exists(f)]
    return {"attr": attr, "size": size, "rules": [[scratch, fs], ["/dev/null", devnull], *reads]}


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


def _pids(field: int, value: int) -> list[int]:
    """Live (not zombie) processes whose /proc/PID/stat field after the name is `value`: 1 ppid, 2 pgrp, 3 session."""
    return [pid for pid, fields in _processes().items() if int(fields[field]) == value]
