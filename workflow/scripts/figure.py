# One script for every figure rule: the rule's name is the plotting function's name, and the
# function receives those of the prepared inputs its signature asks for.
import inspect
from pathlib import Path

import pandas as pd
from entropy_rl.core import logs, model_size
from entropy_rl.study import figures

log = logs.setup(snakemake.log[0])
runs = snakemake.params.runs
available = {
    "labels": snakemake.params.labels,
    "specs": snakemake.params.specs,
    "fit_steps": snakemake.params.fit_steps,
    "caption": snakemake.params.caption,
}
if "models" in snakemake.input.keys():
    available["sizes"] = {run: model_size.non_embedding_params(path) for run, path in zip(runs, snakemake.input.models)}
    log.info("non-embedding parameters %s", available["sizes"])
plot = getattr(figures, snakemake.rule)
wanted = inspect.signature(plot).parameters
metrics = {run: pd.read_parquet(path) for run, path in zip(runs, snakemake.input.metrics)}
plot(metrics, stem=str(Path(snakemake.output.pdf).with_suffix("")), **{k: v for k, v in available.items() if k in wanted})
