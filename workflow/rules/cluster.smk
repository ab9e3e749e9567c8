# Cluster concerns, paper scale: the SLURM jobs' environment without the hub token, the hub-access
# check, the GPU-hours estimate, each training run's SLURM resources and the launch preflight, all
# before any job is submitted. Included after common.smk (it reads its constants and templates).
import functools
import os
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

from entropy_rl.core import spec as run_spec
from entropy_rl.paper import budget
from entropy_rl.paper import hub
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
    if not workflow.local_exec:
        hub.write_environment_without_token(SLURM_JOB_ENV)


onsuccess:
    Path(SLURM_JOB_ENV).unlink(missing_ok=True)


onerror:
    Path(SLURM_JOB_ENV).unlink(missing_ok=True)


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


# ---- the GPU-hours estimate (entropy_rl.paper.budget) and SLURM resources ----------------------


def train_hours(run):
    val_questions = sum(b["size"] for b in S["data"]["benchmarks"].values())
    return budget.train_gpu_hours(run_spec.resolve_run(S, run), run_model_spec(run), S["budget"], val_questions)


def eval_hours(run):
    sizes = {b: spec["size"] for b, spec in S["data"]["benchmarks"].items()}
    protocols = {b: spec["protocol"] for b, spec in S["data"]["benchmarks"].items()}
    return budget.eval_gpu_hours(sizes, protocols, run_model_spec(run), S["budget"])


def power_hours(method):
    model = S["models"][POWER["model"]]
    answers = POWER_STUDY.answers(S["data"]["benchmarks"])
    return budget.power_gpu_hours(power_methods()[method], answers, model, S["budget"], POWER["max_new_tokens"])


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
        "runtime": budget.runtime_minutes(train_hours(run), gpus, S["budget"]["walltime_margin"]),
    }


# ---- before any job: the estimate and the launch preflight, for what the targets need ----------


def requested_runs():
    """The runs the command line's targets need and that have not finished training."""
    targets = workflow.dag_settings.targets or {"all"}
    wanted = set()
    for target in targets:
        if target in ("all", "audit", "fit_table", "evaluations") or target.endswith("fits.csv") or target.startswith("results/audit"):
            wanted |= set(RUNS)
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
    return [m for m in power_methods() if not os.path.exists(POWER_SAMPLES.format(method=m))]


def print_gpu_budget():
    runs, methods = requested_runs(), requested_power_methods()
    if not runs and not methods:
        return
    train = sum(train_hours(r) for r in runs)
    every = "evaluations" in (workflow.dag_settings.targets or ())  # else only the runs the study reads on the test sets
    evaluation = sum(eval_hours(r) for r in runs if every or r in EVALUATED_RUNS)
    power = sum(power_hours(m) for m in methods)
    print(budget.estimate_message(len(runs), train, evaluation, len(methods), power, S["budget"]), file=sys.stderr)


def check_launches():
    """Before any job: every run still to train, its exact verl command through verl's own validation,
    reward loader and loss plugin (the part of the preflight that needs no download)."""
    runs = requested_runs()
    if not runs:
        return
    failed = {run: preflight.launch_problems_cached(S, run, ".snakemake/preflight-launches") for run in runs}
    failed = {run: problems for run, problems in failed.items() if problems}
    if failed:
        lines = [f"  {run}: {p}" for run, problems in failed.items() for p in problems]
        raise WorkflowError(f"preflight: {len(failed)} of {len(runs)} run(s) would fail at launch; nothing was submitted:\n" + "\n".join(lines))
    print(f"preflight: {len(runs)} run(s) to train composed and validated by verl, reward and loss plugin loaded", file=sys.stderr)


_BUDGET_SHOWN = []


def show_budget_once():
    """The GPU-hours estimate and the launch preflight, once: input functions are evaluated while the DAG is built, after the
    command line's targets are known and before any job is submitted (a dry run included).
    train_data_with_budget and power_policy_with_budget (common.smk) call it."""
    if not _BUDGET_SHOWN:
        _BUDGET_SHOWN.append(True)
        print_gpu_budget()
        if workflow.is_main_process:
            check_launches()
