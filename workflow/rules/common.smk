# Config validation, constants, and the input and params functions the rules share (the paths they name are in
# paths.smk). Rules stay thin: they name files and per-run params; what they compute is in entropy_rl.pipeline, and
# the functions here bind wildcards and the scale config to it. The claims judged and the jobs they need are in
# claims.smk; cluster concerns (SLURM, the hub token, the GPU budget, the launch preflight) in cluster.smk; the
# pilot's report in pilot.smk; the hooks (onstart, onsuccess, onerror) in the Snakefile.
import os
from pathlib import Path

from entropy_rl.core import config as config_check
from entropy_rl.core import images
from entropy_rl.paper import launch
from entropy_rl.pipeline import params as pipeline_params
from entropy_rl.pipeline import power as power_jobs
from entropy_rl.pipeline import scope
from entropy_rl.pipeline import snakemake_api
from entropy_rl.pipeline import stamps
from entropy_rl.pipeline.stamps import canonical
from entropy_rl.study import artifacts

config_check.validate(config, artifacts.PAPER)  # the schema's artifact names are the registry's
stamps.use_template_cache(".snakemake/behaviour-templates")
PLAN = snakemake_api.Plan(workflow)  # the DAG and the command line, for the hooks and the estimate

SCOPE = scope.resolve(config)  # `--config scale=... seed=... replicates=...` (pipeline.scope.resolve)
SCALE, MINI, SEED, REPLICATES, S = SCOPE.scale, SCOPE.mini, SCOPE.seed, SCOPE.replicates, SCOPE.S
RUNS, PILOT, PILOT_RUNS = SCOPE.runs, SCOPE.pilot, SCOPE.pilot_runs  # the study's runs; the GPU pilot's (pilot.smk)
PILOT_NODE_RUNS = SCOPE.pilot_node_runs  # the pilot's speed run on its own node, if paper.pilot.speed.node asks
MODELS, BENCHMARKS, POWER = SCOPE.models, SCOPE.benchmarks, SCOPE.power
ARTIFACT_NAMES, BUILDABLE_ARTIFACTS = SCOPE.artifact_names, SCOPE.buildable_artifacts  # figures.smk: one rule each
REPORT_LABEL = pipeline_params.REPORT_LABEL  # the one label of each row of `snakemake --report` (report_labels)
POWER_STUDY = power_jobs.study(S, REPLICATES, SEED)  # the power-sampling study beside RL (core.power.methods)
PILOT_METHODS = power_jobs.pilot_methods(S, PILOT, PILOT_RUNS)  # the pilot's sampling jobs


def run_model(run):
    return scope.run_model(S, run)


def run_model_spec(run):
    return scope.run_model_spec(S, run)


def run_label(run):
    return scope.run_label(S, run)


def image(name):
    """The Apptainer image a rule runs in (--software-deployment-method apptainer), relative to the working
    directory: Snakemake's software-env trigger compares the reference's text (core.images.image_ref)."""
    return os.path.relpath(images.image_ref(name, workflow.basedir))


def run_image(wildcards):
    """PRIME runs on the verl its recipe supports (containers/prime.def); every other run on verl 0.9.1."""
    return image("prime" if launch.trainer(S["runs"][wildcards.run]) == "prime" else "train")


def code(key, *modules):
    """A rule's code stamp, as an input (pipeline.stamps.code)."""
    return stamps.code(CODE_STAMP, key, *modules)


def train_code(wildcards):
    """A run's code input: its own trainer's (pipeline.stamps.train_code)."""
    return stamps.train_code(CODE_STAMP, run_settings(wildcards))


# ---- input functions --------------------------------------------------------------------------


def fit_law_name():
    """What fit_law's outputs are named by: the stem of the log given (`--config fit_law_log=PATH`)."""
    return Path(config["fit_law_log"]).stem if "fit_law_log" in config else "no-log-given"


def fit_law_log(wildcards):
    """The log fit_law reads; asked for without one, it says how to give it."""
    if "fit_law_log" not in config:
        raise ValueError("fit_law fits a run's log: snakemake fit_law --config fit_law_log=PATH")
    return config["fit_law_log"]


def instruct_inputs(wildcards):
    """What an instruct model is tuned from: its base model and the instruction corpus (none for a base model)."""
    base = scope.instruct_base(S, wildcards.model)
    return {"base": MODEL_DIR.format(model=base), "instruct": INSTRUCT_CORPUS} if base else {}


def bench_files():
    return expand(BENCHMARK_FILE, benchmark=BENCHMARKS)


def run_bench_files(wildcards):
    """The benchmarks a run is evaluated on: all of them, or for a pilot run their first problems (pilot.smk)."""
    return expand(PILOT_BENCHMARK_FILE if wildcards.run in PILOT_RUNS else BENCHMARK_FILE, benchmark=BENCHMARKS)


def run_validation_files(wildcards):
    """The benchmarks a mini run validates on: those of the domain it trains on (math or code)."""
    return expand(BENCHMARK_FILE, benchmark=scope.validation_benchmarks(S, wildcards.run))


def run_model_dir(wildcards):
    return MODEL_DIR.format(model=run_model(wildcards.run))


def run_train_data(wildcards):
    train_set = scope.run_train_set(S, wildcards.run)
    return TRAIN_DATA if train_set is None else TRAIN_SET.format(train_set=train_set)


def run_metrics(runs):
    return expand(RUN_METRICS, run=runs)


def source_dir(part):
    return SOURCE_DIR.format(source=scope.part_source(S, part))


def source_checked(part):
    """The record that a part's downloaded source matches what the config reads from it."""
    return SOURCE_CHECKED.format(source=scope.part_source(S, part))


def all_targets():
    """The study: the evaluations, fits, figures, tables and audit of the claims it judges (all, unless chosen)."""
    targets = expand(EVAL_SUMMARY, run=EVALUATED_RUNS) + [FIT_TABLE, AUDIT_MD]
    built = [name for name in BUILDABLE_ARTIFACTS if name in BUILT_ARTIFACTS]
    pages = [TABLE_PAGE.format(name=name) for name in built if artifacts.ARTIFACTS[name].kind == "table"]
    return targets + [f for name in built for f in artifacts.output_files(name)] + pages


def artifact_runs(name):
    return scope.artifact_runs(S, name)


def with_replicates(runs):
    return scope.with_replicates(S, runs)


def artifact_inputs(name):
    """What the artifact reads, every replicate of each, and its code (pipeline.params.artifact_inputs)."""
    artifact = artifacts.ARTIFACTS[name]
    samples = power_samples(POWER_STUDY.drawn(artifact.methods)) if artifact.power else []
    return pipeline_params.artifact_inputs(S, name, code(name, *artifact.modules), samples,
                                           metrics=RUN_METRICS, summary=EVAL_SUMMARY, model_dir=MODEL_DIR)  # fmt: skip


def report_labels(name):
    return pipeline_params.report_labels(name)


# ---- params functions -------------------------------------------------------------------------


def protocols():
    return pipeline_params.protocols(S, BENCHMARKS)


def run_settings(wildcards):
    return pipeline_params.run_settings(S, wildcards.run)


def artifact_params(name):
    return pipeline_params.artifact_params(SCOPE, POWER_STUDY, name)


def audit_params():
    study = {"runs": STUDY_RUNS, "evaluated": EVALUATED_RUNS, "models": STUDY_MODELS}
    return pipeline_params.audit_params(SCOPE, POWER_STUDY, study, NOT_RUN if SELECTING else None)


def lock_file(repo_id):
    return pipeline_params.lock_file(S, repo_id)


def preflight_power_scope():
    return pipeline_params.preflight_power_scope(S)


# ---- power sampling beside RL (Karan & Du, 2025): entropy_rl.pipeline.power ------------------


def power_methods():
    return power_jobs.methods(POWER_STUDY)


def power_job(method):
    return power_jobs.job(S, POWER_STUDY, PILOT_METHODS, method)


def power_benchmark_files(wildcards):
    """The benchmarks a sampling job answers: the study's, or a sweep's own."""
    return expand(BENCHMARK_FILE, benchmark=power_jobs.benchmarks(S, power_job(wildcards.method)["settings"]))


def power_samples(methods):
    """The answers of ``methods`` and of every replicate of each, method by method."""
    return expand(POWER_SAMPLES, method=POWER_STUDY.with_seeds(methods))


def power_sampler_code(wildcards):
    """The code stamp of the module that samples a method at paper scale (pipeline.stamps.power_sampler_code)."""
    return stamps.power_sampler_code(CODE_STAMP, power_job(wildcards.method)["settings"]["kind"])


def power_base_model(wildcards):
    """The base model a method's replicate samples, or scores an RL checkpoint's answers with."""
    return MODEL_DIR.format(model=power_job(wildcards.method)["model"])


def power_policy(wildcards):
    """The model a method samples: a run's final checkpoint, or the base model."""
    method = power_job(wildcards.method)["settings"]
    return RUN_FINAL.format(run=method["run"]) if "run" in method else power_base_model(wildcards)


def power_preflight(wildcards):
    """The preflight a sampling job waits for: the study's, or for the pilot's jobs the pilot run's evaluation
    preflight (its model in vLLM), not its training's: a training setting must not rerun the pilot's samplers."""
    return EVAL_PREFLIGHT.format(run=PILOT_RUNS[0]) if wildcards.method in PILOT_METHODS else POWER_PREFLIGHT
