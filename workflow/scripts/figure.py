# One script for every figure, the paper's and the power-sampling study's: the rule's inputs, loaded, go to the
# function registered under the rule's name (entropy_rl.study.registry).
from pathlib import Path

from entropy_rl.core import logs
from entropy_rl.study import inputs, registry

log = logs.setup(snakemake.log[0])
loaded = inputs.load(dict(snakemake.input.items()), dict(snakemake.params.items()))
if loaded.sizes:
    log.info("non-embedding parameters %s", loaded.sizes)
registry.load()[snakemake.rule].make(loaded, str(Path(snakemake.output.pdf).with_suffix("")))
