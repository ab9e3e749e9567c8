# Cluster concerns, paper scale: the SLURM jobs' environment without the hub token, the hub-access
# check, the GPU-hours estimate, each training run's SLURM resources and the launch preflight, all
# before any job is submitted. Included after common.smk (it reads its constants and templates).
import functools
import hashlib
import os
import sys
import time
from pathlib import Path

from snakemake.exceptions import WorkflowError

from entropy_rl.core import spec as run_spec
from entropy_rl.paper.cost import budget
from entropy_rl.paper import hub
from entropy_rl.paper.cost import paid_work
from entropy_rl.paper.cost import pilot_measures
from entropy_rl.paper.cost import pilot_report
from entropy_rl.paper import preflight

# ---- SLURM jobs never see the hub token -----------------------------------------------------
# snakemake-executor-plugin-slurm submits every job with `sbatch --export=ALL` and refuses
# `--export` in slurm_extra, so a job would get the submitting shell's HF_TOKEN, and slurmctld
# would keep it in the job's saved environment. `sbatch --export-file` makes the environment
# sbatch submits the file's alone: the main process writes its own there, less the token
# variables, before the first submission, and deletes it when the run ends. Every SLURM job's
# slurm_extra carries the flag: the profile's default-resources (slurm/config.yaml, this same
# string) and any rule that sets its own (train_resources). Only the local download rules, run
# by the main process, see the token.
SLURM_JOB_ENV = ".snakemake/slurm_job_environment"
SLURM_JOB_ENV_FLAG = f"--export-file={SLURM_JOB_ENV}"


onstart:
    paid_work_guard()
    check_retrained_launches()
    if not workflow.local_exec:
        hub.write_environment_without_token(SLURM_JOB_ENV)


onsuccess:
    Path(SLURM_JOB_ENV).unlink(missing_ok=True)


onerror:
    Path(SLURM_JOB_ENV).unlink(missing_ok=True)
    if PILOT and "pilot" in (workflow.dag_settings.targets or ()):
        write_pilot_report()  # pilot.smk: a failed pilot still reports what ran


# ---- hub downloads: a gated repository needs the token ----------------------------------------


def check_hub_access():
    """A gated repository still to download, with no token: stop before any job is submitted."""
    mirror = S["hub"]["mirror"]
    downloads = [(MODEL_DIR.format(model=name), entry) for name, entry in S["models"].items()]
    downloads += [(SOURCE_DIR.format(source=name), entry) for name, entry in S["data"]["sources"].items()]
    for dest, entry in downloads:
        staged = mirror and os.path.isdir(os.path.join(mirror, entry["hub"]))
        if not os.path.exists(dest) and not staged:
            hub.require_token(entry["hub"], entry.get("gated", False))


# Only in the process the user started: SLURM jobs (--mode remote) and local subprocess jobs
# (--mode subprocess) parse the Snakefile again, without the token, while a gated download may
# still be running on the submitting host.
if not MINI and workflow.is_main_process:
    check_hub_access()


# ---- the GPU-hours estimate (entropy_rl.paper.cost.budget) and SLURM resources ----------------------


def train_hours(run):
    return JOB_HOURS[f"train:{run}"]


def eval_hours(run):
    return JOB_HOURS[f"eval:{run}"]


def power_hours(method):
    return JOB_HOURS[f"power:{method}"]


@functools.cache
def train_resources(run):
    """Whole nodes for a run (8 CPUs and 64 GB per GPU), requeueable, for the estimated time."""
    model = run_model_spec(run)
    gpus = model["nodes"] * model["gpus_per_node"]
    return {
        "nodes": model["nodes"],
        "gpu": gpus,
        "cpus_per_task": 8 * model["gpus_per_node"],
        "mem_mb_per_cpu": 8000,
        "slurm_extra": f"--requeue {SLURM_JOB_ENV_FLAG}",  # one dict per run, cached: six resource lambdas read it
        "runtime": budget.runtime_minutes(train_hours(run), gpus, BUDGET["walltime_margin"]),
    }


def engine_resources(gpus, hours):
    """A vLLM job's SLURM resources, the evaluation's and the power sampling's alike: ``gpus(wildcards)`` GPUs (the
    engine's tensor-parallel size; SLURM packs other jobs on the node's rest), 8 CPUs and 64 GB per GPU, for
    ``hours(wildcards)`` GPU-hours spread over them, times the margin of paper.budget."""
    return {
        "gpu": gpus,
        "cpus_per_task": lambda wc: 8 * gpus(wc),
        "mem_mb_per_cpu": 8000,
        "runtime": lambda wc: budget.runtime_minutes(hours(wc), gpus(wc), BUDGET["walltime_margin"]),
    }


# ---- before any job: the estimate and the launch preflight, for what the targets need ----------


def requested_runs():
    """The runs the command line's targets need and that have not finished training."""
    targets = workflow.dag_settings.targets or {"all"}
    wanted = set()
    for target in targets:
        if target in ("all", "audit", "fit_table") or target.endswith("fits.csv") or target.startswith("results/audit"):
            wanted |= set(STUDY_RUNS)  # the claims judged (all, unless --config claims=... or budget_gpu_hours=...)
        if target == "evaluations":
            wanted |= set(RUNS)
        if target == "pilot":
            wanted |= set(PILOT_RUNS)
        parts = Path(target).parts
        wanted |= {run for run in RUNS if run in parts or Path(target).stem == run}
        for name, spec in S["artifacts"].items():
            if name in target:
                wanted |= set(spec["runs"])
    return sorted(r for r in wanted if not os.path.exists(RUN_METRICS.format(run=r)))


def requested_power_methods():
    """The power-sampling jobs the command line's targets need whose samples do not exist yet."""
    targets = workflow.dag_settings.targets or {"all"}
    if not POWER or not any(t in ("all", "audit") or "power" in t or t.startswith("results/audit") for t in targets):
        return []
    return [m for m in STUDY_POWER_METHODS if not os.path.exists(POWER_SAMPLES.format(method=m))]


def pilot_plan():
    """The pilot's GPU jobs and what they cost, stated before anything is submitted."""
    jobs = [f"train:{r}" for r in PILOT_RUNS] + [f"eval:{r}" for r in PILOT_RUNS] + [f"power:{m}" for m in PILOT_METHODS]
    jobs += ["speed:pilot"] if "speed" in PILOT else []
    gpus = {r: run_model_spec(r)["nodes"] * run_model_spec(r)["gpus_per_node"] for r in PILOT_RUNS}
    total = sum(JOB_HOURS[j] for j in jobs)
    lines = [f"GPU pilot: {len(jobs)} GPU jobs on {max(gpus.values())} GPU(s) each at most, {total:.2f} GPU-hours"
             f" (FLOPs at {BUDGET['train_mfu']:.0%}/{BUDGET['rollout_mfu']:.0%} of {BUDGET['gpu_peak_tflops']} TFLOPS,"
             f" plus {PILOT['startup_minutes']:g} min of start-up per launch, assumed; config.yaml paper.pilot)"]  # fmt: skip
    lines += [f"  {j}: {JOB_HOURS[j]:.2f} GPU-hours" for j in jobs]
    return "\n".join(lines)


def print_gpu_budget():
    if "pilot" in (workflow.dag_settings.targets or ()):
        print(pilot_plan(), file=sys.stderr)
    runs, methods = requested_runs(), requested_power_methods()
    runs = [r for r in runs if r not in PILOT_RUNS]  # the pilot's are stated above
    if not runs and not methods:
        return
    train = sum(train_hours(r) for r in runs)
    every = "evaluations" in (workflow.dag_settings.targets or ())  # else only the runs the study reads on the test sets
    evaluation = sum(eval_hours(r) for r in runs if every or r in EVALUATED_RUNS)
    power = sum(power_hours(m) for m in methods)
    print(budget.estimate_message(len(runs), train, evaluation, len(methods), power, BUDGET), file=sys.stderr)
    if BUDGET is not S["budget"]:
        print(f"  the MFUs are those the GPU pilot measured on this cluster ({PILOT_ESTIMATE}), not config.yaml's", file=sys.stderr)
    if SELECTING:
        print(f"judging {len(SELECTION.claims)} of {len(CLAIMS)} claims ({SELECTION.rule}); the audit lists the other"
              f" {len(NOT_RUN)} as not run", file=sys.stderr)  # fmt: skip


def check_launches(runs=None):
    """Before any job: every run still to train (or ``runs``), its exact verl command through verl's own validation,
    reward loader and loss plugin (the part of the preflight that needs no download)."""
    runs = requested_runs() if runs is None else runs
    if not runs:
        return
    started = time.perf_counter()
    failed = {run: preflight.launch_problems_cached(S, run, ".snakemake/preflight-launches") for run in runs}
    failed = {run: problems for run, problems in failed.items() if problems}
    seconds = time.perf_counter() - started  # verl imported and each new command checked; remembered ones cost nothing
    if failed:
        lines = [f"  {run}: {p}" for run, problems in failed.items() for p in problems]
        raise WorkflowError(f"preflight: {len(failed)} of {len(runs)} run(s) would fail at launch; nothing was submitted:\n" + "\n".join(lines))
    print(f"preflight: {len(runs)} run(s) to train composed and validated by verl, reward and loss plugin loaded"
          f" ({seconds:.1f} s)", file=sys.stderr)  # fmt: skip


def check_retrained_launches():
    """Before a finished run's training is submitted again: its launch checked with the code it will run, as
    check_launches does for a run still to train. Its preflight job runs again only when what it reads changes, not
    for a change of code alone (preflight.smk)."""
    if MINI or workflow.touch:
        return
    dag = workflow.dag
    check_launches(sorted(
        job.wildcards.run for job in dag.needrun_jobs() if job.rule.name == "train_verl"
        and not any(dag.needrun(dep) for dep in dag.dependencies[job] if dep.rule.name == "preflight")
    ))  # fmt: skip


_BUDGET_SHOWN = []


def show_budget_once():
    """The GPU-hours estimate and the launch preflight, once: input functions are evaluated while the DAG is built, after the
    command line's targets are known and before any job is submitted (a dry run included).
    train_data_with_budget and power_policy_with_budget call it."""
    if not _BUDGET_SHOWN:
        _BUDGET_SHOWN.append(True)
        print_gpu_budget()
        if workflow.is_main_process:
            check_launches()


def train_data_with_budget(wildcards):
    """run_train_data (common.smk), and the GPU-hours estimate the first time an input function asks."""
    show_budget_once()
    return run_train_data(wildcards)


def power_policy_with_budget(wildcards):
    """power_policy (common.smk), and at paper scale the GPU-hours estimate the first time an input function asks."""
    show_budget_once()
    return power_policy(wildcards)


# ---- paid work is never redone silently (entropy_rl.paper.cost.paid_work) ---------------------------


def job_gpu_hours(job):
    if job.rule.name == "train_verl":
        return train_hours(job.wildcards.run)
    if job.rule.name == "evaluate_vllm":
        return eval_hours(job.wildcards.run)
    return power_hours(job.wildcards.method)


def output_mintime(job):
    """The time of the job's oldest output (a directory's by the stamp Snakemake leaves in it)."""
    stamp = ".snakemake_timestamp"
    return min(os.path.getmtime(os.path.join(f, stamp) if os.path.isfile(os.path.join(f, stamp)) else f) for f in job.output)


def same_as_recorded(job, f):
    """Snakemake's own test: an input newer than the outputs but with the checksum recorded when the job ran."""
    recorded = workflow.persistence.input_checksums(job, f)
    return len(recorded) == 1 and recorded.pop() == f"sha256:{hashlib.sha256(Path(f).read_bytes()).hexdigest()}"


def rerun_causes(job, depth=0):
    """Why Snakemake would run a finished job again, in the terms of what changed: code (by module), settings (by
    key), inputs (and, for an input rebuilt first, why that is). Each is checked here rather than read from
    Snakemake's reason: once an upstream job is to run, Snakemake stops looking for a job's own reasons."""
    reason = workflow.dag.reason(job)
    oldest = output_mintime(job) if all(os.path.exists(f) for f in job.output) else None
    stamps = [f for f in job.input if f.startswith("results/code/") and oldest and os.path.getmtime(f) > oldest
              and not same_as_recorded(job, f)]  # fmt: skip
    causes = [c for f in stamps for c in paid_work.code_causes(f)]
    causes += [f"input newer than its outputs: {f}" for f in sorted(reason.updated_input) if f not in stamps]
    for dep, files in workflow.dag.dependencies[job].items():
        if workflow.dag.needrun(dep) and dep.rule.name in paid_work.GPU_RULES:  # listed, with its causes, itself
            causes.append(f"input rebuilt first by {dep.rule.name} {dep.wildcards.get('run') or dep.wildcards.get('method')}")
        elif workflow.dag.needrun(dep):
            why = "; ".join(rerun_causes(dep, depth + 1)) if depth < 3 else "..."
            causes += [f"input rebuilt first by {dep.rule.name}: {f} ({why})" for f in sorted(files)]
    if reason.missing_output:
        causes.append(f"outputs missing: {', '.join(sorted(reason.missing_output))}")
    script = os.path.join(job.rule.basedir, job.rule.script) if job.rule.script else None
    if oldest and script and os.path.getmtime(script) > oldest:
        causes.append(f"its script ({os.path.normpath(script)}) is newer than its outputs")
    recorded = workflow.persistence.params(job.output[0]) if oldest else None
    if recorded is not None and sorted(map(workflow.persistence._serialize_param, job.non_derived_params)) != sorted(recorded):
        causes += paid_work.param_causes(dict(job.params.items()), workflow.persistence._serialize_param, recorded)
    if reason.input_changed:
        causes.append("its set of input files changed")
    if reason.software_stack_changed:
        causes.append(f"its container changed ({job.container_img_url})")
    return list(dict.fromkeys(causes)) or [str(reason)]


def paid_work_guard():
    """At paper scale, before any job is submitted: stop if a GPU job whose outputs exist would run again, unless
    the user named it (--config rerun_paid=...), forced it (-R) or asked for all (rerun_paid=all)."""
    if MINI or workflow.touch:
        return
    outdated = []
    for job in workflow.dag.needrun_jobs():
        if job.rule.name not in paid_work.GPU_RULES or not all(os.path.exists(f) for f in job.output):
            continue
        reason = workflow.dag.reason(job)
        name = job.wildcards.get("run") or job.wildcards.get("method")
        if reason.forced or paid_work.allowed(name, config.get(paid_work.CONSENT_KEY)):
            continue
        outdated.append(paid_work.OutdatedJob(job.rule.name, name, job_gpu_hours(job), rerun_causes(job)))
    if outdated:
        raise WorkflowError(paid_work.message(outdated))


# ---- the GPU pilot's report (pilot.smk): its jobs as the report reads them, and the report of a failed pilot ----


def pilot_stages():
    """The pilot's jobs as the report reads them (paper.cost.pilot_measures.Stage): each one's log, outputs and GPUs."""
    run = PILOT_RUNS[0]
    model, placement = run_model(run), run_model_spec(run)
    stages = [
        {"name": "download_model", "job": model, "log": f"results/logs/download_model/{model}.log",
         "outputs": [MODEL_DIR.format(model=model)], "gpus": 0},
        {"name": "preflight", "job": run, "log": f"results/logs/preflight/{run}.log",
         "outputs": [RUN_PREFLIGHT.format(run=run)], "gpus": 0},
        {"name": "train_verl", "job": run, "log": f"results/logs/train/{run}.log",
         "outputs": [RUN_METRICS.format(run=run), RUN_FINAL.format(run=run)],
         "gpus": placement["nodes"] * placement["gpus_per_node"], "verl_logs_dir": f"results/runs/{run}/checkpoints"},
        {"name": "preflight_eval", "job": run, "log": f"results/logs/preflight/eval/{run}.log",
         "outputs": [EVAL_PREFLIGHT.format(run=run)], "gpus": 0},
        {"name": "evaluate_vllm", "job": run, "log": f"results/logs/evaluate/{run}.log",
         "outputs": [EVAL_SUMMARY.format(run=run)], "gpus": placement["tensor_parallel"]},
    ]  # fmt: skip
    stages += [{"name": "power_sample_vllm", "job": m, "log": f"results/logs/power/{m}.log",
                "outputs": [POWER_SAMPLES.format(method=m)], "gpus": job["placement"]["tensor_parallel"]}
               for m, job in PILOT_METHODS.items()]  # fmt: skip
    if "speed" in PILOT:
        stages.append({"name": "pilot_speed", "job": ", ".join(PILOT["speed"]["sizes"]), "log": "results/logs/pilot_speed.log",
                       "outputs": [PILOT_SPEED], "gpus": 1})  # fmt: skip
    return stages


def pilot_speed_scope():
    """What the pilot's speed job reads: its settings, the shapes it builds, the run whose command builds the worker,
    the budget's lengths and the site's verl overrides."""
    speed, run = PILOT["speed"], run_spec.run_scope(S, PILOT["speed"]["run"])
    return canonical({
        **run,
        "pilot": {"speed": speed, "startup_minutes": PILOT["startup_minutes"]},
        "architectures": {m: S["architectures"][m] for m in speed["sizes"]},
        "models": {**run["models"], **{m: S["models"][m] for m in speed["sizes"]}},
        "budget": S["budget"], "data": S["data"], "launch": S.get("launch", {}),
    })  # fmt: skip


def pilot_speed_minutes():
    return budget.runtime_minutes(JOB_HOURS["speed:pilot"], 1, BUDGET["walltime_margin"], floor=30)


def pilot_report_scope():
    """What the report's re-estimate of the study reads: the runs, their models and settings, the benchmarks' sizes
    and the budget (config.yaml paper.budget)."""
    keys = ("runs", "models", "train", "treatments", "recipes", "budget", "lr_reference_width")
    return canonical({**{k: S[k] for k in keys if k in S}, "data": {"benchmarks": S["data"]["benchmarks"]}})


def write_pilot_report():
    """The report of a pilot that failed: the stages that ran, and the log of the one that did not (cluster.smk onerror)."""
    try:
        stages = [pilot_measures.Stage(**stage) for stage in pilot_stages()]
        pilot_report.write(stages, pilot_report_scope(), PILOT_REPORT, PILOT_REPORT_HTML, PILOT_FAILED)
        print(f"pilot: a stage failed; the report of what ran is in {PILOT_REPORT}", file=sys.stderr)
    except Exception as err:  # the report must not hide the error that ended the run
        print(f"pilot: no report written ({type(err).__name__}: {err})", file=sys.stderr)
