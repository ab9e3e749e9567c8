"""The params and inputs the rules build from the scale config beyond one run: the benchmarks' protocols and
names, each artifact's inputs and params (study.inputs.Inputs), the audit's params, the power preflight's scope,
the hub's lock files and the report's labels. Paths are core.paths' templates."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import paths
from ..core.scale import Scale
from ..study import artifacts
from .scope import artifact_runs, run_label, with_replicates
from .stamps import canonical

if TYPE_CHECKING:
    from .plan import StudyPlan

REPORT_LABEL = "rule · where in the paper"  # the one label of each row of `snakemake --report` (report_labels)


def protocols(scale: Scale, benchmarks: list[str]) -> dict:
    return canonical({b: dataclasses.asdict(scale.benchmarks[b].protocol) for b in benchmarks})


def run_settings(scale: Scale, run: str) -> dict:
    return canonical(scale.runs[run].params())


def benchmark_names(scale: Scale) -> dict:
    """Table 2's columns, the math benchmarks (as the paper's): a mini benchmark says which paper benchmark it stands in for."""
    benchmarks = scale.benchmarks
    return {b: f"{b} ({benchmarks[b].plays})" if benchmarks[b].plays else b for b in scale.domain_benchmarks("math")}


def artifact_inputs(plan: StudyPlan, name: str) -> dict:
    """Only what the artifact reads (its registered ``reads``), every replicate of each: its runs' metrics (or
    evaluations) and their models' configs, or the answers of the power-sampling methods it draws (a power
    artifact's); and its code stamp."""
    artifact = artifacts.ARTIFACTS[name]
    inputs = {"code": plan.code(name, *artifact.modules)}
    if artifact.power:
        return inputs | {"samples": plan.power_samples(plan.power_study.drawn(artifact.methods))}
    scale = plan.scale
    runs = with_replicates(scale, artifact_runs(scale, name))
    if "metrics" in artifact.reads:
        inputs["metrics"] = [paths.RUN_METRICS.format(run=r) for r in runs]
    if "eval" in artifact.reads:
        inputs["summaries"] = [paths.EVAL_SUMMARY.format(run=r) for r in runs]
    if "models" in artifact.reads:
        inputs["models"] = [paths.MODEL_DIR.format(model=scale.runs[r].model) for r in runs]
    return inputs


def artifact_params(plan: StudyPlan, name: str) -> dict:
    """What the artifact's function reads beside its inputs (study.inputs.Inputs): labels and caption, the order
    of its input files (run or method -> replicates), and the runs' settings or the methods' sampling settings."""
    scope, power_study, scale = plan.scope, plan.power_study, plan.scale
    if artifacts.ARTIFACTS[name].power:
        methods = power_study.drawn(artifacts.ARTIFACTS[name].methods)
        return {
            "replicates": {m: power_study.seeds(m) for m in methods},
            "labels": dict(power_study.labels),
            "pass_k": scope.power["pass_k"],
            "settings": {m: power_study.methods[m] for m in methods},
            "caption": power_study.caption(artifacts.ARTIFACTS[name].what, scope.scale.name),
        }
    runs = artifact_runs(scale, name)
    specs = {r: scale.runs[r] for r in runs}
    labels = {r: run_label(scale, r) for r in runs}
    replicates = {r: scale.replicates(r) for r in runs}
    shared_base = None  # said only where a base model is pre-trained (mini) and a run has several seeds
    if "pretrain" in scale.config and any(len(reps) > 1 for reps in replicates.values()):
        shared_base = all(len({scale.runs[rep].model for rep in reps}) == 1 for reps in replicates.values())
    return {
        "runs": runs,
        "replicates": replicates,
        "labels": labels,
        "specs": canonical({r: s.params() for r, s in specs.items()}),
        "fit_steps": scale.config["analysis"]["early_fit_steps"],
        "benchmark_names": benchmark_names(scale),
        "caption": artifacts.caption(name, scope.scale.name, specs, labels, shared_base),
    }


def audit_params(plan: StudyPlan) -> dict:
    """Per-run settings and the benchmark facts the audit's tolerances need; never the whole config.
    The power-sampling study (when the scale has one): its methods and their settings, which method
    plays which role, the methods each of its artifacts draws, problems answered per benchmark and
    answers per problem; the runs, evaluated runs and models of the claims judged; and the claims left out with
    their GPU-hours, when claims are chosen."""
    scope, power_study, scale, power = plan.scope, plan.power_study, plan.scale, plan.power
    not_run = plan.not_run if plan.selecting else None
    bench = scale.benchmarks
    val = scale.config["train"]["val_protocol"]["n"]
    power_params = {}
    if power:
        power_params = {
            "model": power["model"],
            "methods": power_study.methods,
            "runs": power["runs"],
            "artifacts": {name: power_study.drawn(artifacts.ARTIFACTS[name].methods) for name in artifacts.POWER},
            "problems": power_study.problems(scale.config["data"]["benchmarks"]),
            "n": power["n"],
        }
    return {
        "scale": scope.scale.name,
        "runs": plan.study_runs,  # the runs whose metrics it reads, in its input's order
        "evaluated": plan.evaluated_runs,  # the runs whose evaluation summaries it reads, in its input's order
        "models": plan.study_models,
        "artifacts": {name: artifact_runs(scale, name) for name in scope.artifact_names},
        "specs": canonical({r: scale.runs[r].params() for r in scope.runs}),
        "fit_steps": scale.config["analysis"]["early_fit_steps"],
        # problems per benchmark of Table 2 (math), and validation samples per benchmark at each validation step
        "bench_sizes": {b: bench[b].size for b in scale.domain_benchmarks("math")},
        "val_samples": {
            b: min(bench[b].size, scale.config["train"].get("val_size", bench[b].size)) * val for b in scope.benchmarks
        },
        "plays": {b: bench[b].plays for b in scope.benchmarks if bench[b].plays},
        "power": canonical(power_params),
        # the claims left out of this study (--config claims=... or budget_gpu_hours=...), with the GPU-hours of
        # the jobs each would add (none at mini scale)
        "not_run": canonical({c: round(h, 1) for c, h in not_run.items()}) if not_run is not None else {},
    }


def lock_file(scale: Scale, repo_id: str) -> str:
    """One lock file per hub repository, so parallel downloads never write the same file."""
    return os.path.join(scale.config["hub"]["lock"], "--".join(Path(repo_id).parts) + ".yaml")


# What the power study's preflight reads of its model's entry (paper.preflight.engines, kind power): the engine's
# tensor-parallel size and prompt format. Training's fields (nodes, gpus_per_node, max_token_len_per_gpu, train_data)
# are no part of it: their edits must not rerun the preflight, which reruns every sampling job after it.
POWER_ENGINE_FIELDS = ("tensor_parallel", "chat_template")


def preflight_power_scope(scale: Scale) -> dict:
    """What the power study's preflight reads: its model's engine fields, the prompt length and the answers' length."""
    power = scale.config["power_sampling"]
    model = scale.models[power["model"]]
    engine = {"tensor_parallel": model.placement.tensor_parallel, "chat_template": model.chat_template}
    return canonical(
        {
            "runs": {},
            "models": {power["model"]: {k: engine[k] for k in POWER_ENGINE_FIELDS}},
            "data": {"max_prompt_length": scale.config["data"]["max_prompt_length"]},
            "power_sampling": {"model": power["model"], "max_new_tokens": power["max_new_tokens"]},
        }
    )


def report_labels(name: str) -> dict:
    """An artifact's row in `snakemake --report`: its rule (what `snakemake <rule>` draws again, and the order the
    rows sort in: the report compares labels as text, so "Figure 12" would come before "Figure 2") and where in the
    paper. One label: the report takes a second label with two values, one on each of two rows (as Tables' two
    rows have), for a toggle, and then shows neither (Snakemake 9.27). A longer label would widen the menu over
    the page it opens; the caption is one click away."""
    return {REPORT_LABEL: f"{name} · {artifacts.ARTIFACTS[name].source}"}
