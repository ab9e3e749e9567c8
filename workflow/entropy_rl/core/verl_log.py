"""verl's file-logger records translated into the ``metrics.parquet`` contract: parsing only, no verl import.

verl's file logger writes one JSON line per logged step, ``{"step": k, "data":
{...}}``. Training step k logs the rollout of the policy before update k, so
its metrics become row k − 1 of the table; validation logged at step k scores
the policy after update k (row k; step 0 is validation before training).
The paper's runs (``paper.verl_metrics``) and ``study.run_logs`` (any verl run's log, for ``fit-law``) both
translate through here, so a log means the same wherever it is read.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from . import metric_columns

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
    **{f"paper/{name}": name for name in ["cov_all", *metric_columns.COV_TOP, "bandit_cov", *metric_columns.BANDIT_ACC]},
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
    with open(path) as fh:
        return [json.loads(line) for line in fh if line.strip()]


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
