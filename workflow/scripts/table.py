# One script for every table rule: the rule's name is the table function's name.
from pathlib import Path

import pandas as pd
from entropy_rl.core import logs
from entropy_rl.study import artifacts, tables

log = logs.setup(snakemake.log[0])
replicates = snakemake.params.replicates
inputs = {}
# Each input by run and replicate (the run itself first): a table reads replicate 0, or all of them.
if "metrics" in snakemake.input.keys():
    paths = artifacts.by_replicate(replicates, snakemake.input.metrics)
    inputs["metrics_by_run"] = {run: pd.read_parquet(p[0]) for run, p in paths.items()}
if "summaries" in snakemake.input.keys():
    paths = artifacts.by_replicate(replicates, snakemake.input.summaries)
    inputs["summaries"] = {run: [pd.read_parquet(x) for x in p] for run, p in paths.items()}
make = getattr(tables, snakemake.rule)
table = make(**inputs, labels=snakemake.params.labels, benchmark_names=snakemake.params.benchmark_names)
tables.write(table, Path(snakemake.output.csv).with_suffix(""), snakemake.params.caption)
log.info("%s\n%s", snakemake.rule, table)
