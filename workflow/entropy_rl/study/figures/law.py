"""Section 2: entropy collapse and the entropy-performance law R = -a exp(H) + b (Eq. 6), Figures 1 to 7.

Each figure's function is here, as the registry reads it (``registry.artifact``); the panels, fits and legends they
draw with are in ``law_panels``, apart from Figure 5's panel (``prediction_panel``), which `fit-law` draws too.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from .. import analysis, plotting
from ..inputs import Inputs
from ..registry import artifact
from .fit_grid import fit_grid
from .law_panels import (
    PREDICTED,
    algorithm_fits,
    collapse_axes,
    fitted_ceiling,
    prediction_legend,
    share_lines,
    share_marks,
    shared_law,
    size_fits,
    size_series,
)
from .shared import band_note, checked_runs, law_curve, mean_sd, seed_line

LAW_COLUMNS = ("step", "entropy", "val_acc")


@artifact(
    "figure",
    "Figure 1",
    "Entropy collapse and the fitted curve R = -a exp(H) + b, extended to H = 0, where it predicts the ceiling b - a.",
)
def fig01_entropy_collapse(d: Inputs, stem) -> tuple[Path, Path]:
    """Figure 1: entropy collapses while accuracy saturates, and the fit predicts the ceiling.

    Left: entropy (solid, left axis) and validation accuracy (dashed, right axis) against the step.
    Right: accuracy against entropy with R = −a·exp(H) + b, dotted where it extrapolates down to H = 0,
    and the predicted ceiling b − a starred and annotated there. A run with several seeds: its curves
    are the mean over seeds in a ±1 s.e. band, and one law is fitted to every seed's validation points.
    """
    plotting.style()
    runs = checked_runs(d, "fig01", LAW_COLUMNS)
    # One run: entropy and accuracy get their own colours; several: colour is the run, line style the quantity.
    one = len(runs) == 1
    deep = sns.color_palette("deep")
    h_colors = {runs[0]: deep[0]} if one else plotting.palette(runs)
    r_colors = {runs[0]: deep[3]} if one else plotting.palette(runs)
    fig, (ax_t, ax_f) = plt.subplots(1, 2, figsize=(10.0, 3.8), layout="constrained")
    ax_r = ax_t.twinx()
    ax_r.grid(False)
    fitted = 0
    for run in runs:
        seed_line(ax_t, d.metrics[run], "entropy", h_colors[run], lw=1.4)
        seed_line(ax_r, d.metrics[run], "val_acc", r_colors[run], lw=1.2, ls="--", marker="o", ms=3)
        fitted += fitted_ceiling(ax_f, d.metrics[run], r_colors[run], plotting.label(d.labels, run), fitted, run)
    if not fitted:
        raise ValueError("fig01: no run has enough validation points to fit R = -a*exp(H) + b")
    low, high = ax_f.get_ylim()
    ax_f.set_ylim(low, high + (0.08 + 0.05 * fitted) * (high - low))  # room for the ceiling notes
    collapse_axes(ax_t, ax_r, deep, one)
    ax_f.set_xlim(left=-0.03 * ax_f.get_xlim()[1])
    ax_f.set_title("R = −a·exp(H) + b, extended to H = 0")
    ax_f.set_xlabel("Policy entropy (nats)")
    ax_f.set_ylabel("Validation accuracy (%)")
    ax_f.legend(loc="lower left", fontsize=8)
    plotting.caption(fig, d.caption + band_note(d.metrics))
    return plotting.save(fig, stem)


@artifact("figure", "Figure 2", "Share of the entropy consumed and of the validation accuracy gained over training.")
def fig02_cumulative_shares(d: Inputs, stem) -> tuple[Path, Path]:
    """Figure 2: entropy is consumed and performance gained mostly early in training.

    Thin lines are single runs (validation steps only); thick lines pool all runs
    (``analysis.pooled_shares``: total change so far over total change), which stays meaningful when a
    run barely moves. The view is clipped to −25%..150% so a run with a near-zero total change cannot
    flatten the rest. Single runs are not named. Several seeds of a run: each seed is a thin line, and
    the pool takes every seed of every run.
    """
    plotting.style()
    runs = checked_runs(d, "fig02", LAW_COLUMNS)
    counts = sorted({len(d.metrics[run]) for run in runs})
    frames = d.first if counts == [1] else {f"{run} seed {k}": f for run in runs for k, f in enumerate(d.metrics[run])}
    shares = {}
    for run, metrics in frames.items():
        try:
            shares[run] = analysis.cumulative_shares(metrics)
        except ValueError as err:
            warnings.warn(f"fig02: skipping run {run}: {err}", stacklevel=2)
    if not shares:
        raise ValueError("fig02: no run has computable cumulative shares")
    pooled = analysis.pooled_shares(frames)
    seeds = "-".join(map(str, (counts[0], counts[-1]))) if len(counts) > 1 else counts[0]
    pool = f"{len(runs)} runs" if counts == [1] else f"{len(runs)} runs × {seeds} seeds"
    fig, ax = plt.subplots(figsize=(6.0, 4.0), layout="constrained")
    share_lines(ax, shares, pooled, pool if len(frames) > 1 else None)
    share_marks(ax, pooled)
    low, high = ax.get_ylim()
    ax.set_ylim(max(low, -25), min(high, 150))
    ax.set_xlim(0, 1)
    ax.set_xlabel("Fraction of training steps")
    ax.set_ylabel("Cumulative share of total change (%)")
    ax.legend(loc="lower right")
    plotting.caption(fig, d.caption)
    return plotting.save(fig, stem)


@artifact(
    "figure", "Figure 3", "Validation accuracy against policy entropy on math, with the fit R = -a exp(H) + b per run."
)
def fig03_fitted_curves(d: Inputs, stem) -> tuple[Path, Path]:
    """Figure 3: validation accuracy against entropy follows R = −a·exp(H) + b in each run (math task)."""
    return fit_grid(d, stem, "fig03", "Math task: validation accuracy against entropy, fitted R = −a·exp(H) + b")


@artifact(
    "figure", "Figure 4", "Validation accuracy against policy entropy on code, with the fit R = -a exp(H) + b per run."
)
def fig04_code_fits(d: Inputs, stem) -> tuple[Path, Path]:
    """Figure 4: the same per-run fits as Figure 3 for the code task."""
    return fit_grid(d, stem, "fig04", "Code task: validation accuracy against entropy, fitted R = −a·exp(H) + b")


@artifact("figure", "Figure 5", "Late validation accuracy predicted from a fit on the early steps only.")
def fig05_early_prediction(d: Inputs, stem) -> tuple[Path, Path]:
    """Figure 5: accuracy late in training predicted from entropy with a fit on the early steps only.

    Per run: observed validation accuracy against the step (filled: used for the fit, step ≤
    ``fit_steps``; open: predicted), the prediction of ``analysis.early_prediction`` dashed, the end of
    the fit window as a vertical line, and held-out RMSE and final error in accuracy points. A run with
    several seeds: each seed is fitted and predicted on its own; the panel draws the seeds' mean observed
    accuracy in a ±1 standard-error band and their mean prediction, and its box gives the errors as mean ±
    s.d. over seeds.
    """
    plotting.style()
    runs, fit_steps = checked_runs(d, "fig05", LAW_COLUMNS), d.fit_steps
    predictions = {}
    for run in runs:
        try:
            predictions[run] = [analysis.early_prediction(frame, fit_steps) for frame in d.metrics[run]]
        except ValueError as err:
            raise ValueError(f"fig05: run {run!r} cannot be fitted on steps <= {fit_steps}: {err}") from err
    each = {f"{run} seed {k}": frame for run in runs for k, frame in enumerate(d.metrics[run])}
    summary = analysis.early_prediction_summary(each, fit_steps)
    fig, axes = plotting.grid(len(runs), height=3.0)
    for ax, run in zip(axes.flat, runs):
        prediction_panel(ax, predictions[run], fit_steps)
        ax.set_title(plotting.label(d.labels, run), fontsize=9)
        ax.set_xlabel("Training step")
        ax.set_ylabel("Validation accuracy (%)")
    prediction_legend(fig, summary, len(runs), fit_steps)
    note = band_note(
        d.metrics,
        "Markers are means over",
        "; bands ±1 standard error over them; each seed has its own early fit, and the dashed line is their mean prediction.",
    )
    plotting.caption(fig, d.caption + note)
    return plotting.save(fig, stem)


def prediction_panel(ax, preds: list[dict], fit_steps: int) -> None:
    """One run: the seeds' mean observed accuracy (filled where fitted), its band, the mean prediction and errors."""
    color, pred_color = sns.color_palette("deep")[0], PREDICTED
    pts = (
        pd.concat([pd.DataFrame(p["points"]) for p in preds])
        .groupby("step")
        .agg(R=("R", "mean"), se=("R", "sem"), R_pred=("R_pred", "mean"), used=("used_for_fit", "all"))
        .reset_index()
    )
    used = pts["used"].astype(bool)
    ax.plot(pts["step"], 100 * pts["R"], color=color, lw=0.8, alpha=0.5, zorder=2)
    if len(preds) > 1:
        ax.fill_between(
            pts["step"], 100 * (pts["R"] - pts["se"]), 100 * (pts["R"] + pts["se"]), color=color, alpha=0.2, lw=0
        )
    ax.scatter(pts.loc[used, "step"], 100 * pts.loc[used, "R"], color=color, s=22, zorder=3)
    ax.scatter(
        pts.loc[~used, "step"],
        100 * pts.loc[~used, "R"],
        facecolor="white",
        edgecolor=color,
        s=22,
        linewidth=1.0,
        zorder=3,
    )
    ax.plot(pts["step"], 100 * pts["R_pred"], color=pred_color, lw=1.4, ls="--", zorder=4)
    ax.axvline(fit_steps, color="0.35", ls=":", lw=1.2)
    rmse = [p["rmse_pct"] for p in preds if p["n_pred"]]
    final = [p["final_error_pct"] for p in preds]
    if len(preds) == 1:
        text = (
            f"fit on {preds[0]['n_fit']} points\nRMSE = {f'{rmse[0]:.2f} pts' if rmse else 'n/a (nothing after the window)'}"
            f"\nfinal error = {final[0]:.2f} pts"
        )
    else:
        text = (
            f"fit on {preds[0]['n_fit']} points a seed\nRMSE = {mean_sd(rmse, unit=' pts')}\n"
            f"final error = {mean_sd(final, unit=' pts')}\n({len(preds)} seeds)"
        )
    plotting.box(ax, text, y=0.03)


@artifact(
    "figure", "Figure 6", "The fitted curves of one base model under different RL algorithms, beside one pooled curve."
)
def fig06_algorithms(d: Inputs, stem) -> tuple[Path, Path]:
    """Figure 6: runs of different RL algorithms lie on one entropy–accuracy curve.

    Each run's validation points and its own fit in its colour, the pooled fit (one a, b for all runs and
    seeds) dashed black, and the test of one (a, b) for all runs (``shared_law``).
    """
    plotting.style()
    runs = checked_runs(d, "fig06", LAW_COLUMNS)
    if len(runs) < 2:
        raise ValueError(f"fig06 compares algorithms: needs at least 2 runs, got {len(runs)}")
    several = min(len(frames) for frames in d.metrics.values()) > 1
    try:
        own, pooled, text = shared_law(d, several)
    except ValueError as err:
        raise ValueError(f"fig06: {err}") from err
    fig, ax = plt.subplots(figsize=(6.0, 4.2), layout="constrained")
    H_all = algorithm_fits(ax, d, own, several)
    law_curve(
        ax, pooled, H_all.min(), H_all.max(), color="black", lw=2.0, ls="--", zorder=4, label="pooled fit (one a, b)"
    )
    plotting.box(ax, text)
    ax.set_title("Accuracy against entropy across RL algorithms")
    ax.set_xlabel("Policy entropy (nats)")
    ax.set_ylabel("Validation accuracy (%)")
    ax.legend(loc="lower left", fontsize=8)
    note = band_note(d.metrics, "Points and thin curves are each of", ", each seed with its own fit.")
    plotting.caption(fig, d.caption + note)
    return plotting.save(fig, stem)


@artifact(
    "figure",
    "Figure 7",
    "The coefficients a and b against the non-embedding parameter count (log scale), with log-linear fits.",
    ("metrics", "models"),
)
def fig07_coefficients_vs_size(d: Inputs, stem) -> tuple[Path, Path]:
    """Figure 7: the coefficients a and b against non-embedding parameters (log axis).

    One series per training set (``train_data`` of the spec), with standard errors of ``analysis.fit_run``
    as error bars and the ``analysis.log_linear_fit`` line and its R² when the series has at least 3 sizes.
    A run with several seeds: each seed's fit is a small point, the marker their mean with its standard
    error over seeds, and the trend is fitted to every seed's point (as the audit's log-linear test is).
    """
    plotting.style()
    seeds, table = size_fits(d, checked_runs(d, "fig07", LAW_COLUMNS))
    groups = list(table.groupby("series", sort=False))
    colors = plotting.palette((s for s, _ in groups), "deep")
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.6), layout="constrained")
    for ax, coef in zip(axes, ("a", "b")):
        for series, group in groups:
            size_series(ax, coef, group.sort_values("size"), seeds[seeds["series"] == series], colors[series], d.labels)
        plotting.log_count_xaxis(ax)
        ax.set_xlabel("Non-embedding parameters")
        ax.legend(fontsize=8)
    axes[0].set_title("a: rate of converting entropy into accuracy")
    axes[0].set_ylabel("a")
    axes[1].set_title("b: offset (the ceiling at H = 0 is b − a)")
    axes[1].set_ylabel("b")
    note = band_note(
        d.metrics, "Markers are means over", "; error bars ±1 standard error over them; small points are the seeds."
    )
    plotting.caption(fig, d.caption + note)
    return plotting.save(fig, stem)
