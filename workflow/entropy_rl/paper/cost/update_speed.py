"""The update's speed at one model size: verl's own actor worker, built from a run's composed command exactly as the
launch composes it, timed over a warm-up step and a few steps of old log-probs and update on one device.

Run as its own process per size (``python -m entropy_rl.paper.cost.update_speed SPEC OUT``), so that each size starts with
an empty device and verl picks its platform afresh: on a GPU verl's CUDA platform and NCCL, on the CPU platform
(paper.verl.cpu_platform, loaded by verl's external-module hook) gloo. Nothing else differs between the two. The worker
runs at world size 1; the batch is synthetic (random token ids of the budget's mean lengths, random rewards, GRPO's group
advantages), which costs what a rollout's batch of the same lengths costs. The weights are random in the size's shape
(``shapes``). What differs from the run's command is ``overrides``, each with its reason.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import socket
import sys
import time
from pathlib import Path

# A size is timed when its training state (shapes.state_bytes) takes at most this share of the device's memory.
FITS = 0.8


# Without flash-attn, sdpa over a packed micro-batch is a dense mask over every token of the micro-batch, quadratic in
# the whole micro-batch: no kernel the study runs. sdpa over padded sequences is the closest fast path (each sequence
# attends only to itself), slower than the run's flash-attn with remove-padding, so a number from it is a lower bound.
FALLBACK = "flash-attn missing; the run uses flash_attention_2 with remove-padding: a lower bound on its speed"


def overrides(
    model_dir: str, prompts: int, mini_batch: int, flash_attn: bool, command: list[str]
) -> list[tuple[str, str]]:
    """Every way the timed worker's config differs from the run's ``command``: (override, reason)."""
    actor = "actor_rollout_ref.actor"
    out = [
        (f"actor_rollout_ref.model.path={model_dir}", "random weights in the size's shape (no download)"),
        ("trainer.nnodes=1", "one GPU: the update's speed per GPU, without the communication between GPUs"),
        ("trainer.n_gpus_per_node=1", "one GPU, as above"),
        (f"data.train_batch_size={prompts}", "a few prompts a step, so a step takes seconds, not the run's minutes"),
        (f"{actor}.ppo_mini_batch_size={mini_batch}", "as many mini-batches a step as the prompts allow"),
    ]
    if not flash_attn and not any("override_config.attn_implementation=" in o for o in command):
        out.append(
            (
                "+actor_rollout_ref.model.override_config.attn_implementation=sdpa",
                "flash-attn does not import here; verl's default attention is flash_attention_2",
            )
        )
        out.append(
            (
                "actor_rollout_ref.model.use_remove_padding=false",
                "sdpa over a packed micro-batch would be a dense mask over all of it: padded sequences instead",
            )
        )
    return out


def attention_path(cfg, extra: list[tuple[str, str]]) -> tuple[str, bool]:
    """The kernels the worker ran, in words, and whether they are slower than the run's own (the fallback above)."""
    model = cfg.actor_rollout_ref.model
    attention = model.get("override_config", {}).get("attn_implementation") or "flash_attention_2"
    packing = "packed micro-batches (remove-padding)" if model.use_remove_padding else "padded sequences"
    fallback = any(o.startswith("actor_rollout_ref.model.use_remove_padding=false") for o, _ in extra)
    return f"{attention} over {packing}, " + (FALLBACK if fallback else "the run's own command"), fallback


def flash_attn_available() -> bool:
    try:
        import flash_attn  # noqa: F401
    except ImportError:
        return False
    return True


def compose(command: list[str], extra: list[str]):
    """The run's ``main_ppo`` config from its command (``reward_launch.verl_command``) as ``main_ppo`` composes it
    (``verl.checks.compose``), with ``extra`` appended, checked by verl's ``validate_config`` and resolved."""
    from omegaconf import OmegaConf
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    from ..verl import checks

    cfg = checks.compose(command[3:] + extra)
    validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    OmegaConf.resolve(cfg)
    return cfg


def run_config(spec: dict, model_dir: str | Path):
    """The run's composed config for one GPU and the model in ``model_dir``, and the overrides with their reasons."""
    from ...core.scale import build
    from .. import reward_launch

    scale = build("paper", spec["scale_cfg"])  # the spec's JSON: the scale's config, resolved here once
    command = reward_launch.verl_command(scale, spec["run"], spec["root"])  # as train_verl launches the run
    extra = overrides(str(model_dir), spec["prompts"], spec["mini_batch"], flash_attn_available(), command)
    return compose(command, [o for o, _ in extra]), extra


def synthetic_batch(
    prompts: int, n: int, prompt_tokens: int, response_tokens: int, max_response: int, vocab: int, seed: int
) -> list[dict]:
    """``prompts`` groups of ``n`` responses as verl's agent loop writes them: prompts of ``prompt_tokens`` tokens,
    responses of lengths uniform over ±50% of ``response_tokens`` (at most ``max_response``), random token ids, a 0/1
    reward on the last token and GRPO's advantage (the group-normalised reward) on every response token."""
    rng = random.Random(seed)
    samples = []
    for p in range(prompts):
        prompt = [rng.randrange(vocab) for _ in range(prompt_tokens)]
        rewards = [float(rng.random() < 0.5) for _ in range(n)]
        mean = sum(rewards) / n
        std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / max(n - 1, 1))
        for k in range(n):
            length = min(max_response, max(1, round(response_tokens * rng.uniform(0.5, 1.5))))
            response = [rng.randrange(vocab) for _ in range(length)]
            scores = [0.0] * length
            scores[-1] = rewards[k]
            advantage = (rewards[k] - mean) / (std + 1e-6)
            ids, mask = prompt + response, [1] * length
            samples.append(
                {
                    "prompts": prompt,
                    "responses": response,
                    "response_mask": mask,
                    "loss_mask": mask,
                    "input_ids": ids,
                    "position_ids": list(range(len(ids))),
                    "rm_scores": scores,
                    "advantages": [advantage] * length,
                    "returns": [advantage] * length,
                    "uid": f"prompt{p}",
                    "session": k,
                }
            )
    return samples


def _metric(metrics: dict, key: str) -> float | None:
    """A metric's mean over the mini-batches; None where missing, or 0 (verl's MFU on a device whose peak it does
    not know: the CPU platform)."""
    value = metrics.get(key)
    if isinstance(value, (list, tuple)):
        value = [v for v in value if isinstance(v, (int, float))]
        value = sum(value) / len(value) if value else None
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) and value != 0 else None


def time_steps(worker, cfg, samples: list[dict], steps: int, synchronize) -> list[dict]:
    """One warm-up step, then ``steps`` timed ones, each the trainer's old-log-prob pass then ``update_actor``."""
    from verl.workers.utils.padding import response_from_nested

    from ..verl import worker as verl_worker

    tokens = sum(len(s["input_ids"]) for s in samples)
    squares = sum(len(s["input_ids"]) ** 2 for s in samples)  # Σs²: causal attention's FLOPs (architectures)
    # global_token_num: the trainer passes none to this pass, so verl logs no MFU for it; given, verl's own
    # FlopsCounter reports the pass's MFU (forward only), which computes nothing else differently.
    info = {**verl_worker.log_prob_info(cfg), "global_token_num": [len(s["input_ids"]) for s in samples]}
    rollout = [{k: v for k, v in s.items() if k not in ("advantages", "returns")} for s in samples]
    records = []
    for step in range(steps + 1):
        data = verl_worker.tensordict(rollout, info)  # as TransferQueue hands it over: not the worker's time
        synchronize()
        started = time.perf_counter()
        out = worker.compute_log_prob(data)
        old = response_from_nested(out["log_probs"], data["response_mask"])
        synchronize()
        log_prob_s = time.perf_counter() - started
        batch = verl_worker.tensordict(
            [{**s, "old_log_probs": row.tolist()} for s, row in zip(samples, old.unbind())],
            verl_worker.update_info(cfg),
        )
        started = time.perf_counter()
        metrics = worker.update_actor(batch)["metrics"]
        synchronize()
        update_s = time.perf_counter() - started
        lp_metrics = dict(out["metrics"]) if "metrics" in out else {}
        records.append(
            {
                "step": step,
                "warmup": step == 0,
                "tokens": tokens,
                "squares": squares,
                "log_prob_s": log_prob_s,
                "update_s": update_s,
                "mfu_update": _metric(metrics, "mfu"),
                "mfu_log_prob": _metric(lp_metrics, "mfu"),
                "peak_memory_gb": _metric(metrics, "perf/max_memory_allocated_gb"),
            }
        )
    return records


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(spec_path: str, out_path: str) -> None:
    """One size, from a spec the pilot writes (``speed.specs``); its measurement goes to ``out_path``."""
    spec = json.loads(Path(spec_path).read_text())
    os.environ.update(
        RANK="0",
        WORLD_SIZE="1",
        LOCAL_RANK="0",
        LOCAL_WORLD_SIZE="1",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(_free_port()),
    )
    import torch
    import torch.distributed as dist
    from verl.plugin.platform import get_platform
    from verl.utils.flops_counter import get_device_flops

    from ..verl import worker as verl_worker
    from . import gpus, shapes

    device = get_platform().device_name
    cuda = device == "cuda"
    arch, out = spec["arch"], Path(out_path)
    memory_gb = torch.cuda.get_device_properties(0).total_memory / 2**30 if cuda else None
    need_gb = shapes.state_bytes(spec["family"], arch) / 2**30
    if memory_gb is not None and need_gb > FITS * memory_gb:
        out.write_text(
            json.dumps(
                {
                    "model": spec["model"],
                    "skipped": (
                        f"weights, gradients and AdamW state need {need_gb:.0f} GiB, more than {FITS:.0%} of the GPU's"
                        f" {memory_gb:.0f} GiB (the rest is the activations'); not run, and not offloaded"
                    ),
                }
            )
            + "\n"
        )
        return
    # verl's own backend string on a GPU (its CPU collectives over gloo, the GPU's over NCCL); gloo on the CPU platform
    dist.init_process_group("cpu:gloo,cuda:nccl" if cuda else "gloo")
    model_dir = shapes.write_random_model(
        Path(spec["work"]) / "model", spec["family"], arch, spec["tokenizer"], device="cuda" if cuda else "cpu"
    )
    if cuda:  # the random model was made on the GPU: its memory is not the worker's
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    cfg, extra = run_config(spec, model_dir)
    synchronize = torch.cuda.synchronize if cuda else (lambda: None)
    started = time.perf_counter()
    worker = verl_worker.build(cfg)
    build_s = time.perf_counter() - started
    samples = synthetic_batch(
        spec["prompts"],
        cfg.actor_rollout_ref.rollout.n,
        spec["prompt_tokens"],
        spec["response_tokens"],
        cfg.data.max_response_length,
        arch["vocab_size"],
        seed=0,
    )
    records = time_steps(worker, cfg, samples, spec["steps"], synchronize)
    path, lower_bound = attention_path(cfg, extra)
    device_name = torch.cuda.get_device_name() if cuda else "CPU"
    peak = get_device_flops("T")  # verl's table: the peak its own MFU divides by (inf for a device it does not match)
    if not math.isfinite(peak):  # the tests' CPU platform: the same table's entry by the device's name
        peak = gpus.PEAK_TFLOPS.get(gpus.gpu_type(device_name))
    result = {
        "model": spec["model"],
        "params": shapes.params(spec["family"], arch),
        "device": device,
        "device_name": device_name,
        "peak_tflops": peak,
        "device_memory_gb": memory_gb,
        "peak_memory_gb": torch.cuda.max_memory_allocated() / 2**30 if cuda else None,
        "attention": cfg.actor_rollout_ref.model.get("override_config", {}).get("attn_implementation")
        or "flash_attention_2",
        "path": path,
        "lower_bound": lower_bound,
        "build_s": build_s,
        "ppo_epochs": cfg.actor_rollout_ref.actor.ppo_epochs,
        "token_budget": cfg.actor_rollout_ref.actor.ppo_max_token_len_per_gpu,
        "loss_mode": cfg.actor_rollout_ref.actor.policy_loss.loss_mode,
        "overrides": [{"override": o, "reason": r} for o, r in extra],
        "steps": records,
    }
    out.write_text(json.dumps(result, indent=2) + "\n")
    dist.destroy_process_group()
    shutil.rmtree(model_dir)  # gigabytes of random weights, read by nothing else


if __name__ == "__main__":
    main(*sys.argv[1:])
