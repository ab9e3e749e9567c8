"""Figures of the paper, drawn from per-run metrics tables.

Every figure function is named after its Snakemake rule and takes the loaded
metrics (run id → metrics DataFrame, in drawing order) as its first argument,
then keyword-only arguments from one vocabulary: ``labels`` (run → display
label), ``specs`` (run → resolved run spec), ``sizes`` (run → non-embedding
parameters), ``replicates`` (run → the metrics of each of its seeds, the run's own
first), ``fit_steps``, ``stem`` (output path stem) and ``caption``. The
calling script passes only the ones a function's signature names. Each writes
``<stem>.pdf`` and ``<stem>.png`` and returns their paths. Adding a figure means
writing one function that sets ``plotting.style``, builds a matplotlib figure and
ends with ``plotting.caption`` and ``plotting.save`` (the kit in ``plotting``).
"""

from __future__ import annotations

import textwrap
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D

from ..core import metric_columns
from . import analysis, plotting

MARKS = ((1 / 12, "1/12"), (1 / 3, "1/3"))  # fractions of training quoted in the paper (Section 2.3)
# Figure 8 (right): the bandit covariance of the prompts whose group accuracy is 1, 4 or 7 of 8,
# labelled as in the paper's legend (columns of metric_columns.BANDIT_ACC).
DIFFICULTY = {col: f"Accuracy={acc:g}" for col, acc in metric_columns.BANDIT_ACC.items()}
# Quantities drawn against the training step: column → (panel title, y label).
STEP_PANELS = {
    "entropy": ("Policy entropy", "Entropy (nats)"),
    "response_length": ("Response length", "Mean response length (tokens)"),
    "val_acc": ("Validation accuracy", "Accuracy (%)"),
}


# ---- shared pieces ---------------------------------------------------------------------------


def _runs(metrics_by_run: dict[str, pd.DataFrame], name: str, columns=("step", "entropy")) -> list[str]:
    """The run ids to draw, after checking there is at least one and each has ``columns``."""
    if not metrics_by_run:
        raise ValueError(f"{name}: no runs given")
    for run, metrics in metrics_by_run.items():
        missing = [c for c in columns if c not in metrics.columns]
        if missing:
            raise ValueError(f"{name}: metrics of run {run!r} lack column(s) {missing}")
    return list(metrics_by_run)


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


def band_note(replicates: dict[str, list] | None) -> str:
    """What a figure's bands are, for its caption (nothing when every run has one seed)."""
    counts = sorted({len(frames) for frames in (replicates or {}).values()})
    if not counts or counts == [1]:
        return ""
    seeds = "-".join(map(str, (counts[0], counts[-1]))) if len(counts) > 1 else str(counts[0])
    return f" Lines are means over {seeds} seeds (pre-training and RL); bands are ±1 standard error over the seeds."


def _mean_sd(values, digits: int = 2, unit: str = "") -> str:
    """A quantity over seeds as "mean ± s.d." and its unit ("n/a" when fewer than two seeds have it)."""
    values = [v for v in values if np.isfinite(v)]
    return f"{np.mean(values):.{digits}f} ± {np.std(values, ddof=1):.{digits}f}{unit}" if len(values) > 1 else "n/a"


def _law_curve(ax, fit: dict, lo: float, hi: float, **style) -> None:
    """Eq. 6 with the fitted (a, b) between entropies ``lo`` and ``hi``, in accuracy %."""
    H = np.linspace(lo, hi, 200)
    ax.plot(H, 100 * analysis.entropy_law(H, fit["a"], fit["b"]), **style)


def _fit_grid(metrics_by_run, labels, stem, caption, name: str, title: str, replicates=None) -> tuple[Path, Path]:
    """One panel per run: validation accuracy against entropy, coloured by step, with the Eq. 6 fit.

    Colour encodes the training step on one scale shared by all panels. A run
    whose fit fails (fewer than 3 validation points, constant entropy) keeps its
    scatter and says why in its text box. A run with several ``replicates``: every
    seed's points, each seed's own fit, and a, b and R² as mean ± s.d. over seeds.
    """
    plotting.style()
    runs = _runs(metrics_by_run, name, ("step", "entropy", "val_acc"))
    fig, axes = plotting.grid(len(runs))
    seeds = {run: [analysis.validation_points(f) for f in (replicates or {}).get(run) or [metrics_by_run[run]]] for run in runs}
    steps = np.concatenate([p["step"].to_numpy() for pts in seeds.values() for p in pts])
    norm = plt.Normalize(vmin=float(steps.min()) if steps.size else 0.0, vmax=float(steps.max()) if steps.size else 1.0)
    scatter = None
    for ax, run in zip(axes.flat, runs):
        fits, errors = [], []
        for pts in seeds[run]:
            scatter = ax.scatter(pts["entropy"], 100 * pts["R"], c=pts["step"], cmap="viridis", norm=norm,
                                 s=22 if len(seeds[run]) == 1 else 12, edgecolor="0.2", linewidth=0.3, zorder=3)  # fmt: skip
            try:
                fit = analysis.fit_entropy_law(pts["entropy"], pts["R"])
            except ValueError as err:
                errors.append(str(err))
                continue
            lo, hi = pts["entropy"].min(), pts["entropy"].max()
            pad = 0.03 * (hi - lo)
            _law_curve(ax, fit, lo - pad, hi + pad, color="crimson", lw=1.6 if len(seeds[run]) == 1 else 1.0, zorder=2)
            fits.append(fit)
        if errors:
            text = textwrap.fill(f"no fit{'' if len(seeds[run]) == 1 else f' on {len(errors)} of {len(seeds[run])} seeds'}: {errors[0]}", 30)
        elif len(fits) == 1:
            text = f"a = {fits[0]['a']:.3f}\nb = {fits[0]['b']:.3f}\n$R^2$ = {fits[0]['r2']:.3f}"
        else:
            text = "\n".join(f"{label} = {np.mean([f[k] for f in fits]):.3f} ± {np.std([f[k] for f in fits], ddof=1):.2g}"
                             for k, label in (("a", "a"), ("b", "b"), ("r2", "$R^2$"))) + f"\n({len(fits)} seeds)"  # fmt: skip
        plotting.box(ax, text)
        ax.set_title(plotting.label(labels, run), fontsize=9)
        ax.set_xlabel("Policy entropy (nats)")
        ax.set_ylabel("Validation accuracy (%)")
    if scatter is not None:
        fig.colorbar(scatter, ax=axes.ravel().tolist(), label="Training step", shrink=0.9 if axes.shape[0] > 1 else 1.0)
    fig.suptitle(title)
    note = band_note(replicates).replace("Lines are means over", "Each panel draws").replace(
        "; bands are ±1 standard error over the seeds.", ", each with its own fit; its box gives a, b and R² as mean ± s.d. over them.")
    plotting.caption(fig, caption + note)
    return plotting.save(fig, stem)


def _step_curves(metrics_by_run, labels, stem, caption, name: str, panels, title: str, replicates=None) -> tuple[Path, Path]:
    """One panel per quantity in ``panels`` (keys of ``STEP_PANELS``) against the step, one line per run.

    Accuracy is drawn only at validation steps, joined by lines and marked,
    since nothing is measured in between; the other quantities at every step.
    A run with several ``replicates`` is drawn as their mean, in a band of ±1 standard error.
    """
    plotting.style()
    runs = _runs(metrics_by_run, name, ("step", *panels))
    colors = plotting.palette(runs)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.0 * len(panels), 3.4), layout="constrained", squeeze=False)
    for run in runs:
        frames = (replicates or {}).get(run) or [metrics_by_run[run]]
        for ax, col in zip(axes.flat, panels):
            marks = {"marker": "o", "ms": 3} if col == "val_acc" else {}
            seed_line(ax, frames, col, colors[run], lw=1.4, **marks)
    for ax, col in zip(axes.flat, panels):
        ax.set_title(STEP_PANELS[col][0])
        ax.set_xlabel("Training step")
        ax.set_ylabel(STEP_PANELS[col][1])
    handles = [Line2D([], [], color=colors[run], lw=1.4, label=plotting.label(labels, run)) for run in runs]
    # The title heads the legend: a separate suptitle would overlap a legend placed outside the axes.
    fig.legend(handles=handles, loc="outside upper center", ncol=min(len(runs), 4), frameon=False, title=title,
               title_fontproperties={"size": "large"})  # fmt: skip
    plotting.caption(fig, caption + band_note(replicates))
    return plotting.save(fig, stem)


# ---- Section 2: entropy collapse and the entropy–performance law ----------------------------


def fig01_entropy_collapse(
    metrics_by_run: dict[str, pd.DataFrame],
    *,
    labels: dict[str, str] | None = None,
    stem,
    caption: str = "",
    replicates: dict[str, list[pd.DataFrame]] | None = None,
) -> tuple[Path, Path]:
    """Figure 1: entropy collapses while accuracy saturates, and the fit predicts the ceiling.

    Left: entropy (solid, left axis) and validation accuracy (dashed, right
    axis) against the step. Right: accuracy against entropy with
    R = −a·exp(H) + b, dotted where it extrapolates down to H = 0, and the
    predicted ceiling b − a starred and annotated there. A run with several
    ``replicates``: its curves are the mean over seeds in a ±1 s.e. band, and
    one law is fitted to every seed's validation points.
    """
    plotting.style()
    runs = _runs(metrics_by_run, "fig01", ("step", "entropy", "val_acc"))
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
        frames = (replicates or {}).get(run) or [metrics_by_run[run]]
        pts = pd.concat([analysis.validation_points(f) for f in frames], ignore_index=True)
        seed_line(ax_t, frames, "entropy", h_colors[run], lw=1.4)
        seed_line(ax_r, frames, "val_acc", r_colors[run], lw=1.2, ls="--", marker="o", ms=3)
        ax_f.scatter(pts["entropy"], 100 * pts["R"], color=r_colors[run], s=18, edgecolor="0.2", linewidth=0.3,
                     zorder=3, label=plotting.label(labels, run))  # fmt: skip
        try:
            fit = analysis.fit_entropy_law(pts["entropy"], pts["R"])
        except ValueError as err:
            warnings.warn(f"fig01: no fit for run {run}: {err}", stacklevel=2)
            continue
        lo, hi = float(pts["entropy"].min()), float(pts["entropy"].max())
        _law_curve(ax_f, fit, lo, hi, color=r_colors[run], lw=1.6, zorder=2)
        _law_curve(ax_f, fit, 0.0, lo, color=r_colors[run], lw=1.2, ls=":", zorder=2)
        ceiling = 100 * fit["ceiling"]
        ax_f.plot([0.0], [ceiling], marker="*", ms=13, color=r_colors[run], mec="0.2", ls="none", clip_on=False,
                  zorder=4)  # fmt: skip
        ax_f.annotate(f"predicted ceiling b − a = {ceiling:.1f}%", xy=(0.0, ceiling), xytext=(12, 4 + 13 * fitted),
                      textcoords="offset points", fontsize=8, color=r_colors[run], va="bottom")  # fmt: skip
        fitted += 1
    if not fitted:
        raise ValueError("fig01: no run has enough validation points to fit R = -a*exp(H) + b")
    low, high = ax_f.get_ylim()
    ax_f.set_ylim(low, high + (0.08 + 0.05 * fitted) * (high - low))  # room for the ceiling notes
    ax_t.set_title("Entropy collapse and performance saturation")
    ax_t.set_xlabel("Training step")
    ax_t.set_ylabel("Policy entropy (nats)", color=deep[0] if one else "black")
    ax_r.set_ylabel("Validation accuracy (%)", color=deep[3] if one else "black")
    ax_t.legend(handles=[Line2D([], [], color=deep[0] if one else "0.3", lw=1.4, label="entropy"),
                         Line2D([], [], color=deep[3] if one else "0.3", lw=1.2, ls="--", marker="o", ms=3,
                                label="validation accuracy")],
                loc="center right", fontsize=8)  # fmt: skip
    ax_f.set_xlim(left=-0.03 * ax_f.get_xlim()[1])
    ax_f.set_title("R = −a·exp(H) + b, extended to H = 0")
    ax_f.set_xlabel("Policy entropy (nats)")
    ax_f.set_ylabel("Validation accuracy (%)")
    ax_f.legend(loc="lower left", fontsize=8)
    plotting.caption(fig, caption + band_note(replicates))
    return plotting.save(fig, stem)


def fig02_cumulative_shares(
    metrics_by_run: dict[str, pd.DataFrame],
    *,
    labels: dict[str, str] | None = None,
    stem,
    caption: str = "",
    replicates: dict[str, list[pd.DataFrame]] | None = None,
) -> tuple[Path, Path]:
    """Figure 2: entropy is consumed and performance gained mostly early in training.

    Thin lines are single runs (validation steps only); thick lines pool all
    runs (``analysis.pooled_shares``: total change so far over total change),
    which stays meaningful when a run barely moves. The view is clipped to
    −25%..150% so a run with a near-zero total change cannot flatten the rest.
    ``labels`` is accepted for a uniform interface; single runs are not named.
    Several ``replicates`` of a run: each seed is a thin line, and the pool takes every seed of every run.
    """
    plotting.style()
    runs = _runs(metrics_by_run, "fig02", ("step", "entropy", "val_acc"))
    counts = sorted({len((replicates or {}).get(run) or [None]) for run in runs})
    if counts != [1]:
        metrics_by_run = {f"{run} seed {k}": f for run in runs for k, f in enumerate(replicates.get(run) or [metrics_by_run[run]])}
    shares = {}
    for run, metrics in metrics_by_run.items():
        try:
            shares[run] = analysis.cumulative_shares(metrics)
        except ValueError as err:
            warnings.warn(f"fig02: skipping run {run}: {err}", stacklevel=2)
    if not shares:
        raise ValueError("fig02: no run has computable cumulative shares")
    pooled = analysis.pooled_shares(metrics_by_run)

    series = {"entropy_share": ("Entropy consumed", sns.color_palette("deep")[0]),
              "perf_share": ("Performance gained", sns.color_palette("deep")[3])}  # fmt: skip
    fig, ax = plt.subplots(figsize=(6.0, 4.0), layout="constrained")
    for col, (name, color) in series.items():
        for df in shares.values():
            if len(shares) > 1:
                ax.plot(df["step_frac"], 100 * df[col], color=color, lw=0.7, alpha=0.3)
        pool = f"{len(runs)} runs" if counts == [1] else f"{len(runs)} runs × {'-'.join(map(str, (counts[0], counts[-1]))) if len(counts) > 1 else counts[0]} seeds"
        label = f"{name} (pooled over {pool})" if len(metrics_by_run) > 1 else name
        ax.plot(pooled["step_frac"], 100 * pooled[col], color=color, lw=2.2, marker="o", ms=3, label=label)

    for i, (frac, name) in enumerate(MARKS):
        h_share, r_share = analysis.share_at(pooled, frac)
        ax.axvline(frac, color="0.35", ls="--", lw=1)
        ax.annotate(
            f"{name} of training\nentropy {100 * h_share:.0f}%\nperformance {100 * r_share:.0f}%",
            xy=(frac, 0.05 + 0.22 * i), xycoords=("data", "axes fraction"), xytext=(5, 0), textcoords="offset points",
            fontsize=8, va="bottom", bbox={"boxstyle": "round,pad=0.3", "fc": "white", "ec": "0.7", "alpha": 0.9},
        )  # fmt: skip
    low, high = ax.get_ylim()
    ax.set_ylim(max(low, -25), min(high, 150))
    ax.set_xlim(0, 1)
    ax.set_xlabel("Fraction of training steps")
    ax.set_ylabel("Cumulative share of total change (%)")
    ax.legend(loc="lower right")
    plotting.caption(fig, caption)
    return plotting.save(fig, stem)


def fig03_fitted_curves(
    metrics_by_run: dict[str, pd.DataFrame],
    *,
    labels: dict[str, str] | None = None,
    stem,
    caption: str = "",
    replicates: dict[str, list[pd.DataFrame]] | None = None,
) -> tuple[Path, Path]:
    """Figure 3: validation accuracy against entropy follows R = −a·exp(H) + b in each run (math task)."""
    return _fit_grid(metrics_by_run, labels, stem, caption, "fig03",
                     "Math task: validation accuracy against entropy, fitted R = −a·exp(H) + b", replicates)  # fmt: skip


def fig04_code_fits(
    metrics_by_run: dict[str, pd.DataFrame],
    *,
    labels: dict[str, str] | None = None,
    stem,
    caption: str = "",
    replicates: dict[str, list[pd.DataFrame]] | None = None,
) -> tuple[Path, Path]:
    """Figure 4: the same per-run fits as Figure 3 for the code task."""
    return _fit_grid(metrics_by_run, labels, stem, caption, "fig04",
                     "Code task: validation accuracy against entropy, fitted R = −a·exp(H) + b", replicates)  # fmt: skip


def fig05_early_prediction(
    metrics_by_run: dict[str, pd.DataFrame],
    *,
    labels: dict[str, str] | None = None,
    fit_steps: int,
    stem,
    caption: str = "",
    replicates: dict[str, list[pd.DataFrame]] | None = None,
) -> tuple[Path, Path]:
    """Figure 5: accuracy late in training predicted from entropy with a fit on the early steps only.

    Per run: observed validation accuracy against the step (filled: used for
    the fit, step ≤ ``fit_steps``; open: predicted), the prediction of
    ``analysis.early_prediction`` dashed, the end of the fit window as a
    vertical line, and held-out RMSE and final error in accuracy points.
    A run with several ``replicates``: each seed is fitted and predicted on its own;
    the panel draws the seeds' mean observed accuracy in a ±1 standard-error band
    and their mean prediction, and its box gives the errors as mean ± s.d. over seeds.
    """
    plotting.style()
    runs = _runs(metrics_by_run, "fig05", ("step", "entropy", "val_acc"))
    seeds = {run: (replicates or {}).get(run) or [metrics_by_run[run]] for run in runs}
    predictions = {}
    for run in runs:
        try:
            predictions[run] = [analysis.early_prediction(frame, fit_steps) for frame in seeds[run]]
        except ValueError as err:
            raise ValueError(f"fig05: run {run!r} cannot be fitted on steps <= {fit_steps}: {err}") from err
    summary = analysis.early_prediction_summary({f"{run} seed {k}": frame for run in runs for k, frame in enumerate(seeds[run])},
                                                fit_steps)  # fmt: skip
    fig, axes = plotting.grid(len(runs), height=3.0)
    color, pred_color = sns.color_palette("deep")[0], "crimson"
    for ax, run in zip(axes.flat, runs):
        preds = predictions[run]
        pts = (pd.concat([pd.DataFrame(p["points"]) for p in preds]).groupby("step")
               .agg(R=("R", "mean"), se=("R", "sem"), R_pred=("R_pred", "mean"), used=("used_for_fit", "all")).reset_index())  # fmt: skip
        used = pts["used"].astype(bool)
        ax.plot(pts["step"], 100 * pts["R"], color=color, lw=0.8, alpha=0.5, zorder=2)
        if len(preds) > 1:
            ax.fill_between(pts["step"], 100 * (pts["R"] - pts["se"]), 100 * (pts["R"] + pts["se"]), color=color, alpha=0.2, lw=0)
        ax.scatter(pts.loc[used, "step"], 100 * pts.loc[used, "R"], color=color, s=22, zorder=3)
        ax.scatter(pts.loc[~used, "step"], 100 * pts.loc[~used, "R"], facecolor="white", edgecolor=color, s=22,
                   linewidth=1.0, zorder=3)  # fmt: skip
        ax.plot(pts["step"], 100 * pts["R_pred"], color=pred_color, lw=1.4, ls="--", zorder=4)
        ax.axvline(fit_steps, color="0.35", ls=":", lw=1.2)
        rmse = [p["rmse_pct"] for p in preds if p["n_pred"]]
        final = [p["final_error_pct"] for p in preds]
        if len(preds) == 1:
            text = (f"fit on {preds[0]['n_fit']} points\nRMSE = {f'{rmse[0]:.2f} pts' if rmse else 'n/a (nothing after the window)'}"
                    f"\nfinal error = {final[0]:.2f} pts")  # fmt: skip
        else:
            text = (f"fit on {preds[0]['n_fit']} points a seed\nRMSE = {_mean_sd(rmse, unit=' pts')}\nfinal error = {_mean_sd(final, unit=' pts')}"
                    f"\n({len(preds)} seeds)")  # fmt: skip
        plotting.box(ax, text, y=0.03)
        ax.set_title(plotting.label(labels, run), fontsize=9)
        ax.set_xlabel("Training step")
        ax.set_ylabel("Validation accuracy (%)")
    handles = [
        Line2D([], [], color=color, marker="o", ls="none", label=f"observed, used for fit (step ≤ {fit_steps})"),
        Line2D([], [], color=color, marker="o", mfc="white", ls="none", label="observed, predicted"),
        Line2D([], [], color=pred_color, ls="--", lw=1.4, label="R = −a·exp(H) + b from the early fit"),
    ]
    mean_rmse = summary["rmse_pct"].mean()  # NaN when no run has a point after the window
    over = "runs" if len(summary) == len(runs) else "runs and seeds"
    title = (f"Early prediction, mean over {over}: RMSE {'n/a' if np.isnan(mean_rmse) else f'{mean_rmse:.2f}'}, "
             f"final error {summary['final_error_pct'].mean():.2f} accuracy points")  # fmt: skip
    fig.legend(handles=handles, loc="outside upper center", ncol=3, frameon=False, fontsize=8, title=title,
               title_fontproperties={"size": "large"})  # fmt: skip
    note = band_note(replicates).replace("Lines are means over", "Markers are means over").replace(
        "bands are ±1 standard error over the seeds.", "bands ±1 standard error over them; each seed has its own early fit, and the dashed line is their mean prediction.")
    plotting.caption(fig, caption + note)
    return plotting.save(fig, stem)


def fig06_algorithms(
    metrics_by_run: dict[str, pd.DataFrame], *, labels: dict[str, str] | None = None, stem, caption: str = "",
    replicates: dict[str, list[pd.DataFrame]] | None = None,
) -> tuple[Path, Path]:
    """Figure 6: runs of different RL algorithms lie on one entropy–accuracy curve.

    Each run's validation points and its own fit in its colour, the pooled fit
    (one a, b for all runs and seeds) dashed black. One seed: the F-test of
    ``analysis.shared_coefficients_test`` with the largest gap between any run's
    curve and the pooled one. Several ``replicates``: every seed's points and own
    fit (thin), and the ANOVA over seeds of ``analysis.coefficients_anova``, as the audit judges it.
    """
    plotting.style()
    runs = _runs(metrics_by_run, "fig06", ("step", "entropy", "val_acc"))
    if len(runs) < 2:
        raise ValueError(f"fig06 compares algorithms: needs at least 2 runs, got {len(runs)}")
    seeds = {run: (replicates or {}).get(run) or [metrics_by_run[run]] for run in runs}
    several = min(len(frames) for frames in seeds.values()) > 1
    try:
        if several:
            own = {run: [analysis.fit_run(f) for f in frames] for run, frames in seeds.items()}
            anova = analysis.coefficients_anova(own)
            pooled = analysis.fit_entropy_law(
                *(np.concatenate([analysis.validation_points(f)[c].to_numpy() for frames in seeds.values() for f in frames])
                  for c in ("entropy", "R"))
            )  # fmt: skip
            text = (f"one (a, b) for all runs? ANOVA over\n{min(len(f) for f in seeds.values())} seeds a run: "
                    + "\n".join(f"{c}: F = {anova[c]['F']:.2f}, p = {anova[c]['p_value']:.3g}" for c in ("a", "b"))
                    + f"\np (both, Bonferroni) = {anova['p_value']:.3g}")  # fmt: skip
        else:
            test = analysis.shared_coefficients_test(metrics_by_run)
            own, pooled = {run: [test["per_run"][run]] for run in runs}, test["pooled"]
            text = (f"one (a, b) for all runs, F-test:\nF({test['df1']}, {test['df2']}) = {test['F']:.2f}, "
                    f"p = {test['p_value']:.3g}\nmax curve gap = {test['max_curve_gap_pct']:.2f} pts")  # fmt: skip
    except ValueError as err:
        raise ValueError(f"fig06: {err}") from err
    colors = plotting.palette(runs)
    fig, ax = plt.subplots(figsize=(6.0, 4.2), layout="constrained")
    H_all = []
    for run in runs:
        for k, (frame, fit) in enumerate(zip(seeds[run], own[run])):
            pts = analysis.validation_points(frame)
            H_all.append(pts["entropy"].to_numpy())
            ax.scatter(pts["entropy"], 100 * pts["R"], color=colors[run], s=12 if several else 20, edgecolor="0.2",
                       linewidth=0.3, zorder=3, label=plotting.label(labels, run) if k == 0 else None)  # fmt: skip
            _law_curve(ax, fit, pts["entropy"].min(), pts["entropy"].max(), color=colors[run], lw=0.9 if several else 1.4)
    H_all = np.concatenate(H_all)
    _law_curve(ax, pooled, H_all.min(), H_all.max(), color="black", lw=2.0, ls="--", zorder=4,
               label="pooled fit (one a, b)")  # fmt: skip
    plotting.box(ax, text)
    ax.set_title("Accuracy against entropy across RL algorithms")
    ax.set_xlabel("Policy entropy (nats)")
    ax.set_ylabel("Validation accuracy (%)")
    ax.legend(loc="lower left", fontsize=8)
    note = band_note(replicates).replace("Lines are means over", "Points and thin curves are each of").replace(
        "; bands are ±1 standard error over the seeds.", ", each seed with its own fit.")
    plotting.caption(fig, caption + note)
    return plotting.save(fig, stem)


def fig07_coefficients_vs_size(
    metrics_by_run: dict[str, pd.DataFrame],
    *,
    labels: dict[str, str] | None = None,
    sizes: dict[str, int],
    specs: dict[str, dict],
    stem,
    caption: str = "",
    replicates: dict[str, list[pd.DataFrame]] | None = None,
) -> tuple[Path, Path]:
    """Figure 7: the coefficients a and b against non-embedding parameters (log axis).

    One series per training set (``train_data`` of the spec), with standard
    errors of ``analysis.fit_run`` as error bars and the ``analysis.log_linear_fit``
    line and its R² when the series has at least 3 sizes. A run with several
    ``replicates``: each seed's fit is a small point, the marker their mean with
    its standard error over seeds, and the trend is fitted to every seed's point
    (as the audit's log-linear test is).
    """
    plotting.style()
    runs = _runs(metrics_by_run, "fig07", ("step", "entropy", "val_acc"))
    rows = []
    for run in runs:
        if run not in sizes:
            raise ValueError(f"fig07: no model size given for run {run!r}")
        for seed, frame in enumerate((replicates or {}).get(run) or [metrics_by_run[run]]):
            try:
                fit = analysis.fit_run(frame)
            except ValueError as err:
                warnings.warn(f"fig07: skipping seed {seed} of run {run}: {err}", stacklevel=2)
                continue
            series = (specs.get(run) or {}).get("train_data", "train")
            rows.append({"run": run, "seed": seed, "size": float(sizes[run]), "series": series, **fit})
    if not rows:
        raise ValueError("fig07: no run has enough validation points to fit R = -a*exp(H) + b")
    seeds = pd.DataFrame(rows)
    table = seeds.groupby("run", sort=False).agg(
        size=("size", "first"), series=("series", "first"), seeds=("seed", "size"),
        a=("a", "mean"), b=("b", "mean"), a_se=("a", "sem"), b_se=("b", "sem"),
        a_stderr=("a_stderr", "first"), b_stderr=("b_stderr", "first"),
    ).reset_index()  # fmt: skip
    for coef in ("a", "b"):  # one seed: the fit's own standard error; several: the spread over seeds
        table[f"{coef}_err"] = table[f"{coef}_se"].where(table["seeds"] > 1, table[f"{coef}_stderr"])
    groups = list(table.groupby("series", sort=False))
    colors = plotting.palette((s for s, _ in groups), "deep")
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.6), layout="constrained")
    for ax, coef in zip(axes, ("a", "b")):
        for series, group in groups:
            group = group.sort_values("size")
            label = series
            points = seeds[seeds["series"] == series]
            if group["seeds"].max() > 1:
                ax.scatter(points["size"], points[coef], s=9, color=colors[series], alpha=0.45, lw=0)
            if group["size"].nunique() >= 3:
                trend = analysis.log_linear_fit(points["size"], points[coef])
                x = np.geomspace(group["size"].min(), group["size"].max(), 50)
                ax.plot(x, trend["slope"] * np.log10(x) + trend["intercept"], color=colors[series], lw=1.4)
                label = f"{series} (log-linear $R^2$ = {trend['r2']:.3f})"
            ax.errorbar(group["size"], group[coef], yerr=group[f"{coef}_err"], fmt="o", ms=5, capsize=3,
                        color=colors[series], label=label)  # fmt: skip
            if coef == "a":  # labels alternate above and below, so neighbouring sizes' labels do not overlap
                for k, (_, row) in enumerate(group.iterrows()):
                    ax.annotate(plotting.label(labels, row["run"]), (row["size"], row[coef]),
                                xytext=(4, 4 if k % 2 == 0 else -4), va="bottom" if k % 2 == 0 else "top",
                                textcoords="offset points", fontsize=6, color="0.3")  # fmt: skip
        plotting.log_count_xaxis(ax)
        ax.set_xlabel("Non-embedding parameters")
        ax.legend(fontsize=8)
    axes[0].set_title("a: rate of converting entropy into accuracy")
    axes[0].set_ylabel("a")
    axes[1].set_title("b: offset (the ceiling at H = 0 is b − a)")
    axes[1].set_ylabel("b")
    note = band_note(replicates).replace("Lines are means", "Markers are means").replace(
        "bands are ±1 standard error over the seeds", "error bars ±1 standard error over them; small points are the seeds")
    plotting.caption(fig, caption + note)
    return plotting.save(fig, stem)


# ---- Section 3: covariance drives the entropy change ----------------------------------------


def fig08_covariance(
    metrics_by_run: dict[str, pd.DataFrame], *, labels: dict[str, str] | None = None, stem, caption: str = "",
    replicates: dict[str, list[pd.DataFrame]] | None = None,
) -> tuple[Path, Path]:
    """Figure 8: the bandit covariance tracks the entropy change (left) and is smaller on hard prompts
    (middle); Table 1's token covariance over the same steps (right).

    Left: the paper's covariance, the bandit covariance of Eq. 8–9
    (``bandit_cov``: per prompt over its responses, averaged over the batch),
    and −ΔH on twin axes with a shared zero; row t's covariance is drawn
    beside −(H[t+1] − H[t]), the change its update causes (Theorem 1), with
    their Pearson r from ``analysis.covariance_dynamics``. Middle: the bandit
    covariance of the prompts whose accuracy is 1/8, 4/8 and 7/8 (a 5-step
    rolling mean over faint raw points; a group is missing on steps without
    such a prompt), with the one-sided Wilcoxon test of
    ``analysis.covariance_by_difficulty``. Right: the batch-level token
    covariance of Eq. 10 (``cov_all``, Table 1's "All") beside −ΔH, so both
    quantities are shown. Draws the first run only; with several ``replicates``,
    the mean over its seeds in a ±1 standard-error band, and each test per seed.
    """
    plotting.style()
    runs = _runs(
        metrics_by_run, "fig08", ("step", "entropy", metric_columns.BANDIT_COV, *DIFFICULTY, metric_columns.TOKEN_COV)
    )
    run = runs[0]
    if len(runs) > 1:
        warnings.warn(f"fig08 draws one run: using {run!r}, ignoring {runs[1:]}", stacklevel=2)
    frames = [f.sort_values("step").assign(neg_dH=lambda f: analysis.entropy_decrease(f))
              for f in (replicates or {}).get(run) or [metrics_by_run[run]]]  # fmt: skip
    try:
        dynamics = [analysis.covariance_dynamics(f, metric_columns.BANDIT_COV) for f in frames]
    except ValueError as err:
        raise ValueError(f"fig08: run {run!r}: {err}") from err
    try:
        token = [analysis.covariance_dynamics(f, metric_columns.TOKEN_COV) for f in frames]
    except ValueError:
        token = None
    by_difficulty = [analysis.covariance_by_difficulty(f) for f in frames]

    def tests(stats: list[dict] | None) -> str:
        if not stats:
            return "too few steps for a correlation"
        if len(stats) == 1:
            return f"Pearson r = {stats[0]['pearson_r']:.2f}\np = {stats[0]['p_value']:.2g}, {stats[0]['n_steps']} steps"
        return (f"Pearson r = {_mean_sd([t['pearson_r'] for t in stats])}\nover {len(stats)} seeds; "
                f"largest p = {max(t['p_value'] for t in stats):.2g}")  # fmt: skip

    deep = sns.color_palette("deep")
    fig, (ax_c, ax_d, ax_t) = plt.subplots(1, 3, figsize=(14.0, 3.9), layout="constrained")
    for ax, column, color, name, stats in ((ax_c, metric_columns.BANDIT_COV, deep[0], "bandit Cov (Eq. 8–9)", dynamics),
                                           (ax_t, metric_columns.TOKEN_COV, deep[4], "token Cov (Eq. 10)", token)):  # fmt: skip
        ax_h = ax.twinx()
        ax_h.grid(False)
        seed_line(ax, frames, column, color, lw=1.4)
        seed_line(ax_h, frames, "neg_dH", deep[3], lw=1.2, alpha=0.85)
        ax.axhline(0, color="0.5", lw=0.8)
        plotting.align_zero(ax, ax_h)
        ax.legend(handles=[Line2D([], [], color=color, lw=1.4, label=f"{name}, left"),
                           Line2D([], [], color=deep[3], lw=1.2, label="−ΔH = H(t) − H(t+1), right")],
                  loc="upper center", fontsize=8)  # fmt: skip
        plotting.box(ax, tests(stats), y=0.03)
        ax.set_xlabel("Training step")
        ax_h.set_ylabel("−ΔH (nats)")
    ax_c.set_title(f"Bandit covariance and entropy change: {plotting.label(labels, run)}", fontsize=9)
    ax_c.set_ylabel("Bandit covariance, Eq. 8–9 (per prompt, batch mean)")
    ax_t.set_title("Token covariance (Table 1's all-token mean) and entropy change", fontsize=9)
    ax_t.set_ylabel("Token covariance, Eq. 10 (batch mean)")

    for col, color in zip(DIFFICULTY, (deep[3], deep[1], deep[2])):
        for f in frames:
            ax_d.plot(f["step"], f[col], color=color, lw=0, marker=".", ms=3, alpha=0.35)
        mean = pd.concat([f[["step", col]] for f in frames]).groupby("step")[col].mean()
        ax_d.plot(mean.index, mean.rolling(5, min_periods=1).mean(), color=color, lw=1.6, label=DIFFICULTY[col])
    ax_d.axhline(0, color="0.5", lw=0.8)
    ps = [d["hard_below_easy_p"] for d in by_difficulty]
    if len(ps) == 1:
        text = (f"0.125 < 0.875: Wilcoxon p = {ps[0]:.2g}\n{by_difficulty[0]['n_paired_steps']} steps with both"
                if np.isfinite(ps[0]) else "0.125 < 0.875: too few steps with both groups")  # fmt: skip
    else:
        text = "0.125 < 0.875: Wilcoxon p by seed\n" + ", ".join(f"{p:.2g}" if np.isfinite(p) else "n/a" for p in ps)
    plotting.box(ax_d, text, y=0.03)
    ax_d.set_title("Bandit covariance by prompt accuracy (5-step rolling mean)", fontsize=9)
    ax_d.set_xlabel("Training step")
    ax_d.set_ylabel("Bandit covariance, Eq. 8–9 (group mean)")
    ax_d.legend(loc="upper right", fontsize=8)
    note = band_note(replicates if len(frames) > 1 else None).replace(
        "bands are ±1 standard error over the seeds.", "bands are ±1 standard error over the seeds; the middle panel's points are every seed's, its lines the seeds' mean.")
    plotting.caption(fig, caption + note)
    return plotting.save(fig, stem)


# ---- Section 4: entropy treatments -----------------------------------------------------------


def fig09_entropy_loss(
    metrics_by_run: dict[str, pd.DataFrame], *, labels: dict[str, str] | None = None, stem, caption: str = "",
    replicates: dict[str, list[pd.DataFrame]] | None = None,
) -> tuple[Path, Path]:
    """Figure 9: entropy loss at several coefficients: entropy and validation accuracy over training."""
    return _step_curves(metrics_by_run, labels, stem, caption, "fig09", ("entropy", "val_acc"),
                        "Entropy loss", replicates)  # fmt: skip


def fig10_reference_kl(
    metrics_by_run: dict[str, pd.DataFrame], *, labels: dict[str, str] | None = None, stem, caption: str = "",
    replicates: dict[str, list[pd.DataFrame]] | None = None,
) -> tuple[Path, Path]:
    """Figure 10: KL penalty to the reference model: entropy and validation accuracy over training."""
    return _step_curves(metrics_by_run, labels, stem, caption, "fig10", ("entropy", "val_acc"),
                        "Reference-model KL penalty", replicates)  # fmt: skip


def fig11_covariance_methods(
    metrics_by_run: dict[str, pd.DataFrame], *, labels: dict[str, str] | None = None, stem, caption: str = "",
    replicates: dict[str, list[pd.DataFrame]] | None = None,
) -> tuple[Path, Path]:
    """Figure 11: GRPO, Clip-higher, Clip-Cov and KL-Cov: entropy, response length and accuracy over training."""
    return _step_curves(metrics_by_run, labels, stem, caption, "fig11", ("entropy", "response_length", "val_acc"),
                        "Covariance-based entropy control against GRPO and Clip-higher", replicates)  # fmt: skip


def fig12_entropy_accuracy(
    metrics_by_run: dict[str, pd.DataFrame], *, labels: dict[str, str] | None = None, stem, caption: str = "",
    replicates: dict[str, list[pd.DataFrame]] | None = None,
) -> tuple[Path, Path]:
    """Figure 12: entropy-preserving methods (Clip-Cov, KL-Cov) versus GRPO: entropy, response length, accuracy."""
    return _step_curves(metrics_by_run, labels, stem, caption, "fig12", ("entropy", "response_length", "val_acc"),
                        "Entropy-preserving methods against GRPO", replicates)  # fmt: skip


def fig13_entropy_control(
    metrics_by_run: dict[str, pd.DataFrame],
    *,
    labels: dict[str, str] | None = None,
    specs: dict[str, dict],
    stem,
    caption: str = "",
    replicates: dict[str, list[pd.DataFrame]] | None = None,
) -> tuple[Path, Path]:
    """Figure 13: the entropy level is set by Clip-Cov's clip ratio (left) and KL-Cov's KL coefficient (right).

    Runs are sorted into panels by ``specs[run]["loss"]["loss_mode"]``; darker
    lines have a larger setting. Vanilla-loss runs are the GRPO baseline, grey
    in both panels. Each panel's title gives the mean roughness of its runs' entropy
    (``analysis.entropy_stability``), since the paper finds KL-Cov stabler. A run with
    several ``replicates`` is their mean in a ±1 s.e. band; roughness is averaged over seeds too.
    """
    plotting.style()
    runs = _runs(metrics_by_run, "fig13")
    modes = {}
    for run in runs:
        try:
            modes[run] = specs[run]["loss"]["loss_mode"]
        except (KeyError, TypeError) as err:
            raise ValueError(f"fig13: no loss_mode in the spec of run {run!r}") from err
    panels = {"clip_cov": ("Clip-Cov", "clip_cov_ratio", "clip ratio", "crest"),
              "kl_cov": ("KL-Cov", "ppo_kl_coef", "KL coef", "flare")}  # fmt: skip
    if not any(mode in panels for mode in modes.values()):
        raise ValueError(f"fig13: no run uses loss_mode clip_cov or kl_cov (got {sorted(set(modes.values()))})")
    skipped = [run for run, mode in modes.items() if mode not in (*panels, "vanilla")]
    if skipped:
        warnings.warn(f"fig13: not drawing runs of other loss modes: {skipped}", stacklevel=2)
    baselines = [run for run in runs if modes[run] == "vanilla"]
    seeds = {run: (replicates or {}).get(run) or [metrics_by_run[run]] for run in runs}

    fig, axes = plt.subplots(1, 2, figsize=(10.0, 3.8), layout="constrained", sharey=True)
    for ax, (mode, (title, key, name, cmap)) in zip(axes, panels.items()):
        for i, run in enumerate(baselines):
            label = "GRPO" if len(baselines) == 1 else f"GRPO ({plotting.label(labels, run)})"
            seed_line(ax, seeds[run], "entropy", "0.55", lw=1.4, ls=("-", "--", ":", "-.")[i % 4], label=label)
        treated = sorted((run for run in runs if modes[run] == mode), key=lambda r: specs[r]["loss"][key])
        for run, color in plotting.palette(treated, cmap).items():
            seed_line(ax, seeds[run], "entropy", color, lw=1.5, label=f"{name} = {specs[run]['loss'][key]:g}")
        if treated:
            roughness = np.mean([analysis.entropy_stability(f) for run in treated for f in seeds[run]])
            ax.set_title(f"{title}\nentropy roughness, 2nd half (std of step changes): {roughness:.2g}", fontsize=9)
        else:
            ax.set_title(f"{title}\nno {title} runs", fontsize=9)
        ax.set_xlabel("Training step")
        ax.legend(loc="upper right", fontsize=8)
    axes[0].set_ylabel("Policy entropy (nats)")
    plotting.caption(fig, caption + band_note(replicates))
    return plotting.save(fig, stem)


# ---- Appendices B–D: more fits ----------------------------------------------------------------


def appB_more_fits(
    metrics_by_run: dict[str, pd.DataFrame],
    *,
    labels: dict[str, str] | None = None,
    stem,
    caption: str = "",
    replicates: dict[str, list[pd.DataFrame]] | None = None,
) -> tuple[Path, Path]:
    """Appendix B: further runs fitted with R = −a·exp(H) + b, drawn as Figure 3."""
    return _fit_grid(metrics_by_run, labels, stem, caption, "appB", "More fits of R = −a·exp(H) + b", replicates)


def appC_training_data(
    metrics_by_run: dict[str, pd.DataFrame],
    *,
    labels: dict[str, str] | None = None,
    stem,
    caption: str = "",
    replicates: dict[str, list[pd.DataFrame]] | None = None,
) -> tuple[Path, Path]:
    """Appendix C: fits of R = −a·exp(H) + b for runs trained on different data sets, drawn as Figure 3."""
    return _fit_grid(metrics_by_run, labels, stem, caption, "appC",
                     "Training on different data sets: fits of R = −a·exp(H) + b", replicates)  # fmt: skip


def appD_instruct_models(
    metrics_by_run: dict[str, pd.DataFrame],
    *,
    labels: dict[str, str] | None = None,
    stem,
    caption: str = "",
    replicates: dict[str, list[pd.DataFrame]] | None = None,
) -> tuple[Path, Path]:
    """Appendix D: fits of R = −a·exp(H) + b for instruct models, drawn as Figure 3."""
    return _fit_grid(metrics_by_run, labels, stem, caption, "appD", "Instruct models: fits of R = −a·exp(H) + b", replicates)
