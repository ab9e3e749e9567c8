"""Paper-scale data: hub dataset snapshots turned into verl parquet.

Each *part* of the config reads one source's files and becomes verl rows
(``data_source``, ``prompt``, ``ability``, ``reward_model``, ``extra_info``), the
format the mini data already uses. ``qa`` sources get the paper's prompt
template; sources already in verl's format keep their own prompt. Code rows
carry their tests in ``reward_model.ground_truth`` with the test style in
``reward_model.style`` (``code:stdio``, ``code:asserts``, ``code:pytest``), which
the grader dispatches on.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from .data import VERL_COLUMNS, DataError, read_parquet


def read_files(root: str | Path, pattern: str) -> pd.DataFrame:
    """All rows of the parquet / JSON-lines / JSON files under ``root`` matching ``pattern``."""
    root = Path(root)
    files = sorted(p for p in root.glob(pattern) if p.is_file() and ".cache" not in p.parts)
    if not files:
        present = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())[:20]
        raise DataError(f"no file under {root} matches {pattern!r}; files there include {present}")
    frames = []
    for path in files:
        if path.suffix == ".parquet":
            frames.append(read_parquet(path))
        elif path.suffix in (".jsonl", ".json"):
            frames.append(pd.read_json(path, lines=path.suffix == ".jsonl"))
        else:
            raise DataError(f"{path}: cannot read a {path.suffix!r} file (parquet, jsonl or json expected)")
    return pd.concat(frames, ignore_index=True)


def holdout(frame: pd.DataFrame, size: int, keep: str, seed: int) -> pd.DataFrame:
    """A fixed random split: the same ``size`` rows are the held-out part for ``holdout`` and ``rest``."""
    order = np.random.default_rng(seed).permutation(len(frame))
    chosen = order[:size] if keep == "holdout" else order[size:]
    return frame.iloc[np.sort(chosen)].reset_index(drop=True)


def _answer(value, after: str | None, tests: bool) -> str:
    """The ground truth as text: a list of tests stays whole (JSON); of a list of
    equivalent final answers (OlympiadBench) the first is the reference."""
    if isinstance(value, (list, tuple, np.ndarray)):
        value = list(value)
        if tests:
            return json.dumps(value)
        if not value:
            raise DataError("an empty answer list")
        value = value[0]
    text = str(value)
    if after is not None:
        if after not in text:
            raise DataError(f"answer {text[:80]!r} has no {after!r} marker")
        text = text.rsplit(after, 1)[1]
    return text.strip()


def _field(row, name: str, part_name: str):
    if name not in row or row[name] is None:
        raise DataError(f"part {part_name}: a row has no field {name!r} (fields: {sorted(row.keys())})")
    return row[name]


def part_rows(
    frame: pd.DataFrame, part: dict, name: str, templates: dict, seed: int, data_source: str | None = None
) -> pd.DataFrame:
    """verl rows for one config part; ``data_source`` names the benchmark (or the part when training)."""
    if "holdout" in part:
        frame = holdout(frame, part["holdout"]["size"], part["holdout"]["keep"], seed)
    ability = "code" if "tests" in part else "math"
    style = f"code:{part['tests']}" if "tests" in part else "rule"
    source = data_source or name
    rows = []
    for i, row in enumerate(frame.to_dict("records")):
        if part["format"] == "verl":
            if "ability" in part and str(row.get("ability", "")).lower() != part["ability"].lower():
                continue
            prompt = [dict(m) for m in _field(row, "prompt", name)]
            gold = _field(row, "reward_model", name)["ground_truth"]
            gold = gold if isinstance(gold, str) else json.dumps(gold.tolist() if hasattr(gold, "tolist") else gold)
            question = prompt[-1]["content"]
        else:
            question = str(_field(row, part["question"], name))
            gold = _answer(_field(row, part["answer"], name), part.get("answer_after"), ability == "code")
            prompt = [{"role": "user", "content": templates[ability].format(question=question)}]
        rows.append(
            {
                "data_source": source,
                "prompt": prompt,
                "ability": ability,
                "reward_model": {"style": style, "ground_truth": gold},
                "extra_info": {
                    "split": part.get("holdout", {}).get("keep", "all"),
                    "index": i,
                    "part": name,
                    "question": question,
                    "style": style,
                },
            }
        )
    if not rows:
        raise DataError(f"part {name}: no rows left (check its files and ability filter)")
    return pd.DataFrame(rows, columns=VERL_COLUMNS)


def build_part(
    source_dir: str | Path, part: dict, name: str, templates: dict, seed: int, data_source: str | None = None
) -> pd.DataFrame:
    return part_rows(read_files(source_dir, part["files"]), part, name, templates, seed, data_source)


def shuffle(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    return frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)
