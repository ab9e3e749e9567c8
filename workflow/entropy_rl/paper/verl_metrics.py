"""The logs of the paper's verl runs: each launch's own log, and the whole run's records in launch order.

What a record means, and its translation into the ``metrics.parquet`` contract, is ``core.verl_log``'s, named
here too for the job that translates a run (workflow/scripts/train_verl.py) and the pilot's report. Nothing
downstream reads verl's logs: every stage reads the table.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

# Re-exported: the train_verl job and the pilot's report read a run's log through this module.
from ..core.verl_log import LOSS_RATIOS, TRAINING_KEYS, VALIDATION_KEY, read_jsonl, to_metrics_table  # noqa: F401


def logged_step(path: str | Path) -> int:
    """The last step whose record verl's file logger has written whole to ``path`` (0 when none yet)."""
    try:
        lines = Path(path).read_text().splitlines()
    except FileNotFoundError:
        return 0
    steps = [0]
    for line in lines:
        try:
            steps.append(int(json.loads(line)["step"]))
        except (ValueError, KeyError, TypeError):  # a line still being written
            continue
    return max(steps)


def read_tensorboard(directory: str | Path) -> list[dict]:
    """verl's TensorBoard scalars (the logger of verl 0.4.1, which PRIME runs on: it has no file
    logger) as the file logger's records, one per step."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(directory), size_guidance={"scalars": 0})  # 0: keep every point
    events.Reload()
    by_step: dict[int, dict] = {}
    for tag in events.Tags()["scalars"]:
        for point in events.Scalars(tag):
            by_step.setdefault(int(point.step), {})[tag] = float(point.value)
    return [{"step": step, "data": data} for step, data in sorted(by_step.items())]


# verl's file logger truncates its file when it starts (and a TensorBoard directory would mix
# launches), so a requeued job that resumes from a checkpoint would erase the steps before it:
# each launch gets its own log, a JSON-lines file or (PRIME) a TensorBoard directory.
ATTEMPT_LOG = re.compile(r"^(?:verl_log\.(\d+)\.jsonl|tensorboard\.(\d+))$")


def _attempt(path: Path) -> int:
    m = ATTEMPT_LOG.match(path.name)
    return int(m.group(1) or m.group(2))


def attempt_logs(directory: str | Path) -> list[Path]:
    """The logs of every launch of a run, first launch first."""
    directory = Path(directory)
    found = [p for p in directory.iterdir() if ATTEMPT_LOG.match(p.name)] if directory.is_dir() else []
    return sorted(found, key=_attempt)


def next_attempt_log(directory: str | Path, tensorboard: bool = False) -> Path:
    logs = attempt_logs(directory)
    k = _attempt(logs[-1]) + 1 if logs else 1
    return Path(directory) / (f"tensorboard.{k}" if tensorboard else f"verl_log.{k}.jsonl")


def read_attempts(directory: str | Path) -> list[dict]:
    """All launches' records in launch order: a resumed launch repeats the steps after the last
    checkpoint, and in ``to_metrics_table`` its later records replace the lost launch's."""
    return [record for path in attempt_logs(directory)
            for record in (read_jsonl(path) if path.suffix == ".jsonl" else read_tensorboard(path))]  # fmt: skip
