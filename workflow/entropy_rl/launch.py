"""Paper-scale training launches: the verl command of a run, and Ray across a SLURM allocation.

A single-node run starts verl directly (verl starts its own local Ray). A
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

from . import spec as run_spec

# verl-recipe's PRIME trainer at a pinned commit (its prime/ folder's last change); the train
# container clones it there and puts it on PYTHONPATH as `recipe`.
VERL_RECIPE_COMMIT = "e7f889574b8301cc0f0fc1d57c6d67f31ffeb689"


def prime_overrides(spec: dict, model_path: str) -> list[str]:
    """The implicit PRM of PRIME (beta, its own learning rate), and the paper's group filter."""
    return [
        f"reward_model.model.path={model_path}",
        f"reward_model.model.beta_train={spec['prime']['beta']}",
        f"reward_model.model.optim.lr={spec['prime']['lr']}",
        # Keep prompts whose accuracy is strictly between 0 and 1: the paper drops all-right and all-wrong groups.
        f"data.filter_accuracy={str(spec['filter_groups']).lower()}",
        f"data.accuracy_lower_bound={0.5 / spec['rollout_n']}",
        f"data.accuracy_upper_bound={1 - 0.5 / spec['rollout_n']}",
    ]


def verl_command(scale_cfg: dict, run_id: str, root: str = "results", reward_fn: str = "reward.py") -> list[str]:
    """``python -m verl.trainer.main_ppo`` (or verl-recipe's PRIME) with the run's Hydra overrides."""
    s = run_spec.resolve_run(scale_cfg, run_id)
    overrides = run_spec.verl_overrides(s, covariance_metrics=True)
    overrides += run_spec.verl_launch_overrides(scale_cfg, run_id, root, reward_fn)
    if s["algorithm"] != "prime":
        return [sys.executable, "-m", "verl.trainer.main_ppo", *overrides]
    overrides = [o for o in overrides if not o.startswith("algorithm.filter_groups.")]  # PRIME filters by accuracy
    overrides += prime_overrides(s, f"{root}/models/{s['model']}")
    return [sys.executable, "-m", "recipe.prime.main_prime", *overrides]


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
    worker_cmd = ["srun", f"--nodes={len(workers)}", f"--ntasks={len(workers)}", f"--nodelist={','.join(workers)}",
                  *ray, f"--address={head}:{port}"]  # fmt: skip
    return head_cmd, worker_cmd


def wait_for_ray(address: str, nodes: int, timeout_s: float, env: dict) -> None:
    probe = f"import ray; ray.init(address='{address}'); assert len([n for n in ray.nodes() if n['Alive']]) >= {nodes}"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True).returncode == 0:
            return
        time.sleep(5)
    raise TimeoutError(f"Ray at {address} did not report {nodes} live node(s) within {timeout_s:.0f} s")


def run(command: list[str], nodes: list[str], gpus_per_node: int, env: dict, port: int = 6379, ray_timeout_s: float = 600) -> int:
    """Run verl's driver; on more than one node, inside a Ray cluster started across the allocation."""
    if len(nodes) == 1:
        return subprocess.run(command, env=env).returncode
    head_cmd, worker_cmd = ray_commands(nodes, gpus_per_node, port)
    started = [subprocess.Popen(head_cmd, env=env, start_new_session=True)]
    try:
        time.sleep(10)  # the head must listen before workers connect
        started.append(subprocess.Popen(worker_cmd, env=env, start_new_session=True))
        address = f"{nodes[0]}:{port}"
        wait_for_ray(address, len(nodes), ray_timeout_s, env)
        return subprocess.run(command, env={**env, "RAY_ADDRESS": address}).returncode
    finally:
        for proc in reversed(started):  # only the processes started here, by their process group
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
