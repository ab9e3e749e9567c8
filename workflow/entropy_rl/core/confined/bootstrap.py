"""run's bootstrap: the policy, then (as a PID namespace's init) a fork, and the program, run as __main__ at the top
level, so that exceptions, SystemExit, atexit and non-daemon threads end the interpreter as they end `python main.py`."""

import json
import os
import sys

from .confine import confine  # inlined

if __name__ == "__main__":
    cfg = json.loads(sys.argv[1])
    confine(cfg)
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
