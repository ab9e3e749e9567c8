"""What the GPU pilot's jobs did, read from their logs and verl's file logs: each stage passed or failed, its wall
time, GPU memory and throughput, the training's attempts (the resume); and what that makes of the budget: the MFUs
the pilot measured (``measured_budget``) and the study's GPU-hours under a budget (``reestimate``). The pilot's report
(``pilot_report``) renders them. It reads text files only: no torch, verl or vLLM.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pandas as pd

from ...core.scale import Scale
from .. import verl_metrics
from . import architectures, decode
from . import budget as gpu_budget
from .architectures import Architecture

# A line of ``core.logs``: "%(asctime)s %(name)s %(levelname)s %(message)s". Lines that do not match
# (vLLM's own log format, a traceback, sys.exit's message) are kept for the tail but carry no time.
LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (\S+) ([A-Z]+) (.*)$")
ASCTIME = "%Y-%m-%d %H:%M:%S,%f"
# The vLLM jobs' line: "throughput: " + JSON {generated_tokens, seconds, gpu_memory_used_gb, gpu_memory_total_gb}.
THROUGHPUT = "throughput: "
TAIL_LINES = 20

# verl 0.9.1's metric names (its V1 trainer, trainer/ppo/v1/trainer_base.py, as the paper runs use it):
STEP_TIME = "perf/time_per_step"  # metric_utils.compute_throughout_metrics: every training step, no validation record
TOKENS = "perf/total_num_tokens"  # compute_throughout_metrics: prompt + response tokens of the step's batch
PER_GPU = "perf/throughput"  # compute_throughout_metrics: TOKENS / (step time × GPUs)
# engine_workers.TrainingWorker._postprocess_output logs perf/max_memory_*_gb; the trainer's _update_actor
# prefixes the worker's metrics with "actor/" (py_functional.rename_dict), so they reach the log as these.
MEMORY = ("actor/perf/max_memory_allocated_gb", "actor/perf/max_memory_reserved_gb")
MFU = "perf/mfu/actor"  # trainer_base._update_actor: the update's FLOPs (verl's FlopsCounter) over verl's device peak
GEN, OLD_LOG_PROB, UPDATE = "timing_s/gen", "timing_s/old_log_prob", "timing_s/update_actor"  # compute_timing_metrics
RESPONSE, PROMPT = "response_length/mean", "prompt_length/mean"  # compute_data_metrics, over the update batch
GEN_BATCHES = "paper/gen_batches"  # verl_plugin.GenerationBound: the step's prompts answered over its batch's


@dataclass(frozen=True)
class Stage:
    name: str  # the rule, e.g. "train_verl"
    job: str  # the run or method it ran
    log: str | Path  # the job's log (core.logs)
    outputs: list  # the stage passed iff every one exists
    gpus: int
    verl_logs_dir: str | Path | None = None  # a training stage: the checkpoints dir holding verl_log.<attempt>.jsonl


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _has(record: dict, *keys: str) -> bool:
    """Every key logged as a number: verl's file logger (orjson) writes a NaN as null."""
    return all(isinstance(record.get(k), (int, float)) and math.isfinite(record[k]) for k in keys)


def measure(stage: Stage, responses_per_step: int | None = None, ppo_epochs: int | None = None) -> dict:
    """What one stage did. A training stage also needs its run's responses per step (prompts × n: verl logs
    only their mean length) and PPO epochs (for an MFU from the timings when verl logs none)."""
    log = Path(stage.log)
    lines = log.read_text(errors="replace").splitlines() if log.is_file() else []
    parsed = [m for m in map(LOG_LINE.match, lines) if m]
    stamps = [datetime.strptime(m[1], ASCTIME) for m in parsed]
    missing = [str(p) for p in stage.outputs if not Path(p).exists()]
    out = {
        "stage": stage.name,
        "job": stage.job,
        "gpus": stage.gpus,
        "log": str(log),
        "passed": not missing,
        "missing": missing,
        "wall_s": (max(stamps) - min(stamps)).total_seconds() if stamps else None,
        "tail": None if not missing else lines[-TAIL_LINES:] or [f"(no log at {log})"],
    }
    records = [json.loads(m[4][len(THROUGHPUT) :]) for m in parsed if m[4].startswith(THROUGHPUT)]
    if records:  # a vLLM job; several lines (one per engine run) pool into one rate
        seconds = sum(r["seconds"] for r in records)
        out["generated_tokens_per_s"] = sum(r["generated_tokens"] for r in records) / seconds if seconds else None
        for key in ("gpu_memory_used_gb", "gpu_memory_total_gb"):
            out[key] = max((r[key] for r in records if r[key] is not None), default=None)
    if stage.verl_logs_dir is not None:
        out.update(_training(Path(stage.verl_logs_dir), responses_per_step, ppo_epochs))
    return out


def _training(directory: Path, responses_per_step: int | None, ppo_epochs: int | None) -> dict:
    attempts = [
        (p.name, [r for r in verl_metrics.read_jsonl(p) if STEP_TIME in r["data"]])
        for p in verl_metrics.attempt_logs(directory)
        if p.suffix == ".jsonl"
    ]
    steps = [r["data"] for _, records in attempts for r in records]
    out = {
        "attempts": [{"log": name, "steps": [int(r["step"]) for r in records]} for name, records in attempts],
        "steps": len(steps),
        "responses_per_step": responses_per_step,
        "ppo_epochs": ppo_epochs,
    }
    if not steps:
        return out
    # Every executed step counts, a step repeated after a resume included: it was real work. Rates are
    # pooled (sums over sums), so each step weighs by its work; the first steps' warm-up stays in (errs slow).
    worked = [d for d in steps if _has(d, TOKENS, PER_GPU) and d[PER_GPU] > 0]
    timed = [d for d in steps if _has(d, OLD_LOG_PROB, UPDATE, TOKENS)]
    mfu = [float(d[MFU]) for d in steps if _has(d, MFU) and d[MFU] > 0]  # 0: a GPU verl's FlopsCounter does not know
    out.update(
        peak_gpu_memory_gb=max((float(d[k]) for d in steps for k in MEMORY if _has(d, k)), default=None),
        # Σ tokens / Σ (tokens / per-GPU rate) = Σ tokens / Σ (step time × GPUs), from verl's keys alone
        train_tokens_per_s_per_gpu=sum(d[TOKENS] for d in worked) / sum(d[TOKENS] / d[PER_GPU] for d in worked)
        if worked
        else None,
        mean_response_length=_mean([float(d[RESPONSE]) for d in steps if _has(d, RESPONSE)]),
        mean_prompt_length=_mean([float(d[PROMPT]) for d in steps if _has(d, PROMPT)]),
        mfu_actor=_mean(mfu),
        mfu_actor_steps=len(mfu),
        gen_batches=_mean([float(d[GEN_BATCHES]) for d in steps if _has(d, GEN_BATCHES)]),
        train_tokens=sum(float(d[TOKENS]) for d in timed),
        update_s=sum(d[OLD_LOG_PROB] + d[UPDATE] for d in timed),
    )
    rollouts = [d for d in steps if _has(d, RESPONSE, GEN)]
    if responses_per_step and rollouts:
        # Kept responses only: groups the DAPO filter drops were generated too but are not in response_length, so
        # this is the effective rate per kept token, the rate the budget's formula (kept responses) needs.
        out["generated_tokens"] = responses_per_step * sum(float(d[RESPONSE]) for d in rollouts)
        out["rollout_tokens_per_s"] = out["generated_tokens"] / sum(float(d[GEN]) for d in rollouts)
    return out


def measured_budget(
    budget: dict, train_measure: dict, arch: Architecture, gpus: int, timed: dict, tensor_parallel: int = 1
) -> tuple[dict, dict]:
    """The budget with rollout and train MFU measured by the pilot's training (where it logged them), and for
    every key whether its value is measured or assumed, and why. The MFUs are fractions of the peak of the GPU the
    pilot ran on (``timed``: its ``gpu`` type and ``gpu_peak_tflops``, which the returned budget names), of FLOPs
    counted by its architecture (``arch``), so they reproduce the pilot's own time."""
    peak = gpus * timed["gpu_peak_tflops"] * 1e12
    m, steps = train_measure, train_measure.get("steps", 0)
    out = {**budget, "gpu": timed["gpu"], "gpu_peak_tflops": timed["gpu_peak_tflops"]}
    out.pop("gpu_conversion", None)
    why = {key: ("assumed", "as configured (config.yaml paper.budget)") for key in out}
    why["gpu"] = ("measured" if timed.get("known") else "assumed", timed["why"])
    why["gpu_peak_tflops"] = (
        "assumed",
        f"{timed['gpu']}'s dense bf16 peak (verl's table); every MFU here is a fraction of it",
    )
    why["walltime_margin"] = ("assumed", "a safety factor on the SLURM wall time, not a measurement")
    shown = f" ({m['mean_response_length']:.0f} tokens)" if m.get("mean_response_length") else ""
    why["mean_response_tokens"] = (
        "assumed",
        (f"a pilot of a few steps shows the base model's lengths{shown}, not a trained run's"),
    )
    if m.get("mean_prompt_length"):
        why["mean_prompt_tokens"] = (
            "assumed",
            (
                f"the pilot's prompts averaged {m['mean_prompt_length']:.0f} tokens; "
                "kept as configured so the two estimates differ only in MFU"
            ),
        )
    prompt, response = budget["mean_prompt_tokens"], budget["mean_response_tokens"]
    why["rollout_mfu"] = ("assumed", "the pilot's training logged no rollout")
    if m.get("rollout_tokens_per_s"):
        engine = decode.ROLLOUT_ENGINE.at(tensor_parallel)
        roof = decode.roofline(arch, prompt, response, engine, timed["gpu"], timed["gpu_peak_tflops"])
        out["rollout_mfu"] = roof.seconds * timed["gpu_peak_tflops"] * 1e12 * m["rollout_tokens_per_s"] / peak
        why["rollout_mfu"] = (
            "measured",
            (
                f"the fraction of its decoding roofline (paper.cost.decode, {roof.bound}-bound at TP {tensor_parallel}) "
                f"achieved: generated tokens/s / GPUs × a token's roofline seconds, response_length/mean × "
                f"{m['responses_per_step']} responses over timing_s/gen, {steps} steps"
            ),
        )
    if m.get("gen_batches"):
        out["gen_batches"] = {
            **budget["gen_batches"],
            "expected": max(1.0, m["gen_batches"]),
            "source": f"measured: paper/gen_batches, mean of {steps} pilot steps",
        }
        why["gen_batches"] = ("measured", out["gen_batches"]["source"])
    why["train_mfu"] = ("assumed", "the pilot's training logged no update")
    if m.get("mfu_actor"):
        out["train_mfu"] = m["mfu_actor"]
        why["train_mfu"] = (
            "measured",
            (
                f"verl's perf/mfu/actor (update FLOPs by verl's count, the one here, over verl's peak for the device), "
                f"mean of {m['mfu_actor_steps']} pilot steps"
            ),
        )
    elif m.get("update_s") and m.get("ppo_epochs"):
        # the FLOPs budget.train_gpu_hours charges at train_mfu: a log-prob pass and the PPO epochs
        flops = architectures.update_flops(arch, prompt, response, m["ppo_epochs"])
        out["train_mfu"] = flops * m["train_tokens"] / (m["update_s"] * peak)
        why["train_mfu"] = (
            "measured",
            (
                f"the architecture's FLOPs a token (a log-prob pass and the PPO epochs)·perf/total_num_tokens over "
                f"timing_s/old_log_prob + timing_s/update_actor, {steps} steps (verl logged no perf/mfu/actor)"
            ),
        )
    sources = {
        key: {"source": src, "reason": reason, "configured": budget[key], "value": out[key]}
        for key, (src, reason) in why.items()
    }
    return out, sources


def reestimate(scale: Scale, budget: dict) -> pd.DataFrame:
    """The study's GPU-hours by model: training split into its rollout terms (generation, refills and validation, at
    the rollout's efficiency) and its update terms (the passes over trained tokens, at train_mfu), and evaluation if
    every run is evaluated. The pilot's own runs are not the study's."""
    val_questions = sum(b.size for b in scale.benchmarks.values())
    rows = []
    for run_id in sorted(r for r in scale.runs if not r.startswith("pilot-")):
        run, placement = scale.runs[run_id], scale.placement(run_id)
        arch = architectures.of_model(scale, run.model)
        terms = gpu_budget.train_time(run, placement, arch, budget, val_questions).terms()
        rows.append(
            {
                "model": run.model,
                "params_b": scale.models[run.model].params_b,
                "runs": 1,
                "gpus": placement.gpus,
                "rollout_gpu_hours": terms["rollout"] + terms["refills"] + terms["validation"],
                "update_gpu_hours": terms["update"],
                "train_gpu_hours": sum(terms.values()),
                "eval_gpu_hours": gpu_budget.eval_gpu_hours(scale.benchmarks, placement, arch, budget),
            }
        )
    frame = pd.DataFrame(rows).groupby(["model", "params_b", "gpus"], as_index=False).sum()
    return frame.sort_values(["params_b", "model"], ignore_index=True)
