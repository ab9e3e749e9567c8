"""A dataset source generated offline by reasoning-gym, where no dataset hub is reachable (the small scale's).

A source ``{gym: {task, size, seed, params}}`` in ``data.sources`` is written as ``problems.parquet`` in its source
directory, one row a distinct problem: the gym's own question, its answer, the task and the draw's index (a small task
draws the same question again: the first draw is kept, so that a held-out part never shares a question with the
rest). From there it is a
source like a downloaded one: ``data.parts`` read it as ``format: qa`` (``question`` and ``answer``), wrap the
question in the scale's prompt template, split a held-out test part off by ``holdout``, and build training sets and
benchmarks (``paper.data``). A generated source is its settings: the same task, size, seed and params give the same
rows, so the rule's params are its lock.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core import atomic, logs

FILE = "problems.parquet"


def problems(gym: dict) -> pd.DataFrame:
    """The distinct problems among ``gym['size']`` draws of reasoning-gym's task ``gym['task']`` at ``gym['seed']``
    with its ``params``, in the order drawn."""
    import reasoning_gym

    dataset = reasoning_gym.create_dataset(gym["task"], size=gym["size"], seed=gym["seed"], **gym.get("params", {}))
    rows = [
        {"question": entry["question"], "answer": str(entry["answer"]), "task": gym["task"], "index": i}
        for i, entry in enumerate(dataset)
    ]
    return pd.DataFrame(rows).drop_duplicates("question", ignore_index=True)


def write(gym: dict, out: str | Path) -> Path:
    """The source directory ``out``: its problems, written whole or not at all."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / FILE
    atomic.to_parquet(problems(gym), path)
    return path


def main(snakemake) -> None:
    """The rule generate_dataset's job."""
    log = logs.setup(snakemake.log[0])
    path = write(snakemake.params.gym, snakemake.output[0])
    gym = snakemake.params.gym
    rows = len(pd.read_parquet(path))
    log.info("%s: %d distinct %s problems of %d drawn (seed %d)", path, rows, gym["task"], gym["size"], gym["seed"])
