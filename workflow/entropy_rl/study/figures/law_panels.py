"""The panels, fits and legends of Section 2's figures (``law``): Figure 1's fitted ceiling and axes, Figure 2's shares
and the fractions of training the paper quotes, Figure 5's legend, Figure 6's runs and their test of one law, and
Figure 7's coefficients by model size."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D

from .. import analysis, plotting
from ..inputs import Inputs
from .shared import law_curve

MARKS = ((1 / 12, "1/12"), (1 / 3, "1/3"))  # fractions of training quoted in the paper (Section 2.3)
PREDICTED = "crimson"  # Figure 5's prediction; the observed accuracy takes the "deep" palette's first colour


def fitted_ceiling(ax, frames: list[pd.DataFrame], color, label: str, fitted: int, run: str) -> int:
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


def collapse_axes(ax_t, ax_r, deep, one: bool) -> None:
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


def share_lines(ax, shares: dict, pooled: pd.DataFrame, pool: str | None) -> None:
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


def share_marks(ax, pooled: pd.DataFrame) -> None:
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


def prediction_legend(fig, summary: pd.DataFrame, runs: int, fit_steps: int) -> None:
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


def algorithm_fits(ax, d: Inputs, own: dict[str, list[dict]], several: bool) -> np.ndarray:
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


def shared_law(d: Inputs, several: bool) -> tuple[dict, dict, str]:
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


def size_fits(d: Inputs, runs: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
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
            series = (d.specs[run].train_data if run in d.specs else None) or "train"
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


def size_series(ax, coef: str, group: pd.DataFrame, points: pd.DataFrame, color, labels: dict) -> None:
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
