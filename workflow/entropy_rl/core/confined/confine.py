"""Trusted code that runs in the sandbox before the program: it carries out the policy the parent computed
(Landlock, rlimits, the audit hook), so it stays small. Shared by run's bootstrap and run_many's harness."""

import os
import resource
import sys


def prctl(option, value):
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)):
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def landlock(ll):
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

    ruleset = call(444, (ctypes.c_uint64 * 3)(*ll["attr"]), ctypes.c_size_t(ll["size"]), ctypes.c_uint32(0))
    for path, allowed in ll["rules"]:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        call(445, ctypes.c_long(ruleset), ctypes.c_long(1), ctypes.byref(Beneath(allowed, fd)), ctypes.c_uint32(0))
        os.close(fd)
    prctl(38, 1)  # PR_SET_NO_NEW_PRIVS
    call(446, ctypes.c_long(ruleset), ctypes.c_uint32(0))
    os.close(ruleset)


def confine(cfg):
    if cfg["landlock"]:
        landlock(cfg["landlock"])
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
