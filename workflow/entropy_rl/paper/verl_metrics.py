"""verl's logged metrics, translated into the ``metrics.parquet`` contract.

verl's file logger writes one JSON line per logged step, ``{"step": k, "data":
{...}}``. Training step k logs the rollout of the policy before update k, so
its metrics become row k − 1 of the table; validation logged at step k scores
the policy after update k (row k; step 0 is validation before training).
Nothing downstream reads verl's logs: every stage reads this table.
"""

from __future__ import annotations

import json
import logging
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from ..core import metric_columns

log = logging.getLogger(__name__)

# verl's key -> column; where two keys feed one column, the later wins. verl 0.9.1 runs log the
# paper's measures of each whole update batch as paper/* (verl_plugin.PaperMeasuresTrainer). PRIME
# runs on verl 0.4.1, whose only entropy is its own actor/entropy: the same batch (the groups the
# filter kept), aggregated token-mean rather than Eq. 5's mean of response means.
TRAINING_KEYS = {
    "actor/entropy": "entropy",
    "paper/entropy": "entropy",
    "critic/score/mean": "reward_mean",
    "response_length/mean": "response_length",
    "actor/pg_loss": "pg_loss",
    "actor/pg_clipfrac": "pg_clipfrac",
    "actor/ppo_kl": "ppo_kl",
    **{
        f"paper/{name}": name for name in ["cov_all", *metric_columns.COV_TOP, "bandit_cov", *metric_columns.BANDIT_ACC]
    },
    "paper/gen_batches": "gen_batches",
}
# Columns pooled from the loss plugin's per-micro-batch sums and counts: the plugin's worker logs each
# mini-batch's totals and the trainer their mean, so the ratio of two such means is the ratio of the
# step's pooled sums (verl's own mean over micro-batches would weight each mini-batch by 1 / its count).
LOSS_RATIOS = {
    "cliphigher_cov": ("actor/cliphigher_cov_sum", "actor/cliphigher_tokens"),
    "cov_touched_frac": ("actor/cov_touched_tokens", "actor/response_tokens"),
}
VALIDATION_KEY = re.compile(r"^val-core/(?P<source>.+)/(?P<var>acc|reward)/mean@(?P<n>\d+)$")


def read_jsonl(path: str | Path) -> list[dict]:
    """Every record of a verl file log. A last line cut short (a job killed mid-write, a disk full, a network filesystem)
    is left out: its step was not logged whole, and the next launch repeats it; a bad line before the last is not a
    write cut short and raises."""
    lines = [line for line in Path(path).read_text().splitlines() if line.strip()]
    records = []
    for k, line in enumerate(lines):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if k < len(lines) - 1:
                raise ValueError(f"{path}: line {k + 1} of {len(lines)} is not JSON, and not the last") from None
            log.warning(
                "%s: its last line is cut short (%d characters, not JSON): left out, its step is not logged",
                path,
                len(line),
            )
    return records


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
    return [
        record
        for path in attempt_logs(directory)
        for record in (read_jsonl(path) if path.suffix == ".jsonl" else read_tensorboard(path))
    ]


def _number(value) -> float:
    """A logged value as a float; verl's file logger writes a measure a step has no data for (the bandit covariance of
    an accuracy no kept group has) as null."""
    return math.nan if value is None else float(value)


def to_metrics_table(records: list[dict], benchmarks: list[str]) -> pd.DataFrame:
    """One row per policy π_t: training metrics of its rollout and, when validated, accuracy per benchmark."""
    rows: dict[int, dict] = {}
    for record in records:
        step, data = int(record["step"]), record["data"]
        train = {col: _number(data[key]) for key, col in TRAINING_KEYS.items() if key in data}
        for col, (part, whole) in LOSS_RATIOS.items():
            if part in data and whole in data:
                train[col] = float(data[part]) / float(data[whole]) if float(data[whole]) else math.nan
        if train and step >= 1:
            rows.setdefault(step - 1, {}).update(train)
        for key, value in data.items():
            m = VALIDATION_KEY.match(key)
            if m and m.group("source") in benchmarks:
                rows.setdefault(step, {})[f"val_acc/{m.group('source')}"] = float(value)
    if not rows:
        raise ValueError("no verl training or validation metrics in the log")
    val_cols = [f"val_acc/{b}" for b in benchmarks]
    frame = metric_columns.complete_table([{"step": step, **rows[step]} for step in sorted(rows)])
    for col in val_cols:
        if col not in frame:
            frame[col] = math.nan
    has_val = frame[val_cols].notna().all(axis=1)
    frame["val_acc"] = np.where(has_val, frame[val_cols].mean(axis=1), math.nan)
    return frame
