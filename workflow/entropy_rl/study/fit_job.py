"""The fit rules' jobs: R = -a exp(H) + b on one run's validation points with the early-step prediction (rule
fit_run), and every run's fit in one table (rule fit_table)."""

from __future__ import annotations

import json

import pandas as pd

from ..core import atomic, logs
from . import analysis


def fit(run: str, metrics: pd.DataFrame, early_fit_steps: int) -> dict:
    """One run's fit and its early-step prediction (with the points it was fitted on), as fit_run writes them."""
    result = {"run": run, "fit": analysis.fit_run(metrics)}
    early = analysis.early_prediction(metrics, early_fit_steps)
    result["early_prediction"] = {k: v for k, v in early.items() if k != "points"}
    result["early_prediction_points"] = early["points"]
    return result


def fit_run_main(snakemake) -> None:
    log = logs.setup(snakemake.log[0])
    result = fit(snakemake.wildcards.run, pd.read_parquet(snakemake.input.metrics), snakemake.params.early_fit_steps)
    atomic.write_text(snakemake.output[0], json.dumps(result, indent=2, default=float))
    log.info("fit %s", result["fit"])


def fits_row(result: dict) -> dict:
    """A run's row of the fits table: its fit, and its early prediction's numbers prefixed ``early_``."""
    early = {f"early_{k}": v for k, v in result["early_prediction"].items() if not isinstance(v, dict)}
    return {**result["fit"], **early}


def fit_table_main(snakemake) -> None:
    logs.setup(snakemake.log[0])
    fits = {}
    for path in snakemake.input.fits:
        with open(path) as fh:
            result = json.load(fh)
        fits[result["run"]] = fits_row(result)
    table = analysis.fits_table(fits)
    atomic.write_text(snakemake.output.csv, table.to_csv())
    atomic.to_parquet(table, snakemake.output.parquet)
