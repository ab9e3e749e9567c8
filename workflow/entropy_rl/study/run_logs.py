"""Any run's training log read into the study's metrics table, for ``fit_law``: verl's file logger (JSON lines),
a Hugging Face Trainer's ``trainer_state.json`` (TRL's GRPOTrainer), or a CSV of step, entropy and accuracy.

Each reader returns the table ``analysis`` fits (step, entropy, val_acc) with what it read: the keys, the kind of
entropy, how entropy and accuracy were paired, and how many logged values were not finite numbers (dropped).
The kind matters: the paper's Eq. 5 averages each response's mean token entropy over the responses (this workflow's
``paper/entropy``); verl's ``actor/entropy`` and TRL's ``entropy`` average over every response token of the batch,
which weighs long responses more, so the same run gives other a and b.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

FORMATS = ("verl", "trl", "csv")
EQ5 = "response-mean: each response's mean token entropy, averaged over responses (the paper's Eq. 5)"
TOKEN_MEAN = "token-mean: the mean over every response token of the batch, not the paper's Eq. 5"
# verl logs agg_loss(entropy, response_mask, actor.loss_agg_mode) of the rollout batch as actor/entropy (0.4.1 on:
# ray_trainer.py; 0.9.1 also trainer/ppo/v1/trainer_base.py), as actor/entropy_loss in 0.4.0; loss_agg_mode defaults
# to token-mean. Its file logger (JSON lines) is 0.6's on; an earlier run's records exported in that shape read the same.
_VERL_TOKEN_MEAN = TOKEN_MEAN + (
    " (verl aggregates it by the actor's loss_agg_mode: token-mean unless the run set "
    "another; seq-mean-token-mean would be Eq. 5)"
)
VERL_ENTROPY = {
    "paper/entropy": EQ5 + ", logged by this workflow's verl plugin",
    "actor/entropy": _VERL_TOKEN_MEAN,
    "actor/entropy_loss": _VERL_TOKEN_MEAN + ", under verl 0.4.0's name",
}
# TRL's GRPOTrainer (from 0.20) logs "entropy", the mean over completion tokens, and prefixes what it logs while
# evaluating with "eval_" (grpo_trainer.py, log); a reward function's mean is rewards/<function name>/mean (from
# 0.17; rewards/<name> before), "reward" their weighted sum. accuracy_reward is TRL's own (trl.rewards).
TRL_ENTROPY = "entropy"
TRL_ACCURACY = ("eval_rewards/accuracy_reward/mean", "eval_rewards/accuracy_reward", "eval_reward")
VERL_ACCURACY = "val-core/<data source>/<acc or reward>/mean@<n>"  # what VERL_VALIDATION matches
# verl's validation keys (ray_trainer.py, _val_metrics_update), as paper.verl_metrics reads them for this workflow's
# runs; that translation is not imported (the study may not import paper) nor moved (its module is in every GPU
# training job's code stamp: moving it would outdate each paid run).
VERL_VALIDATION = re.compile(r"^val-core/(?P<source>.+)/(?P<var>acc|reward)/mean@(?P<n>\d+)$")


class LogError(ValueError):
    """A log that cannot give the law's points; the message names what was looked for."""


@dataclass
class RunLog:
    path: str
    format: str
    table: pd.DataFrame  # step, entropy, val_acc: one row per policy, NaN where it has no such value
    entropy_key: str
    entropy_kind: str
    accuracy_keys: list[str]
    pairing: str
    last_step: int  # the last step the log reaches (the early window is a fraction of it)
    dropped: dict[str, int] = field(default_factory=dict)  # logged values not finite, by quantity


def read_log(path, fmt: str | None = None, entropy_key: str | None = None, accuracy_keys=None) -> RunLog:
    """The log at ``path`` in ``fmt`` (by default from its suffix: .jsonl verl, .json TRL, .csv CSV)."""
    path = Path(path)
    if not path.is_file():
        raise LogError(f"{path}: no such file")
    fmt = fmt or {".jsonl": "verl", ".json": "trl", ".csv": "csv"}.get(path.suffix)
    if fmt not in FORMATS:
        raise LogError(f"{path}: cannot tell the format from the suffix {path.suffix!r}; give one of {list(FORMATS)}")
    reader = {"verl": read_verl, "trl": read_trl, "csv": read_csv}[fmt]
    return reader(path, entropy_key, list(accuracy_keys or []))


def _finite(value) -> float:
    """A logged value as a float, NaN where it is not a finite number (verl's orjson writes NaN as null)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return math.nan
    return number if math.isfinite(number) else math.nan


def _missing(what: str, path, looked_for, present) -> LogError:
    shown = sorted(present)
    more = f" (and {len(shown) - 40} more)" if len(shown) > 40 else ""
    return LogError(f"{path}: no {what}: looked for {list(looked_for)}; the log has {shown[:40]}{more}")


def read_verl(path, entropy_key: str | None = None, accuracy_keys: list[str] | None = None) -> RunLog:
    """verl's file logger, paired as this workflow's own runs are (paper.verl_metrics): training step k logs the
    rollout of the policy before update k, so its entropy is the policy's of row k - 1; validation at step k scores
    the policy after update k (row k). Entropy: ``entropy_key``, or the first of ``VERL_ENTROPY`` the log has.
    Accuracy: the mean of ``accuracy_keys``, or of every validation key verl logs (one per data source), at the
    steps where each is logged."""
    try:
        records = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
        keys = set().union(*(r["data"] for r in records))
        steps = [int(r["step"]) for r in records]
    except (ValueError, KeyError, TypeError) as err:
        raise LogError(
            f"{path}: not verl's file-logger JSON lines ({{'step': k, 'data': {{...}}}} a line): {err}"
        ) from err
    wanted = [entropy_key] if entropy_key else list(VERL_ENTROPY)
    entropy_key = next((k for k in wanted if k in keys), None)
    if entropy_key is None:
        raise _missing("entropy", path, wanted, keys)
    wanted = accuracy_keys or [VERL_ACCURACY]
    accuracy_keys = accuracy_keys or sorted(k for k in keys if VERL_VALIDATION.match(k))
    if not accuracy_keys or not set(accuracy_keys) <= keys:
        raise _missing("validation accuracy", path, wanted, keys)
    dropped = {"entropy": 0, "accuracy": 0}
    rows: dict[int, dict] = {}
    for step, record in zip(steps, records):
        data = record["data"]
        if entropy_key in data and step >= 1:  # later records of a step replace earlier ones (a resumed run's)
            rows.setdefault(step - 1, {})["entropy"] = H = _finite(data[entropy_key])
            dropped["entropy"] += math.isnan(H)
        if all(k in data for k in accuracy_keys):  # a validation: every source scored
            values = [_finite(data[k]) for k in accuracy_keys]
            dropped["accuracy"] += sum(map(math.isnan, values))
            rows.setdefault(step, {})["val_acc"] = float(np.mean(values))
    table = pd.DataFrame([{"step": k, **rows[k]} for k in sorted(rows)], columns=["step", "entropy", "val_acc"])
    pairing = (
        "verl logs step k's entropy from the rollout before update k and validates after update k: the "
        "accuracy validated at step k is paired with the entropy logged at step k + 1 (as this workflow "
        "translates its own runs); a validation with no later step has no entropy and is not fitted"
    )
    return RunLog(
        str(path),
        "verl",
        table,
        entropy_key,
        VERL_ENTROPY.get(entropy_key, "named by the user: its aggregation is not known here"),
        accuracy_keys,
        pairing,
        max(steps),
        dropped,
    )


def read_trl(path, entropy_key: str | None = None, accuracy_keys: list[str] | None = None) -> RunLog:
    """A Trainer's ``trainer_state.json``: its ``log_history``, one entry per log call, each with its ``step``.
    Accuracy is read from the evaluation entries; an entropy key starting with ``eval_`` from the same entry (the
    evaluated policy's own completions), any other from the first training entry logged after the evaluation
    (the rollouts of the policy just evaluated, when logging_steps is 1), as verl's logs are paired."""
    try:
        history = json.loads(Path(path).read_text())["log_history"]
        entries = [e for e in history if isinstance(e, dict) and "step" in e]
    except (ValueError, KeyError, TypeError) as err:
        raise LogError(f"{path}: not a trainer_state.json with a log_history list: {err}") from err
    keys = set().union(*entries) if entries else set()
    entropy_key = entropy_key or TRL_ENTROPY
    if entropy_key not in keys:
        raise _missing("entropy", path, [entropy_key], keys)
    wanted = accuracy_keys or list(TRL_ACCURACY)
    accuracy_keys = accuracy_keys or [next((k for k in TRL_ACCURACY if k in keys), "")]
    if not set(accuracy_keys) <= keys:
        raise _missing("validation accuracy", path, wanted, keys)
    evals = [e for e in entries if any(k in e for k in accuracy_keys)]
    train = sorted(
        (e for e in entries if entropy_key in e and not any(k in e for k in accuracy_keys)), key=lambda e: e["step"]
    )
    dropped = {"entropy": 0, "accuracy": 0}
    rows = []
    for entry in sorted(evals, key=lambda e: e["step"]):
        values = [_finite(entry.get(k)) for k in accuracy_keys]
        dropped["accuracy"] += sum(math.isnan(v) for k, v in zip(accuracy_keys, values) if k in entry)
        source = entry if entropy_key.startswith("eval_") else next((e for e in train if e["step"] > entry["step"]), {})
        H = _finite(source.get(entropy_key))
        dropped["entropy"] += entropy_key in source and math.isnan(H)
        rows.append({"step": int(entry["step"]), "entropy": H, "val_acc": float(np.mean(values))})
    if entropy_key.startswith("eval_"):
        pairing = f"each evaluation's accuracy beside the {entropy_key} of the same evaluation"
    else:
        pairing = (
            f"each evaluation at step k beside the {entropy_key} of the first training log after it (the "
            "policy evaluated, when logging_steps is 1); an evaluation with no later training log is not fitted"
        )
    kind = TOKEN_MEAN + " (TRL's GRPOTrainer)" if entropy_key in ("entropy", "eval_entropy") else "named by the user"
    table = pd.DataFrame(rows, columns=["step", "entropy", "val_acc"])
    return RunLog(
        str(path),
        "trl",
        table,
        entropy_key,
        kind,
        accuracy_keys,
        pairing,
        max(int(e["step"]) for e in entries),
        dropped,
    )


def read_csv(path, entropy_key: str | None = None, accuracy_keys: list[str] | None = None) -> RunLog:
    """A CSV with a row per step: ``step``, ``entropy`` and ``accuracy`` (or the columns named), a row pairing them
    as given; an empty cell is a step without that value."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)  # so "nan" is counted as not finite, "" as absent
    entropy_key = entropy_key or "entropy"
    accuracy_keys = accuracy_keys or ["accuracy"]
    for what, wanted in (("step", ["step"]), ("entropy", [entropy_key]), ("validation accuracy", accuracy_keys)):
        if not set(wanted) <= set(frame.columns):
            raise _missing(what, path, wanted, frame.columns)
    step = pd.to_numeric(frame["step"], errors="coerce")
    if step.isna().any():
        raise LogError(f"{path}: column 'step' has {int(step.isna().sum())} cells that are not numbers")
    dropped, columns = {}, {}
    for what, names in (("entropy", [entropy_key]), ("accuracy", accuracy_keys)):
        given = frame[names].ne("")
        values = frame[names].apply(lambda col: col.map(_finite))
        dropped[what] = int((given & values.isna()).sum().sum())
        columns[what] = values.mean(axis=1, skipna=False)
    table = pd.DataFrame({"step": step.astype(int), "entropy": columns["entropy"], "val_acc": columns["accuracy"]})
    return RunLog(
        str(path),
        "csv",
        table,
        entropy_key,
        "as the file gives it: its aggregation is not known here",
        accuracy_keys,
        "entropy and accuracy as each row of the file pairs them",
        int(step.max()),
        dropped,
    )
