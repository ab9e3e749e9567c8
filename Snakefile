# Reproduces "The Entropy Mechanism of Reinforcement Learning for Reasoning Language Models"
# (Cui et al., 2025). `snakemake --cores all` runs the mini scale; see README.md.
from snakemake.utils import min_version

from entropy_rl.core import paths
from entropy_rl.core import warm_start
from entropy_rl.pipeline import cluster
from entropy_rl.pipeline import estimate
from entropy_rl.pipeline import guard
from entropy_rl.pipeline import pilot

min_version("9.0")


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"


# Once the DAG is built, at paper scale, in a dry run too: the hub token where a gated download needs it, the GPU-hours
# of what the targets need, and every run still to train through verl's launch validation (pipeline.cluster).
PLAN.workflow.after_dag(lambda: cluster.before_jobs(PLAN))


# Before any job is submitted, at paper scale: no finished GPU job runs again unless asked (entropy_rl.pipeline.guard),
# a finished run trained again has its launch checked with the code it will run, and the SLURM jobs' environment is
# written without the hub token (pipeline.cluster); it is removed when the run ends, and a failed pilot still reports.
# A run longer than the site's longest job may be submitted again (pipeline.cluster.continue_long_runs).
# A local mini study's jobs start in a fork of a warm interpreter rather than each importing torch afresh
# (entropy_rl.core.warm_start), decided here, once Snakemake has chosen its executor: never at paper scale or under a
# cluster executor; ENTROPY_RL_WARM_START=0 or --config warm_start=false starts every job cold. The run's warm server
# stops when it ends.
onstart:
    guard.paid_work_guard(PLAN.workflow, PLAN.mini, PLAN.job_hours, config)
    estimate.check_retrained_launches(PLAN.workflow, PLAN.scale, PLAN.mini)
    cluster.write_job_environment(PLAN.workflow, paths.SLURM_JOB_ENV)
    cluster.continue_long_runs(PLAN)
    warm_start.begin(PLAN.mini and PLAN.workflow.local_exec and config.get("warm_start", True))


onsuccess:
    warm_start.end()
    cluster.remove_job_environment(paths.SLURM_JOB_ENV)


onerror:
    warm_start.end()
    cluster.remove_job_environment(paths.SLURM_JOB_ENV)
    pilot.write_failed_report(PLAN)  # a failed pilot still reports what ran (pilot.smk)


wildcard_constraints:
    **PLAN.wildcard_constraints(),


include: "workflow/rules/data.smk"
include: "workflow/rules/preflight.smk"
include: "workflow/rules/models.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/power.smk"
include: "workflow/rules/audit.smk"
include: "workflow/rules/pilot.smk"


rule all:
    input:
        PLAN.all_targets(),
    default_target: True
