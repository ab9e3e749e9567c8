# One script for every table, the paper's and the power-sampling study's: the rule's inputs, loaded, go to the
# function registered under the rule's name (entropy_rl.study.registry), and its table is written with its caption.
from pathlib import Path

from entropy_rl.core import logs
from entropy_rl.study import inputs, registry, tables

log = logs.setup(snakemake.log[0])
loaded = inputs.load(dict(snakemake.input.items()), dict(snakemake.params.items()))
table = registry.load()[snakemake.rule].make(loaded)
tables.write(table, Path(snakemake.output.csv).with_suffix(""), loaded.caption)
log.info("%s\n%s", snakemake.rule, table)
