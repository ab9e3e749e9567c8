"""A job handed to a warm interpreter (core.warm_start, core.warm_server) behaves as the process Snakemake started:
its output, exit status, signals (ignored ones too), environment, umask, fresh random state and interpreter's end; a
server killed mid-job changes no job's outcome; a job that may not go warm (SLURM, a container, paper scale, wider
thread pools, a server that is not single-threaded) runs cold and its log says why; an edited preloaded module
retires the server; the run's end stops it. The servers here preload a small module of the test's own, not torch;
each is ended by its pid."""

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

THREADS = (
    "OMP_NUM_THREADS",
    "GOTO_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)  # what Snakemake sets to a job's threads
# What Snakemake's preamble leaves in a script's __main__ (the two names hand_over looks for), then the job.
JOB = """
import os, types
__real_file__ = __file__
snakemake = types.SimpleNamespace(config={"scale": os.environ.get("JOB_SCALE", "mini")})
from entropy_rl.core import warm_start
warm_start.hand_over()
import atexit, gc, json, sys, tempfile, time, numpy, warmprobe
mask = os.umask(0); os.umask(mask)
with open(f"/proc/{os.getppid()}/stat") as f:  # a child's parent is its waiter, whose parent is the server
    grandparent = int(f.read().rsplit(") ", 1)[1].split()[1])
print(json.dumps({"pid": os.getpid(), "parent": os.getppid(), "server": grandparent, "child": os.environ.get(warm_start.CHILD),
                  "cold": getattr(warm_start, "cold_reason", None), "random": numpy.random.random(), "probe": warmprobe.VALUE,
                  "tmp": tempfile.gettempdir(), "umask": mask, "threads": len(os.listdir("/proc/self/task")),
                  "frozen": gc.get_freeze_count()}))
sys.stdout.flush()
atexit.register(print, "the job's own exit handler")
what = os.environ.get("JOB_DOES", "")
if what == "sleep":
    time.sleep(float(os.environ.get("JOB_SLEEP", "60")))
elif what == "raise":
    raise RuntimeError("the job failed")
elif what == "torch":
    import torch
    print(json.dumps({"torch": torch.rand(1).item()}))
elif what == "executor":  # a module's, left running (as core.grading's pool): an interpreter's end stops it
    import warmpool
    warmpool.EXECUTOR.submit(time.sleep, 0.5)
sys.exit(int(os.environ.get("JOB_EXIT", "0")))
"""
# The preload: numpy's global generator loaded (as scipy.stats loads it), an exit handler with no arguments (a
# per-process clean-up), and a folder of the server's own removed at its exit as matplotlib removes its temporary
# configuration folder (an exit handler with arguments) and as a TemporaryDirectory is (a finalizer).
PROBE = """
import atexit, os, shutil, tempfile, threading, time
import numpy.random

VALUE = 1
FOLDER = tempfile.mkdtemp(prefix="server-own-")
atexit.register(shutil.rmtree, FOLDER, True)
HELD = tempfile.TemporaryDirectory(prefix="server-finalized-")
atexit.register(lambda: print("a per-process exit handler of the preload", flush=True))
if os.environ.get("PROBE_THREAD"):  # an import that leaves a thread running
    threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
"""


@pytest.fixture
def job(tmp_path):
    # The servers' sockets under a short TMPDIR (pytest's own paths can pass a socket's 107 bytes).
    short = Path(tempfile.mkdtemp(prefix="warm", dir="/tmp"))
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "warmprobe.py").write_text(PROBE)
    (tmp_path / "lib" / "warmpool.py").write_text(
        "import concurrent.futures\n\nEXECUTOR = concurrent.futures.ThreadPoolExecutor(1)\n"
    )
    script = tmp_path / "job.py"
    script.write_text(JOB)
    token = f"t{os.getpid()}{time.monotonic_ns() % 10**6}"
    # (ENTROPY_RL_WARM_START=1 turned warm start on before issue 67; it does nothing now, and lets these tests run
    # against that code, as issue 67's note did.)
    env = {
        **os.environ,
        warm_start.ENABLE: "1",
        "ENTROPY_RL_WARM_RUN": token,
        warm_start.PRELOAD_ENV: "warmprobe",
        "TMPDIR": str(short),
        **dict.fromkeys(THREADS, "1"),
        "PYTHONPATH": os.pathsep.join([str(tmp_path / "lib"), str(ROOT / "workflow")]),
    }
    for name in (warm_start.CHILD, "SLURM_JOB_ID", "APPTAINER_CONTAINER", "SINGULARITY_CONTAINER"):
        env.pop(name, None)
    servers = set()

    def note(out):
        if out and out["child"]:
            servers.add(server_of(out))

    def run(cmd=(), preexec=None, **extra):
        proc = subprocess.run(
            [*cmd, sys.executable, str(script)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            check=False,
            env={**env, **extra},
            timeout=120,
            preexec_fn=preexec,
        )
        out = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        note(out[0] if out else None)
        return proc, (out[0] if out else None)

    def spawn(cmd=(), preexec=None, **extra):
        """A job left running (it sleeps), with its first line."""
        proc = subprocess.Popen(
            [*cmd, sys.executable, str(script)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env={**env, "JOB_DOES": "sleep", **extra},
            preexec_fn=preexec,
        )  # noqa: PLW1509 (the test's process has no thread that forks)
        out = json.loads(proc.stdout.readline())
        note(out)
        return proc, out

    yield SimpleNamespace(run=run, spawn=spawn, dir=tmp_path, tmp=short, token=token, env=env)
    for pid in servers:  # the servers these jobs started
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    shutil.rmtree(short, ignore_errors=True)


def server_of(out: dict) -> int:
    return out["server"]


def test_jobs_run_in_forks_of_one_server_with_their_own_environment(job):
    link = job.tmp / "link"  # another name of the same folder: the same socket, another TMPDIR
    link.symlink_to(".")
    first, a = job.run()
    second, b = job.run(TMPDIR=str(link))
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert a["child"] == b["child"] == "1" and a["cold"] is None  # both handed over: the first started the server
    assert server_of(a) == server_of(b)  # the per-job variables do not split the servers
    assert (a["tmp"], b["tmp"]) == (str(job.tmp), str(link))  # each child's tempfile folder is its own job's
    assert a["random"] != b["random"]  # NumPy re-seeded as a fresh process seeds it, not the server's state twice
    assert a["probe"] == b["probe"] == 1
    assert a["threads"] == 1 and a["frozen"] > 0  # one thread, as a fresh process; the preload's objects frozen


def test_torchs_generator_is_seeded_afresh_in_each_child_as_in_a_fresh_process(job):
    draws = []
    for _ in range(2):
        proc, out = job.run(JOB_DOES="torch", **{warm_start.PRELOAD_ENV: "warmprobe,torch"})
        assert proc.returncode == 0 and out["child"] == "1", proc.stderr
        draws.append(json.loads(proc.stdout.splitlines()[1])["torch"])
    assert draws[0] != draws[1]  # one server's children, each drawing as a fresh process (torch seeds it randomly)


def test_the_umask_and_exit_handlers_are_a_fresh_processs(job):
    proc, out = job.run(preexec=lambda: os.umask(0o027))
    assert proc.returncode == 0 and out["child"] == "1" and out["umask"] == 0o027
    # the job's own handler and the preload's per-process one run, in CPython's order (the latest first)
    assert proc.stdout.splitlines()[1:] == ["the job's own exit handler", "a per-process exit handler of the preload"]
    proc, again = job.run()
    assert server_of(again) == server_of(out)
    # the server's folders, removed by its exit handler and a finalizer, are still there after two children ended
    assert len(list(job.tmp.glob("server-own-*"))) == len(list(job.tmp.glob("server-finalized-*"))) == 1


def test_exit_status_output_and_failures_reach_the_caller(job):
    proc, out = job.run(JOB_EXIT="3")
    assert proc.returncode == 3 and out["child"] == "1"  # the status, and the child's stdout through the job's own
    proc, out = job.run(JOB_DOES="raise")
    assert proc.returncode == 1 and out["child"] == "1"
    assert "RuntimeError: the job failed" in proc.stderr  # the traceback on the job's stderr


def test_a_job_that_leaves_an_executor_running_ends(job):
    proc, out = job.run(JOB_DOES="executor")
    assert proc.returncode == 0 and out["child"] == "1", proc.stderr


def test_a_signal_to_the_job_ends_its_child_as_it_would_end_a_fresh_process(job):
    proc, out = job.spawn()
    assert out["child"] == "1"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == -signal.SIGTERM  # the job ends as its child did: by the signal
    assert _ends(out["pid"])
    # SIGINT neither ignored nor blocked, as from a terminal: a test before this one in the same worker may leave either
    # to the processes the worker starts, and a fresh process would then not end by it either.
    proc, out = job.spawn(preexec=_interruptible)
    assert out["child"] == "1"
    # Once the child sleeps: a SIGINT between its last bytecode and time.sleep's system call runs Python's handler
    # only when the sleep ends (60 s), in any CPython process, handed over or not.
    assert _asleep(out["pid"])
    proc.send_signal(signal.SIGINT)  # a KeyboardInterrupt, uncaught: CPython then ends by SIGINT
    try:
        assert proc.wait(timeout=10) == -signal.SIGINT
    except subprocess.TimeoutExpired:
        pytest.fail(f"SIGINT did not end the job: job {_signals(proc.pid)}, child {_signals(out['pid'])}")
    assert "KeyboardInterrupt" in proc.stderr.read()


def test_a_child_killed_outright_is_reported_so(job):
    proc, out = job.spawn()
    os.kill(out["pid"], signal.SIGKILL)  # the kernel's OOM killer, say
    assert proc.wait(timeout=10) == -signal.SIGKILL


def test_a_job_killed_outright_takes_its_child_with_it(job):
    proc, out = job.spawn()
    assert out["child"] == "1"
    proc.kill()  # SIGKILL: nothing forwarded; the waiter sees the connection close
    proc.wait()
    assert _ends(out["pid"])


def test_signals_the_job_ignores_are_ignored_by_its_child(job):
    # nohup: SIGHUP ignored, as after a logout; a non-interactive shell's background job ignores SIGINT.
    proc, out = job.spawn(cmd=["nohup"], JOB_SLEEP="2")
    os.kill(proc.pid, signal.SIGHUP)
    assert proc.wait(timeout=20) == 0 and out["child"] == "1"
    proc, out = job.spawn(preexec=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN), JOB_SLEEP="2")
    os.kill(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=20) == 0


def test_a_stopped_job_stops_its_child_and_resumes_it(job):
    proc, out = job.spawn(JOB_SLEEP="2")
    os.kill(proc.pid, signal.SIGTSTP)  # ^Z
    assert _state(out["pid"], "T") and _state(proc.pid, "T")
    time.sleep(2.5)
    assert _state(out["pid"], "T")  # still stopped, its sleep long over
    os.kill(proc.pid, signal.SIGCONT)  # fg, or bg
    assert proc.wait(timeout=20) == 0


def test_the_server_killed_mid_job_changes_no_outcome(job):
    proc, out = job.spawn(JOB_SLEEP="2", JOB_EXIT="3")
    os.kill(server_of(out), signal.SIGKILL)
    assert proc.wait(timeout=20) == 3  # its work done, its status the child's
    proc, out = job.spawn()  # a new server, started by this job
    os.kill(server_of(out), signal.SIGKILL)
    os.kill(out["pid"], signal.SIGKILL)
    assert proc.wait(timeout=10) == -signal.SIGKILL  # the waiter, not the server, reports the child's end


def test_an_edited_preloaded_module_retires_the_server(job):
    _, before = job.run()
    time.sleep(0.01)
    (job.dir / "lib" / "warmprobe.py").write_text("VALUE = 2  # edited\n")
    proc, after = job.run()
    assert proc.returncode == 0, proc.stderr
    assert after["child"] == "1" and server_of(after) != server_of(before)  # a new server, started by this job
    assert after["probe"] == 2  # which imported the module as it reads now


@pytest.mark.parametrize(
    "extra, why",
    [
        ({"SLURM_JOB_ID": "17"}, "a SLURM job"),
        ({"APPTAINER_CONTAINER": "/img.sif"}, "inside a container"),
        ({"JOB_SCALE": "paper"}, "scale paper"),
        ({"OPENBLAS_NUM_THREADS": "2"}, "its thread pools are not 1 thread (OPENBLAS_NUM_THREADS=2)"),
    ],
)
def test_a_job_that_may_not_go_warm_runs_cold_and_says_why(job, extra, why):
    proc, out = job.run(**extra)
    assert proc.returncode == 0 and out["child"] is None and out["cold"].startswith(why)
    assert not list(job.tmp.glob("entropy-rl-warm-*/*.sock"))  # and started no server


def test_a_server_that_is_not_single_threaded_refuses_every_job(job):
    proc, out = job.run(PROBE_THREAD="1")
    assert proc.returncode == 0 and out["child"] is None
    assert out["cold"] == "no warm server took the job: the warm server has 2 threads after its imports, not 1"
    proc, again = job.run(PROBE_THREAD="1")
    assert again["cold"] == out["cold"]  # the same server refused it: a refusal that is not a retirement
    servers = {int(p.read_text().split()[1].rstrip(":")) for p in job.tmp.glob("entropy-rl-warm-*/*.log")}
    assert len(servers) == 1  # starts no second server, which would import everything again
    os.kill(servers.pop(), signal.SIGTERM)


def test_off_or_outside_snakemake_the_job_runs_in_its_own_process(job, tmp_path):
    proc, out = job.run(**{warm_start.RUN: ""})  # a run that goes cold (begin chose so)
    assert proc.returncode == 0 and out["child"] is None and out["cold"] is None
    assert not list(job.tmp.glob("entropy-rl-warm-*/*.sock"))  # and started no server
    plain = tmp_path / "plain.py"  # no Snakemake preamble: a script of someone else's
    plain.write_text(JOB.replace("__real_file__ = __file__\n", ""))
    proc = subprocess.run([sys.executable, str(plain)], capture_output=True, text=True, env=job.env, check=False)
    assert json.loads(proc.stdout.splitlines()[0])["child"] is None


def test_a_run_goes_warm_only_where_begin_says_and_its_end_stops_the_server(job, monkeypatch):
    monkeypatch.setenv(warm_start.RUN, "inherited")
    for local_mini, switch in ((False, None), (True, "0")):
        if switch:
            monkeypatch.setenv(warm_start.ENABLE, switch)
        assert not warm_start.begin(local_mini) and warm_start.RUN not in os.environ
    monkeypatch.setenv(warm_start.ENABLE, "1")  # no value turns it on where begin would not
    assert not warm_start.begin(False)
    monkeypatch.setenv("TMPDIR", str(job.tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)
    assert warm_start.begin(True)
    token = os.environ[warm_start.RUN]
    _, out = job.run(**{warm_start.RUN: token})
    assert out["child"] == "1"
    server = server_of(out)
    warm_start.end()
    assert warm_start.RUN not in os.environ and _ends(server)
    assert not list(job.tmp.glob(f"entropy-rl-warm-*/{token}.*.sock")) + list(
        job.tmp.glob(f"entropy-rl-warm-*/{token}.*.lock")
    )


def test_a_folder_another_user_could_hold_is_not_used(monkeypatch):
    short = Path(tempfile.mkdtemp(prefix="warm", dir="/tmp"))
    monkeypatch.setenv("TMPDIR", str(short))
    monkeypatch.setenv(warm_start.RUN, "t")
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir reads TMPDIR again
    folder = short / f"entropy-rl-warm-{os.getuid()}"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)  # writable by anyone: a socket there could be anyone's
    assert warm_start._address() is None
    folder.chmod(0o700)
    assert warm_start._address().parent == folder
    shutil.rmtree(short)


def _ppid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(") ", 1)[1].split()[1])


def _state(pid: int, want: str, within: float = 5) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/stat") as f:
            if f.read().rsplit(") ", 1)[1][0] == want:
                return True
        time.sleep(0.05)
    return False


def _interruptible() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])


def _signals(pid: int) -> str:
    """A process's signal masks and kernel wait channel, for a failure's message."""
    with open(f"/proc/{pid}/status") as f:
        masks = [line for line in f.read().splitlines() if line.startswith(("Sig", "ShdPnd"))]
    with open(f"/proc/{pid}/wchan") as f:
        return f"{'; '.join(masks)}; wchan {f.read()}"


def _asleep(pid: int, within: float = 5) -> bool:
    """Whether the process is in time.sleep's system call (its kernel wait channel), within ``within`` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/wchan") as f:
            if "nanosleep" in f.read():
                return True
        time.sleep(0.01)
    return False


def _ends(pid: int, within: float = 5) -> bool:
    deadline = time.monotonic() + within
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:  # a zombie (ended, not yet reaped) is not running
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:  # gone, reaped
        return False
