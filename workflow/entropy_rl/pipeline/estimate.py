"""Before any job, at paper scale: the GPU-hours of what the command line's targets need (paper.cost.budget) and the
launch preflight of every run still to train (paper.preflight), stated once while the DAG is built; and, from the
Snakefile's ``onstart``, the launch of a finished run trained again, checked with the code it will run."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from ..paper import preflight
from ..paper.cost import budget, ranges
from .resources import eval_hours, power_hours, train_hours
from .snakemake_api import WorkflowError, rule_name

LAUNCH_CACHE = ".snakemake/preflight-launches"


def requested_runs(targets, S: dict, runs: list[str], study_runs: list[str], pilot_runs: list[str], metrics: str) -> list[str]:
    """The runs the command line's ``targets`` need and that have not finished training (``metrics``: paths.smk's
    RUN_METRICS)."""
    targets = targets or {"all"}
    wanted = set()
    for target in targets:
        if target in ("all", "audit", "fit_table") or target.endswith("fits.csv") or target.startswith("results/audit"):
            wanted |= set(study_runs)  # the claims judged (all, unless --config claims=... or budget_gpu_hours=...)
        if target == "evaluations":
            wanted |= set(runs)
        if target == "pilot":
            wanted |= set(pilot_runs)
        parts = Path(target).parts
        wanted |= {run for run in runs if run in parts or Path(target).stem == run}
        for name, spec in S["artifacts"].items():
            if name in target:
                wanted |= set(spec["runs"])
    return sorted(r for r in wanted if not os.path.exists(metrics.format(run=r)))


def requested_power_methods(targets, power: dict | None, methods: list[str], samples: str) -> list[str]:
    """The power-sampling jobs the command line's ``targets`` need whose samples do not exist yet (``methods``: the
    study's; ``samples``: paths.smk's POWER_SAMPLES)."""
    targets = targets or {"all"}
    if not power or not any(t in ("all", "audit") or "power" in t or t.startswith("results/audit") for t in targets):
        return []
    return [m for m in methods if not os.path.exists(samples.format(method=m))]


def budget_message(runs: list[str], methods: list[str], job_hours: dict, every: bool, evaluated: list[str],
                   assumptions: dict, measured_from: str | None, spread: dict | None = None) -> str | None:  # fmt: skip
    """The estimate of ``runs`` to train (and evaluate: all with ``every``, else those in ``evaluated``) and
    ``methods`` to sample, or None when there are none; ``measured_from``: the pilot's estimate the MFUs are from;
    ``spread``: every job's range (paper.cost.ranges.job_spread), printed beside it."""
    if not runs and not methods:
        return None
    train = sum(train_hours(job_hours, r) for r in runs)
    evaluation = sum(eval_hours(job_hours, r) for r in runs if every or r in evaluated)
    power = sum(power_hours(job_hours, m) for m in methods)
    text = budget.estimate_message(len(runs), train, evaluation, len(methods), power, assumptions)
    if spread:
        jobs = [f"train:{r}" for r in runs] + [f"eval:{r}" for r in runs if every or r in evaluated]
        jobs += [f"power:{m}" for m in methods]
        whole = sum((spread[j] for j in jobs if j in spread), ranges.NONE)
        text += (f"\n  as a range: {whole.low:,.0f} to {whole.high:,.0f} GPU-hours, every efficiency and the group "
                 f"filter's refills at their ends (paper.budget ranges, gen_batches); {whole.worst:,.0f} if every step "
                 f"refilled to its max_num_gen_batches; the largest term {whole.largest} "
                 f"({whole.terms.get(whole.largest, 0):,.0f}); by claim: `snakemake claims_budget`")  # fmt: skip
    if measured_from:
        text += f"\n  the MFUs are those the GPU pilot measured on this cluster ({measured_from}), not config.yaml's"
    return text


def jobs_and_disk_message(S: dict, runs: list[str], assumptions: dict) -> str | None:
    """The SLURM jobs the runs to train need and the disk they hold at most (paper.cost.budget's messages)."""
    lines = [budget.jobs_message(S, runs, assumptions), budget.disk_message(S, runs)]
    return "\n".join(line for line in lines if line) or None


def check_launches(S: dict, runs: list[str]) -> None:
    """Before any job: every run of ``runs``, its exact verl command through verl's own validation, reward loader
    and loss plugin (the part of the preflight that needs no download)."""
    if not runs:
        return
    started = time.perf_counter()
    failed = {run: preflight.launch_problems_cached(S, run, LAUNCH_CACHE) for run in runs}
    failed = {run: problems for run, problems in failed.items() if problems}
    seconds = time.perf_counter() - started  # verl imported and each new command checked; remembered ones cost nothing
    if failed:
        lines = [f"  {run}: {p}" for run, problems in failed.items() for p in problems]
        raise WorkflowError(f"preflight: {len(failed)} of {len(runs)} run(s) would fail at launch; nothing was submitted:\n" + "\n".join(lines))
    print(f"preflight: {len(runs)} run(s) to train composed and validated by verl, reward and loss plugin loaded"
          f" ({seconds:.1f} s)", file=sys.stderr)  # fmt: skip


def retrained_runs(plan) -> list[str]:
    """The finished runs whose training is to be submitted again without their preflight job running first."""
    return sorted(
        job.wildcards.run for job in plan.needrun_jobs() if rule_name(job) == "train_verl"
        and not any(plan.needrun(dep) for dep in plan.dependencies(job) if rule_name(dep) == "preflight")
    )  # fmt: skip


def check_retrained_launches(plan, S: dict, mini: bool) -> None:
    """Before a finished run's training is submitted again: its launch checked with the code it will run, as
    check_launches does for a run still to train. Its preflight job runs again only when what it reads changes, not
    for a change of code alone (preflight.smk)."""
    if mini or plan.touch:
        return
    check_launches(S, retrained_runs(plan))
