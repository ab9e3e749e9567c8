"""Before any job, at paper scale: the GPU-hours of what the command line's targets need (paper.cost.budget) and the
launch preflight of every run still to train (paper.preflight), stated once the DAG is built (``before_jobs``, in a
dry run too); and, from the Snakefile's ``onstart``, the launch of a finished run trained again, checked with the code
it will run."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import paths
from ..paper import preflight
from ..paper.cost import budget, ranges
from . import claims, pilot
from .gpu_rules import TRAIN
from .snakemake_api import WorkflowError, job_wildcard, rule_name

if TYPE_CHECKING:
    from ..core.scale import Scale
    from .plan import StudyPlan

LAUNCH_CACHE = ".snakemake/preflight-launches"


def print_gpu_budget(plan: StudyPlan) -> None:
    """The GPU-hours of what the command line's targets need: the runs still to train, their evaluations and the
    sampling jobs still to run, with the range and the SLURM jobs and disk they take (pipeline.cluster.before_jobs)."""
    targets = plan.workflow.targets()
    if pilot.targeted(targets):
        print(pilot.plan_message(plan), file=sys.stderr)
    pilot_runs = plan.pilot_runs + plan.scope.pilot_node_runs
    runs = [r for r in requested_runs(plan) if r not in pilot_runs]  # the pilot's are stated above
    methods = requested_power_methods(targets, plan.power, plan.study_power_methods, paths.POWER_SAMPLES)
    if not runs and not methods:
        return
    every = "evaluations" in (targets or ())  # else only the runs the study reads on the test sets
    measured = paths.PILOT_ESTIMATE if plan.budget is not plan.S["budget"] else None
    spread = ranges.from_params(claims.job_spread(plan.scope, plan.power_study, plan.budget))
    print(
        budget_message(runs, methods, plan.job_hours, every, plan.evaluated_runs, plan.budget, measured, spread),
        file=sys.stderr,
    )
    jobs_and_disk = jobs_and_disk_message(plan.scale, runs, plan.budget)
    if jobs_and_disk:
        print(jobs_and_disk, file=sys.stderr)
    if plan.selecting:
        print(
            f"judging {len(plan.selection.claims)} of {len(plan.claims)} claims ({plan.selection.rule}); the audit"
            f" lists the other {len(plan.not_run)} as not run",
            file=sys.stderr,
        )


def requested_runs(plan: StudyPlan) -> list[str]:
    """The runs the command line's targets need and that have not finished training."""
    targets = plan.workflow.targets() or {"all"}
    runs, S = plan.runs, plan.S
    wanted = set()
    for target in targets:
        if target in ("all", "audit", "fit_table") or target.endswith("fits.csv") or target.startswith(paths.AUDIT_DIR):
            # the claims judged (all, unless --config claims=... or budget_gpu_hours=...)
            wanted |= set(plan.study_runs)
        if target == "evaluations":
            wanted |= set(runs)
        if target == "pilot":
            wanted |= set(plan.pilot_runs + plan.scope.pilot_node_runs)
        parts = Path(target).parts
        wanted |= {run for run in runs if run in parts or Path(target).stem == run}
        for name, spec in S["artifacts"].items():
            if name in target:
                wanted |= set(spec["runs"])
    return sorted(r for r in wanted if not os.path.exists(paths.RUN_METRICS.format(run=r)))


def requested_power_methods(targets, power: dict | None, methods: list[str], samples: str) -> list[str]:
    """The power-sampling jobs the command line's ``targets`` need whose samples do not exist yet (``methods``: the
    study's; ``samples``: core.paths.POWER_SAMPLES)."""
    targets = targets or {"all"}
    if not power or not any(t in ("all", "audit") or "power" in t or t.startswith(paths.AUDIT_DIR) for t in targets):
        return []
    return [m for m in methods if not os.path.exists(samples.format(method=m))]


def budget_message(
    runs: list[str],
    methods: list[str],
    job_hours: dict,
    every: bool,
    evaluated: list[str],
    assumptions: dict,
    measured_from: str | None,
    spread: dict | None = None,
) -> str | None:
    """The estimate of ``runs`` to train (and evaluate: all with ``every``, else those in ``evaluated``) and
    ``methods`` to sample, or None when there are none; ``measured_from``: the pilot's estimate the MFUs are from;
    ``spread``: every job's range (paper.cost.ranges.job_spread), printed beside it."""
    if not runs and not methods:
        return None
    train = sum(job_hours[f"train:{r}"] for r in runs)
    evaluation = sum(job_hours[f"eval:{r}"] for r in runs if every or r in evaluated)
    power = sum(job_hours[f"power:{m}"] for m in methods)
    text = budget.estimate_message(len(runs), train, evaluation, len(methods), power, assumptions)
    if spread:
        jobs = [f"train:{r}" for r in runs] + [f"eval:{r}" for r in runs if every or r in evaluated]
        jobs += [f"power:{m}" for m in methods]
        whole = sum((spread[j] for j in jobs if j in spread), ranges.NONE)
        text += (
            f"\n  as a range: {whole.low:,.0f} to {whole.high:,.0f} GPU-hours, every efficiency and the group "
            f"filter's refills at their ends (paper.budget ranges, gen_batches); {whole.worst:,.0f} if every step "
            f"refilled to its max_num_gen_batches; the largest term {whole.largest} "
            f"({whole.terms.get(whole.largest, 0):,.0f}); by claim: `snakemake claims_budget`"
        )
    if measured_from:
        text += f"\n  the MFUs are those the GPU pilot measured on this cluster ({measured_from}), not config.yaml's"
    return text


def jobs_and_disk_message(scale: Scale, runs: list[str], assumptions: dict) -> str | None:
    """The SLURM jobs the runs to train need and the disk they hold at most (paper.cost.budget's messages)."""
    lines = [budget.jobs_message(scale, runs, assumptions), budget.disk_message(scale, runs)]
    return "\n".join(line for line in lines if line) or None


def check_launches(scale: Scale, runs: list[str]) -> None:
    """Before any job: every run of ``runs``, its exact verl command through verl's own validation, reward loader
    and loss plugin (the part of the preflight that needs no download)."""
    if not runs:
        return
    started = time.perf_counter()
    failed = {run: preflight.launch_problems_cached(scale, run, LAUNCH_CACHE) for run in runs}
    failed = {run: problems for run, problems in failed.items() if problems}
    seconds = time.perf_counter() - started  # verl imported and each new command checked; remembered ones cost nothing
    if failed:
        lines = [f"  {run}: {p}" for run, problems in failed.items() for p in problems]
        raise WorkflowError(
            f"preflight: {len(failed)} of {len(runs)} run(s) would fail at launch; nothing was submitted:\n"
            + "\n".join(lines)
        )
    print(
        f"preflight: {len(runs)} run(s) to train composed and validated by verl, reward and loss plugin loaded"
        f" ({seconds:.1f} s)",
        file=sys.stderr,
    )


def retrained_runs(workflow) -> list[str]:
    """The finished runs whose training is to be submitted again without their preflight job running first."""
    return sorted(
        job_wildcard(job, TRAIN.wildcard)
        for job in workflow.needrun_jobs()
        if rule_name(job) == TRAIN.name
        and not any(workflow.needrun(dep) for dep in workflow.dependencies(job) if rule_name(dep) == "preflight")
    )


def check_retrained_launches(workflow, scale: Scale, mini: bool) -> None:
    """Before a finished run's training is submitted again: its launch checked with the code it will run, as
    check_launches does for a run still to train. Its preflight job runs again only when what it reads changes, not
    for a change of code alone (preflight.smk)."""
    if mini or workflow.touch:
        return
    check_launches(scale, retrained_runs(workflow))
