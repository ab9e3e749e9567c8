"""run_many's harness (stdlib only). It reads the job index from an inherited file and writes records
"KIND JOB SIZE\n" + SIZE bytes to the inherited results file: B (job begun), O and E (stdout and stderr bytes), R
(result, JSON). Only it holds that file. harness() returns only in a forked child, set up to run its program; the fork
happens outside any try or with block, so the child unwinds no harness code. The harness itself ends with os._exit."""

import atexit
import gc
import json
import os
import runpy
import select
import signal
import sys
import time

from .confine import confine, landlock, prctl  # inlined
from .processes import _processes, _rmtree, _signal  # inlined


def harness(cfg):
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as a namespace's init, then no signal from inside reaches it
    prctl(4, 0)  # PR_SET_DUMPABLE 0: children cannot read our /proc entries or memory (nor, as forks, their own)
    prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: a program's orphans become ours, so sweep() finds them
    if cfg["landlock"]:
        landlock(cfg["landlock"])  # the batch's domain; each child nests its own in it
    jobs, at, size = cfg["jobs"]
    out, buf = cfg["results"], memoryview(bytearray(1 << 16))
    warm = os.path.join(os.getcwd(), "warm-up.py")  # run_path's first call costs ~4 ms: pay it once, here
    fd = os.open(warm, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    write(fd, b"pass\n")
    os.close(fd)
    runpy.run_path(warm, run_name="__main__")
    os.unlink(warm)
    if cfg["audit"]:
        import socket  # noqa: F401  for each child's audit hook: import it once, here
    atexit.register(leave)  # first registered, so the last to run in a child
    gc.freeze()  # a child's collections then skip the harness's objects, and copy fewer pages
    for i, spans in enumerate(json.loads(os.pread(jobs, size, at))):
        home = os.path.join(os.getcwd(), f"{i}-{os.urandom(8).hex()}")  # unguessable: none can be planted
        os.mkdir(home, 0o700)
        pipes = os.pipe(), os.pipe()
        report(out, b"B", i)
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            enter(cfg, home, spans, pipes)
            return
        os.close(pipes[0][1])
        os.close(pipes[1][1])
        rc, wall, truncated = supervise(pid, start, cfg, pipes, i, buf)
        buf[:] = bytes(len(buf))  # the next fork inherits nothing of this program's output
        report(out, b"R", i, json.dumps({"rc": rc, "wall": wall, "truncated": truncated}).encode())
        _rmtree(home)
    os._exit(0)


def enter(cfg, home, spans, pipes):
    # In the child: its own session and directory, its job on fds 0-2 and nothing else open, its limits.
    os.setsid()
    os.chdir(home)
    program, stdin = (os.pread(cfg["jobs"][0], n, at) for at, n in spans)
    fd = os.open("main.py", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    write(fd, program)
    os.close(fd)
    fd = os.memfd_create("stdin")  # a file, as run's stdin is, so feeding it cannot block; not in its directory
    write(fd, stdin)
    os.lseek(fd, 0, os.SEEK_SET)
    for src, dst in ((fd, 0), (pipes[0][1], 1), (pipes[1][1], 2)):
        os.dup2(src, dst)
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # the jobs, the results, the harness's pipe ends
    os.environ.update(HOME=home, TMPDIR=home)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    ll = cfg["landlock"]  # its first rule is the batch's write scope: narrow it to this program's directory
    confine(dict(cfg, landlock=ll and dict(ll, rules=[[home, ll["rules"][0][1]], *ll["rules"][1:]])))


def supervise(pid, start, cfg, pipes, i, buf):
    # Move the child's output into the results until it exits or its time is up, then kill all it left.
    streams = {pipes[0][0]: [b"O", 0], pipes[1][0]: [b"E", 0]}
    try:
        waiter = [os.pidfd_open(pid)]
    except (AttributeError, OSError):
        waiter = []  # before Linux 5.3: poll
    deadline, status, truncated = start + cfg["timeout"], None, False
    while status is None and (left := deadline - time.monotonic()) > 0:
        ready = select.select([*streams, *waiter], [], [], left if waiter else min(left, 0.002))[0]
        for fd in ready:
            if fd in streams:
                truncated |= pump(fd, streams, cfg, i, buf)
        if not waiter or waiter[0] in ready:
            done, code = os.waitpid(pid, os.WNOHANG)
            status = os.waitstatus_to_exitcode(code) if done else None
    wall = time.monotonic() - start
    if status is None:  # timed out
        _signal(os.killpg, pid)
        _signal(os.kill, pid)
        os.waitpid(pid, 0)
    sweep()
    end = time.monotonic() + 1.0
    while streams and (left := end - time.monotonic()) > 0:  # what the program and its own wrote before they died
        for fd in select.select(list(streams), [], [], left)[0]:
            truncated |= pump(fd, streams, cfg, i, buf)
    for fd in [*streams, *waiter]:
        os.close(fd)
    return status, wall, truncated


def pump(fd, streams, cfg, i, buf):
    # One read from a child's pipe into the results, up to the stream's cap. True if bytes were dropped.
    n = os.readv(fd, [buf])
    if not n:
        del streams[fd]
        os.close(fd)
        return False
    kind, kept = streams[fd]
    keep = max(0, min(n, cfg["cap"] - kept))
    streams[fd][1] += keep
    if keep:
        report(cfg["results"], kind, i, buf[:keep])
    return keep < n


def sweep():
    # Kill and reap every process the program left. As init or subreaper, its orphans are our children.
    end = time.monotonic() + 2.0
    while time.monotonic() < end:
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return  # no children, so no descendants
        if os.getpid() == 1:
            _signal(os.kill, -1)  # from init: every other process of the namespace
        else:
            for pid in descendants(os.getpid()):
                _signal(os.kill, pid)
        time.sleep(0.001)


def descendants(root):
    children = {}
    for pid, fields in _processes().items():
        children.setdefault(int(fields[1]), []).append(pid)
    found, todo = [], [root]
    while todo:
        found += (kids := children.get(todo.pop(), []))
        todo += kids
    return found


def report(fd, kind, i, data=b""):
    write(fd, b"%s %d %d\n" % (kind, i, len(data)), data)


def write(fd, *parts):
    for part in parts:
        part = memoryview(part)
        while part:
            part = part[os.write(fd, part) :]


def leave():
    # A child's exit, after its threads and its own atexit handlers: what Python's exit would do next
    # (collect, flush), without tearing down every module, which costs a fork ~4 ms. The exit code
    # is Python's: `outcome`. Left alone (None, or a flush that fails: Python then exits 120), it
    # lets the interpreter exit as usual.
    if outcome is not None:
        gc.collect()
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001  a flush that fails: Python then exits 120, let it
            return
        os._exit(outcome)


if __name__ == "__main__":
    cfg = json.loads(sys.argv[1])
    outcome = None
    harness(cfg)  # returns only in a child
    sys.argv = [cfg["program"]]
    sys.path.insert(0, os.getcwd())
    try:
        runpy.run_path(cfg["program"], run_name="__main__")
        outcome = 0
    except SystemExit as stop:
        code = 0 if stop.code is None else stop.code if isinstance(stop.code, int) else 1
        outcome = code if -(2**31) <= code < 2**31 else None
        raise
    except KeyboardInterrupt:
        raise  # Python ends then by SIGINT: let it
    except BaseException:  # the program's failure, whatever it is: exit 1, as Python would
        outcome = 1
        raise
