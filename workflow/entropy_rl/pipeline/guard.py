"""Paid work is never redone silently (entropy_rl.paper.cost.paid_work): at paper scale, before any job is submitted,
the workflow stops if a GPU job whose outputs exist would run again, naming why (``rerun_causes``) and what it
costs, unless the user named it (``--config rerun_paid=...``), forced it (-R) or asked for all. The Snakefile's
``onstart`` calls ``paid_work_guard``; the workflow is read through ``snakemake_api.Workflow``."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ..core import paths
from ..paper.cost import paid_work
from .gpu_rules import GPU_RULES
from .snakemake_api import (
    WorkflowError,
    job_container,
    job_input,
    job_output,
    job_params,
    job_script,
    job_wildcard,
    rule_name,
)

CODE_DIR = paths.CODE_DIR + "/"  # the code stamps' folder


def job_gpu_hours(job, job_hours: dict[str, float]) -> float:
    """A GPU job's estimated GPU-hours (its rule's cost class, pipeline.gpu_rules: train:RUN, eval:RUN, ...)."""
    rule = GPU_RULES[rule_name(job)]
    return job_hours[rule.job(job_wildcard(job, rule.wildcard) if rule.wildcard else None)]


def output_mintime(job) -> float:
    """The time of the job's oldest output (a directory's by the stamp Snakemake leaves in it)."""
    stamp = ".snakemake_timestamp"
    return min(
        os.path.getmtime(os.path.join(f, stamp) if os.path.isfile(os.path.join(f, stamp)) else f)
        for f in job_output(job)
    )


def same_as_recorded(workflow, job, f: str) -> bool:
    """Snakemake's own test: an input newer than the outputs but with the checksum recorded when the job ran."""
    recorded = workflow.input_checksums(job, f)
    return len(recorded) == 1 and recorded.pop() == f"sha256:{hashlib.sha256(Path(f).read_bytes()).hexdigest()}"


def rerun_causes(workflow, job, depth: int = 0) -> list[str]:
    """Why Snakemake would run a finished job again, in the terms of what changed: code (by module), settings (by
    key), inputs (and, for an input rebuilt first, why that is). Each is checked here rather than read from
    Snakemake's reason: once an upstream job is to run, Snakemake stops looking for a job's own reasons."""
    reason = workflow.reason(job)
    oldest = output_mintime(job) if all(os.path.exists(f) for f in job_output(job)) else None
    stamps = [
        f
        for f in job_input(job)
        if f.startswith(CODE_DIR) and oldest and os.path.getmtime(f) > oldest and not same_as_recorded(workflow, job, f)
    ]
    causes = [c for f in stamps for c in paid_work.code_causes(f)]
    causes += [f"input newer than its outputs: {f}" for f in sorted(reason.updated_input) if f not in stamps]
    for dep, files in workflow.dependencies(job).items():
        if workflow.needrun(dep) and rule_name(dep) in GPU_RULES:  # listed, with its causes, itself
            causes.append(f"input rebuilt first by {rule_name(dep)} {job_wildcard(dep, 'run', 'method')}")
        elif workflow.needrun(dep):
            why = "; ".join(rerun_causes(workflow, dep, depth + 1)) if depth < 3 else "..."
            causes += [f"input rebuilt first by {rule_name(dep)}: {f} ({why})" for f in sorted(files)]
    if reason.missing_output:
        causes.append(f"outputs missing: {', '.join(sorted(reason.missing_output))}")
    script = job_script(job)
    if oldest and script and os.path.getmtime(script) > oldest:
        causes.append(f"its script ({os.path.normpath(script)}) is newer than its outputs")
    recorded = workflow.recorded_params(job_output(job)[0]) if oldest else None
    if recorded is not None:
        params, compared = job_params(job)
        if sorted(map(workflow.serialize_param, compared)) != sorted(recorded):
            causes += paid_work.param_causes(params, workflow.serialize_param, recorded)
    if reason.input_changed:
        causes.append("its set of input files changed")
    if reason.software_stack_changed:
        causes.append(f"its container changed ({job_container(job)})")
    return list(dict.fromkeys(causes)) or [str(reason)]


def outdated_paid_jobs(workflow, job_hours: dict[str, float], consent) -> list[paid_work.OutdatedJob]:
    """The GPU jobs whose outputs exist and that would run again, unless named (``consent``) or forced."""
    outdated = []
    for job in workflow.needrun_jobs():
        if rule_name(job) not in GPU_RULES or not all(os.path.exists(f) for f in job_output(job)):
            continue
        reason = workflow.reason(job)
        name = job_wildcard(job, "run", "method")
        if reason.forced or paid_work.allowed(name, consent):
            continue
        outdated.append(
            paid_work.OutdatedJob(rule_name(job), name, job_gpu_hours(job, job_hours), rerun_causes(workflow, job))
        )
    order = list(GPU_RULES)
    return sorted(outdated, key=lambda j: (order.index(j.rule), j.name))


def paid_work_guard(workflow, mini: bool, job_hours: dict[str, float], config: dict) -> None:
    """At paper scale, before any job is submitted: stop if a GPU job whose outputs exist would run again, unless
    the user named it (--config rerun_paid=...), forced it (-R) or asked for all (rerun_paid=all)."""
    if mini or workflow.touch:
        return
    outdated = outdated_paid_jobs(workflow, job_hours, config.get(paid_work.CONSENT_KEY))
    if outdated:
        raise WorkflowError(paid_work.message(outdated))
