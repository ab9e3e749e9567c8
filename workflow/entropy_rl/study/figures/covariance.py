"""Section 3: the covariance of log-probability and advantage drives the entropy change (Figure 8)."""

from __future__ import annotations

import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D

from ...core import metric_columns
from .. import analysis, plotting
from ..inputs import Inputs
from ..registry import artifact
from .shared import BANDS, band_note, checked_runs, mean_sd, seed_line

# The bandit covariance of the prompts whose group accuracy is 1, 4 or 7 of 8, labelled as in the paper's
# legend (columns of metric_columns.BANDIT_ACC).
DIFFICULTY = {col: f"Accuracy={acc:g}" for col, acc in metric_columns.BANDIT_ACC.items()}
COLUMNS = ("step", "entropy", metric_columns.BANDIT_COV, *DIFFICULTY, metric_columns.TOKEN_COV)


@artifact(
    "figure",
    "Figure 8",
    "The bandit covariance (Eq. 8-9, per prompt over its responses, batch mean) beside the entropy decrease -dH over training and by prompt accuracy (1/8, 4/8, 7/8), with the batch-level token covariance (Eq. 10) beside -dH.",
)
def fig08_covariance(d: Inputs, stem) -> tuple[Path, Path]:
    """Figure 8: the bandit covariance tracks the entropy change (left) and is smaller on hard prompts
    (middle); Table 1's token covariance over the same steps (right).

    Left: the paper's covariance, the bandit covariance of Eq. 8–9 (``bandit_cov``: per prompt over its
    responses, averaged over the batch), and −ΔH on twin axes with a shared zero; row t's covariance is
    drawn beside −(H[t+1] − H[t]), the change its update causes (Theorem 1), with their Pearson r from
    ``analysis.covariance_dynamics``. Middle: ``_difficulty_panel``. Right: the batch-level token
    covariance of Eq. 10 (``cov_all``, Table 1's "All") beside −ΔH, so both quantities are shown. Draws
    the first run only; with several seeds, the mean over its seeds in a ±1 standard-error band, and each
    test per seed.
    """
    plotting.style()
    runs = checked_runs(d, "fig08", COLUMNS)
    run = runs[0]
    if len(runs) > 1:
        warnings.warn(f"fig08 draws one run: using {run!r}, ignoring {runs[1:]}", stacklevel=2)
    frames = [f.sort_values("step").assign(neg_dH=lambda f: analysis.entropy_decrease(f)) for f in d.metrics[run]]
    try:
        dynamics = [analysis.covariance_dynamics(f, metric_columns.BANDIT_COV) for f in frames]
    except ValueError as err:
        raise ValueError(f"fig08: run {run!r}: {err}") from err
    try:
        token = [analysis.covariance_dynamics(f, metric_columns.TOKEN_COV) for f in frames]
    except ValueError:
        token = None
    deep = sns.color_palette("deep")
    fig, (ax_c, ax_d, ax_t) = plt.subplots(1, 3, figsize=(14.0, 3.9), layout="constrained")
    _beside_entropy(ax_c, frames, metric_columns.BANDIT_COV, deep[0], "bandit Cov (Eq. 8–9)", dynamics)
    _beside_entropy(ax_t, frames, metric_columns.TOKEN_COV, deep[4], "token Cov (Eq. 10)", token)
    ax_c.set_title(f"Bandit covariance and entropy change: {plotting.label(d.labels, run)}", fontsize=9)
    ax_c.set_ylabel("Bandit covariance, Eq. 8–9 (per prompt, batch mean)")
    ax_t.set_title("Token covariance (Table 1's all-token mean) and entropy change", fontsize=9)
    ax_t.set_ylabel("Token covariance, Eq. 10 (batch mean)")
    _difficulty_panel(ax_d, frames)
    note = band_note(
        d.metrics if len(frames) > 1 else None,
        tail=BANDS[:-1] + "; the middle panel's points are every seed's, its lines the seeds' mean.",
    )
    plotting.caption(fig, d.caption + note)
    return plotting.save(fig, stem)


def _beside_entropy(ax, frames: list[pd.DataFrame], column: str, color, name: str, stats: list[dict] | None) -> None:
    """A covariance (left axis) and −ΔH (right axis) over training, zeros aligned, with their correlation."""
    deep = sns.color_palette("deep")
    ax_h = ax.twinx()
    ax_h.grid(False)
    seed_line(ax, frames, column, color, lw=1.4)
    seed_line(ax_h, frames, "neg_dH", deep[3], lw=1.2, alpha=0.85)
    ax.axhline(0, color="0.5", lw=0.8)
    plotting.align_zero(ax, ax_h)
    handles = [
        Line2D([], [], color=color, lw=1.4, label=f"{name}, left"),
        Line2D([], [], color=deep[3], lw=1.2, label="−ΔH = H(t) − H(t+1), right"),
    ]
    ax.legend(handles=handles, loc="upper center", fontsize=8)
    plotting.box(ax, _correlation(stats), y=0.03)
    ax.set_xlabel("Training step")
    ax_h.set_ylabel("−ΔH (nats)")


def _correlation(stats: list[dict] | None) -> str:
    """Pearson r of a covariance and −ΔH: one seed's with its p, or the mean ± s.d. over seeds."""
    if not stats:
        return "too few steps for a correlation"
    if len(stats) == 1:
        return f"Pearson r = {stats[0]['pearson_r']:.2f}\np = {stats[0]['p_value']:.2g}, {stats[0]['n_steps']} steps"
    return (
        f"Pearson r = {mean_sd([t['pearson_r'] for t in stats])}\nover {len(stats)} seeds; "
        f"largest p = {max(t['p_value'] for t in stats):.2g}"
    )


def _difficulty_panel(ax, frames: list[pd.DataFrame]) -> None:
    """The bandit covariance of the prompts whose accuracy is 1/8, 4/8 and 7/8 (a 5-step rolling mean over
    faint raw points; a group is missing on steps without such a prompt), with the one-sided Wilcoxon test
    of ``analysis.covariance_by_difficulty``."""
    deep = sns.color_palette("deep")
    by_difficulty = [analysis.covariance_by_difficulty(f) for f in frames]
    for col, color in zip(DIFFICULTY, (deep[3], deep[1], deep[2])):
        for f in frames:
            ax.plot(f["step"], f[col], color=color, lw=0, marker=".", ms=3, alpha=0.35)
        mean = pd.concat([f[["step", col]] for f in frames]).groupby("step")[col].mean()
        ax.plot(mean.index, mean.rolling(5, min_periods=1).mean(), color=color, lw=1.6, label=DIFFICULTY[col])
    ax.axhline(0, color="0.5", lw=0.8)
    ps = [d["hard_below_easy_p"] for d in by_difficulty]
    if len(ps) == 1:
        text = (
            f"0.125 < 0.875: Wilcoxon p = {ps[0]:.2g}\n{by_difficulty[0]['n_paired_steps']} steps with both"
            if np.isfinite(ps[0])
            else "0.125 < 0.875: too few steps with both groups"
        )
    else:
        text = "0.125 < 0.875: Wilcoxon p by seed\n" + ", ".join(f"{p:.2g}" if np.isfinite(p) else "n/a" for p in ps)
    plotting.box(ax, text, y=0.03)
    ax.set_title("Bandit covariance by prompt accuracy (5-step rolling mean)", fontsize=9)
    ax.set_xlabel("Training step")
    ax.set_ylabel("Bandit covariance, Eq. 8–9 (group mean)")
    ax.legend(loc="upper right", fontsize=8)
