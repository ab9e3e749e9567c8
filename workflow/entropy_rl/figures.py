"""Figures of the paper, drawn from per-run metrics tables.

Every figure function takes already-loaded data (run id → metrics DataFrame,
and run id → display label), an output path stem and a caption, and writes
``<stem>.pdf`` and ``<stem>.png``. Adding a figure means writing one function
that builds a matplotlib figure, calls ``_caption`` and ``save``.
"""

from __future__ import annotations

import math
import textwrap
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from . import analysis  # noqa: E402

DPI = 150
MARKS = ((1 / 12, "1/12"), (1 / 3, "1/3"))  # fractions of training quoted in the paper (Section 2.3)


def _style() -> None:
    """One look for all figures, set before each figure so callers cannot leave stale rcParams."""
    sns.set_theme(style="whitegrid", context="paper")


def _label(labels: dict[str, str] | None, run: str) -> str:
    return (labels or {}).get(run, run)


def _palette(runs) -> dict[str, tuple]:
    """Fixed colour per run so the same run looks the same in every panel."""
    runs = list(runs)
    return dict(zip(runs, sns.color_palette("tab10", n_colors=max(len(runs), 1))))


def _caption(fig, caption: str | None) -> None:
    """Caption as small wrapped text under the axes; ``save`` keeps it in the tight bounding box."""
    if not caption:
        return
    width = max(40, int(fig.get_figwidth() * 16))
    fig.text(0.5, -0.01, textwrap.fill(caption, width), ha="center", va="top", fontsize=8, wrap=False)


def save(fig, stem) -> tuple[Path, Path]:
    """Write ``<stem>.pdf`` and ``<stem>.png`` and close the figure (figures are never reused)."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    pdf, png = Path(f"{stem}.pdf"), Path(f"{stem}.png")
    try:
        fig.savefig(pdf, bbox_inches="tight")
        fig.savefig(png, dpi=DPI, bbox_inches="tight")
    finally:
        plt.close(fig)
    return pdf, png


def fig02_cumulative_shares(metrics_by_run: dict[str, pd.DataFrame], stem, caption: str = "") -> tuple[Path, Path]:
    """Figure 2: entropy is consumed and performance gained mostly early in training.

    Thin lines are single runs (validation steps only); thick lines pool all
    runs (``analysis.pooled_shares``: total change so far over total change),
    which stays meaningful when a run barely moves. The view is clipped to
    −25%..150% so a run with a near-zero total change cannot flatten the rest.
    """
    _style()
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
        label = f"{name} (pooled over {len(metrics_by_run)} runs)" if len(metrics_by_run) > 1 else name
        ax.plot(pooled["step_frac"], 100 * pooled[col], color=color, lw=2.2, marker="o", ms=3, label=label)

    for i, (frac, name) in enumerate(MARKS):
        h_share, r_share = analysis.share_at(pooled, frac)
        ax.axvline(frac, color="0.35", ls="--", lw=1)
        ax.annotate(
            f"{name} of training\nentropy {100 * h_share:.0f}%\nperformance {100 * r_share:.0f}%",
            xy=(frac, 0.05 + 0.22 * i), xycoords=("data", "axes fraction"), xytext=(5, 0), textcoords="offset points",
            fontsize=8, va="bottom", bbox=dict(boxstyle="round,pad=0.3", fc="white", ec="0.7", alpha=0.9),
        )  # fmt: skip
    low, high = ax.get_ylim()
    ax.set_ylim(max(low, -25), min(high, 150))
    ax.set_xlim(0, 1)
    ax.set_xlabel("Fraction of training steps")
    ax.set_ylabel("Cumulative share of total change (%)")
    ax.legend(loc="lower right")
    _caption(fig, caption)
    return save(fig, stem)


def fig03_fitted_curves(
    metrics_by_run: dict[str, pd.DataFrame], labels: dict[str, str], stem, caption: str = ""
) -> tuple[Path, Path]:
    """Figure 3: validation accuracy against entropy follows R = −a·exp(H) + b in each run.

    Colour encodes the training step on one scale shared by all panels. A run
    whose fit fails (fewer than 3 validation points, constant entropy) keeps its
    scatter and says why in its text box.
    """
    _style()
    runs = list(metrics_by_run)
    if not runs:
        raise ValueError("fig03: no runs given")
    ncols = min(4, len(runs))
    nrows = math.ceil(len(runs) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 2.9 * nrows), layout="constrained", squeeze=False)
    points = {run: analysis.validation_points(metrics_by_run[run]) for run in runs}
    steps = np.concatenate([p["step"].to_numpy() for p in points.values()])
    norm = plt.Normalize(vmin=float(steps.min()) if steps.size else 0.0, vmax=float(steps.max()) if steps.size else 1.0)
    scatter = None
    for ax, run in zip(axes.flat, runs):
        pts = points[run]
        scatter = ax.scatter(pts["entropy"], 100 * pts["R"], c=pts["step"], cmap="viridis", norm=norm,
                             s=22, edgecolor="0.2", linewidth=0.3, zorder=3)  # fmt: skip
        try:
            fit = analysis.fit_entropy_law(pts["entropy"], pts["R"])
        except ValueError as err:
            text = textwrap.fill(f"no fit: {err}", 30)
        else:
            lo, hi = pts["entropy"].min(), pts["entropy"].max()
            pad = 0.03 * (hi - lo)
            H = np.linspace(lo - pad, hi + pad, 200)
            ax.plot(H, 100 * analysis.entropy_law(H, fit["a"], fit["b"]), color="crimson", lw=1.6, zorder=2)
            text = f"a = {fit['a']:.3f}\nb = {fit['b']:.3f}\n$R^2$ = {fit['r2']:.3f}"
        ax.text(0.97, 0.97, text, transform=ax.transAxes, ha="right", va="top", fontsize=8,
                bbox=dict(boxstyle="round,pad=0.3", fc="white", ec="0.7", alpha=0.9))  # fmt: skip
        ax.set_title(_label(labels, run), fontsize=9)
        ax.set_xlabel("Policy entropy (nats)")
        ax.set_ylabel("Validation accuracy (%)")
    for ax in axes.flat[len(runs):]:
        ax.set_visible(False)
    if scatter is not None:
        fig.colorbar(scatter, ax=axes.ravel().tolist(), label="Training step", shrink=0.9 if nrows > 1 else 1.0)
    _caption(fig, caption)
    return save(fig, stem)


def fig12_entropy_accuracy(
    metrics_by_run: dict[str, pd.DataFrame], labels: dict[str, str], stem, caption: str = ""
) -> tuple[Path, Path]:
    """Figure 12: entropy-preserving methods (Clip-Cov, KL-Cov) versus GRPO over training.

    Entropy is drawn at every step; accuracy only at validation steps, joined
    by lines, since nothing is measured in between.
    """
    _style()
    colors = _palette(metrics_by_run)
    fig, (ax_h, ax_r) = plt.subplots(1, 2, figsize=(9.0, 3.6), layout="constrained")
    for run, metrics in metrics_by_run.items():
        m = metrics.sort_values("step")
        ax_h.plot(m["step"], m["entropy"], color=colors[run], lw=1.4, label=_label(labels, run))
        pts = analysis.validation_points(m)
        ax_r.plot(pts["step"], 100 * pts["R"], color=colors[run], lw=1.4, marker="o", ms=3)
    ax_h.set_title("Policy entropy")
    ax_h.set_xlabel("Training step")
    ax_h.set_ylabel("Entropy (nats)")
    ax_r.set_title("Validation accuracy")
    ax_r.set_xlabel("Training step")
    ax_r.set_ylabel("Accuracy (%)")
    fig.legend(*ax_h.get_legend_handles_labels(), loc="outside upper center", ncol=min(len(metrics_by_run), 4),
               frameon=False)  # fmt: skip
    _caption(fig, caption)
    return save(fig, stem)
