"""The claims this study judges and the jobs they need (pipeline.claim_plan), with the GPU-hours of each job at
paper scale: the MFUs the estimate uses, every job's hours, and what the study builds of the claims chosen
(pipeline.plan builds them into the study plan)."""

from __future__ import annotations

import json
import os
import sys

from ..core.scale import Scale
from ..paper.cost import architectures, budget, gpus, ranges
from ..study import artifacts
from . import claim_plan
from .scope import Scope, artifact_runs, with_replicates
from .snakemake_api import WorkflowError


def check_budget_setting(gpu: bool, config: dict) -> None:
    if not gpu and config.get("budget_gpu_hours") is not None:
        raise WorkflowError(
            f"budget_gpu_hours is a paper-scale setting (scale {config['scale']} runs on CPUs); choose claims with "
            "claims=[...]"
        )


def selecting(config: dict) -> bool:
    """Whether the command line chooses claims (`--config 'claims=[law/*]'`) or a budget (`budget_gpu_hours=N`)."""
    return bool(config.get("claims")) or config.get("budget_gpu_hours") is not None


def budget_assumptions(scale: Scale, gpu: bool, estimate: str) -> dict | None:
    """The GPU-hours' assumptions: FLOPs at the MFUs of config.yaml paper.budget, or at those the pilot measured on
    this cluster (``estimate``: its report, when it exists). The scale's budget itself when nothing was measured."""
    S = scale.config
    assumed = S.get("budget")
    if not gpu or not os.path.exists(estimate):
        return assumed
    try:
        with open(estimate) as fh:
            measured = json.load(fh)
        # the MFUs are fractions of the pilot's GPU; priced on the budget's only where the type is the same or a
        # conversion is stated (paper.cost.gpus): anything else is refused, not priced at the wrong GPU's speed
        timed = {key: measured[key] for key in ("gpu", "gpu_peak_tflops")}
        out = {
            **S["budget"],
            **{
                k: gpus.convert(measured[k], timed["gpu"], timed["gpu_peak_tflops"], S["budget"])
                for k in ("rollout_mfu", "train_mfu")
            },
        }
        if measured.get("gen_batches", {}).get("source", "").startswith("measured"):  # the filter's refills as logged
            out["gen_batches"] = measured["gen_batches"]
        if measured.get("speed_laws"):  # the MFU by architecture (paper.cost.speed_law), where the pilot timed sizes
            out["speed_laws"] = measured["speed_laws"]
        return out
    except gpus.GpuMismatch as err:
        raise WorkflowError(f"{estimate}: {err}") from None
    except (ValueError, KeyError) as err:  # not a report the pilot wrote: say so, estimate from config.yaml
        print(f"{estimate} unreadable ({err!r}); the GPU-hours estimate uses config.yaml's MFUs", file=sys.stderr)
        return assumed


def job_hours(scope: Scope, power_study, pilot_jobs: dict, assumptions: dict, claim_jobs: dict) -> dict[str, float]:
    """Every GPU job's estimated GPU-hours (paper.cost.budget), the pilot's included; none on a CPU (mini, small)."""
    scale, pilot = scope.scale, scope.pilot
    if not scope.gpu:  # no GPU-hours on a CPU: a budget is a paper-scale setting (config.schema.yaml)
        return {job: 0.0 for jobs in claim_jobs.values() for job in jobs}
    hours = budget.job_hours(scale, power_study, assumptions)
    if pilot:
        hours.update(budget.pilot_hours(scale, assumptions, scope.pilot_node_runs))
        for run in scope.pilot_node_runs:  # trained on its node for its speed, never evaluated
            hours.pop(f"eval:{run}")
        if "speed" in pilot:
            hours["speed:pilot"] = budget.pilot_speed_hours(scale, assumptions)
        for m, job in pilot_jobs.items():
            arch = architectures.of_model(scale, job["model"])
            hours[f"power:{m}"] = budget.pilot_power_hours(
                job,
                job["placement"],
                arch,
                assumptions,
                pilot["startup_minutes"],
                len(scope.power["benchmarks"]),
            )
    return hours


def job_spread(scope: Scope, power_study, assumptions: dict) -> dict[str, dict]:
    """Every study job's GPU-hours with its range, worst case and terms (paper.cost.ranges), as a rule's params; none at
    CPU (mini, small)."""
    if not scope.gpu:
        return {}
    return ranges.as_params(ranges.job_spread(scope.scale, power_study, assumptions))


def budget_source(scale: Scale, assumptions: dict, estimate: str) -> str:
    """Where the GPU-hours' MFUs come from, in words."""
    if not scale.kind.gpu:
        return f"no GPU-hours at {scale.name} scale (its jobs run on this machine's CPU)"
    S = scale.config
    gpu = f"{S['budget']['gpu']} hours"
    if assumptions.get("speed_laws"):
        return f"each architecture's FLOPs at its MFU by the GPU pilot's speed laws ({estimate}), {gpu}"
    if assumptions is not S["budget"]:
        return f"each architecture's FLOPs at the MFUs the GPU pilot measured at its one model size ({estimate}), {gpu}"
    return (
        f"each architecture's update FLOPs and decoding roofline at the efficiencies of config.yaml paper.budget, "
        f"assumed, {gpu}"
    )


def built_artifacts(claims: list[dict], selection, chosen: bool, buildable: list[str]) -> list[str]:
    return sorted({c["measure"]["artifact"] for c in claims if c["id"] in selection.claims}) if chosen else buildable


def study_runs(selection, chosen: bool, runs: list[str]) -> list[str]:
    return claim_plan.runs_of(selection.jobs) if chosen else runs


def study_power_methods(selection, chosen: bool, methods: dict) -> list[str]:
    return claim_plan.methods_of(selection.jobs) if chosen else list(methods)


def study_models(scope: Scope, chosen: bool, runs: list[str], power_methods: list[str]) -> list[str]:
    if not chosen:
        return scope.models
    return sorted({scope.scale.runs[r].model for r in runs} | ({scope.power["model"]} if power_methods else set()))


def evaluated_runs(scale: Scale, claims: list[dict], selection, chosen: bool) -> list[str]:
    """The runs evaluated on the test benchmarks, with their replicates: those of an artifact that shows test
    accuracy (Table 2) or that a claim of the ledger measures on it (study.artifacts.evaluated), of the claims judged.
    The other runs' figures and claims read their validation curves; `snakemake evaluations` evaluates every run."""
    if chosen:
        return claim_plan.evaluations_of(selection.jobs)
    runs = {
        run
        for name in artifacts.evaluated(claims)
        if name in scale.config["artifacts"]
        for run in artifact_runs(scale, name)
    }
    return with_replicates(scale, sorted(runs))
