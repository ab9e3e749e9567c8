"""A figure's job, the paper's and the power-sampling study's alike: the rule's inputs, loaded (``inputs.load``), go to
the function registered under the rule's name (``registry``), which draws it."""

from __future__ import annotations

from pathlib import Path

from ..core import logs
from . import inputs, registry


def main(snakemake) -> None:
    log = logs.setup(snakemake.log[0])
    loaded = inputs.load(dict(snakemake.input.items()), dict(snakemake.params.items()))
    if loaded.sizes:
        log.info("non-embedding parameters %s", loaded.sizes)
    registry.load()[snakemake.rule].make(loaded, str(Path(snakemake.output.pdf).with_suffix("")))
