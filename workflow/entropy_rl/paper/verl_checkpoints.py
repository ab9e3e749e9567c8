"""A run's verl checkpoints against its logs: each launch resumes only from a step whose record verl has written.

verl saves step k (``global_step_k``, then ``latest_checkpointed_iteration.txt``) before it validates and logs step k
(verl 0.9.1 ``trainer_base.fit``: "2. save checkpoint", "4. validate", "5. record metrics"; verl 0.4.1, PRIME's, in the
same order). A job stopped between the two, by a pre-emption, a node failure or the time limit, leaves a checkpoint of a
step that no log holds, and a relaunch would resume after it: the run's table would lack that step's row for good.
Before each launch ``prepare_launch`` moves every checkpoint newer than the last logged step into ``unlogged/`` (never
deleted: it holds a real update) and points verl's marker at the newest one left, so the launch repeats the lost step
and logs it; its later record replaces any earlier one (``verl_metrics.read_attempts``).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from ..core import atomic
from . import verl_metrics

log = logging.getLogger(__name__)
MARKER = "latest_checkpointed_iteration.txt"  # verl's: the step a resume_mode=auto launch loads
ASIDE = "unlogged"
STEP_DIR = re.compile(r"^global_step_(\d+)$")


def saved_steps(checkpoints: str | Path) -> list[int]:
    """The steps of the ``global_step_<k>`` directories in ``checkpoints``, in order (a save cut short included)."""
    directory = Path(checkpoints)
    found = [STEP_DIR.match(p.name) for p in directory.iterdir()] if directory.is_dir() else []
    return sorted(int(m.group(1)) for m in found if m)


def logged_step(checkpoints: str | Path) -> int:
    """The last step any launch's log holds (validation before training is step 0), or -1 when none has a record."""
    return max((int(r["step"]) for r in verl_metrics.read_attempts(checkpoints)), default=-1)


def set_aside_unlogged(checkpoints: str | Path, logged: int) -> tuple[list[Path], int]:
    """Move the checkpoints of steps after ``logged`` into ``unlogged/`` and point verl's marker at the newest left
    (none left: no marker, and verl starts afresh). Returns the directories moved and the step a launch resumes from."""
    checkpoints = Path(checkpoints)
    moved = []
    for step in (s for s in saved_steps(checkpoints) if s > logged):
        target, k = checkpoints / ASIDE / f"global_step_{step}", 1
        while target.exists():  # a step lost twice keeps both copies
            target, k = checkpoints / ASIDE / f"global_step_{step}.{k}", k + 1
        target.parent.mkdir(exist_ok=True)
        (checkpoints / f"global_step_{step}").rename(target)
        moved.append(target)
    resume = max(saved_steps(checkpoints), default=0)
    marker = checkpoints / MARKER
    if moved and resume:
        atomic.write_text(marker, str(resume))
    elif moved:
        marker.unlink(missing_ok=True)
    return moved, resume


def prepare_launch(checkpoints: str | Path, tensorboard: bool = False) -> Path:
    """Before a launch: unlogged checkpoints set aside (each said in the job's log); returns the log this launch
    writes (``verl_metrics.next_attempt_log``)."""
    logged = logged_step(checkpoints)
    moved, resume = set_aside_unlogged(checkpoints, logged)
    for path in moved:
        log.warning("%s was saved but never logged (the job stopped between verl's save and its log; the last logged "
                    "step is %d): moved to %s; this launch resumes from %s and logs the step again", path.name, logged,
                    path, f"global_step_{resume}" if resume else "the base model")  # fmt: skip
    return verl_metrics.next_attempt_log(checkpoints, tensorboard=tensorboard)
