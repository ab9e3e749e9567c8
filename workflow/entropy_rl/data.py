"""Mini-scale data: procedural tasks from reasoning-gym written as verl parquet.

Every row follows verl's RL dataset format (``data_source``, ``prompt`` as chat
messages, ``ability``, ``reward_model{style, ground_truth}``, ``extra_info``), so
the mini trainer, the evaluator and verl itself read the same files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import reasoning_gym

PROMPT_SUFFIX = " Put the final answer in \\boxed{}."
VERL_COLUMNS = ["data_source", "prompt", "ability", "reward_model", "extra_info"]


def task_questions(task: str, params: dict, size: int, seed: int) -> list[tuple[str, str]]:
    """(question, answer) pairs from one reasoning-gym task at a fixed seed."""
    ds = reasoning_gym.create_dataset(task, size=size, seed=seed, **params)
    return [(entry["question"], str(entry["answer"])) for entry in ds]


def verl_rows(pairs, data_source: str, split: str, task: str) -> list[dict]:
    return [
        {
            "data_source": data_source,
            "prompt": [{"role": "user", "content": q + PROMPT_SUFFIX}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": a},
            "extra_info": {"split": split, "index": i, "task": task, "question": q},
        }
        for i, (q, a) in enumerate(pairs)
    ]


def build_benchmarks(benchmarks: dict, seed: int) -> dict[str, pd.DataFrame]:
    """One frame per benchmark; each gets its own seed so they are independent draws."""
    frames = {}
    for k, (name, spec) in enumerate(sorted(benchmarks.items())):
        pairs = task_questions(spec["task"], spec.get("params", {}), spec["size"], seed + 1000 * (k + 1))
        frames[name] = pd.DataFrame(verl_rows(pairs, name, "test", spec["task"]), columns=VERL_COLUMNS)
    return frames


def build_training_mix(benchmarks: dict, size: int, seed: int, exclude: set[str], split: str) -> pd.DataFrame:
    """A shuffled mix of every benchmark's task family, with no question shared with ``exclude``.

    The training set draws from the same task families as the benchmarks (as the
    paper trains on Eurus-2-RL-Math and evaluates on held-out math benchmarks) but
    never contains a benchmark question.
    """
    names = sorted(benchmarks)
    per_task = int(np.ceil(size / len(names)))
    rows = []
    for k, name in enumerate(names):
        spec = benchmarks[name]
        # Over-draw, then drop held-out questions and duplicates.
        pairs = task_questions(spec["task"], spec.get("params", {}), 2 * per_task + 50, seed + 7919 * (k + 1))
        seen, kept = set(), []
        for q, a in pairs:
            if q in exclude or q in seen:
                continue
            seen.add(q)
            kept.append((q, a))
        rows += verl_rows(kept[:per_task], f"{split}/{name}", split, spec["task"])
    frame = pd.DataFrame(rows, columns=VERL_COLUMNS)
    frame = frame.sample(frac=1.0, random_state=seed).head(size).reset_index(drop=True)
    frame["extra_info"] = [dict(e, index=i) for i, e in enumerate(frame["extra_info"])]
    return frame


def prepare_mini_data(spec: dict, out_dir: str | Path) -> dict[str, Path]:
    """Write train.parquet, pretrain.parquet and benchmarks/{name}.parquet under ``out_dir``."""
    out = Path(out_dir)
    (out / "benchmarks").mkdir(parents=True, exist_ok=True)
    seed = spec["seed"]
    benches = build_benchmarks(spec["benchmarks"], seed)
    held_out = {e["question"] for f in benches.values() for e in f["extra_info"]}
    train = build_training_mix(spec["benchmarks"], spec["train_size"], seed + 1, held_out, "train")
    pretrain = build_training_mix(spec["benchmarks"], spec["pretrain_size"], seed + 2, held_out, "pretrain")
    paths = {"train": out / "train.parquet", "pretrain": out / "pretrain.parquet"}
    train.to_parquet(paths["train"])
    pretrain.to_parquet(paths["pretrain"])
    for name, frame in benches.items():
        paths[name] = out / "benchmarks" / f"{name}.parquet"
        frame.to_parquet(paths[name])
    return paths


def load_verl_parquet(path: str | Path) -> pd.DataFrame:
    frame = pd.read_parquet(path)
    missing = [c for c in VERL_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: not a verl dataset, missing columns {missing}")
    return frame


def prompts_and_answers(frame: pd.DataFrame) -> tuple[list[list[dict]], list[str]]:
    """Chat messages and ground truths of a verl frame, as plain Python objects."""
    prompts = [[{"role": m["role"], "content": m["content"]} for m in p] for p in frame["prompt"]]
    answers = [str(rm["ground_truth"]) for rm in frame["reward_model"]]
    return prompts, answers
