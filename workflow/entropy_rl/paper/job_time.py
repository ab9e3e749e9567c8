"""A training job within its SLURM time limit: a run longer than the site's longest job is trained by several jobs,
each resuming from the last whole save, and a job that reaches its limit loses nothing it has saved and logged.

The site's longest job is ``launch.max_job_minutes`` (config.yaml, paper scale); each training job asks for at most
that (``pipeline.resources``). Within the job:

- ``job_end`` reads when the job must end: SLURM's own time left for it (``squeue -o %L``), or, where SLURM's
  clients are not reachable (a container without them), the runtime the job asked for, counted from now;
- verl 0.9.1's trainer (``verl_plugin.BoundedSaves``) reads that end (``END_ENV``) and, once the next step and a
  save would not fit before it, saves the step it has just trained and ends the run there, after logging it: a job
  at its limit loses at most one step's time, not ``save_every`` steps;
- PRIME's recipe has no such hook: ``StopBeforeEnd`` stops its driver after a save it has logged, once the next save
  (the longest interval between two saves seen so far, or the first save's time) would not land before the end;
- either way, with ``MARGIN_S`` kept for the driver's exit, a job ends before SLURM's TIMEOUT. If the estimate is so
  wrong that it does not (a step far longer than any seen), SLURM's kill loses at most the steps since the last save:
  ``save_every`` at most, as any pre-emption.

A job that ended short of the run's steps exits with ``CONTINUE`` ("continued in the next job"): Snakemake submits the
rule again (its retries under a cluster executor, pipeline.cluster.continue_long_runs, sized from the estimate)
and the next job resumes. Nothing depends on SLURM requeueing a TIMEOUT, which it never does.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import saves

# The longest job where the scale's config names none (config.yaml paper.launch.max_job_minutes): 48 h.
DEFAULT_MAX_JOB_MINUTES = 2880
# What verl's trainer reads: the job's end, as seconds since the epoch (time.time()).
END_ENV = "ENTROPY_RL_JOB_END"
# Kept free before the job's end: the driver's exit (verl stops Ray and its workers), the job's own bookkeeping.
MARGIN_S = 300.0
# The exit status of a job that ended at its time limit with the run not done: its rule is submitted again.
CONTINUE = 75  # EX_TEMPFAIL
_LEFT = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)$")  # squeue %L: [days-][hours:]minutes:seconds


def max_job_minutes(launch: dict) -> int:
    """The site's longest job, from the scale's ``launch`` settings (``launch.max_job_minutes``)."""
    return int(launch.get("max_job_minutes", DEFAULT_MAX_JOB_MINUTES))


def parse_time_left(text: str) -> float | None:
    """Seconds in squeue's ``%L`` (``[days-][hours:]minutes:seconds``); None for UNLIMITED, NOT_SET, INVALID."""
    m = _LEFT.match(text.strip())
    if not m:
        return None
    days, hours, minutes, seconds = (int(g or 0) for g in m.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def job_end(runtime_minutes: float | None = None, env=os.environ) -> tuple[float | None, str]:
    """When this job must end (``time.time()`` seconds) and how that was learnt: SLURM's time left for the job, else
    ``runtime_minutes`` (what the job asked for) from now, else None (no limit: a local run)."""
    job = env.get("SLURM_JOB_ID")
    if job and shutil.which("squeue"):
        proc = subprocess.run(["squeue", "-h", "-j", job, "-o", "%L"], capture_output=True, text=True, check=False)
        left = parse_time_left(proc.stdout) if proc.returncode == 0 else None
        if left is not None:
            return time.time() + left, f"SLURM job {job}'s time left ({proc.stdout.strip()})"
    if job and runtime_minutes:
        return time.time() + 60 * runtime_minutes, f"the {runtime_minutes:g} minutes SLURM job {job} asked for"
    return None, "no time limit"


@dataclass
class StopBeforeEnd:
    """Whether to stop the trainer now (``launch.run``'s ``stop``, polled every few seconds while the driver runs):
    once less than ``margin_s`` is left; and with ``after_save`` (PRIME, whose trainer has no hook to save before the
    end), after a save it has logged (``logged(step)``) when the next would not land before ``end``: the longest wait
    for a save seen in this job, the first one's start-up included."""

    checkpoints: Path
    end: float  # time.time() seconds
    trainer: str = "verl"
    logged: object = lambda step: True
    after_save: bool = False
    margin_s: float = MARGIN_S
    started: float = field(default_factory=time.time)
    fired: bool = False

    def __post_init__(self):
        self.last_step, self.last_at, self.longest = (
            saves.completed_step(self.checkpoints, self.trainer),
            self.started,
            0.0,
        )

    def __call__(self) -> bool:
        now = time.time()
        step = saves.completed_step(self.checkpoints, self.trainer)
        if step > self.last_step:
            self.longest = max(self.longest, now - self.last_at)
            self.last_step, self.last_at = step, now
        saved_here = self.last_at > self.started
        late = self.end - now < self.margin_s or (
            self.after_save and saved_here and bool(self.logged(step)) and self.end - now < self.longest + self.margin_s
        )
        self.fired = self.fired or late
        return late


def jobs_needed(wall_hours: float, max_job_hours: float, start_hours: float, lost_hours: float) -> int | None:
    """The jobs a run of ``wall_hours`` needs when each may last ``max_job_hours``: each one starts up
    (``start_hours``: model load, validation before training) and may leave ``lost_hours`` unused at its end (the
    next save would not have fit). None when a job cannot hold that much: its runs would save nothing (``Ended``)."""
    usable = max_job_hours - start_hours - lost_hours - MARGIN_S / 3600
    if usable <= 0:
        return None
    return max(1, math.ceil(wall_hours / usable))
