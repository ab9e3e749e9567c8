# One script for the power-sampling study's table and figures: the rule's name is the function's.
import inspect
from pathlib import Path

import pandas as pd
from entropy_rl.core import logs
from entropy_rl.study import artifacts, power_study, tables

log = logs.setup(snakemake.log[0])
p = snakemake.params
# Each method's answers, one frame per seed (replicate 0 first): the rule lists them method by method.
samples = {method: [pd.read_parquet(path) for path in paths]
           for method, paths in artifacts.by_replicate(p.replicates, snakemake.input.samples).items()}  # fmt: skip
make = getattr(power_study, snakemake.rule)
if "csv" in snakemake.output.keys():
    table = make(samples, p.labels)
    tables.write(table, Path(snakemake.output.csv).with_suffix(""), p.caption)
    log.info("%s\n%s", snakemake.rule, table)
else:
    available = {"labels": p.labels, "pass_k": p.pass_k, "settings": p.settings, "caption": p.caption}
    wanted = inspect.signature(make).parameters
    make(
        samples,
        stem=str(Path(snakemake.output.pdf).with_suffix("")),
        **{k: v for k, v in available.items() if k in wanted},
    )
