"""The data contract between stages: verl's RL parquet rows (one prompt each, at both scales).

A row has verl's columns: ``prompt`` (a chat: list of role/content messages), ``data_source``,
``ability``, ``reward_model`` (``style`` and ``ground_truth``) and ``extra_info``. Every stage that
reads a training or benchmark file checks it here, so a malformed file fails with its path.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

VERL_COLUMNS = ["data_source", "prompt", "ability", "reward_model", "extra_info"]


class DataError(ValueError):
    """A dataset the workflow cannot use, named by its path, with what is wrong and where."""


ROLES = {"system", "user", "assistant"}


def read_parquet(path: str | Path) -> pd.DataFrame:
    try:
        return pd.read_parquet(path)
    except Exception as exc:  # pyarrow's errors for a truncated, empty or foreign file
        raise DataError(
            f"{path}: not a readable parquet file ({type(exc).__name__}: {exc}). Delete it and run snakemake "
            "again to remake it (or download it again, for a source)"
        ) from exc


def _prompt_problem(prompt) -> str | None:
    if not isinstance(prompt, (list, tuple, np.ndarray)) or len(prompt) == 0:
        return "prompt is not a non-empty list of messages"
    for m in prompt:
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            return f"a prompt message has no role of {sorted(ROLES)}"
        if not isinstance(m.get("content"), str) or not m["content"].strip():
            return "a prompt message has no text"
    return None


def _reward_problem(reward_model) -> str | None:
    if not isinstance(reward_model, dict) or not isinstance(reward_model.get("style"), str):
        return "reward_model has no style"
    truth = reward_model.get("ground_truth")
    if (
        truth is None
        or (isinstance(truth, str) and not truth.strip())
        or (hasattr(truth, "__len__") and len(truth) == 0)
    ):
        return "reward_model has no ground_truth"
    return None


def check_verl_rows(frame: pd.DataFrame, path) -> None:
    """Every row has a usable prompt and reward; the error counts the bad rows and shows the first."""
    for column, problem_of in (("prompt", _prompt_problem), ("reward_model", _reward_problem)):
        problems = [(i, p) for i, value in enumerate(frame[column]) if (p := problem_of(value)) is not None]
        if problems:
            i, what = problems[0]
            raise DataError(
                f"{path}: {len(problems)} of {len(frame)} rows are unusable; the first, row {i}: {what} ({frame[column].iloc[i]!r:.200})"
            )


def load_verl_parquet(path: str | Path) -> pd.DataFrame:
    """A verl dataset, checked: readable, every verl column, and every row's prompt and reward usable."""
    frame = read_parquet(path)
    missing = [c for c in VERL_COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: not a verl dataset, missing columns {missing} (it has {list(frame.columns)})")
    check_verl_rows(frame, path)
    return frame


def problem_styles(frame: pd.DataFrame) -> list[str]:
    """Each row's reward style (``rule``: math-verify; ``code:<tests>``: the sandbox), as the reward reads it."""
    return [str(rm["style"]) for rm in frame["reward_model"]]


def prompts_and_answers(frame: pd.DataFrame) -> tuple[list[list[dict]], list[str]]:
    """Chat messages and ground truths of a verl frame, as plain Python objects."""
    prompts = [[{"role": m["role"], "content": m["content"]} for m in p] for p in frame["prompt"]]
    answers = [str(rm["ground_truth"]) for rm in frame["reward_model"]]
    return prompts, answers
