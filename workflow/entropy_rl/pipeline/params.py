"""The params and inputs the rules build from the scale config beyond one run: the benchmarks' protocols and
names, each artifact's inputs and params (study.inputs.Inputs), the audit's params, the power preflight's scope,
the hub's lock files and the report's labels. Paths are core.paths' templates."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import paths
from ..core import run as resolved
from ..core import spec as run_spec
from ..study import artifacts
from .scope import artifact_runs, run_label, run_model, with_replicates
from .stamps import canonical

if TYPE_CHECKING:
    from .plan import StudyPlan

REPORT_LABEL = "rule · where in the paper"  # the one label of each row of `snakemake --report` (report_labels)


def protocols(S: dict, benchmarks: list[str]) -> dict:
    return canonical({b: S["data"]["benchmarks"][b]["protocol"] for b in benchmarks})


def run_settings(S: dict, run: str) -> dict:
    return canonical(resolved.resolve(S, run).params())


def benchmark_names(S: dict) -> dict:
    """Table 2's columns, the math benchmarks (as the paper's): a mini benchmark says which paper benchmark it stands in for."""
    spec = S["data"]["benchmarks"]
    return {b: f"{b} ({spec[b]['plays']})" if "plays" in spec[b] else b for b in run_spec.domain_benchmarks(S, "math")}


def artifact_inputs(plan: StudyPlan, name: str) -> dict:
    """Only what the artifact reads (its registered ``reads``), every replicate of each: its runs' metrics (or
    evaluations) and their models' configs, or the answers of the power-sampling methods it draws (a power
    artifact's); and its code stamp."""
    artifact = artifacts.ARTIFACTS[name]
    inputs = {"code": plan.code(name, *artifact.modules)}
    if artifact.power:
        return inputs | {"samples": plan.power_samples(plan.power_study.drawn(artifact.methods))}
    S = plan.S
    runs = with_replicates(S, artifact_runs(S, name))
    if "metrics" in artifact.reads:
        inputs["metrics"] = [paths.RUN_METRICS.format(run=r) for r in runs]
    if "eval" in artifact.reads:
        inputs["summaries"] = [paths.EVAL_SUMMARY.format(run=r) for r in runs]
    if "models" in artifact.reads:
        inputs["models"] = [paths.MODEL_DIR.format(model=run_model(S, r)) for r in runs]
    return inputs


def artifact_params(plan: StudyPlan, name: str) -> dict:
    """What the artifact's function reads beside its inputs (study.inputs.Inputs): labels and caption, the order
    of its input files (run or method -> replicates), and the runs' settings or the methods' sampling settings."""
    scope, power_study, S = plan.scope, plan.power_study, plan.S
    if artifacts.ARTIFACTS[name].power:
        methods = power_study.drawn(artifacts.ARTIFACTS[name].methods)
        return {
            "replicates": {m: power_study.seeds(m) for m in methods},
            "labels": dict(power_study.labels),
            "pass_k": scope.power["pass_k"],
            "settings": {m: power_study.methods[m] for m in methods},
            "caption": power_study.caption(artifacts.ARTIFACTS[name].what, scope.scale),
        }
    runs = artifact_runs(S, name)
    specs = {r: resolved.resolve(S, r) for r in runs}
    labels = {r: run_label(S, r) for r in runs}
    replicates = {r: run_spec.replicates(S["runs"], r) for r in runs}
    shared_base = None  # said only where a base model is pre-trained (mini) and a run has several seeds
    if "pretrain" in S and any(len(reps) > 1 for reps in replicates.values()):
        shared_base = all(len({S["runs"][rep]["model"] for rep in reps}) == 1 for reps in replicates.values())
    return {
        "runs": runs,
        "replicates": replicates,
        "labels": labels,
        "specs": canonical({r: s.params() for r, s in specs.items()}),
        "fit_steps": S["analysis"]["early_fit_steps"],
        "benchmark_names": benchmark_names(S),
        "caption": artifacts.caption(name, scope.scale, specs, labels, shared_base),
    }


def audit_params(plan: StudyPlan) -> dict:
    """Per-run settings and the benchmark facts the audit's tolerances need; never the whole config.
    The power-sampling study (when the scale has one): its methods and their settings, which method
    plays which role, the methods each of its artifacts draws, problems answered per benchmark and
    answers per problem; the runs, evaluated runs and models of the claims judged; and the claims left out with
    their GPU-hours, when claims are chosen."""
    scope, power_study, S, power = plan.scope, plan.power_study, plan.S, plan.power
    not_run = plan.not_run if plan.selecting else None
    bench = S["data"]["benchmarks"]
    val = S["train"]["val_protocol"]["n"]
    power_params = {}
    if power:
        power_params = {
            "model": power["model"],
            "methods": power_study.methods,
            "runs": power["runs"],
            "artifacts": {name: power_study.drawn(artifacts.ARTIFACTS[name].methods) for name in artifacts.POWER},
            "problems": power_study.problems(bench),
            "n": power["n"],
        }
    return {
        "scale": scope.scale,
        "runs": plan.study_runs,  # the runs whose metrics it reads, in its input's order
        "evaluated": plan.evaluated_runs,  # the runs whose evaluation summaries it reads, in its input's order
        "models": plan.study_models,
        "artifacts": {name: artifact_runs(S, name) for name in scope.artifact_names},
        "specs": canonical({r: resolved.resolve(S, r).params() for r in scope.runs}),
        "fit_steps": S["analysis"]["early_fit_steps"],
        # problems per benchmark of Table 2 (math), and validation samples per benchmark at each validation step
        "bench_sizes": {b: bench[b]["size"] for b in run_spec.domain_benchmarks(S, "math")},
        "val_samples": {
            b: min(bench[b]["size"], S["train"].get("val_size", bench[b]["size"])) * val for b in scope.benchmarks
        },
        "plays": {b: bench[b]["plays"] for b in scope.benchmarks if "plays" in bench[b]},
        "power": canonical(power_params),
        # the claims left out of this study (--config claims=... or budget_gpu_hours=...), with the GPU-hours of
        # the jobs each would add (none at mini scale)
        "not_run": canonical({c: round(h, 1) for c, h in not_run.items()}) if not_run is not None else {},
    }


def lock_file(S: dict, repo_id: str) -> str:
    """One lock file per hub repository, so parallel downloads never write the same file."""
    return os.path.join(S["hub"]["lock"], "--".join(Path(repo_id).parts) + ".yaml")


# What the power study's preflight reads of its model's entry (paper.preflight.engines, kind power): the engine's
# tensor-parallel size and prompt format. Training's fields (nodes, gpus_per_node, max_token_len_per_gpu, train_data)
# are no part of it: their edits must not rerun the preflight, which reruns every sampling job after it.
POWER_ENGINE_FIELDS = ("tensor_parallel", "chat_template")


def preflight_power_scope(S: dict) -> dict:
    """What the power study's preflight reads: its model's engine fields, the prompt length and the answers' length."""
    power = S["power_sampling"]
    entry = S["models"][power["model"]]
    return canonical(
        {
            "runs": {},
            "models": {power["model"]: {k: entry[k] for k in POWER_ENGINE_FIELDS if k in entry}},
            "data": {"max_prompt_length": S["data"]["max_prompt_length"]},
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
