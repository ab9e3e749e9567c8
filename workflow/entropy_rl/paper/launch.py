"""Paper-scale training launches: a run's recorded command made runnable, and Ray across a SLURM allocation.

The command itself is built in run_command (reward_launch.verl_command gives a run its own). A single-node run
starts verl directly (verl starts its own local Ray). A
multi-node run (24B, 32B) first starts a Ray head on the allocation's first
node and one Ray worker on each other node with ``srun``, then runs verl's
driver against that cluster; the Ray processes are ours and are stopped, by
process id, when the driver ends.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

from ..core import algorithms
from . import saves
from .verl_names import PLUGIN_MODULE, PRIME_MAIN_MODULE, RESULTS_PLACEHOLDER, REWARD_MODULE

# What shapes a run's trajectory besides the command, by the trainer that runs it (``core.run.Run.trainer``): the
# code verl 0.9.1 loads by name (the plugin, the reward), or PRIME's main on verl 0.4.1, which never loads the plugin.
# Their closures are a run's resume fingerprint (train_job.main) and, with the job around the trainer, its code input
# (train.smk): an edit of one trainer's code outdates none of the other's runs.
TRAINER_MODULES = {
    algorithms.VERL: (PLUGIN_MODULE, REWARD_MODULE),
    algorithms.PRIME: (PRIME_MAIN_MODULE, REWARD_MODULE),
}

# PRIME runs on verl 0.4.1 (containers/prime.def, envs/prime.txt) with the PRIME recipe of verl's own
# tree at tag v0.4.1 (this commit), importable there as `recipe`: verl 0.9.1 has no PRIME, and
# verl-recipe's PRIME runs on no verl release (entropy_rl.paper.verl.prime_check gives the evidence).
PRIME_VERL = "0.4.1"
PRIME_RECIPE_COMMIT = "8d9e350ea58c7ad4b50dd14d9dcb50577242c55f"

# Every process of a verl 0.9.1 run imports the plugin when it imports verl (verl's own hook): the
# driver's Ray actor that builds the trainer looks `trainer.v1.trainer_mode` up in verl's registry.
VERL_ENV = {"VERL_USE_EXTERNAL_MODULES": PLUGIN_MODULE}


def verl_env(environ) -> dict:
    """``VERL_ENV`` over ``environ``, keeping the external modules ``environ`` already names before the plugin: the
    same hook is how a site loads verl's platform plugins (another accelerator's, or the tests' CPU platform)."""
    named = [m for m in environ.get("VERL_USE_EXTERNAL_MODULES", "").split(",") if m and m != PLUGIN_MODULE]
    return {**environ, "VERL_USE_EXTERNAL_MODULES": ",".join([*named, PLUGIN_MODULE])}


# Overrides that change how a run saves and logs, never its trajectory: a checkpoint written under other values
# still continues the run (``trajectory_command``).
BOOKKEEPING = (
    "trainer.save_freq=",
    "trainer.max_actor_ckpt_to_keep=",
    "trainer.logger=",
    "trainer.project_name=",
    "hydra.run.dir=",
)


def trajectory_command(command: list[str]) -> list[str]:
    """The recorded command less its ``BOOKKEEPING`` overrides: with the run's settings, what a checkpoint must have
    been written under to be resumed (train_job.main's fingerprint), so that a change of verl's own settings (the
    FSDP strategy, the placement, a launch override) starts the run afresh instead of resuming another's state."""
    return [arg for arg in command if not arg.startswith(BOOKKEEPING)]


def bind(command: list[str], results_dir: str) -> list[str]:
    """The recorded command made runnable here: this interpreter, and ``results_dir`` as an absolute path."""
    root = os.path.abspath(results_dir)
    return [sys.executable, *(arg.replace(RESULTS_PLACEHOLDER, root) for arg in command[1:])]


def allocation_nodes(env=os.environ) -> list[str]:
    """The host names of this SLURM allocation, in order (the head first)."""
    nodelist = env.get("SLURM_JOB_NODELIST")
    if not nodelist:
        return [socket.gethostname()]
    out = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True, check=True)
    return out.stdout.split()


def ray_commands(nodes: list[str], gpus_per_node: int, port: int) -> tuple[list[str], list[str] | None]:
    """``srun`` commands for the Ray head (first node) and the workers (the rest), each blocking."""
    head, workers = nodes[0], nodes[1:]
    ray = ["ray", "start", "--block", f"--num-gpus={gpus_per_node}"]
    head_cmd = ["srun", "--nodes=1", "--ntasks=1", f"--nodelist={head}", *ray, "--head", f"--port={port}"]
    if not workers:
        return head_cmd, None
    worker_cmd = [
        "srun",
        f"--nodes={len(workers)}",
        f"--ntasks={len(workers)}",
        f"--nodelist={','.join(workers)}",
        *ray,
        f"--address={head}:{port}",
    ]
    return head_cmd, worker_cmd


def wait_for_ray(address: str, nodes: int, timeout_s: float, env: dict) -> None:
    probe = f"import ray; ray.init(address='{address}'); assert len([n for n in ray.nodes() if n['Alive']]) >= {nodes}"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, check=False).returncode == 0:
            return
        time.sleep(5)
    raise TimeoutError(f"Ray at {address} did not report {nodes} live node(s) within {timeout_s:.0f} s")


def drive(command: list[str], env: dict, stop, grace_s: float = 120, poll_s: float = 5) -> int:
    """Run verl's driver in a process group of its own and, once ``stop()`` says so, stop it as a pre-emption does:
    SIGTERM to the group (verl's Ray children too), SIGKILL after ``grace_s``. Returns the driver's exit code
    (negative: the signal that ended it); a driver that ends by itself first returns its own."""
    proc = subprocess.Popen(command, env=env, start_new_session=True)
    try:
        while proc.poll() is None:
            if stop():
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=grace_s)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                break
            time.sleep(poll_s)
        return proc.wait()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def run_until_saved(
    command: list[str],
    env: dict,
    checkpoints: str | os.PathLike,
    step: int,
    grace_s: float = 120,
    poll_s: float = 5,
    logged=lambda: True,
    trainer: str = "verl",
) -> int:
    """Run verl's driver (one node) and stop it once it has saved ``step`` whole and ``logged()`` (verl saves a step
    before it logs it; stopped between the two, the step's metrics are lost): the pilot's pre-emption."""
    return drive(command, env, lambda: saves.completed_step(checkpoints, trainer) >= step and logged(), grace_s, poll_s)


def run(
    command: list[str],
    nodes: list[str],
    gpus_per_node: int,
    env: dict,
    port: int = 6379,
    ray_timeout_s: float = 600,
    stop=None,
    poll_s: float = 5,
) -> int:
    """Run verl's driver; on more than one node, inside a Ray cluster started across the allocation. ``stop``: polled
    while the driver runs, which is stopped once it says so (``drive``; ``job_time.StopBeforeEnd``)."""
    if len(nodes) == 1:
        return (
            drive(command, env, stop, poll_s=poll_s)
            if stop
            else subprocess.run(command, env=env, check=False).returncode
        )
    head_cmd, worker_cmd = ray_commands(nodes, gpus_per_node, port)
    started = [subprocess.Popen(head_cmd, env=env, start_new_session=True)]
    try:
        time.sleep(10)  # the head must listen before workers connect
        started.append(subprocess.Popen(worker_cmd, env=env, start_new_session=True))
        address = f"{nodes[0]}:{port}"
        wait_for_ray(address, len(nodes), ray_timeout_s, env)
        driver_env = {**env, "RAY_ADDRESS": address}
        return (
            drive(command, driver_env, stop, poll_s=poll_s)
            if stop
            else subprocess.run(command, env=driver_env, check=False).returncode
        )
    finally:
        for proc in reversed(started):  # only the processes started here, by their process group
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
