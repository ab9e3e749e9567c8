"""Paper-scale launches and the GPU-hours estimate, up to the GPU boundary."""

import ast
import os
import signal
import socket
import sys
import time

import psutil
import pytest
import yaml
from entropy_rl.core import modules, resume
from entropy_rl.core.scale import build
from entropy_rl.paper import launch, reward_launch, saves, verl_names
from entropy_rl.paper.cost import architectures, budget
from support import ROOT

PAPER = build("paper", yaml.safe_load((ROOT / "config.yaml").read_text())["paper"])


def test_grpo_runs_launch_verls_main_ppo_with_the_covariance_loss_and_our_reward():
    cmd = launch.bind(reward_launch.verl_command(PAPER, "qwen2.5-32b-grpo-klcov"), "/scratch/results")
    assert cmd[1:3] == ["-m", "verl.trainer.main_ppo"] and cmd[0] == sys.executable
    assert "actor_rollout_ref.actor.policy_loss.loss_mode=kl_cov+cov" in cmd
    assert "reward.custom_reward_function.path=pkg://entropy_rl.core.reward" in cmd  # imported as part of the package
    assert "data.train_files=/scratch/results/data/train/dapo-math.parquet" in cmd  # Section 4 trains on DAPO-Math
    assert "actor_rollout_ref.rollout.tensor_model_parallel_size=8" in cmd and "trainer.nnodes=4" in cmd


def test_prime_runs_verl_recipes_trainer_with_its_implicit_prm_and_the_accuracy_filter():
    cmd = reward_launch.verl_command(PAPER, "qwen2.5-7b-prime")
    assert cmd[1:3] == ["-m", "entropy_rl.paper.prime_main"]  # the recipe's main with our reward (verl 0.4.1)
    assert "reward_model.model.beta_train=0.05" in cmd and "reward_model.model.optim.lr=1e-06" in cmd
    assert not any(o.startswith("algorithm.filter_groups") for o in cmd)
    lower = float(next(o for o in cmd if o.startswith("data.accuracy_lower_bound=")).split("=")[1])
    upper = float(next(o for o in cmd if o.startswith("data.accuracy_upper_bound=")).split("=")[1])
    assert 0 < lower < 1 / 8 and 7 / 8 < upper < 1  # drops all-wrong and all-right groups of 8, keeps the rest


def test_ray_on_slurm_puts_the_head_on_the_first_node_and_a_worker_on_each_other():
    head, workers = launch.ray_commands(["gpu01", "gpu02", "gpu03", "gpu04"], 8, 6379)
    assert (
        head[:4] == ["srun", "--nodes=1", "--ntasks=1", "--nodelist=gpu01"]
        and "--head" in head
        and "--num-gpus=8" in head
    )
    assert (
        workers[:4] == ["srun", "--nodes=3", "--ntasks=3", "--nodelist=gpu02,gpu03,gpu04"]
        and "--address=gpu01:6379" in workers
    )
    assert launch.ray_commands(["gpu01"], 8, 6379)[1] is None
    assert launch.allocation_nodes({}) == [socket.gethostname()]


def test_single_node_launch_runs_the_driver_and_returns_its_exit_code():
    assert launch.run(["python3", "-c", "raise SystemExit(3)"], ["localhost"], 8, dict(os.environ)) == 3


def test_gpu_hours_grow_with_model_size_and_prime_costs_more():
    b = PAPER.config["budget"]
    runs = ["qwen2.5-0.5b-grpo", "qwen2.5-7b-grpo", "qwen2.5-32b-grpo", "qwen2.5-7b-prime"]
    hours = {
        run: budget.train_gpu_hours(
            PAPER.runs[run], PAPER.placement(run), architectures.of_model(PAPER, PAPER.runs[run].model), b, 6000
        )
        for run in runs
    }
    assert hours["qwen2.5-0.5b-grpo"] < hours["qwen2.5-7b-grpo"] < hours["qwen2.5-32b-grpo"]
    assert hours["qwen2.5-7b-prime"] > hours["qwen2.5-7b-grpo"]
    # 7B GRPO, Section 2's 1,200 steps of 512 x 8 responses: FLOPs and decoding rooflines / (8 GPUs at the configured
    # efficiencies) -- thousands of GPU-hours (about 6,800 with the group filter's expected refills), not tens of
    # thousands.
    assert 100 < hours["qwen2.5-7b-grpo"] < 10_000
    assert budget.runtime_minutes(hours["qwen2.5-7b-grpo"], 8, 1.5) == int(
        -(-hours["qwen2.5-7b-grpo"] / 8 * 60 * 1.5 // 1)
    )
    assert budget.runtime_minutes(0.01, 8, 1.5) == 60  # the floor


def test_a_checkpoint_resumes_only_under_the_same_verl_settings():
    """train_job.main's resume fingerprint reads the recorded command less how the run saves and logs: another FSDP
    strategy or placement starts afresh, another save interval or checkpoint count continues."""
    run = "qwen2.5-7b-grpo-clipcov"
    command = reward_launch.verl_command(PAPER, run)
    settings = PAPER.runs[run]

    def fingerprint(cmd):
        return resume.fingerprint(settings, command=launch.trajectory_command(cmd))

    same = fingerprint(command)
    swap = {"actor_rollout_ref.actor.strategy=fsdp2": "actor_rollout_ref.actor.strategy=fsdp"}
    assert fingerprint([swap.get(a, a) for a in command]) != same
    assert fingerprint([*command, "trainer.n_gpus_per_node=4"]) != same
    assert fingerprint([a.replace("trainer.save_freq=32", "trainer.save_freq=8") for a in command]) == same
    assert "trainer.save_freq=32" in command and launch.trajectory_command(command) != command


def test_each_trainer_runs_and_fingerprints_its_own_code():
    """A run's code input (train.smk) and its checkpoints' fingerprint (train_job.main) are its trainer's: an edit of
    the loss plugin leaves PRIME's run and checkpoints as they are, an edit of PRIME's main the verl 0.9.1 runs'."""
    assert PAPER.runs["qwen2.5-7b-prime"].trainer == "prime"
    assert {r.trainer for name, r in PAPER.runs.items() if name != "qwen2.5-7b-prime"} == {"verl"}
    verl, prime = (modules.closure(*launch.TRAINER_MODULES[t]) for t in ("verl", "prime"))
    assert verl_names.PLUGIN_MODULE in verl and verl_names.PLUGIN_MODULE not in prime
    assert verl_names.PRIME_MAIN_MODULE in prime and verl_names.PRIME_MAIN_MODULE not in verl
    assert verl_names.REWARD_MODULE in verl and verl_names.REWARD_MODULE in prime


def test_a_runs_fingerprint_holds_its_trainers_code_not_the_launcher_or_the_command_builder():
    """The names verl's plugin, the job and the command share are in a module that imports nothing (verl_names): a
    run's resume fingerprint covers the trainer's code, not the launch (Ray, srun) or the command's builder, whose
    changes reach a run through its recorded command if at all."""
    tree = ast.parse(modules.source("entropy_rl.paper.verl_names").read_text())
    assert not [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
    around = {"entropy_rl.paper.launch", "entropy_rl.paper.run_command", "entropy_rl.paper.train_job"}
    for trainer, code in launch.TRAINER_MODULES.items():
        assert not around & set(modules.closure(*code)), trainer


# A driver that saves like verl (a step's directory, then latest_checkpointed_iteration.txt), one step every 0.2 s, in
# a child process of its own as verl's Ray workers are, and records the SIGTERM it gets.
SAVING_DRIVER = r"""
import os, signal, subprocess, sys, time
ckpt = sys.argv[1]
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
open(os.path.join(ckpt, "child.pid"), "w").write(str(child.pid))
def stop(signum, frame):
    open(os.path.join(ckpt, "sigterm"), "w").write(str(signum))
    sys.exit(143)
signal.signal(signal.SIGTERM, stop)
for step in range(1, 50):
    save = os.path.join(ckpt, f"global_step_{step}")
    os.makedirs(os.path.join(save, "actor"))
    for name in ("actor/model_world_size_1_rank_0.pt", "actor/optim_world_size_1_rank_0.pt",
                 "actor/extra_state_world_size_1_rank_0.pt", "data.pt"):  # a whole save (paper.saves)
        open(os.path.join(save, name), "w").write(str(step))
    open(os.path.join(ckpt, "latest_checkpointed_iteration.txt"), "w").write(str(step))
    time.sleep(0.2)
"""


def test_the_pilots_preemption_stops_verl_once_the_step_is_saved_as_slurm_would(tmp_path):
    """launch.run_until_saved, as train_job.main runs it for the pilot: SIGTERM to the driver's whole process group once
    the step is saved; the relaunch (verl's resume_mode=auto) then starts from that checkpoint."""
    cmd = [sys.executable, "-c", SAVING_DRIVER, str(tmp_path)]
    code = launch.run_until_saved(cmd, dict(os.environ), tmp_path, step=3, poll_s=0.05)
    assert code == 143 and (tmp_path / "sigterm").read_text() == str(int(signal.SIGTERM))
    assert 3 <= saves.completed_step(tmp_path) <= 4  # stopped at the step, not run to the end (49)
    child = int((tmp_path / "child.pid").read_text())
    time.sleep(0.2)
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE  # its group went too


def test_a_driver_that_ends_before_the_step_returns_its_own_exit_code(tmp_path):
    code = launch.run_until_saved(
        [sys.executable, "-c", "raise SystemExit(7)"], dict(os.environ), tmp_path, step=2, poll_s=0.05
    )
    assert code == 7 and saves.completed_step(tmp_path) == 0


def test_the_cpu_platform_comes_first_and_keeps_what_the_environment_named():
    """paper.platforms: on a CPU, verl's hook imports the product's CPU platform before any other module it names (the
    platform must be registered before anything asks for one), and vLLM's CPU engine gets its settings; on a GPU,
    nothing is set."""
    from entropy_rl.paper import platforms

    base = {"PATH": "/bin", "VERL_USE_EXTERNAL_MODULES": "site.plugin"}
    assert platforms.environment(platforms.GPU, base) == base
    cpu = launch.verl_env(platforms.environment(platforms.CPU, base))
    assert cpu["VERL_USE_EXTERNAL_MODULES"].split(",") == [
        platforms.CPU_PLATFORM_MODULE,
        "site.plugin",
        launch.PLUGIN_MODULE,
    ]
    assert cpu["VERL_PLATFORM"] == "cpu" and cpu["VLLM_CPU_KVCACHE_SPACE"] and cpu["PATH"] == "/bin"
    assert (
        "OMP_NUM_THREADS" not in cpu and platforms.environment(platforms.CPU, base, threads=2)["OMP_NUM_THREADS"] == "2"
    )
    with pytest.raises(ValueError, match="tpu"):
        platforms.environment("tpu", base)
