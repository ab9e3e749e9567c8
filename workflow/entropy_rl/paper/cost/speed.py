"""The pilot's speed by model size (config paper.pilot.speed): for each size, the update (``update_speed``) and the
rollout (``rollout_speed``) each timed in a process of its own, on random weights of the size's shape; then the
seconds a token costs one GPU, the points ``speed_law`` fits (``speed_report``: the laws, the MFU by size, the report).

The rule ``pilot_speed`` runs it on the pilot's GPU; ``benchmarks/gpu_update.py`` runs the same code by hand, on a GPU
or, with tiny shapes, on the tests' CPU platform.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from ...core.scale import Scale
from . import architectures, decode, gpus
from .architectures import Architecture


def specs(scale: Scale, root: str, tokenizer: str, work: str | Path) -> list[dict]:
    """One spec per size of ``pilot.speed``, in its order: the shape (as ``architectures.record`` records it), the run
    whose command builds the worker and the scale's config it is resolved from, the budget's mean lengths and the
    pilot's batch."""
    speed, budget = scale.config["pilot"]["speed"], scale.config["budget"]
    missing = [m for m in speed["sizes"] if m not in scale.models]
    if missing:
        raise KeyError(
            f"pilot.speed: sizes {missing} are no models of the config: the shape of random weights is unknown"
        )
    return [
        {
            "model": model,
            "params_b": scale.models[model].params_b,
            "family": scale.models[model].shape.family,
            "arch": architectures.record(scale.models[model].shape),
            "run": speed["run"],
            "root": str(root),
            "tokenizer": str(tokenizer),
            "work": str(Path(work) / model),
            "steps": speed["steps"],
            "prompts": speed["prompts"],
            "mini_batch": speed["mini_batch"],
            "sequences": speed["rollout_sequences"],
            "prompt_tokens": budget["mean_prompt_tokens"],
            "response_tokens": budget["mean_response_tokens"],
            "scale_cfg": dict(scale.config),  # JSON, as the probe reads it (update_speed.run_config)
        }
        for model in speed["sizes"]
    ]


def _probe(module: str, spec: dict, python: str, env: dict | None, log) -> dict:
    """``python -m entropy_rl.paper.cost.<module>`` on one size: its JSON, or what stopped it."""
    work = Path(spec["work"])
    work.mkdir(parents=True, exist_ok=True)
    spec_path, out_path = work / f"{module}.spec.json", work / f"{module}.json"
    spec_path.write_text(json.dumps(spec))
    out_path.unlink(missing_ok=True)
    started = time.perf_counter()
    proc = subprocess.run(
        [python, "-m", f"entropy_rl.paper.cost.{module}", str(spec_path), str(out_path)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        check=False,  # a size that fails is recorded, and the next one still runs
    )
    if proc.returncode != 0 or not out_path.exists():
        return {"model": spec["model"], "failed": f"exit {proc.returncode} after {time.perf_counter() - started:.0f} s"}
    return json.loads(out_path.read_text())


def measure(
    scale: Scale,
    root: str,
    tokenizer: str,
    work: str | Path,
    python: str = sys.executable,
    env: dict | None = None,
    log=None,
    rollout: bool = True,
) -> dict:
    """Every size's update and (``rollout``) rollout, smallest first; a size that fails or is skipped is recorded
    with its reason and the next one still runs. ``log`` takes the probes' own output."""
    sizes = []
    for spec in specs(scale, root, tokenizer, work):
        entry = {
            "model": spec["model"],
            "params_b": spec["params_b"],
            "arch": spec["arch"],
            "update": _probe("update_speed", spec, python, env, log),
        }
        if rollout:
            entry["rollout"] = _probe("rollout_speed", spec, python, env, log)
        sizes.append(entry)
    speed, budget = scale.config["pilot"]["speed"], scale.config["budget"]
    return {
        "run": speed["run"],
        "prompt_tokens": budget["mean_prompt_tokens"],
        "response_tokens": budget["mean_response_tokens"],
        "sizes": sizes,
    }


def update_rate(update: dict, arch: Architecture | None = None) -> dict | None:
    """A size's update over its timed steps (the warm-up left out): tokens a second, the seconds a token costs, the
    FLOPs a token of its architecture (``arch``) at the batch's own lengths, verl's MFUs and peak memory; None for a
    size not timed."""
    timed = [s for s in update.get("steps", []) if not s["warmup"]]
    if not timed:
        return None
    tokens = sum(s["tokens"] for s in timed)
    seconds = sum(s["log_prob_s"] + s["update_s"] for s in timed)
    mean = lambda key: (sum(v) / len(v)) if (v := [s[key] for s in timed if s[key] is not None]) else None
    out = {
        "tokens_per_s": tokens / seconds,
        "seconds_per_token": seconds / tokens,
        "mfu_update": mean("mfu_update"),
        "mfu_log_prob": mean("mfu_log_prob"),
        "peak_memory_gb": update.get("peak_memory_gb"),
        "attention": update.get("attention"),
        "device_name": update.get("device_name"),
    }
    if arch is not None:
        # Σs²/Σs: the sequence length causal attention costs as, over the batch's spread of lengths
        sequence = sum(s["squares"] for s in timed) / tokens
        out["flops"] = arch.forward(sequence) + update.get("ppo_epochs", 1) * arch.train(sequence)
        if update.get("peak_tflops"):
            out["mfu"] = out["flops"] / (out["seconds_per_token"] * update["peak_tflops"] * 1e12)
    return out


def probe_engine(rollout: dict) -> decode.Engine:
    """The engine the rollout probe ran: verl's settings from the run's command, at its tensor-parallel size."""
    engine = rollout["engine"]
    return decode.Engine(engine["gpu_memory_utilization"], engine["max_num_seqs"], rollout.get("tensor_parallel", 1))


def rollout_rate(rollout: dict, arch: Architecture) -> dict | None:
    """A size's rollout: generated tokens a second, the FLOPs a generated token is charged as by its decoding roofline
    in the probe's engine on the probe's GPU (``decode.roofline_flops``), and the fraction of that roofline achieved.
    A best case: one full wave of fixed-length answers (``BEST_CASE``)."""
    if not rollout.get("tokens_per_s"):
        return None
    prompt, response = rollout["prompt_tokens"], rollout["response_tokens"]
    flops = architectures.rollout_flops(arch, prompt, response)
    gpu = gpus.gpu_type(rollout.get("device_name") or "")
    if rollout.get("peak_tflops") and gpu:
        flops = decode.roofline_flops(arch, prompt, response, probe_engine(rollout), gpu, rollout["peak_tflops"])
    out = {"seconds_per_token": 1 / rollout["tokens_per_s"], "flops": flops}
    if rollout.get("peak_tflops"):
        out["mfu"] = flops * rollout["tokens_per_s"] / (rollout["peak_tflops"] * 1e12)
    return out


# What the rollout probe leaves out, so that every rollout efficiency from it is at most a run's.
BEST_CASE = (
    "a best case: one wave of answers all of the budget's mean length (ignore_eos), as many as the engine "
    "holds, at tensor-parallel size 1; a run's answers spread to their cap, its batch drains at the end, and "
    "it decodes at TP 2-8"
)


def timed_on(result: dict, kind: str) -> dict | None:
    """The GPU a kind was timed on (the first size that ran: every size runs on the job's one GPU), its peak and the
    kernels timed."""
    for size in result["sizes"]:
        probe = size.get(kind, {})
        if probe.get("device_name") and ("steps" in probe or "tokens_per_s" in probe):
            path, bound = (
                (probe.get("path", ""), probe.get("lower_bound", False))
                if kind == "update"
                else (f"vLLM's engine at tensor-parallel size {probe.get('tensor_parallel', 1)}; {BEST_CASE}", False)
            )
            return {
                "gpu": probe["device_name"],
                "peak_tflops": probe.get("peak_tflops"),
                "path": path,
                "lower_bound": bound,
            }
    return None


def reason(entry: dict) -> str | None:
    """Why a probe gave no measurement (skipped or failed), or None."""
    return entry.get("skipped") or (f"failed: {entry['failed']}" if "failed" in entry else None)


def table(result: dict) -> list[list[str]]:
    """One row per size: what the benchmark prints and the pilot's report shows. MFUs are of the timed GPU's own peak
    (verl's table); "≥" marks a speed timed on a slower path than the run's (a lower bound)."""
    num = lambda v, spec: "–" if v is None else format(v, spec)
    rows = []
    for size in result["sizes"]:
        update, rollout = size["update"], size.get("rollout", {})
        arch = architectures.recorded(size["arch"]) if "arch" in size else None
        rate, roll = update_rate(update, arch), rollout_rate(rollout, arch) if arch else None
        bound = "≥ " if update.get("lower_bound") else ""
        rows.append(
            [
                size["model"],
                f"{update['params'] / 1e9:.3g}" if "params" in update else f"{size['params_b']:g}",
                update.get("device_name") or "–",
                update.get("attention") or "–",
                bound + num(rate["tokens_per_s"], ",.0f") if rate else reason(update) or "–",
                num(rate.get("flops", None) and rate["flops"] / 1e9, ".3g") if rate else "–",
                bound + num(rate.get("mfu"), ".3f") if rate else "–",
                num(rate["mfu_update"], ".3f") if rate else "–",
                num(rate["mfu_log_prob"], ".3f") if rate else "–",
                num(rate["peak_memory_gb"], ".1f") if rate else "–",
                num(rollout.get("tokens_per_s"), ",.0f") if "tokens_per_s" in rollout else reason(rollout) or "–",
                num(roll.get("mfu"), ".3f") if roll else "–",
            ]
        )
    return rows


HEADER = [
    "model",
    "params (B, the shape's)",
    "GPU",
    "attention",
    "update tokens/s (log-prob + update)",
    "update GFLOPs a token",
    "update MFU",
    "verl MFU, update",
    "verl MFU, log-prob",
    "peak GPU memory (GiB)",
    "rollout generated tokens/s (a best case)",
    "rollout efficiency (of its roofline)",
]
