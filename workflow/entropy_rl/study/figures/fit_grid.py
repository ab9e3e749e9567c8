"""One panel per run, validation accuracy against entropy with the law R = -a exp(H) + b fitted (Eq. 6):
Figures 3 and 4 and the appendices' fits draw this grid under their own titles."""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from .. import analysis, plotting
from ..inputs import Inputs
from .shared import band_note, checked_runs, law_curve


def fit_grid(d: Inputs, stem, name: str, title: str) -> tuple[Path, Path]:
    """One panel per run: validation accuracy against entropy, coloured by step, with the Eq. 6 fit.

    Colour encodes the training step on one scale shared by all panels. A run
    whose fit fails (fewer than 3 validation points, constant entropy) keeps its
    scatter and says why in its text box. A run with several seeds: every
    seed's points, each seed's own fit, and a, b and R² as mean ± s.d. over seeds.
    """
    plotting.style()
    runs = checked_runs(d, name, ("step", "entropy", "val_acc"))
    fig, axes = plotting.grid(len(runs))
    seeds = {run: [analysis.validation_points(f) for f in d.metrics[run]] for run in runs}
    steps = np.concatenate([p["step"].to_numpy() for pts in seeds.values() for p in pts])
    norm = plt.Normalize(vmin=float(steps.min()) if steps.size else 0.0, vmax=float(steps.max()) if steps.size else 1.0)
    scatter = None
    for ax, run in zip(axes.flat, runs):
        scatter = fit_panel(ax, seeds[run], norm)
        ax.set_title(plotting.label(d.labels, run), fontsize=9)
        ax.set_xlabel("Policy entropy (nats)")
        ax.set_ylabel("Validation accuracy (%)")
    if scatter is not None:
        fig.colorbar(scatter, ax=axes.ravel().tolist(), label="Training step", shrink=0.9 if axes.shape[0] > 1 else 1.0)
    fig.suptitle(title)
    note = band_note(
        d.metrics, "Each panel draws", ", each with its own fit; its box gives a, b and R² as mean ± s.d. over them."
    )
    plotting.caption(fig, d.caption + note)
    return plotting.save(fig, stem)


def fit_panel(ax, seeds: list, norm):
    """One run's panel: each seed's points and fit, and the box of coefficients; returns the last scatter."""
    fits, errors, one = [], [], len(seeds) == 1
    for pts in seeds:
        scatter = ax.scatter(
            pts["entropy"],
            100 * pts["R"],
            c=pts["step"],
            cmap="viridis",
            norm=norm,
            s=22 if one else 12,
            edgecolor="0.2",
            linewidth=0.3,
            zorder=3,
        )
        try:
            fit = analysis.fit_entropy_law(pts["entropy"], pts["R"])
        except ValueError as err:
            errors.append(str(err))
            continue
        lo, hi = pts["entropy"].min(), pts["entropy"].max()
        pad = 0.03 * (hi - lo)
        law_curve(ax, fit, lo - pad, hi + pad, color="crimson", lw=1.6 if one else 1.0, zorder=2)
        fits.append(fit)
    plotting.box(ax, _coefficients(fits, errors, len(seeds)))
    return scatter


def _coefficients(fits: list[dict], errors: list[str], seeds: int) -> str:
    """A panel's box: a, b and R² of its fit (mean ± s.d. over seeds), or why there is none."""
    if errors:
        return textwrap.fill(f"no fit{'' if seeds == 1 else f' on {len(errors)} of {seeds} seeds'}: {errors[0]}", 30)
    if len(fits) == 1:
        return f"a = {fits[0]['a']:.3f}\nb = {fits[0]['b']:.3f}\n$R^2$ = {fits[0]['r2']:.3f}"
    lines = [
        f"{label} = {np.mean([f[k] for f in fits]):.3f} ± {np.std([f[k] for f in fits], ddof=1):.2g}"
        for k, label in (("a", "a"), ("b", "b"), ("r2", "$R^2$"))
    ]
    return "\n".join(lines) + f"\n({len(fits)} seeds)"
