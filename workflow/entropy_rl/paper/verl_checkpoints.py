"""A run's verl checkpoints against its logs: each launch resumes only from a completed save of a step whose record
verl has written.

verl saves step k (``global_step_k``, then ``latest_checkpointed_iteration.txt``) before it validates and logs step k
(verl 0.9.1 ``trainer_base.fit``: "2. save checkpoint", "4. validate", "5. record metrics"; verl 0.4.1, PRIME's, in the
same order). A job stopped between the two, by a pre-emption, a node failure or the time limit, leaves a checkpoint of a
step that no log holds, and a relaunch would resume after it: the run's table would lack that step's row for good.
Before each launch ``prepare_launch``:

- removes every ``global_step_<k>`` newer than verl's marker: a save cut short (verl writes the marker only once a save
  is whole), which no launch can load;
- moves the checkpoint of every step after the last logged one into ``unlogged/`` and points verl's marker at the
  newest one left, so the launch trains again from the save before it and logs the lost step: **up to ``save_every``
  steps are trained again** for each such stop. ``unlogged/`` keeps one copy (the latest set aside: a real update, read
  by hand if ever), not one per incident: at 32B a checkpoint with its optimizer state is hundreds of GB;
- stops, naming the step and the log, once the same step has been set aside ``MAX_SET_ASIDE`` times: a failure after
  the save that repeats (validation is greedy, so a crash on one answer comes back) would otherwise retrain up to
  ``save_every`` steps on every requeue, and fail at the same place.

The lost step's later record replaces any earlier one (``verl_metrics.read_attempts``).
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..core import atomic
from . import verl_metrics

log = logging.getLogger(__name__)
MARKER = "latest_checkpointed_iteration.txt"  # verl's: the step a resume_mode=auto launch loads
ASIDE = "unlogged"
COUNTS = "set_aside.json"  # in ASIDE: how many times each step was set aside
STEP_DIR = re.compile(r"^global_step_(\d+)$")
# The times one step may be saved and lost before the launch stops: a second loss at the same step is a failure that
# repeats, not a pre-emption's bad luck.
MAX_SET_ASIDE = 2


class RepeatedLoss(RuntimeError):
    """The same step saved and never logged MAX_SET_ASIDE times: the failure after its save repeats."""


@dataclass(frozen=True)
class Prepared:
    log: Path  # the log this launch writes (verl_metrics.next_attempt_log)
    resume: int  # the step it resumes from; 0: the base model
    set_aside: list[Path]  # checkpoints moved into unlogged/
    removed: list[Path]  # saves cut short, removed


def saved_steps(checkpoints: str | Path) -> list[int]:
    """The steps of the ``global_step_<k>`` directories in ``checkpoints``, in order (a save cut short included)."""
    directory = Path(checkpoints)
    found = [STEP_DIR.match(p.name) for p in directory.iterdir()] if directory.is_dir() else []
    return sorted(int(m.group(1)) for m in found if m)


def completed_step(checkpoints: str | Path) -> int:
    """The last save verl completed: its marker's step (0 without one)."""
    try:
        return int((Path(checkpoints) / MARKER).read_text().strip() or 0)
    except (FileNotFoundError, ValueError):
        return 0


def logged_step(checkpoints: str | Path) -> int:
    """The last step any launch's log holds (validation before training is step 0), or -1 when none has a record."""
    return max((int(r["step"]) for r in verl_metrics.read_attempts(checkpoints)), default=-1)


def _counts(checkpoints: Path) -> dict[str, int]:
    path = checkpoints / ASIDE / COUNTS
    return json.loads(path.read_text()) if path.is_file() else {}


def remove_cut_short(checkpoints: str | Path) -> list[Path]:
    """Remove every save newer than verl's marker: cut short, it cannot be loaded."""
    checkpoints = Path(checkpoints)
    done = completed_step(checkpoints)
    cut = [checkpoints / f"global_step_{s}" for s in saved_steps(checkpoints) if s > done]
    for path in cut:
        shutil.rmtree(path)
    return cut


def set_aside_unlogged(checkpoints: str | Path, logged: int, attempt_log: str | Path | None = None) -> tuple[list[Path], int]:
    """Move the checkpoints of steps after ``logged`` into ``unlogged/`` (keeping only the latest one set aside) and
    point verl's marker at the newest left (none left: no marker, and verl starts afresh). Returns the directories
    moved and the step a launch resumes from. Raises RepeatedLoss, moving nothing, when a step would be set aside for
    the MAX_SET_ASIDE + 1-th time (``attempt_log``: the log of the launch that lost it, for the message)."""
    checkpoints = Path(checkpoints)
    lost = [s for s in saved_steps(checkpoints) if s > logged]
    counts = _counts(checkpoints)
    for step in lost:
        if counts.get(str(step), 0) >= MAX_SET_ASIDE:
            raise RepeatedLoss(
                f"step {step} was saved and never logged {counts[str(step)] + 1} times: what follows its save "
                f"(validation, the log) fails again and again, and each relaunch retrains up to save_every steps to "
                f"reach it. Not relaunched; read the last launch's log ({attempt_log or 'verl_log.*.jsonl'}) and the "
                f"job's log. To try once more, delete {checkpoints / ASIDE / COUNTS}."
            )  # fmt: skip
    moved = []
    if lost:
        aside = checkpoints / ASIDE
        for old in (p for p in aside.iterdir() if p.is_dir()) if aside.is_dir() else ():
            shutil.rmtree(old)  # one copy: the latest set aside
        aside.mkdir(exist_ok=True)
        for step in lost:
            target = aside / f"global_step_{step}"
            (checkpoints / f"global_step_{step}").rename(target)
            moved.append(target)
            counts[str(step)] = counts.get(str(step), 0) + 1
        atomic.write_text(aside / COUNTS, json.dumps(counts, sort_keys=True) + "\n")
    resume = max(saved_steps(checkpoints), default=0)
    marker = checkpoints / MARKER
    if moved and resume:
        atomic.write_text(marker, str(resume))
    elif moved:
        marker.unlink(missing_ok=True)
    return moved, resume


def prepare_launch(checkpoints: str | Path, tensorboard: bool = False) -> Prepared:
    """Before a launch: saves cut short removed, unlogged checkpoints set aside (each said in the job's log), a
    repeated loss stopped (RepeatedLoss); returns what this launch resumes from and the log it writes."""
    logs = verl_metrics.attempt_logs(checkpoints)
    removed = remove_cut_short(checkpoints)
    for path in removed:
        log.warning("%s was cut short (verl's marker says step %d is its last whole save): removed", path.name,
                    completed_step(checkpoints))  # fmt: skip
    logged = logged_step(checkpoints)
    moved, resume = set_aside_unlogged(checkpoints, logged, logs[-1] if logs else None)
    for path in moved:
        log.warning("%s was saved but never logged (the job stopped between verl's save and its log; the last logged "
                    "step is %d): moved to %s; this launch resumes from %s and trains the steps after it again",
                    path.name, logged, path, f"global_step_{resume}" if resume else "the base model")  # fmt: skip
    resume = completed_step(checkpoints) if Path(checkpoints, MARKER).exists() else 0
    return Prepared(verl_metrics.next_attempt_log(checkpoints, tensorboard=tensorboard), resume, moved, removed)


def launch_words(kept: bool, resume: int) -> str:
    """What a launch does, as its job's log says it: from which save it resumes, or that it starts from the base model
    (``kept``: whether the run's checkpoints were kept for it, core.resume.claim)."""
    if resume:
        return f"resuming from global_step_{resume}"
    return "starting from the base model" + (" (no save of this run survives to resume from)" if kept else "")

