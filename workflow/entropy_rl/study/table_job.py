"""A table's jobs, the paper's and the power-sampling study's alike: the rule's inputs, loaded (``inputs.load``), go
to the function registered under the rule's name (``registry``), and its table is written with its caption
(``table_main``); then its page in `snakemake --report` (``table_page_main``: ``pages.table_page``, from the CSV the
table's rule wrote)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core import atomic, logs
from . import inputs, pages, registry, tables


def table_main(snakemake) -> None:
    log = logs.setup(snakemake.log[0])
    loaded = inputs.load(dict(snakemake.input.items()), dict(snakemake.params.items()))
    table = registry.load()[snakemake.rule].make(loaded)
    tables.write(table, Path(snakemake.output.csv).with_suffix(""), loaded.caption)
    log.info("%s\n%s", snakemake.rule, table)


def table_page_main(snakemake) -> None:
    log = logs.setup(snakemake.log[0])
    table = pd.read_csv(snakemake.input.csv, index_col=0)
    page = pages.table_page(table, snakemake.params.title, snakemake.params.caption)
    atomic.write_text(snakemake.output.html, page)
    log.info("%s: %d rows, %d columns", snakemake.output.html, *table.shape)
