"""Mini-scale data: procedural tasks from reasoning-gym written as verl parquet.

Every row follows verl's RL dataset format (``data_source``, ``prompt`` as chat
messages, ``ability``, ``reward_model{style, ground_truth}``, ``extra_info``), so
the mini trainer, the evaluator and verl itself read the same files.

Two domains, as the paper's math and code. A **math** problem is a +/- chain, prompted as
the bare expression ("4+3-2") and graded by math-verify on a boxed answer. A **code**
problem is the same kind of chain with its first number replaced by the input ``x``
("Code: x+3-2"): the answer is a Python program that reads ``x`` and prints the value,
run in the sandbox on a few inputs and graded by its output, as the paper's stdio code
tests are (``reward_model.style`` ``code:stdio``). Prompts are the problem and nothing
else: the gym's phrasing ("State the final answer to ...") and an answer-format line
would be two thirds of every sequence the tiny models read, and they carry nothing a
model of this size uses.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import reasoning_gym

from ..core import atomic, formats, logs
from ..core.formats import VERL_COLUMNS
from ..core.paths import DATA_DIR

CODE_CUE = "Code: "
CODE_STYLE = "code:stdio"
CODE_INPUT = "x=int(input())"
CODE_TESTS = 3  # inputs a program is run on; every one must print the right value


def domain(spec: dict) -> str:
    """A benchmark family's domain: ``math`` unless its spec says ``code``."""
    return spec.get("domain", "math")


def _terms(expression: str) -> list[str]:
    tokens = re.findall(r"\d+|x|[+-]", expression)
    if len(tokens) < 3 or len(tokens) % 2 == 0:
        raise ValueError(f"not a +/- chain of numbers: {expression!r}")
    return tokens


def _value(chain: str, x: int = 0) -> int:
    """The value of a +/- chain, ``x`` standing for its input."""
    tokens = _terms(chain)
    first = x if tokens[0] == "x" else int(tokens[0])
    return first + sum(int(n) if op == "+" else -int(n) for op, n in zip(tokens[1::2], tokens[2::2]))


def task_problems(spec: dict, size: int, seed: int) -> list[dict]:
    """``size`` problems of one family, drawn from its reasoning-gym task at a fixed seed: for each,
    the prompt text, the ground truth, the reward style and provenance (the gym's question, the chain)."""
    ds = reasoning_gym.create_dataset(spec["task"], size=size, seed=seed, **spec.get("params", {}))
    rng = np.random.default_rng(seed)
    problems = []
    for e in ds:
        terms = _terms(e["metadata"]["expression"])
        chain = "".join(terms)
        if domain(spec) == "math":
            problems.append(
                {
                    "prompt": chain,
                    "gold": str(e["answer"]),
                    "style": "rule",
                    "question": e["question"],
                    "expression": chain,
                }
            )
        else:
            in_x = "".join(["x", *terms[1:]])
            xs = [int(v) for v in rng.choice(10, size=CODE_TESTS, replace=False)]
            tests = {"inputs": [f"{x}\n" for x in xs], "outputs": [str(_value(in_x, x)) for x in xs]}
            problems.append(
                {
                    "prompt": CODE_CUE + in_x,
                    "gold": json.dumps(tests),
                    "style": CODE_STYLE,
                    "question": e["question"],
                    "expression": in_x,
                }
            )
    return problems


def verl_rows(problems: list[dict], data_source: str, split: str, task: str) -> list[dict]:
    return [
        {
            "data_source": data_source,
            "prompt": [{"role": "user", "content": p["prompt"]}],
            "ability": "code" if p["style"].startswith("code") else "math",
            "reward_model": {"style": p["style"], "ground_truth": p["gold"]},
            # The style again, where verl's reward function (core.reward.compute_score) reads it.
            "extra_info": {
                "split": split,
                "index": i,
                "task": task,
                "question": p["question"],
                "expression": p["expression"],
                "style": p["style"],
            },
        }
        for i, p in enumerate(problems)
    ]


def prompt_text(row_prompt) -> str:
    """The problem a row poses: its one user message (what benchmarks are held out by)."""
    return row_prompt[-1]["content"]


def build_benchmarks(benchmarks: dict, seed: int) -> dict[str, pd.DataFrame]:
    """One frame per benchmark; each gets its own seed so they are independent draws."""
    frames = {}
    for k, (name, spec) in enumerate(sorted(benchmarks.items())):
        problems = task_problems(spec, spec["size"], seed + 1000 * (k + 1))
        frames[name] = pd.DataFrame(verl_rows(problems, name, "test", spec["task"]), columns=VERL_COLUMNS)
    return frames


def build_training_mix(
    benchmarks: dict, names: list[str], size: int, seed: int, exclude: set[str], split: str
) -> pd.DataFrame:
    """A shuffled mix of the task families of the benchmarks ``names``, with no prompt in ``exclude``.

    Training data come from the benchmarks' task families (as the paper trains on
    Eurus-2-RL-Math and evaluates on held-out math benchmarks) but never pose a
    benchmark problem: held out by prompt, so a problem the gym phrases two ways is one problem.
    A family whose problems run out gives what it has.
    """
    names = sorted(names)
    per_task = int(np.ceil(size / len(names)))
    rows = []
    for k, name in enumerate(names):
        spec = benchmarks[name]
        # Over-draw, then drop held-out problems and duplicates.
        problems = task_problems(spec, 2 * per_task + 50, seed + 7919 * (k + 1))
        seen, kept = set(), []
        for p in problems:
            if p["prompt"] in exclude or p["prompt"] in seen:
                continue
            seen.add(p["prompt"])
            kept.append(p)
        rows += verl_rows(kept[:per_task], f"{split}/{name}", split, spec["task"])
    frame = pd.DataFrame(rows, columns=VERL_COLUMNS)
    frame = frame.sample(frac=1.0, random_state=seed).head(size).reset_index(drop=True)
    frame["extra_info"] = [dict(e, index=i) for i, e in enumerate(frame["extra_info"])]
    return frame


def worked_solution(expression: str, answer: str) -> str:
    """A left-to-right worked solution of a +/- chain: "4+3=7, 7-2=5. \\boxed{5}"."""
    tokens = _terms(expression)
    acc, steps = int(tokens[0]), []
    for op, num in zip(tokens[1::2], tokens[2::2]):
        new = acc + int(num) if op == "+" else acc - int(num)
        steps.append(f"{acc}{op}{num}={new}")
        acc = new
    if str(acc) != answer:
        raise ValueError(f"worked solution of {expression!r} gives {acc}, not {answer}")
    return " " + ", ".join(steps) + f". \\boxed{{{answer}}}"


def program(body: str) -> str:
    """A complete answer to a code problem: the program printing ``body`` of ``x``, in a fenced block."""
    return f" ```python\n{CODE_INPUT}\nprint({body})\n```"


def faithful_program(expression: str) -> str:
    """The code counterpart of a worked solution: the chain as written, always right ("print(x+3-2)")."""
    return program(expression)


def folded_program(expression: str, offset: int = 0) -> str:
    """The code counterpart of a direct answer: the constants folded into one ("print(x+1)"), which
    needs the arithmetic done in the head; ``offset`` makes it wrong by that much."""
    tokens = _terms(expression)
    if tokens[0] != "x":
        raise ValueError(f"not a chain in x: {expression!r}")
    constant = _value(expression, 0) + offset
    return program("x" if constant == 0 else f"x{constant:+d}")


def sft_responses(frame: pd.DataFrame, spec: dict, seed: int) -> pd.DataFrame:
    """Pre-training targets: each prompt ``repeats`` times, a worked solution with probability
    ``worked_share`` (for code: the chain as written, with probability ``code_worked_share``),
    otherwise a direct answer (for code: the constants folded into one) that is off by one of
    ``wrong_offsets`` with probability ``wrong_share``.

    Worked solutions are always right and direct answers often wrong, so the base
    model is uncertain and RL has a global choice to learn (work step by step) as
    well as answers to sharpen, as a base LLM has before "zero" RL.
    """
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(spec["repeats"]):
        for row in frame.itertuples(index=False):
            code, expression = row.ability == "code", row.extra_info["expression"]
            answer = row.reward_model["ground_truth"]
            if rng.random() < spec["code_worked_share" if code else "worked_share"]:
                response = faithful_program(expression) if code else worked_solution(expression, answer)
            else:
                offset = int(rng.choice(spec["wrong_offsets"])) if rng.random() < spec["wrong_share"] else 0
                response = folded_program(expression, offset) if code else f" \\boxed{{{int(answer) + offset}}}"
            rows.append({**row._asdict(), "response": response})
    return pd.DataFrame(rows)


def instruct_responses(frame: pd.DataFrame) -> pd.DataFrame:
    """Instruction-tuning targets: every prompt answered the way an instruct model answers, step by step
    and right (the worked solution), never a bare guess: tuning a base model on them (Appendix D's
    instruct models) moves it from the base corpus's mix of guesses towards working."""
    responses = [
        faithful_program(e["expression"]) if ability == "code" else worked_solution(e["expression"], rm["ground_truth"])
        for e, rm, ability in zip(frame["extra_info"], frame["reward_model"], frame["ability"])
    ]
    return frame.assign(response=responses)


def prepare_mini_data(spec: dict, out_dir: str | Path) -> dict[str, Path]:
    """Write train.parquet, pretrain.parquet (with SFT ``response``s), benchmarks/{name}.parquet and,
    when the spec asks for one, instruct.parquet (the instruction-tuning corpus)."""
    out = Path(out_dir)
    (out / "benchmarks").mkdir(parents=True, exist_ok=True)
    seed = spec["seed"]
    benches = build_benchmarks(spec["benchmarks"], seed)
    held_out = {prompt_text(p) for f in benches.values() for p in f["prompt"]}
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
        instruct = build_training_mix(
            spec["benchmarks"], tuning["from"], tuning["prompts"], seed + 4, held_out, "instruct"
        )
        paths["instruct"] = out / "instruct.parquet"
        atomic.to_parquet(instruct_responses(instruct), paths["instruct"])
    for name, frame in benches.items():
        paths[name] = out / "benchmarks" / f"{name}.parquet"
        atomic.to_parquet(frame, paths[name])
    return paths


def build_train_set(benchmarks: dict, set_spec: dict, seed: int, benchmark_frames: list[pd.DataFrame]) -> pd.DataFrame:
    """A further RL training set (Appendix C: the same model on other data), drawn like the default
    mix from the task families of ``set_spec["from"]``, never a problem of the benchmarks given."""
    held_out = {prompt_text(p) for f in benchmark_frames for p in f["prompt"]}
    return build_training_mix(benchmarks, set_spec["from"], set_spec["size"], seed + 1, held_out, "train")


def prepare_mini_data_main(snakemake) -> None:
    """Rule prepare_mini_data: the scale's tasks, training mix, pre-training corpus and benchmarks."""
    log = logs.setup(snakemake.log[0])
    written = prepare_mini_data(snakemake.params.spec, DATA_DIR)
    log.info("wrote %s", sorted(str(p) for p in written.values()))


def prepare_mini_train_set_main(snakemake) -> None:
    """Rule prepare_mini_train_set: a further training set, none of the benchmarks' problems in it."""
    log = logs.setup(snakemake.log[0])
    p = snakemake.params
    frames = [formats.load_verl_parquet(path) for path in snakemake.input.benchmarks]
    train = build_train_set(p.benchmarks, p.spec, p.seed, frames)
    atomic.to_parquet(train, snakemake.output[0])
    log.info("%d prompts from %s", len(train), p.spec["from"])
