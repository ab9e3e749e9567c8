"""Tables of the paper, built from run outputs and written as CSV and Markdown.

Each table function, registered with ``registry.artifact``, takes the ``registry.Inputs`` of its rule and
returns a DataFrame; ``write`` stores it with its caption. Values are never rounded in
the CSV; the Markdown rounds for reading.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core import atomic, metric_columns, pages
from . import analysis
from .inputs import Inputs
from .registry import artifact

# Table 1's rows: the token covariance (Eq. 10) columns of the metrics contract, named in core so the tables need
# no torch (metrics.py, which produces them, does).
COV_GROUPS = {
    **{col: f"Top {col.removeprefix('cov_top')}%" for col in metric_columns.COV_TOP},
    metric_columns.TOKEN_COV: "All",
}


@artifact(
    "table",
    "Table 1",
    "Mean token covariance of the top p% of tokens and of all tokens, at the first step with a measured covariance and averaged over training.",
)
def table01_covariance_distribution(d: Inputs) -> pd.DataFrame:
    """Table 1: mean covariance of the top p% of tokens and of all tokens.

    Per run (its first seed), at its first step with a measured covariance (closest to the base
    model's own distribution) and averaged over all steps.
    """
    if not d.metrics:
        raise ValueError("table01: no runs given")
    columns = {}
    for run, metrics in d.first.items():
        columns[f"{d.labels.get(run, run)}, first step"] = analysis.covariance_distribution(metrics)
        columns[f"{d.labels.get(run, run)}, mean over training"] = metrics[list(COV_GROUPS)].mean()
    table = pd.DataFrame(columns).rename(index=COV_GROUPS)
    return table.rename_axis("Group")


@artifact(
    "table",
    "Table 2",
    "Accuracy (%) per benchmark; AIME and AMC (or their stand-ins) sampled at temperature 0.6 and averaged, the rest greedy.",
    ("eval",),
)
def table02_benchmarks(d: Inputs) -> pd.DataFrame:
    """Table 2: accuracy (%) per benchmark (those of ``benchmark_names``, the math ones) and method, and
    the unweighted mean over them.

    ``summaries`` holds each run's evaluation summaries, one per replicate. With one replicate a cell
    is that run's accuracy; with several it is their mean, and each column is followed by its
    standard error over the replicates ("<column> s.e.", the seed-to-seed spread of the mean)."""
    summaries, labels, benchmark_names = d.summaries, d.labels, d.benchmark_names
    if not summaries:
        raise ValueError("table02: no runs given")
    counts = {run: len(s) for run, s in summaries.items()}
    if len(set(counts.values())) != 1:
        raise ValueError(f"table02: runs differ in their number of replicates: {counts}")
    per_replicate = [
        analysis.benchmark_accuracy({run: s[k] for run, s in summaries.items()}, list(benchmark_names))
        for k in range(next(iter(counts.values())))
    ]
    stacked = pd.concat(per_replicate, keys=range(len(per_replicate)))
    table = stacked.groupby(level=1, sort=False).mean()
    if len(per_replicate) > 1:
        se = stacked.groupby(level=1, sort=False).sem()
        table = pd.concat(
            {c: pd.DataFrame({c: table[c], f"{c} s.e.": se[c]}) for c in table.columns}, axis=1
        ).droplevel(0, axis=1)
    table.index = [labels.get(run, run) for run in table.index]
    names = {**benchmark_names, **{f"{b} s.e.": f"{n} s.e." for b, n in benchmark_names.items()}}
    return table.rename(columns=names).rename_axis("Method")


def write(table: pd.DataFrame, stem, caption: str) -> tuple[Path, Path]:
    """``<stem>.csv`` (full precision) and ``<stem>.md`` (caption, then the table to 3 significant digits)."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    csv, md = Path(f"{stem}.csv"), Path(f"{stem}.md")
    atomic.write_text(csv, table.to_csv())
    atomic.write_text(md, f"{caption}\n\n{pages.md_frame(table, floatfmt='.3g')}\n")
    return csv, md
