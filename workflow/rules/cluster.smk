# Cluster concerns, paper scale: the SLURM jobs' environment without the hub token, the hub-access check, the
# GPU-hours estimate, each GPU job's SLURM resources and the launch preflight, all before any job is submitted; the
# paid-work guard's and the pilot's hooks (called by the Snakefile's onstart and onerror). Included after common.smk
# and claims.smk (it reads their constants and templates); what it computes is in entropy_rl.pipeline.
import functools
import sys

from entropy_rl.pipeline import cluster
from entropy_rl.pipeline import estimate
from entropy_rl.pipeline import pilot
from entropy_rl.pipeline import resources
from entropy_rl.paper.cost import ranges

# ---- SLURM jobs never see the hub token -----------------------------------------------------
# snakemake-executor-plugin-slurm submits every job with `sbatch --export=ALL` and refuses
# `--export` in slurm_extra, so a job would get the submitting shell's HF_TOKEN, and slurmctld
# would keep it in the job's saved environment. `sbatch --export-file` makes the environment
# sbatch submits the file's alone: the main process writes its own there, less the token
# variables, before the first submission (the Snakefile's onstart), and deletes it when the run
# ends. Every SLURM job's slurm_extra carries the flag: the profile's default-resources
# (slurm/config.yaml, this same string) and any rule that sets its own (train_resources). Only the
# local download rules, run by the main process, see the token.
SLURM_JOB_ENV = ".snakemake/slurm_job_environment"
SLURM_JOB_ENV_FLAG = f"--export-file={SLURM_JOB_ENV}"

# A gated repository still to download, with no token: stop before any job is submitted. Only in the process the
# user started: SLURM jobs (--mode remote) and local subprocess jobs (--mode subprocess) parse the Snakefile again,
# without the token, while a gated download may still be running on the submitting host.
if not MINI and PLAN.is_main_process:
    cluster.check_hub_access(S, MODEL_DIR, SOURCE_DIR)


# ---- the GPU-hours estimate (entropy_rl.paper.cost.budget) and SLURM resources ----------------------


def train_hours(run):
    return resources.train_hours(JOB_HOURS, run)


def eval_hours(run):
    return resources.eval_hours(JOB_HOURS, run)


def power_hours(method):
    return resources.power_hours(JOB_HOURS, method)


@functools.cache
def train_resources(run):
    """One dict per run, cached: six resource lambdas read it (pipeline.resources.train_resources)."""
    return resources.train_resources(run_model_spec(run), train_hours(run), BUDGET["walltime_margin"], SLURM_JOB_ENV_FLAG,
                                     resources.max_job_minutes(S))


# A run longer than the site's longest job is trained by several, each submitted again by Snakemake (paper.job_time).
TRAIN_RETRIES = 0 if MINI else resources.train_retries(S, BUDGET)


def continue_long_runs():
    """Under a cluster executor, train_verl is submitted again up to TRAIN_RETRIES times: each further job of a run
    longer than the site's longest. Set from the Snakefile's onstart, once the executor is known, not as the rule's
    ``retries``, which would reach the SLURM job's own Snakemake too (it would retry inside the job, with no time
    left; its hooks do not run) and local runs (no time limit to go past)."""
    if not MINI and not workflow.local_exec:
        workflow.get_rule("train_verl").restart_times = TRAIN_RETRIES


def engine_resources(gpus, hours):
    return resources.engine_resources(gpus, hours, BUDGET["walltime_margin"])


# ---- before any job: the estimate and the launch preflight, for what the targets need ----------


def requested_runs():
    return estimate.requested_runs(PLAN.targets(), S, RUNS, STUDY_RUNS, PILOT_RUNS + PILOT_NODE_RUNS, RUN_METRICS)


def print_gpu_budget():
    targets = PLAN.targets()
    if pilot.targeted(targets):
        print(pilot.plan_message(S, PILOT, PILOT_RUNS, PILOT_METHODS, JOB_HOURS, BUDGET), file=sys.stderr)
    runs = [r for r in requested_runs() if r not in PILOT_RUNS + PILOT_NODE_RUNS]  # the pilot's are stated above
    methods = estimate.requested_power_methods(targets, POWER, STUDY_POWER_METHODS, POWER_SAMPLES)
    every = "evaluations" in (targets or ())  # else only the runs the study reads on the test sets
    measured = PILOT_ESTIMATE if BUDGET is not S["budget"] else None
    spread = job_spread()
    message = estimate.budget_message(runs, methods, JOB_HOURS, every, EVALUATED_RUNS, BUDGET, measured,
                                      ranges.from_params(spread))
    if message is None:
        return
    print(message, file=sys.stderr)
    jobs_and_disk = estimate.jobs_and_disk_message(S, runs, BUDGET)
    if jobs_and_disk:
        print(jobs_and_disk, file=sys.stderr)
    if SELECTING:
        print(f"judging {len(SELECTION.claims)} of {len(CLAIMS)} claims ({SELECTION.rule}); the audit lists the other"
              f" {len(NOT_RUN)} as not run", file=sys.stderr)  # fmt: skip


_BUDGET_SHOWN = []


def show_budget_once():
    """The GPU-hours estimate and the launch preflight, once: input functions are evaluated while the DAG is built, after the
    command line's targets are known and before any job is submitted (a dry run included).
    train_data_with_budget and power_policy_with_budget call it."""
    if not _BUDGET_SHOWN:
        _BUDGET_SHOWN.append(True)
        print_gpu_budget()
        if PLAN.is_main_process:
            estimate.check_launches(S, requested_runs())


def train_data_with_budget(wildcards):
    """run_train_data (common.smk), and the GPU-hours estimate the first time an input function asks."""
    show_budget_once()
    return run_train_data(wildcards)


def power_policy_with_budget(wildcards):
    """power_policy (common.smk), and at paper scale the GPU-hours estimate the first time an input function asks."""
    show_budget_once()
    return power_policy(wildcards)


# ---- the GPU pilot's report (pilot.smk): its jobs as the report reads them, and the report of a failed pilot ----
PILOT_PATHS = {name: globals()[name] for name in (*pilot.STAGE_PATHS, "PILOT_REPORT", "PILOT_REPORT_HTML", "PILOT_FAILED")}


def pilot_stages():
    return pilot.stages(S, PILOT, PILOT_RUNS, PILOT_METHODS, PILOT_PATHS)


def pilot_speed_scope():
    return pilot.speed_scope(S, PILOT)


def pilot_speed_minutes():
    return resources.pilot_speed_minutes(JOB_HOURS, BUDGET["walltime_margin"])


def pilot_report_scope():
    return pilot.report_scope(S)


def write_pilot_report():
    """The report of a pilot that failed (the Snakefile's onerror), when the command line named the pilot."""
    if PILOT and pilot.targeted(PLAN.targets()):
        pilot.write_failed_report(S, PILOT, PILOT_RUNS, PILOT_METHODS, PILOT_PATHS)
