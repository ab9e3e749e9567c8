"""The GPU pilot (rules/pilot.smk, config.yaml paper.pilot): what it costs, stated before anything is submitted; its
jobs as its report reads them; what its speed job and its report read; and the report of a pilot that failed
(the Snakefile's ``onerror``)."""

from __future__ import annotations

import sys

from ..core import spec as run_spec
from ..paper.cost import pilot_measures, pilot_report
from .scope import NODE_RUN, run_gpus, run_model, run_model_spec
from .stamps import canonical

# paths.smk's templates the pilot's stages name
STAGE_PATHS = ("MODEL_DIR", "MODEL_LOG", "RUN_PREFLIGHT", "RUN_PREFLIGHT_LOG", "RUN_METRICS", "RUN_FINAL", "TRAIN_LOG",
               "RUN_CHECKPOINTS", "EVAL_PREFLIGHT", "EVAL_PREFLIGHT_LOG", "EVAL_SUMMARY", "EVAL_LOG", "POWER_SAMPLES",
               "POWER_LOG", "PILOT_SPEED", "PILOT_SPEED_LOG")  # fmt: skip


def jobs(pilot: dict, pilot_runs: list[str], pilot_jobs: dict) -> list[str]:
    """The pilot's GPU jobs, by paper.cost.budget's names."""
    out = [f"train:{r}" for r in pilot_runs] + [f"eval:{r}" for r in pilot_runs] + [f"power:{m}" for m in pilot_jobs]
    return out + (["speed:pilot"] if "speed" in pilot else []) + [f"train:{r}" for r in node_runs(pilot)]


def node_runs(pilot: dict) -> list[str]:
    """The speed run trained on its own node (pipeline.scope.node_run), where paper.pilot.speed.node asks for it."""
    return [NODE_RUN] if pilot.get("speed", {}).get("node") else []


def plan_message(S: dict, pilot: dict, pilot_runs: list[str], pilot_jobs: dict, job_hours: dict, assumptions: dict) -> str:
    """The pilot's GPU jobs and what they cost, stated before anything is submitted."""
    names = jobs(pilot, pilot_runs, pilot_jobs)
    gpus = {r: run_gpus(S, r) for r in pilot_runs + node_runs(pilot)}
    total = sum(job_hours[j] for j in names)
    lines = [f"GPU pilot: {len(names)} GPU jobs on {max(gpus.values())} GPU(s) each at most, {total:.2f} GPU-hours"
             f" (each architecture's FLOPs at {assumptions['train_mfu']:.0%}/{assumptions['rollout_mfu']:.0%} of"
             f" {assumptions['gpu']}'s {assumptions['gpu_peak_tflops']} TFLOPS, plus {pilot['startup_minutes']:g} min"
             " of start-up per launch, assumed; config.yaml paper.pilot)"]  # fmt: skip
    lines += [f"  {j}: {job_hours[j]:.2f} GPU-hours" for j in names]
    return "\n".join(lines)


def stages(S: dict, pilot: dict, pilot_runs: list[str], pilot_jobs: dict, paths: dict[str, str]) -> list[dict]:
    """The pilot's jobs as the report reads them (paper.cost.pilot_measures.Stage): each one's log, outputs and GPUs
    (``paths``: paths.smk's templates named in STAGE_PATHS)."""
    p = paths
    run = pilot_runs[0]
    model, placement = run_model(S, run), run_model_spec(S, run)
    out = [
        {"name": "download_model", "job": model, "log": p["MODEL_LOG"].format(model=model),
         "outputs": [p["MODEL_DIR"].format(model=model)], "gpus": 0},
        {"name": "preflight", "job": run, "log": p["RUN_PREFLIGHT_LOG"].format(run=run),
         "outputs": [p["RUN_PREFLIGHT"].format(run=run)], "gpus": 0},
        {"name": "train_verl", "job": run, "log": p["TRAIN_LOG"].format(run=run),
         "outputs": [p["RUN_METRICS"].format(run=run), p["RUN_FINAL"].format(run=run)],
         "gpus": placement["nodes"] * placement["gpus_per_node"], "verl_logs_dir": p["RUN_CHECKPOINTS"].format(run=run)},
        {"name": "preflight_eval", "job": run, "log": p["EVAL_PREFLIGHT_LOG"].format(run=run),
         "outputs": [p["EVAL_PREFLIGHT"].format(run=run)], "gpus": 0},
        {"name": "evaluate_vllm", "job": run, "log": p["EVAL_LOG"].format(run=run),
         "outputs": [p["EVAL_SUMMARY"].format(run=run)], "gpus": placement["tensor_parallel"]},
    ]  # fmt: skip
    out += [{"name": "power_sample_vllm", "job": m, "log": p["POWER_LOG"].format(method=m),
             "outputs": [p["POWER_SAMPLES"].format(method=m)], "gpus": job["placement"]["tensor_parallel"]}
            for m, job in pilot_jobs.items()]  # fmt: skip
    if "speed" in pilot:
        out.append({"name": "pilot_speed", "job": ", ".join(pilot["speed"]["sizes"]), "log": p["PILOT_SPEED_LOG"],
                    "outputs": [p["PILOT_SPEED"]], "gpus": 1})  # fmt: skip
    out += [{"name": "train_verl", "job": r, "log": p["TRAIN_LOG"].format(run=r), "outputs": [p["RUN_METRICS"].format(run=r)],
             "gpus": run_gpus(S, r), "verl_logs_dir": p["RUN_CHECKPOINTS"].format(run=r)} for r in node_runs(pilot)]  # fmt: skip
    return out


def speed_scope(S: dict, pilot: dict) -> dict:
    """What the pilot's speed job reads: its settings, the shapes it builds, the run whose command builds the worker,
    the budget's lengths and the site's verl overrides."""
    speed, run = pilot["speed"], run_spec.run_scope(S, pilot["speed"]["run"])
    return canonical({
        **run,
        "pilot": {"speed": speed, "startup_minutes": pilot["startup_minutes"]},
        "architectures": {m: S["architectures"][m] for m in speed["sizes"]},
        "models": {**run["models"], **{m: S["models"][m] for m in speed["sizes"]}},
        "budget": S["budget"], "data": S["data"], "launch": S.get("launch", {}),
    })  # fmt: skip


def report_scope(S: dict) -> dict:
    """What the report's re-estimate of the study reads: the runs, their models, architectures and settings, the
    benchmarks' sizes and the budget (config.yaml paper.budget)."""
    keys = ("runs", "models", "architectures", "train", "treatments", "recipes", "budget", "lr_reference_width")
    return canonical({**{k: S[k] for k in keys if k in S}, "data": {"benchmarks": S["data"]["benchmarks"]}})


def targeted(targets) -> bool:
    """Whether the command line names the pilot."""
    return "pilot" in (targets or ())


def write_failed_report(S: dict, pilot: dict, pilot_runs: list[str], pilot_jobs: dict, paths: dict[str, str]) -> None:
    """The report of a pilot that failed: the stages that ran, and the log of the one that did not (``paths``:
    paths.smk's templates, STAGE_PATHS and PILOT_REPORT, PILOT_REPORT_HTML, PILOT_FAILED)."""
    try:
        done = [pilot_measures.Stage(**stage) for stage in stages(S, pilot, pilot_runs, pilot_jobs, paths)]
        pilot_report.write(done, report_scope(S), paths["PILOT_REPORT"], paths["PILOT_REPORT_HTML"], paths["PILOT_FAILED"])
        print(f"pilot: a stage failed; the report of what ran is in {paths['PILOT_REPORT']}", file=sys.stderr)
    except Exception as err:  # the report must not hide the error that ended the run
        print(f"pilot: no report written ({type(err).__name__}: {err})", file=sys.stderr)
