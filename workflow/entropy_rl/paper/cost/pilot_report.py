"""The GPU pilot's report: every GPU rule once on the smallest model, and what it says about the study's cost.

The pilot runs ``train_verl`` (interrupted once and resumed), ``evaluate_vllm`` and ``power_sample_vllm``.
From what ``pilot_measures`` reads of their job logs and verl's file logs this module reports which stages passed,
their wall time, GPU memory and throughput, the resume, and the study's GPU-hours re-estimated with the MFUs the
pilot measured in place of the configured ones (``budget``). It reads text files only: no torch, verl or vLLM.
"""

from __future__ import annotations

import dataclasses
import html
import json
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pandas as pd

from ...core import atomic, pages
from ...core.scale import Scale
from . import architectures, gpus, speed_report
from .pilot_measures import Stage, measure, measured_budget, reestimate
from .speed import timed_on

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
class Link:
    """A file the report links to (a stage's log), shown as its path; linked relative to the report's directory, so a
    reader clicks through from the report wherever the results directory lies."""

    path: str

    def href(self, report_dir: str | Path) -> str:
        return quote(Path(os.path.relpath(self.path, report_dir)).as_posix())


# ---- rendering: one list of blocks, written as Markdown and as HTML ----------------------------------


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    minutes, s = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {s:02d} s" if minutes else f"{s} s"


def _num(value, spec: str = ",.0f", unit: str = "") -> str:
    return "–" if value is None else f"{value:{spec}}{unit}"


def _setting(value, spec: str) -> str:
    """A budget setting in a cell: a number, a range's ends, an expected figure, or a table's keys."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        if "expected" in value:
            return f"{_num(value['expected'], spec)} ({_num(value['range'][0], 'g')}–{_num(value['range'][1], 'g')})"
        return "; ".join(f"{k}: {_setting(v, spec)}" for k, v in value.items() if k != "source")
    if isinstance(value, (list, tuple)):
        return "–".join(_num(v, "g") for v in value)
    return _num(value, spec)


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
        [
            key,
            *(_setting(v, spec) for v, spec in ((s["configured"], "g"), (s["value"], ".4g"))),
            s["source"],
            s["reason"],
        ]
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

    out = []
    for kind, content in blocks:
        if kind == "table":
            head, rows = content
            out += [*pages.md_table([text(h) for h in head], [[text(c) for c in r] for r in rows]), ""]
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

    (heading,) = [content for kind, content in blocks if kind == "h1"]  # the first block: the page's heading
    body = []
    for kind, content in blocks:
        if kind == "table":
            body.append(pages.html_table(*content, cell=e))
        elif kind != "h1":
            body.append(f"<{kind}>{e(content)}</{kind}>")
    return pages.html_page("GPU pilot", "".join(body), heading=heading)


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


def timed_gpu(result: dict | None, gpu: str | None, budget: dict) -> dict:
    """The GPU the pilot ran on: the speed job's device (the same partition as the training), else ``gpu`` (a device
    name), else the budget's type, assumed and said so; its type, name and peak (verl's table)."""
    found = (timed_on(result, "update") or timed_on(result, "rollout")) if result else None
    name = found["gpu"] if found else gpu
    kind = gpus.gpu_type(name) if name else None
    if kind is None:
        why = f"the pilot's GPU type is in none of its outputs: taken as the budget's {budget['gpu']}"
        return {
            "gpu": budget["gpu"],
            "gpu_peak_tflops": budget["gpu_peak_tflops"],
            "known": False,
            "name": name,
            "why": why,
        }
    why = f"the device the pilot's speed job ran on ({name})"
    return {"gpu": kind, "gpu_peak_tflops": gpus.PEAK_TFLOPS[kind], "known": True, "name": name, "why": why}


# The pilot's run on a whole node (pipeline.scope.NODE_RUN): named so.
NODE_SUFFIX = "-node"


def _per_step(scale: Scale, run_id: str) -> tuple[int, int]:
    run = scale.runs[run_id]
    return run.prompts_per_step * run.rollout_n, run.ppo_epochs


def node_point(scale: Scale, stage: Stage, m: dict, timed: dict) -> dict | None:
    """What the speed run's steps on its own node measured (``measured_budget`` on that stage: verl's update MFU, the
    rollout's generated tokens a second over the node's GPUs), as fractions of the timed GPU's peak; None when it
    logged no step."""
    if not m.get("steps"):
        return None
    run, tensor_parallel = scale.runs[stage.job], scale.placement(stage.job).tensor_parallel
    arch = architectures.of_model(scale, run.model)
    node_budget, sources = measured_budget(scale.config["budget"], m, arch, stage.gpus, timed, tensor_parallel)
    point = {
        "model": run.model,
        "arch": dataclasses.asdict(arch),
        "gpus": stage.gpus,
        "steps": m["steps"],
        "tensor_parallel": tensor_parallel,
        "gpu": timed["gpu"],
        "peak_tflops": timed["gpu_peak_tflops"],
    }
    point.update({k: node_budget[k] for k in ("train_mfu", "rollout_mfu") if sources[k]["source"] == "measured"})
    return point


def in_budget_gpu(measured: dict, budget: dict) -> dict:
    """The measured budget priced on the configured budget's GPU where its type is the same or a conversion is stated
    (``gpus.convert``); else the measured budget itself, priced on the pilot's GPU."""
    try:
        convert = {
            k: gpus.convert(measured[k], measured["gpu"], measured["gpu_peak_tflops"], budget)
            for k in ("train_mfu", "rollout_mfu")
        }
    except gpus.GpuMismatch:
        return measured
    return {
        **measured,
        **convert,
        **{k: budget[k] for k in ("gpu", "gpu_peak_tflops")},
        **({"gpu_conversion": budget["gpu_conversion"]} if "gpu_conversion" in budget else {}),
    }


def write(stages: list[Stage], scale: Scale, out_md, out_html, out_json, gpu: str | None = None, speed=None) -> dict:
    """The report of the pilot's ``stages`` (exactly one of them a training stage, a run of ``scale``) and the MFUs
    the GPU-hours estimate before submission reads (``out_json``); ``gpu`` is the device's name if known, ``speed``
    the pilot's speed by model size (``paper.cost.speed.measure``'s JSON file), whose laws then price every size."""
    node = [s for s in stages if s.verl_logs_dir is not None and s.job.endswith(NODE_SUFFIX)]
    train = [s for s in stages if s.verl_logs_dir is not None and s not in node]
    if len(train) != 1:
        raise ValueError(f"the pilot has one training stage (a Stage with verl_logs_dir), not {len(train)}")
    if train[0].job not in scale.runs:
        raise KeyError(f"the pilot's training stage ran {train[0].job!r}, which is not a run of the config")
    run, budget = scale.runs[train[0].job], scale.config["budget"]
    measured = [measure(s, *_per_step(scale, s.job)) if s.verl_logs_dir is not None else measure(s) for s in stages]
    train_measure = next(m for s, m in zip(stages, measured) if s is train[0])
    result = json.loads(Path(speed).read_text()) if speed is not None and Path(speed).is_file() else None
    timed = timed_gpu(result, gpu, budget)
    arch, tp = architectures.of_model(scale, run.model), scale.placement(train[0].job).tensor_parallel
    budget_m, sources = measured_budget(budget, train_measure, arch, train[0].gpus, timed, tp)
    laws, by_size, blocks, rule = {}, {}, [], SCALING_RULE
    if result is not None:
        laws = speed_report.laws(result)
        if laws:
            budget_m["speed_laws"] = {kind: law.to_dict() for kind, law in laws.items()}
            by_size, rule = speed_report.mfu_by_size(scale, laws), speed_report.RULE
            for kind, key in (("update", "train_mfu"), ("rollout", "rollout_mfu")):
                if kind in laws:
                    sources[key] = {
                        **sources[key],
                        "source": "measured by size",
                        "reason": f"{sources[key]['reason']}; for the estimate, by size: {laws[kind].describe()}",
                    }
        blocks = speed_report.report_blocks(result, laws, by_size)
    for stage, m in zip(stages, measured):
        if stage in node:
            point = node_point(scale, stage, m, timed)
            if point:
                budget_m.setdefault("speed_laws", {})["node"] = point
                by_size = speed_report.mfu_by_size(scale, laws, point)
                blocks += speed_report.node_blocks(scale, point, laws)
    priced = in_budget_gpu(budget_m, budget)
    if priced is not budget_m:
        rule += f" The measured column is in {budget['gpu']} hours (config.yaml paper.budget)."
    else:
        rule += (
            f" The measured column is in {timed['gpu']} hours, the GPU the pilot ran on; the budget prices"
            f" {budget['gpu']}, and no paper.budget.gpu_conversion for {timed['gpu']} is stated."
        )
    assumed, at_measured = reestimate(scale, budget), reestimate(scale, priced)
    md, page = render(measured, assumed, at_measured, sources, rule, blocks, Path(out_md).parent, Path(out_html).parent)
    summary = {
        "rollout_mfu": budget_m["rollout_mfu"],
        "train_mfu": budget_m["train_mfu"],
        "gen_batches": budget_m["gen_batches"],
        "speed_laws": budget_m.get("speed_laws", {}),
        "mfu_by_size": by_size,
        "sources": sources,
        "gpu": timed["gpu"],
        "gpu_name": timed.get("name"),
        "gpu_peak_tflops": timed["gpu_peak_tflops"],
        "pilot_stages": f"{sum(m['passed'] for m in measured)}/{len(measured)}",
    }
    atomic.write_text(out_md, md)
    atomic.write_text(out_html, page)
    atomic.write_text(out_json, json.dumps(summary, indent=2) + "\n")
    return summary
