# One script for every table rule: the rule's name is the table function's name.
from pathlib import Path

import pandas as pd
from entropy_rl.core import logs
from entropy_rl.study import tables

log = logs.setup(snakemake.log[0])
runs = snakemake.params.runs
inputs = {}
if "metrics" in snakemake.input.keys():
    inputs["metrics_by_run"] = {run: pd.read_parquet(p) for run, p in zip(runs, snakemake.input.metrics)}
if "summaries" in snakemake.input.keys():
    inputs["summaries"] = {run: pd.read_parquet(p) for run, p in zip(runs, snakemake.input.summaries)}
make = getattr(tables, snakemake.rule)
table = make(**inputs, labels=snakemake.params.labels, benchmark_names=snakemake.params.benchmark_names)
tables.write(table, Path(snakemake.output.csv).with_suffix(""), snakemake.params.caption)
log.info("%s\n%s", snakemake.rule, table)
