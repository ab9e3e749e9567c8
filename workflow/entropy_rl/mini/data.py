"""Mini-scale data: procedural tasks from reasoning-gym written as verl parquet.

Every row follows verl's RL dataset format (``data_source``, ``prompt`` as chat
messages, ``ability``, ``reward_model{style, ground_truth}``, ``extra_info``), so
the mini trainer, the evaluator and verl itself read the same files.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import reasoning_gym

from ..core import atomic
from ..core.formats import VERL_COLUMNS

PROMPT_SUFFIX = " Put the final answer in \\boxed{}."


def task_questions(task: str, params: dict, size: int, seed: int) -> list[tuple[str, str, str]]:
    """(question, answer, expression) triples from one reasoning-gym task at a fixed seed."""
    ds = reasoning_gym.create_dataset(task, size=size, seed=seed, **params)
    return [(e["question"], str(e["answer"]), e["metadata"].get("expression", "")) for e in ds]


def verl_rows(triples, data_source: str, split: str, task: str) -> list[dict]:
    return [
        {
            "data_source": data_source,
            "prompt": [{"role": "user", "content": q + PROMPT_SUFFIX}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": a},
            "extra_info": {"split": split, "index": i, "task": task, "question": q, "expression": x},
        }
        for i, (q, a, x) in enumerate(triples)
    ]


def build_benchmarks(benchmarks: dict, seed: int) -> dict[str, pd.DataFrame]:
    """One frame per benchmark; each gets its own seed so they are independent draws."""
    frames = {}
    for k, (name, spec) in enumerate(sorted(benchmarks.items())):
        pairs = task_questions(spec["task"], spec.get("params", {}), spec["size"], seed + 1000 * (k + 1))
        frames[name] = pd.DataFrame(verl_rows(pairs, name, "test", spec["task"]), columns=VERL_COLUMNS)
    return frames


def build_training_mix(
    benchmarks: dict, names: list[str], size: int, seed: int, exclude: set[str], split: str
) -> pd.DataFrame:
    """A shuffled mix of the task families of the benchmarks ``names``, with no question in ``exclude``.

    Training data come from the benchmarks' task families (as the paper trains on
    Eurus-2-RL-Math and evaluates on held-out math benchmarks) but never contain
    a benchmark question.
    """
    names = sorted(names)
    per_task = int(np.ceil(size / len(names)))
    rows = []
    for k, name in enumerate(names):
        spec = benchmarks[name]
        # Over-draw, then drop held-out questions and duplicates.
        pairs = task_questions(spec["task"], spec.get("params", {}), 2 * per_task + 50, seed + 7919 * (k + 1))
        seen, kept = set(), []
        for q, a, x in pairs:
            if q in exclude or q in seen:
                continue
            seen.add(q)
            kept.append((q, a, x))
        rows += verl_rows(kept[:per_task], f"{split}/{name}", split, spec["task"])
    frame = pd.DataFrame(rows, columns=VERL_COLUMNS)
    frame = frame.sample(frac=1.0, random_state=seed).head(size).reset_index(drop=True)
    frame["extra_info"] = [dict(e, index=i) for i, e in enumerate(frame["extra_info"])]
    return frame


def worked_solution(expression: str, answer: str) -> str:
    """A left-to-right worked solution of a +/- chain: "4+3=7, 7-2=5. \\boxed{5}"."""
    tokens = re.findall(r"\d+|[+-]", expression)
    if len(tokens) < 3 or len(tokens) % 2 == 0:
        raise ValueError(f"not a +/- chain of numbers: {expression!r}")
    acc, steps = int(tokens[0]), []
    for op, num in zip(tokens[1::2], tokens[2::2]):
        new = acc + int(num) if op == "+" else acc - int(num)
        steps.append(f"{acc}{op}{num}={new}")
        acc = new
    if str(acc) != answer:
        raise ValueError(f"worked solution of {expression!r} gives {acc}, not {answer}")
    return " " + ", ".join(steps) + f". \\boxed{{{answer}}}"


def sft_responses(frame: pd.DataFrame, spec: dict, seed: int) -> pd.DataFrame:
    """Pre-training targets: each prompt ``repeats`` times, a worked solution with
    probability ``worked_share``, otherwise a direct answer that is off by one of
    ``wrong_offsets`` with probability ``wrong_share``.

    Worked solutions are always right and direct answers often wrong, so the base
    model is uncertain and RL has a global choice to learn (work step by step) as
    well as answers to sharpen, as a base LLM has before "zero" RL.
    """
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(spec["repeats"]):
        for row in frame.itertuples(index=False):
            answer = row.reward_model["ground_truth"]
            if rng.random() < spec["worked_share"]:
                response = worked_solution(row.extra_info["expression"], answer)
            else:
                if rng.random() < spec["wrong_share"]:
                    answer = str(int(answer) + int(rng.choice(spec["wrong_offsets"])))
                response = f" \\boxed{{{answer}}}"
            rows.append({**row._asdict(), "response": response})
    return pd.DataFrame(rows)


def instruct_responses(frame: pd.DataFrame) -> pd.DataFrame:
    """Instruction-tuning targets: every prompt answered the way an instruct model answers, step by step
    and right (the worked solution), never a bare guess: tuning a base model on them (Appendix D's
    instruct models) moves it from the base corpus's mix of guesses towards working."""
    responses = [worked_solution(e["expression"], rm["ground_truth"]) for e, rm in zip(frame["extra_info"], frame["reward_model"])]
    return frame.assign(response=responses)


def prepare_mini_data(spec: dict, out_dir: str | Path) -> dict[str, Path]:
    """Write train.parquet, pretrain.parquet (with SFT ``response``s), benchmarks/{name}.parquet and,
    when the spec asks for one, instruct.parquet (the instruction-tuning corpus)."""
    out = Path(out_dir)
    (out / "benchmarks").mkdir(parents=True, exist_ok=True)
    seed = spec["seed"]
    benches = build_benchmarks(spec["benchmarks"], seed)
    held_out = {e["question"] for f in benches.values() for e in f["extra_info"]}
    train = build_training_mix(
        spec["benchmarks"], spec["train"]["from"], spec["train"]["size"], seed + 1, held_out, "train"
    )
    corpus = spec["pretrain"]
    pretrain = build_training_mix(spec["benchmarks"], corpus["from"], corpus["prompts"], seed + 2, held_out, "pretrain")
    pretrain = sft_responses(pretrain, corpus, seed + 3)
    paths = {"train": out / "train.parquet", "pretrain": out / "pretrain.parquet"}
    atomic.to_parquet(train, paths["train"])
    atomic.to_parquet(pretrain, paths["pretrain"])
    if "instruct" in spec:
        tuning = spec["instruct"]
        instruct = build_training_mix(spec["benchmarks"], tuning["from"], tuning["prompts"], seed + 4, held_out, "instruct")
        paths["instruct"] = out / "instruct.parquet"
        atomic.to_parquet(instruct_responses(instruct), paths["instruct"])
    for name, frame in benches.items():
        paths[name] = out / "benchmarks" / f"{name}.parquet"
        atomic.to_parquet(frame, paths[name])
    return paths


def build_train_set(benchmarks: dict, set_spec: dict, seed: int, benchmark_frames: list[pd.DataFrame]) -> pd.DataFrame:
    """A further RL training set (Appendix C: the same model on other data), drawn like the default
    mix from the task families of ``set_spec["from"]``, never a question of the benchmarks given."""
    held_out = {e["question"] for f in benchmark_frames for e in f["extra_info"]}
    return build_training_mix(benchmarks, set_spec["from"], set_spec["size"], seed + 1, held_out, "train")
