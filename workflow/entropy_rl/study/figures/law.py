"""Section 2: entropy collapse and the entropy-performance law R = -a exp(H) + b (Eq. 6), Figures 1 to 7."""

from __future__ import annotations

import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D

from .. import analysis, plotting
from ..inputs import Inputs
from ..registry import artifact
from .fit_grid import fit_grid
from .shared import band_note, checked_runs, law_curve, mean_sd, seed_line

MARKS = ((1 / 12, "1/12"), (1 / 3, "1/3"))  # fractions of training quoted in the paper (Section 2.3)
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
        fitted += _ceiling(ax_f, d.metrics[run], r_colors[run], plotting.label(d.labels, run), fitted, run)
    if not fitted:
        raise ValueError("fig01: no run has enough validation points to fit R = -a*exp(H) + b")
    low, high = ax_f.get_ylim()
    ax_f.set_ylim(low, high + (0.08 + 0.05 * fitted) * (high - low))  # room for the ceiling notes
    _collapse_axes(ax_t, ax_r, deep, one)
    ax_f.set_xlim(left=-0.03 * ax_f.get_xlim()[1])
    ax_f.set_title("R = −a·exp(H) + b, extended to H = 0")
    ax_f.set_xlabel("Policy entropy (nats)")
    ax_f.set_ylabel("Validation accuracy (%)")
    ax_f.legend(loc="lower left", fontsize=8)
    plotting.caption(fig, d.caption + band_note(d.metrics))
    return plotting.save(fig, stem)


def _ceiling(ax, frames: list[pd.DataFrame], color, label: str, fitted: int, run: str) -> int:
    """One run's validation points and its law, extended dotted to H = 0 where the ceiling b − a is starred
    and annotated (the ``fitted``-th note); 1 when it could be fitted, else 0 with a warning."""
    pts = pd.concat([analysis.validation_points(f) for f in frames], ignore_index=True)
    ax.scatter(pts["entropy"], 100 * pts["R"], color=color, s=18, edgecolor="0.2", linewidth=0.3, zorder=3, label=label)
    try:
        fit = analysis.fit_entropy_law(pts["entropy"], pts["R"])
    except ValueError as err:
        warnings.warn(f"fig01: no fit for run {run}: {err}", stacklevel=3)
        return 0
    lo, hi = float(pts["entropy"].min()), float(pts["entropy"].max())
    law_curve(ax, fit, lo, hi, color=color, lw=1.6, zorder=2)
    law_curve(ax, fit, 0.0, lo, color=color, lw=1.2, ls=":", zorder=2)
    ceiling = 100 * fit["ceiling"]
    ax.plot([0.0], [ceiling], marker="*", ms=13, color=color, mec="0.2", ls="none", clip_on=False, zorder=4)
    ax.annotate(
        f"predicted ceiling b − a = {ceiling:.1f}%",
        xy=(0.0, ceiling),
        xytext=(12, 4 + 13 * fitted),
        textcoords="offset points",
        fontsize=8,
        color=color,
        va="bottom",
    )
    return 1


def _collapse_axes(ax_t, ax_r, deep, one: bool) -> None:
    """The left panel's title, axis labels (coloured by quantity for one run) and legend of line styles."""
    ax_t.set_title("Entropy collapse and performance saturation")
    ax_t.set_xlabel("Training step")
    ax_t.set_ylabel("Policy entropy (nats)", color=deep[0] if one else "black")
    ax_r.set_ylabel("Validation accuracy (%)", color=deep[3] if one else "black")
    handles = [
        Line2D([], [], color=deep[0] if one else "0.3", lw=1.4, label="entropy"),
        Line2D([], [], color=deep[3] if one else "0.3", lw=1.2, ls="--", marker="o", ms=3, label="validation accuracy"),
    ]
    ax_t.legend(handles=handles, loc="center right", fontsize=8)


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
    _share_lines(ax, shares, pooled, pool if len(frames) > 1 else None)
    _marks(ax, pooled)
    low, high = ax.get_ylim()
    ax.set_ylim(max(low, -25), min(high, 150))
    ax.set_xlim(0, 1)
    ax.set_xlabel("Fraction of training steps")
    ax.set_ylabel("Cumulative share of total change (%)")
    ax.legend(loc="lower right")
    plotting.caption(fig, d.caption)
    return plotting.save(fig, stem)


def _share_lines(ax, shares: dict, pooled: pd.DataFrame, pool: str | None) -> None:
    """Each series' single runs thin and its pool (over ``pool``; None for one run) thick."""
    deep = sns.color_palette("deep")
    for col, (name, color) in {
        "entropy_share": ("Entropy consumed", deep[0]),
        "perf_share": ("Performance gained", deep[3]),
    }.items():
        for df in shares.values():
            if len(shares) > 1:
                ax.plot(df["step_frac"], 100 * df[col], color=color, lw=0.7, alpha=0.3)
        label = f"{name} (pooled over {pool})" if pool else name
        ax.plot(pooled["step_frac"], 100 * pooled[col], color=color, lw=2.2, marker="o", ms=3, label=label)


def _marks(ax, pooled: pd.DataFrame) -> None:
    """The fractions of training the paper quotes (MARKS), each with the pooled shares reached there."""
    for i, (frac, name) in enumerate(MARKS):
        h_share, r_share = analysis.share_at(pooled, frac)
        ax.axvline(frac, color="0.35", ls="--", lw=1)
        ax.annotate(
            f"{name} of training\nentropy {100 * h_share:.0f}%\nperformance {100 * r_share:.0f}%",
            xy=(frac, 0.05 + 0.22 * i),
            xycoords=("data", "axes fraction"),
            xytext=(5, 0),
            textcoords="offset points",
            fontsize=8,
            va="bottom",
            bbox={"boxstyle": "round,pad=0.3", "fc": "white", "ec": "0.7", "alpha": 0.9},
        )


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
    _prediction_legend(fig, summary, len(runs), fit_steps)
    note = band_note(
        d.metrics,
        "Markers are means over",
        "; bands ±1 standard error over them; each seed has its own early fit, and the dashed line is their mean prediction.",
    )
    plotting.caption(fig, d.caption + note)
    return plotting.save(fig, stem)


PREDICTED = "crimson"  # the prediction; the observed accuracy takes the "deep" palette's first colour


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


def _prediction_legend(fig, summary: pd.DataFrame, runs: int, fit_steps: int) -> None:
    """The legend of markers, headed by the mean errors over runs (and seeds)."""
    color, pred_color = sns.color_palette("deep")[0], PREDICTED
    handles = [
        Line2D([], [], color=color, marker="o", ls="none", label=f"observed, used for fit (step ≤ {fit_steps})"),
        Line2D([], [], color=color, marker="o", mfc="white", ls="none", label="observed, predicted"),
        Line2D([], [], color=pred_color, ls="--", lw=1.4, label="R = −a·exp(H) + b from the early fit"),
    ]
    mean_rmse = summary["rmse_pct"].mean()  # NaN when no run has a point after the window
    over = "runs" if len(summary) == runs else "runs and seeds"
    title = (
        f"Early prediction, mean over {over}: RMSE {'n/a' if np.isnan(mean_rmse) else f'{mean_rmse:.2f}'}, "
        f"final error {summary['final_error_pct'].mean():.2f} accuracy points"
    )
    fig.legend(
        handles=handles,
        loc="outside upper center",
        ncol=3,
        frameon=False,
        fontsize=8,
        title=title,
        title_fontproperties={"size": "large"},
    )


@artifact(
    "figure", "Figure 6", "The fitted curves of one base model under different RL algorithms, beside one pooled curve."
)
def fig06_algorithms(d: Inputs, stem) -> tuple[Path, Path]:
    """Figure 6: runs of different RL algorithms lie on one entropy–accuracy curve.

    Each run's validation points and its own fit in its colour, the pooled fit (one a, b for all runs and
    seeds) dashed black, and the test of one (a, b) for all runs (``_shared_law``).
    """
    plotting.style()
    runs = checked_runs(d, "fig06", LAW_COLUMNS)
    if len(runs) < 2:
        raise ValueError(f"fig06 compares algorithms: needs at least 2 runs, got {len(runs)}")
    several = min(len(frames) for frames in d.metrics.values()) > 1
    try:
        own, pooled, text = _shared_law(d, several)
    except ValueError as err:
        raise ValueError(f"fig06: {err}") from err
    fig, ax = plt.subplots(figsize=(6.0, 4.2), layout="constrained")
    H_all = _algorithm_fits(ax, d, own, several)
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


def _algorithm_fits(ax, d: Inputs, own: dict[str, list[dict]], several: bool) -> np.ndarray:
    """Each run's validation points and its own fits (thinner with several seeds), in its colour; returns every
    entropy drawn, which the pooled curve spans."""
    colors = plotting.palette(d.metrics)
    H_all = []
    for run in d.metrics:
        for k, (frame, fit) in enumerate(zip(d.metrics[run], own[run])):
            pts = analysis.validation_points(frame)
            H_all.append(pts["entropy"].to_numpy())
            ax.scatter(
                pts["entropy"],
                100 * pts["R"],
                color=colors[run],
                s=12 if several else 20,
                edgecolor="0.2",
                linewidth=0.3,
                zorder=3,
                label=plotting.label(d.labels, run) if k == 0 else None,
            )
            law_curve(
                ax, fit, pts["entropy"].min(), pts["entropy"].max(), color=colors[run], lw=0.9 if several else 1.4
            )
    return np.concatenate(H_all)


def _shared_law(d: Inputs, several: bool) -> tuple[dict, dict, str]:
    """Each run's own fits, the pooled fit and the test of one (a, b) for all runs: with one seed the F-test of
    ``analysis.shared_coefficients_test`` and the largest gap between a run's curve and the pooled one; with
    several the ANOVA over seeds of ``analysis.coefficients_anova``, as the audit judges it."""
    if not several:
        test = analysis.shared_coefficients_test(d.first)
        text = (
            f"one (a, b) for all runs, F-test:\nF({test['df1']}, {test['df2']}) = {test['F']:.2f}, "
            f"p = {test['p_value']:.3g}\nmax curve gap = {test['max_curve_gap_pct']:.2f} pts"
        )
        return {run: [test["per_run"][run]] for run in d.metrics}, test["pooled"], text
    own = {run: [analysis.fit_run(f) for f in frames] for run, frames in d.metrics.items()}
    anova = analysis.coefficients_anova(own)
    points = [analysis.validation_points(f) for frames in d.metrics.values() for f in frames]
    pooled = analysis.fit_entropy_law(*(np.concatenate([p[c].to_numpy() for p in points]) for c in ("entropy", "R")))
    text = (
        f"one (a, b) for all runs? ANOVA over\n{min(len(f) for f in d.metrics.values())} seeds a run: "
        + "\n".join(f"{c}: F = {anova[c]['F']:.2f}, p = {anova[c]['p_value']:.3g}" for c in ("a", "b"))
        + f"\np (both, Bonferroni) = {anova['p_value']:.3g}"
    )
    return own, pooled, text


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
    seeds, table = _size_fits(d, checked_runs(d, "fig07", LAW_COLUMNS))
    groups = list(table.groupby("series", sort=False))
    colors = plotting.palette((s for s, _ in groups), "deep")
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.6), layout="constrained")
    for ax, coef in zip(axes, ("a", "b")):
        for series, group in groups:
            _size_series(
                ax, coef, group.sort_values("size"), seeds[seeds["series"] == series], colors[series], d.labels
            )
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


def _size_fits(d: Inputs, runs: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every seed's fit with its run's size and training set, and per run their mean, standard error over
    seeds, and the error bar drawn: the fit's own standard error with one seed, the spread over seeds else."""
    rows = []
    for run in runs:
        if run not in d.sizes:
            raise ValueError(f"fig07: no model size given for run {run!r}")
        for seed, frame in enumerate(d.metrics[run]):
            try:
                fit = analysis.fit_run(frame)
            except ValueError as err:
                warnings.warn(f"fig07: skipping seed {seed} of run {run}: {err}", stacklevel=3)
                continue
            series = (d.specs.get(run) or {}).get("train_data", "train")
            rows.append({"run": run, "seed": seed, "size": float(d.sizes[run]), "series": series, **fit})
    if not rows:
        raise ValueError("fig07: no run has enough validation points to fit R = -a*exp(H) + b")
    seeds = pd.DataFrame(rows)
    table = (
        seeds.groupby("run", sort=False)
        .agg(
            size=("size", "first"),
            series=("series", "first"),
            seeds=("seed", "size"),
            a=("a", "mean"),
            b=("b", "mean"),
            a_se=("a", "sem"),
            b_se=("b", "sem"),
            a_stderr=("a_stderr", "first"),
            b_stderr=("b_stderr", "first"),
        )
        .reset_index()
    )
    for coef in ("a", "b"):
        table[f"{coef}_err"] = table[f"{coef}_se"].where(table["seeds"] > 1, table[f"{coef}_stderr"])
    return seeds, table


def _size_series(ax, coef: str, group: pd.DataFrame, points: pd.DataFrame, color, labels: dict) -> None:
    """One training set's coefficient against size: seeds' points, the log-linear trend from 3 sizes, the
    means with error bars, and (for a) each run's name, alternating above and below so neighbours do not overlap."""
    label = series = group["series"].iloc[0]
    if group["seeds"].max() > 1:
        ax.scatter(points["size"], points[coef], s=9, color=color, alpha=0.45, lw=0)
    if group["size"].nunique() >= 3:
        trend = analysis.log_linear_fit(points["size"], points[coef])
        x = np.geomspace(group["size"].min(), group["size"].max(), 50)
        ax.plot(x, trend["slope"] * np.log10(x) + trend["intercept"], color=color, lw=1.4)
        label = f"{series} (log-linear $R^2$ = {trend['r2']:.3f})"
    ax.errorbar(
        group["size"], group[coef], yerr=group[f"{coef}_err"], fmt="o", ms=5, capsize=3, color=color, label=label
    )
    if coef == "a":
        for k, (_, row) in enumerate(group.iterrows()):
            ax.annotate(
                plotting.label(labels, row["run"]),
                (row["size"], row[coef]),
                xytext=(4, 4 if k % 2 == 0 else -4),
                va="bottom" if k % 2 == 0 else "top",
                textcoords="offset points",
                fontsize=6,
                color="0.3",
            )
