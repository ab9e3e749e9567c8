# The config validated, the study planned once (entropy_rl.pipeline.plan: scope, runs, claims, GPU-hours, what is
# built), and the input functions that bind a job's wildcards to it. Rules stay thin: they name files (core.paths),
# read PLAN, and call the pipeline for what they compute. The hooks (onstart, onsuccess, onerror) are in the Snakefile.
from entropy_rl.core import config as config_check
from entropy_rl.pipeline import plan as study_plan
from entropy_rl.pipeline import snakemake_api
from entropy_rl.pipeline import stamps
from entropy_rl.core import paths
from entropy_rl.study import artifacts

config_check.validate(config, artifacts.PAPER)  # the schema's artifact names are the registry's
stamps.use_template_cache(paths.TEMPLATE_CACHE)
PLAN = study_plan.build(config, snakemake_api.Workflow(workflow))


# ---- input functions: a job's wildcards bound to the plan -----------------------------------------------------


def run_model_dir(wildcards):
    return PLAN.run_model_dir(wildcards.run)


def run_train_data(wildcards):
    """The run's own training set, or the scale's one."""
    return PLAN.run_train_data(wildcards.run)


def run_validation_files(wildcards):
    return PLAN.run_validation_files(wildcards.run)


def run_benchmark_files(wildcards):
    """All benchmarks, or for a pilot run their first problems (pilot.smk)."""
    return PLAN.run_benchmark_files(wildcards.run)


def run_settings(wildcards):
    return PLAN.run_settings(wildcards.run)


def run_image(wildcards):
    """PRIME's image for a PRIME run, verl 0.9.1's for every other."""
    return PLAN.run_image(wildcards.run)


def train_code(wildcards):
    """The run's own trainer's code stamp."""
    return PLAN.train_code(wildcards.run)


def instruct_inputs(wildcards):
    """An instruct model's base model and instruction corpus; nothing for a base model."""
    return PLAN.instruct_inputs(wildcards.model)


def power_policy(wildcards):
    """A run's final checkpoint, or the base model."""
    return PLAN.power_policy(wildcards.method)


def fit_law_log(wildcards):
    """The log fit_law reads; asked for without one, it says how to give it."""
    if "fit_law_log" not in config:
        raise ValueError("fit_law fits a run's log: snakemake fit_law --config fit_law_log=PATH")
    return config["fit_law_log"]
