"""What the figures of every section draw with: the runs checked, a quantity over a run's seeds, the fitted law."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import analysis
from ..inputs import Inputs


def checked_runs(d: Inputs, name: str, columns=("step", "entropy")) -> list[str]:
    """The run ids to draw, after checking there is at least one and each has ``columns``."""
    if not d.metrics:
        raise ValueError(f"{name}: no runs given")
    for run, metrics in d.first.items():
        missing = [c for c in columns if c not in metrics.columns]
        if missing:
            raise ValueError(f"{name}: metrics of run {run!r} lack column(s) {missing}")
    return list(d.metrics)


def seed_curve(frames: list[pd.DataFrame], column: str) -> pd.DataFrame:
    """A quantity against the step over a run's replicates: ``step``, ``mean`` and ``se`` (the standard
    error of the mean over the seeds that have the step; NaN with one). Accuracy is taken at the
    validation steps only (``analysis.validation_points``), as a single run's curve is."""
    if column == "val_acc":
        parts = [analysis.validation_points(f).rename(columns={"R": "value"}) for f in frames]
    else:
        parts = [f[["step", column]].dropna().rename(columns={column: "value"}) for f in frames]
    by_step = pd.concat(parts).groupby("step")["value"]
    return pd.DataFrame({"mean": by_step.mean(), "se": by_step.sem()}).reset_index()


def seed_line(ax, frames: list[pd.DataFrame], column: str, color, **style) -> None:
    """A quantity against the step over a run's seeds: their mean, in a band of ±1 standard error when
    there are several; accuracy in %, at the validation steps (``seed_curve``)."""
    scale = 100 if column == "val_acc" else 1
    curve = seed_curve(frames, column)
    ax.plot(curve["step"], scale * curve["mean"], color=color, **style)
    if len(frames) > 1:
        lo, hi = scale * (curve["mean"] - curve["se"]), scale * (curve["mean"] + curve["se"])
        ax.fill_between(curve["step"], lo, hi, color=color, alpha=0.2, lw=0)


BANDS = "; bands are ±1 standard error over the seeds."


def band_note(replicates: dict[str, list] | None, lead: str = "Lines are means over", tail: str = BANDS) -> str:
    """What a figure draws of its runs' seeds, for its caption: ``lead``, the seeds per run, ``tail`` (by default, lines
    that are means and bands of ±1 standard error). Nothing when every run has one seed."""
    counts = sorted({len(frames) for frames in (replicates or {}).values()})
    if not counts or counts == [1]:
        return ""
    seeds = "-".join(map(str, (counts[0], counts[-1]))) if len(counts) > 1 else str(counts[0])
    return f" {lead} {seeds} seeds{tail}"


def mean_sd(values, digits: int = 2, unit: str = "") -> str:
    """A quantity over seeds as "mean ± s.d." and its unit ("n/a" when fewer than two seeds have it)."""
    values = [v for v in values if np.isfinite(v)]
    return f"{np.mean(values):.{digits}f} ± {np.std(values, ddof=1):.{digits}f}{unit}" if len(values) > 1 else "n/a"


def law_curve(ax, fit: dict, lo: float, hi: float, **style) -> None:
    """Eq. 6 with the fitted (a, b) between entropies ``lo`` and ``hi``, in accuracy %."""
    H = np.linspace(lo, hi, 200)
    ax.plot(H, 100 * analysis.entropy_law(H, fit["a"], fit["b"]), **style)
