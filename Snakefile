# Reproduces "The Entropy Mechanism of Reinforcement Learning for Reasoning Language Models"
# (Cui et al., 2025). `snakemake --cores all` runs the mini scale; see README.md.
from snakemake.utils import min_version

from entropy_rl.pipeline import cluster
from entropy_rl.pipeline import estimate
from entropy_rl.pipeline import guard
from entropy_rl.core import warm_start

min_version("9.0")


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/paths.smk"
include: "workflow/rules/common.smk"
include: "workflow/rules/claims.smk"
include: "workflow/rules/cluster.smk"


# Before any job is submitted, at paper scale: no finished GPU job runs again unless asked (entropy_rl.pipeline.guard),
# a finished run trained again has its launch checked with the code it will run, and the SLURM jobs' environment is
# written without the hub token (cluster.smk); it is removed when the run ends, and a failed pilot still reports. A run
# longer than the site's longest job may be submitted again (cluster.smk continue_long_runs).
# A local mini study's jobs start in a fork of a warm interpreter rather than each importing torch afresh
# (entropy_rl.core.warm_start), decided here, once Snakemake has chosen its executor: never at paper scale or under a
# cluster executor; ENTROPY_RL_WARM_START=0 or --config warm_start=false starts every job cold. The run's warm server
# stops when it ends.
onstart:
    guard.paid_work_guard(PLAN, MINI, JOB_HOURS, config)
    estimate.check_retrained_launches(PLAN, S, MINI)
    cluster.write_job_environment(PLAN, SLURM_JOB_ENV)
    continue_long_runs()  # cluster.smk: train_verl's retries, under a cluster executor
    warm_start.begin(MINI and workflow.local_exec and config.get("warm_start", True))


onsuccess:
    warm_start.end()
    cluster.remove_job_environment(SLURM_JOB_ENV)


onerror:
    warm_start.end()
    cluster.remove_job_environment(SLURM_JOB_ENV)
    write_pilot_report()  # cluster.smk: a failed pilot still reports what ran (pilot.smk)


wildcard_constraints:
    run="|".join(map(re.escape, RUNS + PILOT_RUNS)),
    model="|".join(map(re.escape, MODELS)),
    benchmark="|".join(map(re.escape, BENCHMARKS)),
    source="|".join(map(re.escape, [] if MINI else S["data"]["sources"])) or "^$",
    train_set="|".join(map(re.escape, S["data"].get("train_sets", {}))) or "^$",
    method="|".join(map(re.escape, [*power_methods(), *PILOT_METHODS])) or "^$",


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
        all_targets(),
    default_target: True
