"""The GPU pilot's report: every GPU rule once on the smallest model, and what it says about the study's cost.

The pilot runs ``train_verl`` (interrupted once and resumed), ``evaluate_vllm`` and ``power_sample_vllm``.
From their job logs and verl's file logs this module reports which stages passed, their wall time, GPU
memory and throughput, the resume, and the study's GPU-hours re-estimated with the MFUs the pilot
measured in place of the configured ones (``budget``). It reads text files only: no torch, verl or vLLM.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

import pandas as pd

from ..core import atomic
from ..core import spec as run_spec
from . import budget as gpu_budget
from . import speed_report
from . import verl_metrics

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

ESTIMATE_NOTE = (
    "Under the configured budget (assumed) and under the one with the pilot's MFUs; each column is marked by the "
    "source of the MFU it rests on. Both assume the configured mean prompt and response lengths; evaluation counts "
    "every run evaluated once."
)
SCALING_RULE = (
    "The pilot's MFU at 0.5B is held for every model size: small models reach a lower MFU than large ones on the "
    "same GPU, so the estimate errs high (communication between GPUs, which a one-GPU pilot does not exercise, "
    "is not in it)."
)


@dataclass(frozen=True)
class Stage:
    name: str  # the rule, e.g. "train_verl"
    job: str  # the run or method it ran
    log: str | Path  # the job's log (core.logs)
    outputs: list  # the stage passed iff every one exists
    gpus: int
    verl_logs_dir: str | Path | None = None  # a training stage: the checkpoints dir holding verl_log.<attempt>.jsonl


@dataclass(frozen=True)
class Link:
    """A file the report links to (a stage's log), shown as its path; linked relative to the report's directory, so a
    reader clicks through from the report wherever the results directory lies."""

    path: str

    def href(self, report_dir: str | Path) -> str:
        return quote(Path(os.path.relpath(self.path, report_dir)).as_posix())


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


def measured_budget(budget: dict, train_measure: dict, params_b: float, gpus: int) -> tuple[dict, dict]:
    """The budget with rollout and train MFU measured by the pilot's training (where it logged them), and for
    every key whether its value is measured or assumed, and why. ``params_b`` is the config's, the N the
    estimate multiplies by, so the measured MFU reproduces the pilot's own time at its size."""
    n, peak = params_b * 1e9, gpus * budget["gpu_peak_tflops"] * 1e12
    m, steps = train_measure, train_measure.get("steps", 0)
    out = dict(budget)
    why = {key: ("assumed", "as configured (config.yaml paper.budget)") for key in budget}
    why["gpu_peak_tflops"] = ("assumed", "the GPU's datasheet dense bf16 peak; every MFU here is a fraction of it")
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
    why["rollout_mfu"] = ("assumed", "the pilot's training logged no rollout")
    if m.get("rollout_tokens_per_s"):
        out["rollout_mfu"] = 2 * n * m["rollout_tokens_per_s"] / peak
        why["rollout_mfu"] = (
            "measured",
            (
                f"2·N·generated tokens/s / (GPUs × peak), response_length/mean × "
                f"{m['responses_per_step']} responses over timing_s/gen, {steps} steps"
            ),
        )
    why["train_mfu"] = ("assumed", "the pilot's training logged no update")
    if m.get("mfu_actor"):
        out["train_mfu"] = m["mfu_actor"]
        why["train_mfu"] = (
            "measured",
            (
                f"verl's perf/mfu/actor (update FLOPs over verl's peak for the device), "
                f"mean of {m['mfu_actor_steps']} pilot steps"
            ),
        )
    elif m.get("update_s") and m.get("ppo_epochs"):
        # the FLOPs budget.train_gpu_hours charges at train_mfu: a log-prob pass (2·N) and the PPO epochs (6·N each)
        out["train_mfu"] = (2 + 6 * m["ppo_epochs"]) * n * m["train_tokens"] / (m["update_s"] * peak)
        why["train_mfu"] = (
            "measured",
            (
                f"(2 + 6·ppo_epochs)·N·perf/total_num_tokens over timing_s/old_log_prob + "
                f"timing_s/update_actor, {steps} steps (verl logged no perf/mfu/actor)"
            ),
        )
    sources = {
        key: {"source": src, "reason": reason, "configured": budget[key], "value": out[key]}
        for key, (src, reason) in why.items()
    }
    return out, sources


def reestimate(S: dict, budget: dict) -> pd.DataFrame:
    """The study's GPU-hours by model: training split into its rollout terms (generation and validation, at
    rollout_mfu) and its update terms (log-probs and PPO epochs, at train_mfu), and evaluation if every run
    is evaluated. The pilot's own runs are not the study's."""
    val_questions = sum(b["size"] for b in S["data"]["benchmarks"].values())
    sizes = {b: spec["size"] for b, spec in S["data"]["benchmarks"].items()}
    protocols = {b: spec["protocol"] for b, spec in S["data"]["benchmarks"].items()}
    # budget.train_gpu_hours with an infinite train MFU is its rollout terms alone (their FLOPs take no time):
    # the split reuses the one formula rather than restating it.
    laws = {kind: law for kind, law in budget.get("speed_laws", {}).items() if kind != "update"}  # no update law either
    rollout_only = {**budget, "train_mfu": math.inf, "speed_laws": laws}
    rows = []
    for run in sorted(r for r in S["runs"] if not r.startswith("pilot-")):
        spec = run_spec.resolve_run(S, run)
        model = S["models"][spec["model"]]
        total = gpu_budget.train_gpu_hours(spec, model, budget, val_questions)
        rollout = gpu_budget.train_gpu_hours(spec, model, rollout_only, val_questions)
        rows.append(
            {
                "model": spec["model"],
                "params_b": model["params_b"],
                "runs": 1,
                "gpus": model["nodes"] * model["gpus_per_node"],
                "rollout_gpu_hours": rollout,
                "update_gpu_hours": total - rollout,
                "train_gpu_hours": total,
                "eval_gpu_hours": gpu_budget.eval_gpu_hours(sizes, protocols, model, budget),
            }
        )
    frame = pd.DataFrame(rows).groupby(["model", "params_b", "gpus"], as_index=False).sum()
    return frame.sort_values(["params_b", "model"], ignore_index=True)


# ---- rendering: one list of blocks, written as Markdown and as HTML ----------------------------------


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    minutes, s = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {s:02d} s" if minutes else f"{s} s"


def _num(value, spec: str = ",.0f", unit: str = "") -> str:
    return "–" if value is None else f"{value:{spec}}{unit}"


def _hours(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.2g}"  # a small model's evaluation is under a GPU-hour


def _stage_row(m: dict) -> list[str]:
    memory = m.get("peak_gpu_memory_gb")
    if memory is not None:
        memory_text = f"{memory:.1f} GB (trainer, torch peak)"
    elif m.get("gpu_memory_used_gb") is not None:
        memory_text = f"{m['gpu_memory_used_gb']:.1f} / {_num(m.get('gpu_memory_total_gb'), '.1f')} GB (device)"
    else:
        memory_text = "–"
    if "attempts" in m:
        throughput = (
            f"{_num(m.get('train_tokens_per_s_per_gpu'))} tok/s/GPU training; "
            f"{_num(m.get('rollout_tokens_per_s'))} generated tok/s rollout"
        )
    elif m["stage"] == "pilot_speed":
        throughput = "by model size: Speed by model size, below"
    else:
        throughput = f"{_num(m.get('generated_tokens_per_s'))} generated tok/s"
    result = "passed" if m["passed"] else "failed"
    return [
        m["stage"],
        m["job"],
        result,
        _duration(m["wall_s"]),
        memory_text,
        throughput,
        _num(m.get("mean_response_length"), ".0f", " tokens"),
        Link(m["log"]),
    ]


def _resume(m: dict) -> str:
    parts, previous = [], None
    for k, attempt in enumerate(m["attempts"], start=1):
        steps = attempt["steps"]
        span = f"steps {steps[0]}–{steps[-1]}" if steps else "no training step"
        if previous and steps:
            span += (
                f", resumed after step {previous[-1]}"
                if steps[0] == previous[-1] + 1
                else " (restarted from step 1)"
                if steps[0] == 1
                else f", resumed from the checkpoint: steps {steps[0]}–{previous[-1]} repeated"
            )
        parts.append(f"attempt {k} ({attempt['log']}): {span}")
        previous = steps or previous
    if len(parts) < 2:
        parts.append("one launch only: the resume was not exercised")
    return f"{m['stage']} {m['job']}: " + "; ".join(parts) + "."


def _estimate_table(assumed: pd.DataFrame, measured: pd.DataFrame, sources: dict) -> tuple[list, list]:
    src = {k: sources[k]["source"] for k in ("rollout_mfu", "train_mfu")}
    both = src["train_mfu"] if src["train_mfu"] == src["rollout_mfu"] else "partly measured"
    head = [
        "model",
        "params (B)",
        "GPUs",
        "runs",
        "rollout GPU-h, assumed",
        f"rollout GPU-h, {src['rollout_mfu']}",
        "update GPU-h, assumed",
        f"update GPU-h, {src['train_mfu']}",
        "training GPU-h, assumed",
        f"training GPU-h, {both}",
        "evaluation GPU-h, assumed",
        f"evaluation GPU-h, {src['rollout_mfu']}",
    ]
    cols = ["rollout_gpu_hours", "update_gpu_hours", "train_gpu_hours", "eval_gpu_hours"]
    rows = []
    for (_, a), (_, b) in zip(assumed.iterrows(), measured.iterrows()):
        rows.append(
            [
                a["model"],
                f"{a['params_b']:g}",
                str(a["gpus"]),
                str(a["runs"]),
                *[_hours(v) for c in cols for v in (a[c], b[c])],
            ]
        )
    rows.append(
        [
            "total",
            "",
            "",
            str(assumed["runs"].sum()),
            *[_hours(v) for c in cols for v in (assumed[c].sum(), measured[c].sum())],
        ]
    )
    return head, rows


def _blocks(stages_measured, estimate_assumed, estimate_measured, sources, scaling_rule, speed=()) -> list[tuple]:
    passed = sum(m["passed"] for m in stages_measured)
    blocks = [
        ("h1", "GPU pilot: every GPU rule once on the smallest model"),
        ("p", f"{passed} of {len(stages_measured)} stages passed (a stage passes when all its outputs exist)."),
        (
            "table",
            (
                ["stage", "job", "result", "wall time", "peak GPU memory", "throughput", "mean response length", "log"],
                [_stage_row(m) for m in stages_measured],
            ),
        ),
        ("h2", "Resume after interruption"),
        *[("p", _resume(m)) for m in stages_measured if "attempts" in m],
    ]
    for m in (m for m in stages_measured if not m["passed"]):
        blocks += [
            ("h2", f"Failed: {m['stage']} {m['job']}"),
            ("p", ["missing: " + ", ".join(m["missing"]) + "; the last lines of ", Link(m["log"]), ":"]),
            ("pre", "\n".join(m["tail"])),
        ]
    budget_rows = [
        [key, _num(s["configured"], "g"), _num(s["value"], ".4g"), s["source"], s["reason"]]
        for key, s in sources.items()
    ]
    blocks += list(speed)
    blocks += [
        ("h2", "Budget"),
        ("table", (["key", "configured", "used in the measured estimate", "source", "reason"], budget_rows)),
        ("h2", "The study's GPU-hours by model size"),
        ("p", ESTIMATE_NOTE),
        ("table", _estimate_table(estimate_assumed, estimate_measured, sources)),
        ("p", scaling_rule),
    ]
    return blocks


def _markdown(blocks: list[tuple], report_dir: str | Path) -> str:
    def text(s) -> str:  # a block's text: a string, a Link or a list of them
        if isinstance(s, Link):
            return f"[{s.path}]({s.href(report_dir)})"
        return "".join(map(text, s)) if isinstance(s, list) else str(s)

    cell = lambda s: text(s).replace("|", "\\|").replace("\n", " ")
    out = []
    for kind, content in blocks:
        if kind == "table":
            head, rows = content
            out += [
                "| " + " | ".join(map(cell, head)) + " |",
                "|" + "---|" * len(head),
                *["| " + " | ".join(map(cell, r)) + " |" for r in rows],
                "",
            ]
        elif kind == "pre":
            out += [f"```\n{content}\n```", ""]
        else:
            out += [{"h1": "# ", "h2": "## ", "p": ""}[kind] + text(content), ""]
    return "\n".join(out)


def _html(blocks: list[tuple], report_dir: str | Path) -> str:
    def e(s) -> str:
        if isinstance(s, Link):
            return f'<a href="{html.escape(s.href(report_dir))}">{html.escape(s.path)}</a>'
        return "".join(map(e, s)) if isinstance(s, list) else html.escape(str(s))

    body = []
    for kind, content in blocks:
        if kind == "table":
            head, rows = content
            ths = "".join(f"<th>{e(h)}</th>" for h in head)
            trs = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows)
            body.append(f"<table><thead><tr>{ths}</tr></thead><tbody>{trs}</tbody></table>")
        else:
            body.append(f"<{kind}>{e(content)}</{kind}>")
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>GPU pilot</title>"
        "<style>body{font-family:sans-serif;font-size:13px}table{border-collapse:collapse}"
        "td,th{border:1px solid #bbb;padding:3px 6px;vertical-align:top;text-align:left}</style></head><body>"
        + "".join(body)
        + "</body></html>\n"
    )


def render(
    stages_measured: list[dict],
    estimate_assumed: pd.DataFrame,
    estimate_measured: pd.DataFrame,
    sources: dict,
    scaling_rule: str,
    speed: list[tuple] = (),
    md_dir: str | Path = ".",
    html_dir: str | Path = ".",
) -> tuple[str, str]:
    """The report in Markdown and HTML, each linking the stages' logs relative to its directory (``md_dir``,
    ``html_dir``: where it is written)."""
    blocks = _blocks(stages_measured, estimate_assumed, estimate_measured, sources, scaling_rule, speed)
    return _markdown(blocks, md_dir), _html(blocks, html_dir)


def write(stages: list[Stage], S: dict, out_md, out_html, out_json, gpu: str | None = None, speed=None) -> dict:
    """The report of the pilot's ``stages`` (exactly one of them a training stage, a run of ``S``) and the MFUs
    the GPU-hours estimate before submission reads (``out_json``); ``gpu`` is the device's name if known, ``speed``
    the pilot's speed by model size (``paper.speed.measure``'s JSON file), whose laws then price every size."""
    train = [s for s in stages if s.verl_logs_dir is not None]
    if len(train) != 1:
        raise ValueError(f"the pilot has one training stage (a Stage with verl_logs_dir), not {len(train)}")
    if train[0].job not in S["runs"]:
        raise KeyError(f"the pilot's training stage ran {train[0].job!r}, which is not a run of the config")
    spec = run_spec.resolve_run(S, train[0].job)
    measured = [
        measure(s, spec["prompts_per_step"] * spec["rollout_n"], spec["ppo_epochs"]) if s is train[0] else measure(s)
        for s in stages
    ]
    train_measure = next(m for s, m in zip(stages, measured) if s is train[0])
    budget_m, sources = measured_budget(
        S["budget"], train_measure, S["models"][spec["model"]]["params_b"], train[0].gpus
    )
    laws, by_size, blocks, rule = {}, {}, [], SCALING_RULE
    if speed is not None and Path(speed).is_file():
        result = json.loads(Path(speed).read_text())
        laws = speed_report.laws(result)
        if laws:
            budget_m["speed_laws"] = {kind: law.to_dict() for kind, law in laws.items()}
            by_size, rule = speed_report.mfu_by_size(S, laws, budget_m["gpu_peak_tflops"]), speed_report.RULE
            for kind, key in (("update", "train_mfu"), ("rollout", "rollout_mfu")):
                if kind in laws:
                    sources[key] = {**sources[key], "source": "measured by size",
                                    "reason": f"{sources[key]['reason']}; for the estimate, by size: {laws[kind].describe()}"}  # fmt: skip
        blocks = speed_report.report_blocks(result, laws, by_size)
    md, page = render(measured, reestimate(S, S["budget"]), reestimate(S, budget_m), sources, rule, blocks,
                      Path(out_md).parent, Path(out_html).parent)  # fmt: skip
    summary = {
        "rollout_mfu": budget_m["rollout_mfu"],
        "train_mfu": budget_m["train_mfu"],
        "speed_laws": budget_m.get("speed_laws", {}),
        "mfu_by_size": by_size,
        "sources": sources,
        "gpu": gpu,
        "pilot_stages": f"{sum(m['passed'] for m in measured)}/{len(measured)}",
    }
    atomic.write_text(out_md, md)
    atomic.write_text(out_html, page)
    atomic.write_text(out_json, json.dumps(summary, indent=2) + "\n")
    return summary
