"""What each GPU job asks SLURM for: whole nodes for a training run, a vLLM engine's GPUs for an evaluation or a
sampling job, for the GPU-hours the estimate gives (paper.cost.budget) times its margin; and the hours themselves."""

from __future__ import annotations

from ..core import paths
from ..core.scale import Placement, Scale
from ..paper import job_time
from ..paper.cost import budget

# snakemake-executor-plugin-slurm submits every job with `sbatch --export=ALL` and refuses `--export` in slurm_extra, so
# a job would get the submitting shell's HF_TOKEN, and slurmctld would keep it in the job's saved environment.
# `sbatch --export-file` makes the environment sbatch submits the file's alone: the main process writes its own there,
# less the token variables, before the first submission (the Snakefile's onstart, pipeline.cluster), and deletes it
# when the run ends. Every SLURM job's slurm_extra carries the flag: the profile's default-resources
# (slurm/config.yaml, this same string) and the training jobs' (train_resources). Only the local download rules, run
# by the main process, see the token.
SLURM_JOB_ENV_FLAG = f"--export-file={paths.SLURM_JOB_ENV}"


def train_resources(
    placement: Placement, hours: float, walltime_margin: float, env_flag: str, max_job_minutes: int
) -> dict:
    """Whole nodes for a run (8 CPUs and 64 GB per GPU), requeueable, for the estimated time, and never longer than
    the site's longest job (``max_job_minutes``: a longer run goes on in the next job, paper.job_time). ``placement``:
    the run's (core.scale.Scale.placement); ``env_flag``: sbatch's --export-file (SLURM_JOB_ENV_FLAG)."""
    return {
        "nodes": placement.nodes,
        "gpu": placement.gpus,
        "cpus_per_task": 8 * placement.gpus_per_node,
        "mem_mb_per_cpu": 8000,
        "slurm_extra": f"--requeue {env_flag}",
        "runtime": min(max_job_minutes, budget.runtime_minutes(hours, placement.gpus, walltime_margin)),
    }


def cpu_resources(max_job_minutes: int) -> dict:
    """A job of verl's or vLLM's on this machine's CPU (small scale): no GPU, one node, up to the longest job."""
    return {
        "nodes": 1,
        "gpu": 0,
        "cpus_per_task": 1,
        "mem_mb_per_cpu": 8000,
        "slurm_extra": "",
        "runtime": max_job_minutes,
    }


def max_job_minutes(scale: Scale) -> int:
    return job_time.max_job_minutes(scale.config.get("launch", {}))


def train_retries(scale: Scale, assumptions: dict) -> int:
    """How often Snakemake may submit a training job again: once for each further job the longest run needs by the
    estimate (``budget.train_jobs``), as many again in case the estimate is half the truth, and once for a failure.
    A run that fails twice in a row without a new save is not launched again (paper.train_job.refusal)."""
    return 2 * max((n or 1 for n in budget.train_jobs(scale, assumptions).values()), default=1) + 1


def engine_resources(gpus, hours, walltime_margin: float) -> dict:
    """A vLLM job's SLURM resources, the evaluation's and the power sampling's alike: ``gpus(wildcards)`` GPUs (the
    engine's tensor-parallel size; SLURM packs other jobs on the node's rest), 8 CPUs and 64 GB per GPU, for
    ``hours(wildcards)`` GPU-hours spread over them, times the margin of config.yaml paper.budget."""
    return {
        "gpu": gpus,
        "cpus_per_task": lambda wc: 8 * gpus(wc),
        "mem_mb_per_cpu": 8000,
        "runtime": lambda wc: budget.runtime_minutes(hours(wc), gpus(wc), walltime_margin),
    }


def pilot_speed_minutes(job_hours: dict[str, float], walltime_margin: float) -> int:
    return budget.runtime_minutes(job_hours["speed:pilot"], 1, walltime_margin, floor=30)
