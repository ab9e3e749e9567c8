"""Paid work is never redone silently: what made a finished GPU job outdated, and what rerunning it costs.

At paper scale a rerun costs GPU-hours, so before any job is submitted the workflow (the Snakefile's onstart,
``pipeline.guard.paid_work_guard``) stops when a GPU job whose outputs exist is about to run again, and prints each
such job with its causes and its price. This module turns Snakemake's reasons into those lines; it
reads recorded facts only (the code stamps of ``core.modules.stamp``, the parameters Snakemake recorded
when the job ran), never imports Snakemake.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from ...core import modules

# The config key that gives consent: job names (a run or a power-sampling method) or "all".
CONSENT_KEY = "rerun_paid"


@dataclass
class OutdatedJob:
    rule: str
    name: str  # the run or method
    gpu_hours: float
    causes: list[str] = field(default_factory=list)


def allowed(name: str, consent) -> bool:
    """Did the user ask for this job's rerun (``--config rerun_paid=all`` or a list naming it)?"""
    if consent in (None, False, [], ""):
        return False
    if consent == "all" or consent is True:
        return True
    return name in (consent if isinstance(consent, (list, tuple)) else str(consent).split(","))


def code_causes(stamp: str | Path) -> list[str]:
    """A job's code stamp changed since it ran: which modules' behaviour changed."""
    changed = modules.changed_modules(stamp)
    if not changed:
        return [f"its code ({stamp}) is not the code it ran"]
    return [f"code changed: {m}" for m in changed]


def _flat(value, prefix: str = "") -> dict[str, object]:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): value}


def _literal(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def param_causes(current: dict[str, object], serialize, recorded: list[str]) -> list[str]:
    """The settings that differ from those recorded when the job ran. Snakemake records each param's
    value unnamed (a sorted list of reprs): a param whose value is not among them changed; for a
    settings dict, the recorded dict that shares most of its keys is the one it replaced, and a lone
    changed value is paired with the lone recorded value no param has now."""
    recorded = list(recorded or [])
    texts = {name: serialize(value) for name, value in current.items()}
    changed = [name for name, text in texts.items() if text not in recorded]
    unmatched = [_literal(r) for r in recorded if r not in texts.values()]
    scalars = [r for r in unmatched if not isinstance(r, (dict, list))]
    out = []
    for name in changed:
        value = current[name]
        if isinstance(value, dict):
            now = _flat(value, f"{name}.")
            candidates = [_flat(v, f"{name}.") for v in unmatched if isinstance(v, dict)]
            before = max(candidates, key=lambda c: len(c.keys() & now.keys()), default={})
            keys = sorted(k for k in now.keys() | before.keys() if now.get(k, "<absent>") != before.get(k, "<absent>"))
            if before and keys:
                out += [f"setting {k}: {before.get(k, '<absent>')!r} -> {now.get(k, '<absent>')!r}" for k in keys[:8]]
                continue
        elif (
            not isinstance(value, list)
            and len(scalars) == 1
            and sum(not isinstance(current[n], (dict, list)) for n in changed) == 1
        ):
            out.append(f"setting {name}: {scalars[0]!r} -> {value!r}")
            continue
        out.append(f"setting {name} changed")
    return out


def message(jobs: list[OutdatedJob]) -> str:
    """The guard's refusal: each outdated GPU job (in the order given), why, and the GPU-hours it costs; and how to
    consent."""
    total = sum(j.gpu_hours for j in jobs)
    lines = [
        (
            f"paid work: {len(jobs)} GPU job(s) whose outputs exist are outdated; rerunning them costs "
            f"{total:,.0f} GPU-hours (config.yaml paper.budget). Nothing was submitted."
        )
    ]
    for job in jobs:
        lines.append(f"  {job.rule} {job.name}: {job.gpu_hours:,.1f} GPU-hours")
        lines += [f"      {cause}" for cause in job.causes]
    names = ",".join(sorted({j.name for j in jobs})[:3])
    lines.append(
        f"To rerun them: --config {CONSENT_KEY}=all, or name them (--config '{CONSENT_KEY}=[{names}]'),"
        " or force a job's output (-R/--forcerun). To keep the outputs as they are: snakemake --touch."
    )
    return "\n".join(lines)
