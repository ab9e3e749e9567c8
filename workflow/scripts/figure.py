# One script for every figure rule: the rule's name is the plotting function's name.
from pathlib import Path

import pandas as pd

from entropy_rl import figures, logs

log = logs.setup(snakemake.log[0])
runs = snakemake.params.runs
metrics = {run: pd.read_parquet(path) for run, path in zip(runs, snakemake.input.metrics)}
plot = getattr(figures, snakemake.rule)
stem = str(Path(snakemake.output.pdf).with_suffix(""))
kwargs = {"caption": snakemake.params.caption}
if "labels" in plot.__code__.co_varnames:
    kwargs["labels"] = snakemake.params.labels
plot(metrics, stem=stem, **kwargs)
