# One script for every figure rule: the rule's name is the plotting function's name, and the
# function receives those of the prepared inputs its signature asks for.
import inspect
from pathlib import Path

import pandas as pd
from entropy_rl.core import logs, model_size
from entropy_rl.study import artifacts, figures

log = logs.setup(snakemake.log[0])
runs, replicates = snakemake.params.runs, snakemake.params.replicates
plot = getattr(figures, snakemake.rule)
wanted = inspect.signature(plot).parameters
# The metrics by run and replicate (the run itself first): every seed's for a figure that draws them,
# the first seed's for one that does not.
seeds = max(len(reps) for reps in replicates.values())
replicate_metrics = {
    run: [pd.read_parquet(p) for p in (paths if "replicates" in wanted else paths[:1])]
    for run, paths in artifacts.by_replicate(replicates, snakemake.input.metrics).items()
}
available = {
    "replicates": replicate_metrics,
    "labels": snakemake.params.labels,
    "specs": snakemake.params.specs,
    "fit_steps": snakemake.params.fit_steps,
    "caption": snakemake.params.caption,
}
if "models" in snakemake.input.keys():  # a model's replicates share its architecture, so its size
    models = artifacts.by_replicate(replicates, snakemake.input.models)
    available["sizes"] = {run: model_size.non_embedding_params(paths[0]) for run, paths in models.items()}
    log.info("non-embedding parameters %s", available["sizes"])
if seeds > 1 and "replicates" not in wanted:  # a figure that draws one seed says which
    available["caption"] += f" Each run is drawn from its first seed of {seeds}."
metrics = {run: replicate_metrics[run][0] for run in runs}
plot(metrics, stem=str(Path(snakemake.output.pdf).with_suffix("")), **{k: v for k, v in available.items() if k in wanted})
