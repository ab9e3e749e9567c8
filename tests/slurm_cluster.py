"""A throwaway single-node SLURM cluster for tests: munged, slurmctld and slurmd run as our
children, with every config, key, socket, state and log file inside one work directory.

Nothing under /etc/slurm or /etc/munge is read or written: clients find the cluster through
SLURM_CONF (see `LocalSlurm.env`), and slurm.conf's AuthInfo points every SLURM program at our
own munged socket, so a system munged or slurmd, if the package started one, is left alone.

    with LocalSlurm(tmp_path) as cluster:
        subprocess.run(["sbatch", "--wrap", "hostname"], env=cluster.env)

Tests get the session-wide `slurm_cluster` fixture below with `pytest_plugins = ["slurm_cluster"]`
in their module (or in conftest.py). It skips when SLURM is not installed, except under CI=true,
where CI is meant to have installed it and a skip would hide a broken set-up.
"""

from __future__ import annotations

import ctypes
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Self

import pytest

# slurmd and slurmctld live in /usr/sbin, which a non-login PATH may lack.
SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
DAEMONS = ("munged", "slurmctld", "slurmd", "slurmstepd")
CLIENTS = ("sbatch", "srun", "squeue", "sinfo", "scontrol", "scancel")
# Wrapped as well when installed (sacct is; Snakemake's plugin probes it and sacctmgr).
OPTIONAL_CLIENTS = ("sacct", "sacctmgr", "salloc", "sattach", "sshare", "sstat", "sprio", "sdiag")
APT_HINT = "apt-get install -y --no-install-recommends slurm-wlm munge"
PARTITION = "debug"
GPUS = 2


def which(name: str) -> str | None:
    return shutil.which(name, path=SEARCH_PATH)


def unavailable_reason() -> str | None:
    """Why a local cluster cannot run here, or None if it can."""
    missing = [name for name in DAEMONS + CLIENTS if which(name) is None]
    if missing:
        return f"SLURM not installed (missing {', '.join(missing)}; {APT_HINT})"
    if os.geteuid() != 0:
        # slurmd must be root to start job steps (slurmstepd switches to the job's user).
        return "a local SLURM cluster needs root to run slurmd"
    return None


def require_slurm() -> None:
    """Skip the calling test if SLURM cannot run here; under CI=true, fail instead."""
    reason = unavailable_reason()
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


def free_ports(n: int) -> list[int]:
    """n distinct TCP ports nobody listens on now (the daemons bind them a moment later)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:  # held open together, so the kernel hands out distinct ports
            s.bind(("", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


_prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here, not in the forked child


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM it when the test process dies, even by SIGKILL,
    so a killed pytest leaves no daemons behind."""
    PR_SET_PDEATHSIG = 1
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def memory_mb() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    raise RuntimeError("no MemTotal in /proc/meminfo")


class LocalSlurm:
    """Context manager: a running one-node cluster with `GPUS` fake GPUs, torn down on exit."""

    def __init__(self, workdir: str | os.PathLike, gpus: int = GPUS, start_timeout: float = 60):
        self.dir = Path(workdir).resolve()
        self.gpus = gpus
        self.start_timeout = start_timeout
        # slurmd finds its node by short hostname, and slurmctld checks it is the SlurmctldHost.
        self.node = socket.gethostname().split(".")[0]
        self.partition = PARTITION
        self.conf = self.dir / "slurm.conf"
        self.bin = self.dir / "bin"
        self.munge_socket = self.dir / "munge" / "munge.socket"
        self.procs: dict[str, subprocess.Popen] = {}

    @property
    def env(self) -> dict[str, str]:
        """Environment for SLURM clients (and snakemake) talking to this cluster."""
        # Inherited SLURM_* variables (say, pytest run inside a SLURM job) would point
        # clients at another job or cluster.
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        env["SLURM_CONF"] = str(self.conf)
        # Our client wrappers first (see _write_wrappers). Jobs inherit this PATH (sbatch
        # exports the submitter's environment), so also put this Python's bin directory on
        # it for rules' shell commands, even if pytest was started without activating a venv.
        env["PATH"] = os.pathsep.join([str(self.bin), os.path.dirname(sys.executable), SEARCH_PATH])
        return env

    def run(self, *args: str, timeout: float = 30, check: bool = True) -> subprocess.CompletedProcess:
        """Run a SLURM client command against this cluster."""
        return subprocess.run(args, env=self.env, capture_output=True, text=True, timeout=timeout, check=check)

    def submit(self, *sbatch_args: str) -> str:
        """sbatch with the given arguments; returns the job id."""
        return self.run("sbatch", "--parsable", *sbatch_args).stdout.strip().split(";")[0]

    def state(self, job_id: str) -> str:
        """The job's state as squeue reports it (finished jobs stay listed for MinJobAge)."""
        out = self.run("squeue", "--noheader", "--states=all", f"--jobs={job_id}", "--format=%T")
        return out.stdout.strip()

    def wait(self, job_id: str, timeout: float = 60) -> str:
        """Wait until the job has finished; returns its final state."""
        deadline = time.monotonic() + timeout
        while (state := self.state(job_id)) in ("", "PENDING", "CONFIGURING", "RUNNING", "COMPLETING"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} still {state or 'unknown'} after {timeout}s\n{self.log_tail()}")
            time.sleep(0.5)
        return state

    # -- start ---------------------------------------------------------------------------

    def __enter__(self) -> Self:
        reason = unavailable_reason()
        if reason:
            raise RuntimeError(reason)
        try:
            self._write_files()
            self._start_munged()
            self._start("slurmctld", "slurmctld", "-D", "-f", str(self.conf))
            self._wait("slurmctld to answer", lambda: self.run("scontrol", "ping", check=False).returncode == 0)
            self._start("slurmd", "slurmd", "-D", "-f", str(self.conf), "-N", self.node)
            self._wait(f"node {self.node} to become idle", self._node_idle)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _write_files(self) -> None:
        for sub in ("munge", "state", "spool", "log", "gpu"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        # The key is the cluster's only secret: readable by its owner alone.
        os.chmod(self.dir / "munge", 0o700)
        key = self.dir / "munge" / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        os.chmod(key, 0o600)

        # Fake GPUs: slurmd wants each gres File to be a character or block device (a plain
        # file gets no CUDA_VISIBLE_DEVICES) and numbers the GPU by the digits that end its
        # name, so nvidiaN symlinks to /dev/null; no mknod privilege is needed.
        gpu_files = []
        for i in range(self.gpus):
            path = self.dir / "gpu" / f"nvidia{i}"
            if not path.is_symlink():
                path.symlink_to("/dev/null")
            gpu_files.append(path)
        (self.dir / "gres.conf").write_text(
            "".join(f"NodeName={self.node} Name=gpu File={path}\n" for path in gpu_files)
        )
        self._write_wrappers()
        # An empty plugin stack, so /etc/slurm/plugstack.conf is not read either.
        (self.dir / "plugstack.conf").write_text("")

        cpus = len(os.sched_getaffinity(0))
        memory = int(memory_mb() * 0.9)  # below the real figure, so slurmd does not drain the node
        gres = f" Gres=gpu:{self.gpus}" if self.gpus else ""
        ctld_port, slurmd_port = free_ports(2)
        d = self.dir
        self.conf.write_text(
            f"""\
ClusterName=testcluster
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser={pwd.getpwuid(os.geteuid()).pw_name}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
PlugStackConfig={d}/plugstack.conf
# No cgroups in the sandbox: track processes through /proc, bind no tasks.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# No slurmdbd: finished jobs are only known to slurmctld, for MinJobAge seconds, so keep them
# an hour for squeue/scontrol-based status checks.
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=3600
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=5
GresTypes=gpu
NodeName={self.node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory}{gres} State=UNKNOWN
PartitionName={self.partition} Nodes={self.node} Default=YES MaxTime=INFINITE State=UP
"""
        )

    def _write_wrappers(self) -> None:
        """bin/<client> scripts that run the real client with SLURM_CONF set to this cluster.

        Snakemake's slurm-jobstep plugin (0.6.1) strips every SLURM_* variable but the job's
        identity before its in-job `srun`, SLURM_CONF included; that srun then finds no
        /etc/slurm/slurm.conf and fails ("Could not establish a configuration source").
        PATH survives, so clients found through it still reach this cluster.
        """
        self.bin.mkdir(exist_ok=True)
        for name in CLIENTS + OPTIONAL_CLIENTS:
            if (real := which(name)) is None:
                continue
            wrapper = self.bin / name
            wrapper.write_text(f'#!/bin/sh\nexport SLURM_CONF="{self.conf}"\nexec "{real}" "$@"\n')
            wrapper.chmod(0o755)

    def _start(self, name: str, *argv: str) -> None:
        with open(self.dir / "log" / f"{name}.out", "ab") as out:
            # Own session: a Ctrl-C to pytest reaches the daemons only through our __exit__.
            self.procs[name] = subprocess.Popen(
                [which(argv[0]), *argv[1:]],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 (one prctl call, no locks taken)
            )

    def _start_munged(self) -> None:
        m = self.dir / "munge"
        self._start(
            "munged",
            "munged",
            "--foreground",
            "--force",  # else it refuses a socket other users cannot reach; only root uses ours
            f"--socket={self.munge_socket}",
            f"--key-file={m / 'munge.key'}",
            f"--pid-file={m / 'munged.pid'}",
            f"--seed-file={m / 'munged.seed'}",
            f"--log-file={self.dir / 'log' / 'munged.log'}",
        )
        self._wait("munged's socket", self.munge_socket.exists)

    def _node_idle(self) -> bool:
        out = self.run("sinfo", "--noheader", "--nodes", self.node, "--format=%t", check=False).stdout
        return out.strip() == "idle"

    def _wait(self, what: str, ready, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout or self.start_timeout)
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited ({proc.returncode}) while waiting for {what}\n{self.log_tail()}")
            if ready():
                return
            time.sleep(0.2)
        raise RuntimeError(f"timed out after {timeout or self.start_timeout}s waiting for {what}\n{self.log_tail()}")

    def log_tail(self, lines: int = 20) -> str:
        """The last lines of every daemon log, for error messages."""
        parts = []
        for log in sorted((self.dir / "log").glob("*")):
            text = log.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {log.name} ---\n" + "\n".join(text))
        return "\n".join(parts)

    # -- stop ----------------------------------------------------------------------------

    def __exit__(self, *exc) -> None:
        if "slurmd" in self.procs and self.procs["slurmd"].poll() is None:
            try:
                self._cancel_jobs()
            except (subprocess.SubprocessError, OSError):
                pass  # stop the daemons regardless
        # Stop in reverse start order, each by its PID only.
        for name in reversed(list(self.procs)):
            proc = self.procs.pop(name)
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)

    def _cancel_jobs(self, timeout: float = 15) -> None:
        """Job steps run under slurmstepd, which slurmd detaches: cancel the jobs while the
        daemons are still up, so no job process outlives the cluster."""
        self.run("scancel", f"--partition={self.partition}", timeout=10, check=False)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            jobs = self.run("squeue", "--noheader", "--states=RUNNING,COMPLETING", timeout=10, check=False)
            if jobs.returncode != 0 or not jobs.stdout.strip():
                return
            time.sleep(0.5)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """A running LocalSlurm shared by the whole test session."""
    require_slurm()
    with LocalSlurm(tmp_path_factory.mktemp("slurm")) as cluster:
        yield cluster
