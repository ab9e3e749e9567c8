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

from . import prompt_format
from ..core import spec as run_spec
from ..core.spec import resolve_run

# What verl imports by name in its workers: the covariance loss plugin and the reward function.
PLUGIN_MODULE = "entropy_rl.paper.verl_plugin"
# The trainer that module registers with verl (verl's synchronous V1 trainer plus the paper's measures).
TRAINER_MODE = "entropy_paper"
# The released scripts' bound on generation batches per step, where that trainer reads it (verl_plugin.GenerationBound):
# verl 0.9.1 reads its own algorithm.filter_groups.max_num_gen_batches only to warn that it ignores it.
GEN_BATCHES_KEY = f"trainer.v1.{TRAINER_MODE}.max_num_gen_batches"
# verl_plugin's agent loop: verl's single-turn loop with a sampling seed per request (verl_plugin.request_seed).
AGENT_LOOP = "seeded_single_turn"
REWARD_MODULE = "entropy_rl.core.reward"
# PRIME's entry, run with -m: verl 0.4.1's PRIME recipe given the reward (it imports REWARD_MODULE).
PRIME_MAIN_MODULE = "entropy_rl.paper.prime_main"
# What shapes a run's trajectory besides the command, by the trainer that runs it (``trainer``): the code verl 0.9.1
# loads by name (the plugin, the reward), or PRIME's main on verl 0.4.1, which never loads the plugin. Their
# closures are a run's resume fingerprint and, with this module and verl_metrics (which the job runs around the
# trainer), its code input (train.smk): an edit of one trainer's code outdates none of the other's runs.
TRAINER_MODULES = {
    "verl": (PLUGIN_MODULE, REWARD_MODULE),
    "prime": (PRIME_MAIN_MODULE, REWARD_MODULE),
}
# The one list every run's checkpoints were fingerprinted with before TRAINER_MODULES (issue 39): a run pre-empted
# before that change resumes after it when that code is unchanged (train_verl.py, core.resume.claim's earlier).
FINGERPRINT_BEFORE_TRAINER_MODULES = (PLUGIN_MODULE, REWARD_MODULE, PRIME_MAIN_MODULE)
# Checkpoints with optimiser state kept per run (the last two: one to resume from, one spare).
KEEP_CHECKPOINTS = 2

# PRIME runs on verl 0.4.1 (containers/prime.def, envs/prime.txt) with the PRIME recipe of verl's own
# tree at tag v0.4.1 (this commit), importable there as `recipe`: verl 0.9.1 has no PRIME, and
# verl-recipe's PRIME runs on no verl release (entropy_rl.paper.verl.prime_check gives the evidence).
PRIME_VERL = "0.4.1"
PRIME_RECIPE_COMMIT = "8d9e350ea58c7ad4b50dd14d9dcb50577242c55f"

# Overrides of the shared list (verl_overrides, verl_launch_overrides) left out of a PRIME
# command, by key prefix, each with the reason; prime_overrides puts verl 0.4.1's equivalents back.
PRIME_DROPPED = {
    "algorithm.filter_groups.": "PRIME filters groups by accuracy (data.filter_accuracy)",
    "trainer.use_v1": "verl 0.9.1's V1 trainer; verl 0.4.1 has no such key and PRIME runs its own loop",
    "trainer.v1.": "the V1 trainer with the paper's measures (verl_plugin) is verl 0.9.1's; PRIME runs verl 0.4.1's loop",
    "+trainer.v1.": "the generation bound is that V1 trainer's setting (verl_plugin.GenerationBound)",
    "actor_rollout_ref.actor.optim.clip_grad": "verl 0.4.1 reads actor.grad_clip",
    "data.seed": "not in verl 0.4.1's config; the PRIME trainer reads data.get('seed'), so it is appended (+data.seed)",
    "reward.custom_reward_function.": "verl 0.4.1 calls it custom_reward_function, loads it as a standalone file, "
    "and PRIME's main never reads it: entropy_rl.paper.prime_main hands the recipe entropy_rl.core.reward.compute_score",
    "actor_rollout_ref.model.external_lib": "the covariance plugin wraps verl 0.9.1's loss API; verl 0.4.1's losses "
    "return a 4-tuple and its vanilla loss is not in the registry (PRIME's figures need no covariance)",
    "actor_rollout_ref.actor.policy_loss.loss_mode": "re-set without the +cov plugin suffix",
    "actor_rollout_ref.actor.strategy": "PRIME runs verl 0.4.1's recipe on that verl's default FSDP workers, as released",
    "actor_rollout_ref.ref.strategy": "PRIME runs verl 0.4.1's recipe on that verl's default FSDP workers, as released",
    "trainer.logger": "verl 0.4.1 has no file logger: PRIME logs to tensorboard (TENSORBOARD_DIR)",
    "actor_rollout_ref.rollout.seed": "not in verl 0.4.1's rollout config, whose vLLM engine reads config.get('seed', 0): "
    "appended (+actor_rollout_ref.rollout.seed)",
    "actor_rollout_ref.rollout.agent.": "verl 0.4.1's rollout is vLLM's SPMD engine, one SamplingParams for a whole batch, "
    "without agent loops: PRIME's rollouts are seeded by the engine only (actor_rollout_ref.rollout.seed)",
}


def prime_overrides(spec: dict, model: dict, root: str) -> list[str]:
    """PRIME's settings for verl 0.4.1's recipe: the implicit PRM (beta, its own learning rate, the
    policy's token budget per GPU), the paper's group filter, and verl 0.4.1's names of shared settings."""
    budget = model["max_token_len_per_gpu"]
    return [
        f"actor_rollout_ref.actor.policy_loss.loss_mode={spec['loss']['loss_mode']}",
        f"actor_rollout_ref.actor.grad_clip={spec['grad_clip']}",
        f"+data.seed={spec['seed']}",
        f"+actor_rollout_ref.rollout.seed={spec['seed']}",
        f"reward_model.model.path={root}/models/{spec['model']}",
        f"reward_model.model.beta_train={spec['prime']['beta']}",
        f"reward_model.model.optim.lr={spec['prime']['lr']}",
        # The PRM's forward and update micro-batches packed by tokens like the actor's; its update reads
        # ppo_max_token_len_per_gpu, which neither verl's nor the recipe's config defines.
        "reward_model.use_dynamic_bsz=true",
        f"reward_model.forward_max_token_len_per_gpu={budget}",
        f"+reward_model.ppo_max_token_len_per_gpu={budget}",
        # Keep prompts whose accuracy is strictly between 0 and 1: the paper drops all-right and all-wrong groups.
        f"data.filter_accuracy={str(spec['filter_groups']).lower()}",
        f"data.accuracy_lower_bound={0.5 / spec['rollout_n']}",
        f"data.accuracy_upper_bound={1 - 0.5 / spec['rollout_n']}",
        "trainer.logger=[console,tensorboard]",
        # The recipe finds verl's ppo_trainer through file://verl/trainer/config, relative to the working
        # directory: from the workflow's it is not there. verl's installed config package is.
        "hydra.searchpath=[pkg://verl.trainer.config]",
    ]


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
BOOKKEEPING = ("trainer.save_freq=", "trainer.max_actor_ckpt_to_keep=", "trainer.logger=", "trainer.project_name=",
               "hydra.run.dir=")  # fmt: skip


def trajectory_command(command: list[str]) -> list[str]:
    """The recorded command less its ``BOOKKEEPING`` overrides: with the run spec, what a checkpoint must have
    been written under to be resumed (train_verl.py's fingerprint), so that a change of verl's own settings (the
    FSDP strategy, the placement, a launch override) starts the run afresh instead of resuming another's state."""
    return [arg for arg in command if not arg.startswith(BOOKKEEPING)]


# The results directory in a command as the workflow records it (rule params): bound to an absolute
# path, and the interpreter to the job's own, only where the job runs (``bind``), so the recorded
# command does not change with the checkout's location or the submitting host's Python.
RESULTS = "@RESULTS@"


def verl_command(scale_cfg: dict, run_id: str, root: str = RESULTS) -> list[str]:
    """``python -m verl.trainer.main_ppo`` (or verl-recipe's PRIME) with the run's Hydra overrides."""
    s = run_spec.resolve_run(scale_cfg, run_id)
    overrides = verl_overrides(s, covariance_metrics=True)
    overrides += verl_launch_overrides(scale_cfg, run_id, root)
    if s["algorithm"] != "prime":
        return ["python", "-m", "verl.trainer.main_ppo", *overrides, *scale_cfg.get("launch", {}).get("verl_overrides", [])]
    overrides = [o for o in overrides if not o.split("=", 1)[0].startswith(tuple(PRIME_DROPPED))]
    overrides += prime_overrides(s, run_spec.run_model_entry(scale_cfg, run_id), root)
    return ["python", "-m", PRIME_MAIN_MODULE, *overrides]  # the recipe's main, with our reward


def trainer(spec: dict) -> str:
    """The trainer of a run (a key of ``TRAINER_MODULES``): PRIME runs on verl 0.4.1's recipe, every other run on
    verl 0.9.1."""
    return "prime" if spec["algorithm"] == "prime" else "verl"


def bind(command: list[str], results_dir: str) -> list[str]:
    """The recorded command made runnable here: this interpreter, and ``results_dir`` as an absolute path."""
    root = os.path.abspath(results_dir)
    return [sys.executable, *(arg.replace(RESULTS, root) for arg in command[1:])]


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


def saved_step(checkpoints: str | os.PathLike) -> int:
    """The last step verl has finished saving in ``checkpoints`` (its ``latest_checkpointed_iteration.txt``), or 0."""
    marker = os.path.join(checkpoints, "latest_checkpointed_iteration.txt")
    try:
        with open(marker) as fh:
            return int(fh.read().strip() or 0)
    except (FileNotFoundError, ValueError):
        return 0


def run_until_saved(command: list[str], env: dict, checkpoints: str | os.PathLike, step: int, grace_s: float = 120,
                    poll_s: float = 5, logged=lambda: True) -> int:  # fmt: skip
    """Run verl's driver (one node) and, once it has saved ``step``, stop it as a pre-emption does: SIGTERM to its
    process group, SIGKILL after ``grace_s``. Returns the driver's exit code (negative: the signal that ended it); a
    driver that ends by itself first returns its own."""
    proc = subprocess.Popen(command, env=env, start_new_session=True)  # its own group: verl's Ray children too
    try:
        while proc.poll() is None:
            # ``logged``: verl saves a step before it logs it; stopped between the two, the step's metrics are lost.
            if saved_step(checkpoints) >= step and logged():
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


def verl_overrides(spec: dict, covariance_metrics: bool = False) -> list[str]:
    """Hydra overrides for ``python -m verl.trainer.main_ppo`` carrying the same settings.

    With ``covariance_metrics`` the loss mode is the ``<mode>+cov`` wrapper of
    ``verl_plugin`` (same loss, plus the token counts of Section 4.5's claims in
    verl's metrics); the launch overrides load that plugin into verl's workers.
    """
    loss = spec["loss"]
    loss_mode = loss["loss_mode"] + ("+cov" if covariance_metrics else "")
    actor = "actor_rollout_ref.actor"
    adv = "rloo" if spec["algorithm"] == "prime" else spec["algorithm"]
    return [
        f"algorithm.adv_estimator={adv}",
        f"data.train_batch_size={spec['prompts_per_step']}",
        f"data.max_response_length={spec['max_response_length']}",
        f"actor_rollout_ref.rollout.n={spec['rollout_n']}",
        f"actor_rollout_ref.rollout.temperature={spec['temperature']}",
        f"{actor}.optim.lr={spec['lr']}",
        f"{actor}.optim.weight_decay={spec['weight_decay']}",
        f"{actor}.optim.clip_grad={spec['grad_clip']}",  # verl 0.9.1 reads the optimiser's, never actor.grad_clip
        f"{actor}.ppo_mini_batch_size={spec['ppo_mini_batch_size']}",
        f"{actor}.ppo_epochs={spec['ppo_epochs']}",
        f"{actor}.loss_agg_mode={loss['loss_agg_mode']}",
        f"{actor}.clip_ratio_low={loss['clip_ratio_low']}",
        f"{actor}.clip_ratio_high={loss['clip_ratio_high']}",
        f"{actor}.clip_ratio_c={loss['clip_ratio_c']}",  # dual-clip bound of the vanilla PPO loss
        f"{actor}.entropy_coeff={loss['entropy_coeff']}",
        f"{actor}.use_kl_loss={str(loss['kl_loss_coef'] > 0).lower()}",
        f"{actor}.kl_loss_coef={loss['kl_loss_coef']}",
        f"{actor}.kl_loss_type={loss['kl_loss_type']}",
        f"{actor}.policy_loss.loss_mode={loss_mode}",
        f"{actor}.policy_loss.clip_cov_ratio={loss['clip_cov_ratio']}",
        f"{actor}.policy_loss.clip_cov_lb={loss['clip_cov_lb']}",
        f"{actor}.policy_loss.clip_cov_ub={loss['clip_cov_ub']}",
        f"{actor}.policy_loss.kl_cov_ratio={loss['kl_cov_ratio']}",
        f"{actor}.policy_loss.ppo_kl_coef={loss['ppo_kl_coef']}",
        f"algorithm.filter_groups.enable={str(spec['filter_groups']).lower()}",
        # Appended (verl's config has no such key): the bound of the released scripts, which verl_plugin's trainer
        # honours; verl 0.9.1 would only warn about its own key and refill without end (verl_plugin.GenerationBound).
        f"+{GEN_BATCHES_KEY}={spec['max_num_gen_batches']}",
        f"actor_rollout_ref.rollout.val_kwargs.temperature={spec['val_protocol']['temperature']}",
        f"actor_rollout_ref.rollout.val_kwargs.n={spec['val_protocol']['n']}",
        f"actor_rollout_ref.rollout.val_kwargs.do_sample={str(spec['val_protocol']['temperature'] > 0).lower()}",
        f"trainer.total_training_steps={spec['steps']}",
        f"trainer.test_freq={spec['val_every']}",
        *([f"trainer.save_freq={spec['save_every']}"] if "save_every" in spec else []),
        f"data.seed={spec['seed']}",
        # The engine's seed (verl's default is 42 for every run) and each request's (the plugin's agent loop): the
        # same run draws the same rollouts again, whatever else its engine serves at the time.
        f"actor_rollout_ref.rollout.seed={spec['seed']}",
        f"actor_rollout_ref.rollout.agent.default_agent_loop={AGENT_LOOP}",
        *([f"data.val_max_samples={spec['val_max_samples']}"] if "val_max_samples" in spec else []),  # the pilot's
    ]


def verl_launch_overrides(scale_cfg: dict, run_id: str, root: str) -> list[str]:
    """The paper-scale placement of one run: model and data paths, GPUs, memory, checkpoints, resumption.

    Paths follow the workflow's layout under ``root``, which the launch binds to an absolute path
    (``launch.bind``): verl's workers may start in another working directory. Checkpoints stay in the run's directory (the last ``KEEP_CHECKPOINTS``
    kept) and ``resume_mode=auto`` makes a requeued job continue from the last one. The reward is
    loaded by module name (``pkg://``), so verl imports it as part of the package.
    """
    run = scale_cfg["runs"][run_id]
    model = run_spec.run_model_entry(scale_cfg, run_id)
    spec = resolve_run(scale_cfg, run_id)
    actor = "actor_rollout_ref.actor"
    prompt_len = scale_cfg["data"]["max_prompt_length"]
    return [
        f"actor_rollout_ref.model.path={root}/models/{run['model']}",
        f"data.train_files={root}/data/train/{spec['train_data']}.parquet",
        f"data.val_files={root}/data/benchmarks/validation.parquet",
        f"data.max_prompt_length={prompt_len}",
        "data.filter_overlong_prompts=true",
        f"trainer.nnodes={model['nodes']}",
        f"trainer.n_gpus_per_node={model['gpus_per_node']}",
        # Micro-batches packed by tokens, as the authors' scripts do (use_dynamic_bsz=True); the log-prob
        # passes of the rollout and reference follow the actor's settings (verl's oc.select defaults).
        f"{actor}.use_dynamic_bsz=true",
        f"{actor}.ppo_max_token_len_per_gpu={model['max_token_len_per_gpu']}",
        # FSDP2 where the authors' fork defaulted to FSDP1 (tests/fixtures/released_scripts.yaml, implicit): in verl
        # 0.9.1 the same bf16 compute, fp32 gradient reduction and master weights, optimiser, clipping and token
        # packing (so the same tokens per micro-batch for Clip-Cov and KL-Cov), verl's recommended strategy, and
        # the one its worker runs in the CPU tests (FSDP1 refuses CPU parameters: sync_module_states=True).
        f"{actor}.strategy=fsdp2",
        "actor_rollout_ref.ref.strategy=fsdp2",
        "actor_rollout_ref.rollout.name=vllm",
        f"actor_rollout_ref.rollout.tensor_model_parallel_size={model['tensor_parallel']}",
        # Explicit, so verl's vLLM server refuses a model whose context is shorter than prompt + response
        # instead of silently capping the responses at the model's max_position_embeddings.
        f"actor_rollout_ref.rollout.max_model_len={prompt_len + spec['max_response_length']}",
        # Only verl 0.9.1's V1 trainer applies algorithm.filter_groups (its replay buffer); never rely on the default.
        "trainer.use_v1=true",
        # The measures of Eq. 5, Eq. 10 and Eq. 8-9 on each whole update batch (verl_plugin.PaperMeasuresTrainer).
        f"trainer.v1.trainer_mode={TRAINER_MODE}",
        "algorithm.filter_groups.metric=reward",
        "trainer.project_name=entropy-mechanism",
        f"trainer.experiment_name={run_id}",
        # Hydra's record of each launch (its composed config and overrides) in the run's directory: by default Hydra
        # writes outputs/<date>/<time>/ under the job's working directory, the checkout's root.
        f"hydra.run.dir={root}/runs/{run_id}/hydra",
        f"trainer.default_local_dir={root}/runs/{run_id}/checkpoints",
        f"trainer.max_actor_ckpt_to_keep={KEEP_CHECKPOINTS}",
        "trainer.resume_mode=auto",
        "trainer.val_before_train=true",
        f"actor_rollout_ref.model.external_lib={PLUGIN_MODULE}",
        f"reward.custom_reward_function.path=pkg://{REWARD_MODULE}",
        "reward.custom_reward_function.name=compute_score",
        # The file log (its path from VERL_FILE_LOGGER_PATH) is what verl_metrics translates.
        "trainer.logger=[console,file]",
        # The model's recorded prompt format, the one evaluation and power sampling use too
        # (none for a tokenizer that carries its own template).
        *filter(None, [prompt_format.verl_override(model.get("chat_template", "tokenizer"))]),
    ]
