"""One training job of a paper-scale run: its saves prepared, its trainer launched within the job's time limit, and
what the job then tells Snakemake (``main``, the train_verl rule's job; tests/workflow/test_slurm_time_limit.py runs
``launch`` through a real SLURM cluster).

``launch`` prepares the run's checkpoint folder (``verl_checkpoints.prepare_launch``), learns when the job must end
(``job_time.job_end``), runs the trainer with that end in its environment and a stop before it
(``job_time.StopBeforeEnd``), and returns an ``Ended``. ``Ended.verdict`` is then one of: the run is done; the job
reached its time limit after saving and logging a later step, so the next job goes on (``job_time.CONTINUE``); or
the job failed, and why.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .. import WORKFLOW_DIR
from ..core import algorithms, atomic, logs, modules, paths, resume
from ..core.run import Run
from . import job_time, platforms, saves, verl_checkpoints, verl_metrics
from . import launch as launcher
from .verl_names import KEEP_CHECKPOINTS

log = logging.getLogger(__name__)
LEDGER = "jobs.jsonl"  # in the run's checkpoint folder: one line per job, what it resumed from and reached
# Jobs in a row that may fail without a new save before the run is not launched again: a failure that repeats would
# otherwise cost a launch (its start-up on every GPU) for each of the rule's retries.
MAX_FAILURES_WITHOUT_PROGRESS = 2


@dataclass(frozen=True)
class Ended:
    """A launch, ended: the driver's exit code, the whole save it resumed from and the one it left, the run's steps,
    and whether the job had a time limit (``end``) and stopped the driver before it."""

    code: int
    resumed: int
    reached: int
    steps: int
    end: float | None
    stopped: bool

    def verdict(self) -> tuple[int, str]:
        """The job's exit status and what to say: 0 (done), ``job_time.CONTINUE`` or 1, each with its reason."""
        if self.reached >= self.steps and self.code == 0:
            return 0, f"all {self.steps} steps trained"
        ended_by_limit = self.end is not None and (self.stopped or self.code == 0)
        if ended_by_limit and self.reached > self.resumed:
            left = max(0.0, self.end - time.time()) / 60
            return job_time.CONTINUE, (
                f"the job's time limit is {left:.0f} min away: step {self.reached} of "
                f"{self.steps} is saved and logged, and the next job resumes from it"
            )
        if ended_by_limit:
            return 1, (
                f"the job saved no step after global_step_{self.resumed} before its time limit: a save interval "
                "and the start-up do not fit in one job; raise launch.max_job_minutes (config.yaml)"
            )
        if self.code != 0:
            return 1, f"the trainer exited with {self.code}; its saves are kept and a rerun resumes from the last"
        return 1, f"the trainer ended at step {self.reached} of {self.steps} with no time limit to stop it"


def record(checkpoints: str | Path, ended: Ended, status: int, why: str) -> None:
    """Append this job's line to the run's ledger."""
    line = {
        "job": os.environ.get("SLURM_JOB_ID", "local"),
        "at": time.time(),
        "resumed": ended.resumed,
        "reached": ended.reached,
        "code": ended.code,
        "status": status,
        "why": why,
    }
    Path(checkpoints).mkdir(parents=True, exist_ok=True)
    with open(Path(checkpoints) / LEDGER, "a") as fh:
        fh.write(json.dumps(line) + "\n")


def _ledger(checkpoints: str | Path) -> list[dict]:
    """The ledger's lines; a last line cut short (the job killed while appending it) is left out."""
    path = Path(checkpoints) / LEDGER
    lines = [x for x in path.read_text().splitlines() if x.strip()] if path.is_file() else []
    out = []
    for k, line in enumerate(lines):
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            if k < len(lines) - 1:
                raise
    return out


def refusal(checkpoints: str | Path) -> tuple[int, str] | None:
    """Why this job must not launch, as an exit status and a reason; None when it may.

    - This SLURM job already reached its time limit (``job_time.CONTINUE``): were the job retried inside its SLURM job
      (a rule's own ``retries`` reach the job's Snakemake; the workflow sets train_verl's from onstart, which that
      Snakemake does not run), a launch there would have no time left.
    - The run's last ``MAX_FAILURES_WITHOUT_PROGRESS`` jobs each failed without a new save (1): a failure that repeats
      would cost a launch, its start-up on every GPU, for each of the rule's retries."""
    lines = _ledger(checkpoints)
    job = os.environ.get("SLURM_JOB_ID")
    if job and lines and lines[-1]["job"] == job and lines[-1]["status"] == job_time.CONTINUE:
        return job_time.CONTINUE, f"SLURM job {job} has reached its time limit: the next job goes on"
    last = lines[-MAX_FAILURES_WITHOUT_PROGRESS:]
    if len(last) < MAX_FAILURES_WITHOUT_PROGRESS or any(x["status"] != 1 or x["reached"] > x["resumed"] for x in last):
        return None
    return 1, (
        f"the last {len(last)} jobs of this run failed without a new save ({'; '.join(x['why'] for x in last)}):"
        f" not launched again. Read the job logs; once the cause is fixed, remove those lines from "
        f"{Path(checkpoints) / LEDGER}"
    )


def launch(
    command: list[str],
    env: dict,
    checkpoints: str | Path,
    *,
    trainer: str,
    keep: int,
    steps: int,
    log_env: str,
    tensorboard: bool,
    nodes: list[str],
    gpus_per_node: int,
    runtime_minutes: float | None = None,
    kept: bool = True,
    after_save: bool | None = None,
    margin_s: float = job_time.MARGIN_S,
    poll_s: float = 5,
) -> Ended:
    """Prepare ``checkpoints``, then run ``command`` until it ends or the job's time limit is near. ``log_env``: the
    variable that tells the trainer its log file (verl's file logger, PRIME's TensorBoard); ``kept``: whether the
    run's checkpoints were kept for it (core.resume.claim), for the log's words; ``after_save``: stop the trainer
    after a save when the next would not fit (PRIME's, by default: verl 0.9.1's saves before the end itself)."""
    checkpoints = Path(checkpoints)
    prepared = verl_checkpoints.prepare_launch(checkpoints, trainer, keep, tensorboard=tensorboard)
    end, how = job_time.job_end(runtime_minutes)
    env = {**env, log_env: str(prepared.log)}
    stop = None
    if end is not None:
        env[job_time.END_ENV] = repr(end)
        # verl's trainer saves before the end itself (verl_plugin.BoundedSaves): stopped from here at the margin only.
        logged = (
            TensorBoardLogged(prepared.log)
            if tensorboard
            else (lambda step: verl_metrics.logged_step(prepared.log) >= step)
        )
        after_save = trainer == algorithms.PRIME if after_save is None else after_save
        stop = job_time.StopBeforeEnd(checkpoints, end, trainer, logged, after_save=after_save, margin_s=margin_s)
    limit = f"the job ends in {(end - time.time()) / 60:.0f} min ({how})" if end else "the job has no time limit"
    log.info(
        "%s; this launch logs to %s; %s", verl_checkpoints.launch_words(kept, prepared.resume), prepared.log, limit
    )
    code = launcher.run(command, nodes, gpus_per_node, env, stop=stop, poll_s=poll_s)
    reached = saves.completed_step(checkpoints, trainer)
    return Ended(code, prepared.resume, reached, steps, end, bool(stop and stop.fired))


# How long TensorBoard's writer may hold a logged step before it writes it (torch's SummaryWriter: flush_secs=120).
TENSORBOARD_FLUSH_S = 130.0


class TensorBoardLogged:
    """Whether PRIME's TensorBoard log holds ``step``: a record of it on disk, first seen ``TENSORBOARD_FLUSH_S``
    ago, so that every scalar of its step has been written (the writer flushes in batches, and a stopped driver
    writes nothing more)."""

    def __init__(self, directory: Path, flush_s: float = TENSORBOARD_FLUSH_S):
        self.directory, self.flush_s, self.seen = Path(directory), flush_s, {}

    def __call__(self, step: int) -> bool:
        if step not in self.seen:
            records = verl_metrics.read_tensorboard(self.directory) if self.directory.is_dir() else []
            if max((r["step"] for r in records), default=-1) < step:
                return False
            self.seen[step] = time.time()
        return time.time() - self.seen[step] >= self.flush_s


# ---- the train_verl rule's job ------------------------------------------------------------------------------------


def claim_checkpoints(checkpoints: Path, run: Run, command: list[str]) -> bool:
    """Whether ``checkpoints`` hold this run's trajectory, which verl then resumes (resume_mode=auto): checkpoints of
    other settings (the run's, or verl's own in the command), or of other code of the run's trainer, are moved aside
    and training starts afresh (``core.resume.claim``)."""
    code = modules.closure(*launcher.TRAINER_MODULES[run.trainer])
    return resume.claim(checkpoints, resume.fingerprint(run, code, command=launcher.trajectory_command(command)))


def preempt_once(
    command: list[str], env: dict, checkpoints: Path, trainer: str, step: int, log_env: str, resuming: bool, log
) -> None:
    """The pilot's pre-emption (the run's ``interrupt_at_step``): verl stopped by SIGTERM once ``step`` is saved and
    logged, as a requeued job's would be; the launch after it resumes from that checkpoint."""
    prime = trainer == algorithms.PRIME
    try:
        prepared = verl_checkpoints.prepare_launch(checkpoints, trainer, KEEP_CHECKPOINTS, tensorboard=prime)
    except verl_checkpoints.RepeatedLoss as err:
        sys.exit(str(err))
    log.info("%s; this launch logs to %s", verl_checkpoints.launch_words(resuming, prepared.resume), prepared.log)
    first_log = prepared.log
    logged = TensorBoardLogged(first_log) if prime else (lambda s: verl_metrics.logged_step(first_log) >= s)
    code = launcher.run_until_saved(
        command, {**env, log_env: str(first_log)}, checkpoints, step, trainer=trainer, logged=lambda: logged(step)
    )
    if saves.completed_step(checkpoints, trainer) < step:
        sys.exit(f"verl exited with {code} before saving step {step}; checkpoints in {checkpoints} are kept")
    log.info(
        "pre-emption: verl stopped by SIGTERM (exit %s) after saving step %d; relaunched (below)",
        code,
        saves.completed_step(checkpoints, trainer),
    )


def main(snakemake) -> None:
    """Rule train_verl: one run's training job on its GPU nodes, then its last checkpoint merged into a Hugging Face
    model. A run longer than the site's longest job goes on in the next job, which Snakemake submits again (the
    rule's retries) and which resumes from the last whole save."""
    log = logs.setup(snakemake.log[0], engines=True)  # verl's driver, its Ray workers and the merger print here too
    run, params = Run.from_params(snakemake.params.spec), snakemake.params
    checkpoints = Path(paths.RUN_CHECKPOINTS.format(run=run.id))  # the command's, unbound
    trainer = run.trainer  # its own trainer's code only: PRIME's never loads the loss plugin
    resuming = claim_checkpoints(checkpoints, run, params.command)
    # PRIME runs on verl 0.4.1, which logs to TensorBoard only; verl 0.9.1 runs write verl's file log.
    prime = trainer == algorithms.PRIME
    # verl's workers import entropy_rl (the covariance loss plugin, the reward): put the package on their path.
    pythonpath = os.pathsep.join(filter(None, [str(WORKFLOW_DIR), os.environ.get("PYTHONPATH")]))
    platform = getattr(params, "platform", platforms.GPU)
    env = platforms.environment(platform, {**os.environ, "PYTHONPATH": pythonpath}, threads=snakemake.threads)
    env = env if prime else launcher.verl_env(env)
    log_env = "TENSORBOARD_DIR" if prime else "VERL_FILE_LOGGER_PATH"
    command = launcher.bind(params.command, paths.RESULTS)
    log.info("command: %s", " ".join(command))
    nodes = launcher.allocation_nodes()
    interrupt = run.interrupt_at_step
    if interrupt and len(nodes) == 1 and saves.completed_step(checkpoints, trainer) < interrupt:
        preempt_once(command, env, checkpoints, trainer, interrupt, log_env, resuming, log)
    # Each launch: a checkpoint saved but never logged (a pre-emption between verl's save and its log) set aside, since
    # resumed from, its step would never be logged; a marker that names no whole save mended, deleting nothing; the
    # saves beyond the run's newest KEEP_CHECKPOINTS (earlier launches', which verl's retention forgets) removed.
    refused = refusal(checkpoints)
    if refused:
        log.info("%s", refused[1])
        sys.exit(refused[0] if refused[0] == job_time.CONTINUE else refused[1])
    try:
        ended = launch(
            command,
            env,
            checkpoints,
            trainer=trainer,
            keep=KEEP_CHECKPOINTS,
            steps=run.steps,
            log_env=log_env,
            tensorboard=prime,
            nodes=nodes,
            gpus_per_node=params.gpus_per_node,
            runtime_minutes=snakemake.resources.get("runtime"),
            kept=resuming,
        )
    except verl_checkpoints.RepeatedLoss as err:  # the same step lost again and again: stop, not retrain it once more
        sys.exit(str(err))
    status, why = ended.verdict()
    record(checkpoints, ended, status, why)
    if status:
        log.info("%s", why)
        sys.exit(status if status == job_time.CONTINUE else f"{why} ({checkpoints})")
    table = verl_metrics.to_metrics_table(verl_metrics.read_attempts(checkpoints), params.benchmarks)
    last = checkpoints / f"global_step_{ended.reached}"
    with atomic.output(snakemake.output.final) as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "verl.model_merger",
                "merge",
                "--backend",
                "fsdp",
                "--local_dir",
                f"{last}/actor",
                "--target_dir",
                str(tmp),
            ],
            check=True,
        )
    log.info("merged %s into %s", last, snakemake.output.final)
    atomic.to_parquet(table, snakemake.output.metrics)
