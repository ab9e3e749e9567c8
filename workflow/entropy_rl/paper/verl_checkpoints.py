"""A run's verl checkpoints against its logs: each launch resumes only from a whole save of a step whose record verl
has written, and the saves a relaunch can no longer need are removed.

verl saves step k (``global_step_k``, then ``latest_checkpointed_iteration.txt``) before it validates and logs step k
(verl 0.9.1 ``trainer_base.fit``: "2. save checkpoint", "4. validate", "5. record metrics"; verl 0.4.1, PRIME's, in the
same order). A job stopped between the two, by a pre-emption, a node failure or the time limit, leaves a checkpoint of a
step that no log holds, and a relaunch would resume after it: the run's table would lack that step's row for good.

A save is whole, and verl's marker trusted, as ``saves`` defines them: the marker only when it names a whole save.
Before each launch ``prepare_launch``:

- with a marker that is not trusted (empty, unreadable, naming a missing or hollow save, or absent beside whole saves)
  deletes nothing: it points the marker at the newest whole save, written atomically, or with none moves it aside
  (``*.untrusted``), so that verl starts from the base model as the log then says;
- otherwise removes every ``global_step_<k>`` newer than the marker: a save cut short, which no launch can load;
- moves the whole saves of every step after the last logged one into ``unlogged/`` and points verl's marker at the
  newest whole save left, so the launch trains again from the save before it and logs the lost step: **up to
  ``save_every`` steps are trained again** for each such stop. ``unlogged/`` keeps one copy (the latest set aside: a
  real update, read by hand if ever), not one per incident: at 32B a checkpoint with its optimizer state is hundreds
  of GB;
- stops, naming the step and the log, once the same step has been set aside ``MAX_SET_ASIDE`` times: a failure after
  the save that repeats (validation is greedy, so a crash on one answer comes back) would otherwise retrain up to
  ``save_every`` steps on every requeue, and fail at the same place;
- removes (``saves.prune``) the whole saves older than the newest ``keep`` and the hollow ones below the marker: earlier
  launches' saves, which verl's retention forgets (it knows only its own process's saves). The trainers call
  ``prune`` after each save too (``verl_plugin``, ``prime_main``; PRIME's recipe keeps every save), so a run holds at
  most ``keep`` whole saves, one being written and the one in ``unlogged/`` (``peak_saves``).

The lost step's later record replaces any earlier one (``verl_metrics.read_attempts``).
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..core import atomic
from . import verl_metrics
from .saves import MARKER, completed_step, marker_text, prune, saved_steps, trusted_step, whole_steps

log = logging.getLogger(__name__)
UNTRUSTED = MARKER + ".untrusted"  # a marker that named no whole save, moved aside with none to point at
ASIDE = "unlogged"
COUNTS = "set_aside.json"  # in ASIDE: how many times each step was set aside
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
    pruned: list[Path] = field(default_factory=list)  # saves a relaunch no longer needs, removed
    repaired: str = ""  # what was done to a marker that was not trusted, in the log's words ("" when it was)


def logged_step(checkpoints: str | Path) -> int:
    """The last step any launch's log holds (validation before training is step 0), or -1 when none has a record."""
    return max((int(r["step"]) for r in verl_metrics.read_attempts(checkpoints)), default=-1)


def _counts(checkpoints: Path) -> dict[str, int]:
    path = checkpoints / ASIDE / COUNTS
    return json.loads(path.read_text()) if path.is_file() else {}


def repair_marker(checkpoints: str | Path, trainer: str = "verl") -> str:
    """A marker that names no whole save (empty, unreadable, a missing or hollow save; or none beside whole saves),
    mended without deleting anything: pointed at the newest whole save, atomically, or with no whole save moved aside
    so that verl starts from the base model. Returns what was done, for the log ("" when the marker is trusted or
    there is nothing to mend)."""
    checkpoints = Path(checkpoints)
    text, saves = marker_text(checkpoints), whole_steps(checkpoints, trainer)
    if trusted_step(checkpoints, trainer) is not None or (text is None and not saves):
        return ""
    stripped = (text or "").strip()
    if text is None:
        what = "verl's marker is missing beside whole saves"
    elif not stripped.isdigit():
        what = f"verl's marker {checkpoints / MARKER} reads {text[:40]!r}, not a step"
    elif (checkpoints / f"global_step_{stripped}").is_dir():
        what = f"verl's marker names global_step_{stripped}, which is not whole (hollow or cut short)"
    else:
        what = f"verl's marker names global_step_{stripped}, which is missing"
    if saves:
        atomic.write_text(checkpoints / MARKER, str(saves[-1]))
        return f"{what}: it now names global_step_{saves[-1]}, the newest whole save; nothing was deleted"
    (checkpoints / MARKER).rename(checkpoints / UNTRUSTED)
    return (
        f"{what}, and no save is whole: moved to {UNTRUSTED}, and verl starts from the base model; nothing was deleted"
    )


def remove_cut_short(checkpoints: str | Path, trainer: str = "verl") -> list[Path]:
    """Remove every save newer than verl's trusted marker (all of them without a marker): cut short, none can be
    loaded. Call only once the marker is trusted or absent (``repair_marker``)."""
    checkpoints = Path(checkpoints)
    done = completed_step(checkpoints, trainer)
    cut = [checkpoints / f"global_step_{s}" for s in saved_steps(checkpoints) if s > done]
    for path in cut:
        shutil.rmtree(path)
    return cut


def set_aside_unlogged(
    checkpoints: str | Path, logged: int, attempt_log: str | Path | None = None, trainer: str = "verl"
) -> tuple[list[Path], int]:
    """Move the whole saves of steps after ``logged`` into ``unlogged/`` (keeping only the latest one set aside) and
    point verl's marker at the newest whole save left (none left: no marker, and verl starts afresh). Returns the
    directories moved and the step a launch resumes from. Raises RepeatedLoss, moving nothing, when a step would be set
    aside for the MAX_SET_ASIDE + 1-th time (``attempt_log``: the log of the launch that lost it, for the message)."""
    checkpoints = Path(checkpoints)
    lost = [s for s in whole_steps(checkpoints, trainer) if s > logged]
    counts = _counts(checkpoints)
    for step in lost:
        if counts.get(str(step), 0) >= MAX_SET_ASIDE:
            raise RepeatedLoss(
                f"step {step} was saved and never logged {counts[str(step)] + 1} times: what follows its save "
                f"(validation, the log) fails again and again, and each relaunch retrains up to save_every steps to "
                f"reach it. Not relaunched; read the last launch's log ({attempt_log or 'verl_log.*.jsonl'}) and the "
                f"job's log. To try once more, delete {checkpoints / ASIDE / COUNTS}."
            )
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
    resume = max(whole_steps(checkpoints, trainer), default=0)
    marker = checkpoints / MARKER
    if moved and resume:
        atomic.write_text(marker, str(resume))
    elif moved:
        marker.unlink(missing_ok=True)
    return moved, resume


def prepare_launch(
    checkpoints: str | Path, trainer: str = "verl", keep: int = 0, tensorboard: bool = False
) -> Prepared:
    """Before a launch: a marker not to trust mended without deleting anything, saves cut short removed, unlogged
    saves set aside, a repeated loss stopped (RepeatedLoss), and saves beyond the newest ``keep`` pruned (0: none), each
    said in the job's log; returns what this launch resumes from and the log it writes."""
    logs = verl_metrics.attempt_logs(checkpoints)
    repaired = repair_marker(checkpoints, trainer)
    if repaired:
        log.warning("%s", repaired)
    removed = [] if repaired else remove_cut_short(checkpoints, trainer)
    for path in removed:
        log.warning(
            "%s was cut short (verl's marker says step %d is its last whole save): removed",
            path.name,
            completed_step(checkpoints, trainer),
        )
    logged = logged_step(checkpoints)
    moved, resume = set_aside_unlogged(checkpoints, logged, logs[-1] if logs else None, trainer)
    for path in moved:
        log.warning(
            "%s was saved but never logged (the job stopped between verl's save and its log; the last logged "
            "step is %d): moved to %s; this launch resumes from %s and trains the steps after it again",
            path.name,
            logged,
            path,
            f"global_step_{resume}" if resume else "the base model",
        )
    pruned = [] if repaired else prune(checkpoints, keep, trainer)
    if pruned:
        log.info(
            "removed %s: saves no relaunch needs (the newest %d whole saves are kept)",
            ", ".join(p.name for p in pruned),
            keep,
        )
    resume = completed_step(checkpoints, trainer)
    log_path = verl_metrics.next_attempt_log(checkpoints, tensorboard=tensorboard)
    return Prepared(log_path, resume, moved, removed, pruned, repaired)


def launch_words(kept: bool, resume: int) -> str:
    """What a launch does, as its job's log says it: from which save it resumes, or that it starts from the base model
    (``kept``: whether the run's checkpoints were kept for it, core.resume.claim)."""
    if resume:
        return f"resuming from global_step_{resume}"
    return "starting from the base model" + (" (no save of this run survives to resume from)" if kept else "")
