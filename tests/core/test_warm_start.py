"""A job handed to a warm interpreter (core.warm_start) behaves as the process Snakemake started: its output, exit
status, signals, environment and fresh random state; an edited preloaded module retires the server; off, nothing
changes. The servers here preload a small module of the test's own, not torch; each is ended by its pid."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from entropy_rl.core import warm_start
from support import ROOT

# What Snakemake's preamble leaves in a script's __main__ (the two names hand_over looks for), then the job.
JOB = """
__real_file__ = __file__
snakemake = object()
from entropy_rl.core import warm_start
warm_start.hand_over()
import json, os, sys, time, numpy, warmprobe
print(json.dumps({"pid": os.getpid(), "server": os.getppid(), "child": os.environ.get(warm_start.CHILD),
                  "threads": os.environ.get("OMP_NUM_THREADS"), "random": numpy.random.random(), "probe": warmprobe.VALUE}))
sys.stdout.flush()
what = os.environ.get("JOB_DOES", "")
if what == "sleep":
    time.sleep(60)
elif what == "raise":
    raise RuntimeError("the job failed")
sys.exit(int(os.environ.get("JOB_EXIT", "0")))
"""


@pytest.fixture
def job(tmp_path):
    # The servers' sockets under a short TMPDIR (pytest's own paths can pass a socket's 107 bytes).
    short = Path(tempfile.mkdtemp(prefix="warm", dir="/tmp"))
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "warmprobe.py").write_text("import numpy  # in the server, as torch imports it\n\nVALUE = 1\n")
    script = tmp_path / "job.py"
    script.write_text(JOB)
    env = {**os.environ, warm_start.ENABLE: "1", warm_start.PRELOAD_ENV: "warmprobe", "TMPDIR": str(short),
           "PYTHONPATH": os.pathsep.join([str(tmp_path / "lib"), str(ROOT / "workflow")])}  # fmt: skip
    env.pop(warm_start.CHILD, None)
    servers = set()

    def run(**extra):
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, check=False,
                              env={**env, **extra}, timeout=120)  # fmt: skip
        out = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        servers.update(o["server"] for o in out if o["child"])
        return proc, (out[0] if out else None)

    def spawn(**extra):
        """A job left running (it sleeps), with its first line."""
        proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=tmp_path,
                                env={**env, "JOB_DOES": "sleep", **extra})  # fmt: skip
        out = json.loads(proc.stdout.readline())
        servers.add(out["server"])
        return proc, out

    yield SimpleNamespace(run=run, spawn=spawn, dir=tmp_path, tmp=short)
    for pid in servers:  # the servers these jobs started
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    shutil.rmtree(short, ignore_errors=True)


def test_jobs_run_in_forks_of_one_server_with_their_own_environment(job):
    run = job.run
    first, a = run(OMP_NUM_THREADS="1")
    second, b = run(OMP_NUM_THREADS="4")
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert a["child"] == b["child"] == "1"  # both handed over: the first started the server and waited for it
    assert a["server"] == b["server"]  # the per-job variables do not split the servers
    assert (a["threads"], b["threads"]) == ("1", "4")  # each child has its own job's
    assert a["random"] != b["random"]  # re-seeded as a fresh process is, not the server's state twice
    assert a["probe"] == b["probe"] == 1


def test_exit_status_output_and_failures_reach_the_caller(job):
    run = job.run
    proc, out = run(JOB_EXIT="3")
    assert proc.returncode == 3 and out["child"] == "1"  # the status, and the child's stdout through the job's own
    proc, out = run(JOB_DOES="raise")
    assert proc.returncode == 1 and out["child"] == "1"
    assert "RuntimeError: the job failed" in proc.stderr  # the traceback on the job's stderr


def test_a_signal_to_the_job_ends_its_child(job):
    proc, out = job.spawn()
    assert out["child"] == "1"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == -signal.SIGTERM  # the job ends as its child did: by the signal
    assert _ends(out["pid"])


def test_a_job_killed_outright_takes_its_child_with_it(job):
    proc, out = job.spawn()
    assert out["child"] == "1"
    proc.kill()  # SIGKILL: nothing forwarded; the child sees its connection close
    proc.wait()
    assert _ends(out["pid"])


def test_an_edited_preloaded_module_retires_the_server(job):
    run, tmp_path = job.run, job.dir
    _, before = run()
    time.sleep(0.01)
    (tmp_path / "lib" / "warmprobe.py").write_text("VALUE = 2  # edited\n")
    proc, after = run()
    assert proc.returncode == 0, proc.stderr
    assert after["child"] == "1" and after["server"] != before["server"]  # a new server, started by this job
    assert after["probe"] == 2  # which imported the module as it reads now


def test_off_or_outside_snakemake_the_job_runs_in_its_own_process(job, tmp_path):
    run, short = job.run, job.tmp
    proc, out = run(**{warm_start.ENABLE: "0"})
    assert proc.returncode == 0 and out["child"] is None and out["server"] != out["pid"]
    assert not list(short.glob(f"entropy-rl-warm-{os.getuid()}/*.sock"))  # and started no server
    plain = tmp_path / "plain.py"  # no Snakemake preamble: a script of someone else's
    plain.write_text(JOB.replace("__real_file__ = __file__\n", ""))
    env = {**os.environ, warm_start.ENABLE: "1", "TMPDIR": str(short),
           "PYTHONPATH": os.pathsep.join([str(tmp_path / "lib"), str(ROOT / "workflow")])}  # fmt: skip
    out = json.loads(subprocess.run([sys.executable, str(plain)], capture_output=True, text=True, env=env, check=False).stdout)
    assert out["child"] is None


def test_a_folder_another_user_could_hold_is_not_used(monkeypatch):
    short = Path(tempfile.mkdtemp(prefix="warm", dir="/tmp"))
    monkeypatch.setenv("TMPDIR", str(short))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir reads TMPDIR again
    folder = short / f"entropy-rl-warm-{os.getuid()}"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)  # writable by anyone: a socket there could be anyone's
    assert warm_start._address() is None
    folder.chmod(0o700)
    assert warm_start._address().parent == folder
    shutil.rmtree(short)


def _ends(pid: int, within: float = 5) -> bool:
    deadline = time.monotonic() + within
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie (ended, not yet reaped by the server) is not running
        return f.read().split(") ")[1][0] != "Z"
