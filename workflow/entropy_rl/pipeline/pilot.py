"""The GPU pilot (rules/pilot.smk, config.yaml paper.pilot): what it costs, stated before anything is submitted; its
jobs as its report reads them; what its speed job and its report read; and the report of a pilot that failed
(the Snakefile's ``onerror``)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ..core import paths
from ..core import spec as run_spec
from ..paper.cost import pilot_measures, pilot_report
from .gpu_rules import EVALUATE, POWER, SPEED, TRAIN
from .stamps import canonical

if TYPE_CHECKING:
    from ..core.scale import Scale
    from .plan import StudyPlan


def jobs(plan: StudyPlan) -> list[str]:
    """The pilot's GPU jobs, by their names in the estimate (pipeline.gpu_rules)."""
    runs, pilot = plan.pilot_runs, plan.pilot
    out = [TRAIN.job(r) for r in runs] + [EVALUATE.job(r) for r in runs] + [POWER.job(m) for m in plan.pilot_methods]
    return out + ([SPEED.job()] if "speed" in pilot else []) + [TRAIN.job(r) for r in plan.scope.pilot_node_runs]


def plan_message(plan: StudyPlan) -> str:
    """The pilot's GPU jobs and what they cost, stated before anything is submitted."""
    scale, pilot, job_hours, assumptions = plan.scale, plan.pilot, plan.job_hours, plan.budget
    names = jobs(plan)
    gpus = {r: scale.placement(r).gpus for r in plan.pilot_runs + plan.scope.pilot_node_runs}
    total = sum(job_hours[j] for j in names)
    head = (
        f"GPU pilot: {len(names)} GPU jobs on {max(gpus.values())} GPU(s) each at most, {total:.2f} GPU-hours"
        f" (each architecture's FLOPs at {assumptions['train_mfu']:.0%}/{assumptions['rollout_mfu']:.0%} of"
        f" {assumptions['gpu']}'s {assumptions['gpu_peak_tflops']} TFLOPS, plus {pilot['startup_minutes']:g} min"
        " of start-up per launch, assumed; config.yaml paper.pilot)"
    )
    lines = [head]
    lines += [f"  {j}: {job_hours[j]:.2f} GPU-hours" for j in names]
    return "\n".join(lines)


def stages(plan: StudyPlan) -> list[dict]:
    """The pilot's jobs as the report reads them (paper.cost.pilot_measures.Stage): each one's log, outputs and GPUs."""
    p, scale, run = paths, plan.scale, plan.pilot_runs[0]
    model, placement = plan.run_model(run), scale.placement(run)
    gpus = placement.gpus
    out = [
        stage("download_model", model, p.MODEL_LOG.format(model=model), [p.MODEL_DIR.format(model=model)], 0),
        stage("preflight", run, p.RUN_PREFLIGHT_LOG.format(run=run), [p.RUN_PREFLIGHT.format(run=run)], 0),
        stage(
            TRAIN.name,
            run,
            p.TRAIN_LOG.format(run=run),
            [p.RUN_METRICS.format(run=run), p.RUN_FINAL.format(run=run)],
            gpus,
            verl_logs_dir=p.RUN_CHECKPOINTS.format(run=run),
        ),
        stage("preflight_eval", run, p.EVAL_PREFLIGHT_LOG.format(run=run), [p.EVAL_PREFLIGHT.format(run=run)], 0),
        stage(
            EVALUATE.name,
            run,
            p.EVAL_LOG.format(run=run),
            [p.EVAL_SUMMARY.format(run=run)],
            placement.tensor_parallel,
        ),
    ]
    out += [
        stage(
            POWER.name,
            m,
            p.POWER_LOG.format(method=m),
            [p.POWER_SAMPLES.format(method=m)],
            job["placement"].tensor_parallel,
        )
        for m, job in plan.pilot_methods.items()
    ]
    if "speed" in plan.pilot:
        sizes = ", ".join(plan.pilot["speed"]["sizes"])
        out.append(stage(SPEED.name, sizes, p.PILOT_SPEED_LOG, [p.PILOT_SPEED], 1))
    out += [
        stage(
            TRAIN.name,
            r,
            p.TRAIN_LOG.format(run=r),
            [p.RUN_METRICS.format(run=r)],
            scale.placement(r).gpus,
            verl_logs_dir=p.RUN_CHECKPOINTS.format(run=r),
        )
        for r in plan.scope.pilot_node_runs
    ]
    return out


def stage(name: str, job: str, log: str, outputs: list[str], gpus: int, **more) -> dict:
    return {"name": name, "job": job, "log": log, "outputs": outputs, "gpus": gpus, **more}


def speed_scope(scale: Scale, pilot: dict) -> dict:
    """What the pilot's speed job reads: its settings, the models whose shapes it builds, the run whose command builds the worker,
    the budget's lengths and the site's verl overrides."""
    S = scale.config
    speed, run = pilot["speed"], run_spec.run_scope(S, pilot["speed"]["run"])
    return canonical(
        {
            **run,
            "pilot": {"speed": speed, "startup_minutes": pilot["startup_minutes"]},
            "models": {**run["models"], **{m: S["models"][m] for m in speed["sizes"]}},
            "budget": S["budget"],
            "data": S["data"],
            "launch": S.get("launch", {}),
        }
    )


def report_scope(scale: Scale) -> dict:
    """What the report's re-estimate of the study reads: the runs, their models (with their shapes) and settings, the
    benchmarks' sizes and the budget (config.yaml paper.budget)."""
    S = scale.config
    keys = ("runs", "models", "train", "treatments", "recipes", "budget", "lr_reference_width")
    return canonical({**{k: S[k] for k in keys if k in S}, "data": {"benchmarks": S["data"]["benchmarks"]}})


def targeted(targets) -> bool:
    """Whether the command line names the pilot."""
    return "pilot" in (targets or ())


def write_failed_report(plan: StudyPlan) -> None:
    """The report of a pilot that failed (the Snakefile's ``onerror``), when the command line named the pilot: the
    stages that ran, and the log of the one that did not."""
    if not plan.pilot or not targeted(plan.workflow.targets()):
        return
    try:
        done = [pilot_measures.Stage(**s) for s in stages(plan)]
        pilot_report.write(done, plan.scale, paths.PILOT_REPORT, paths.PILOT_REPORT_HTML, paths.PILOT_FAILED)
        print(f"pilot: a stage failed; the report of what ran is in {paths.PILOT_REPORT}", file=sys.stderr)
    except Exception as err:  # the report must not hide the error that ended the run
        print(f"pilot: no report written ({type(err).__name__}: {err})", file=sys.stderr)
