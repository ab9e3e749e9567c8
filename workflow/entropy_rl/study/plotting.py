"""The plotting kit every figure of the study uses: one look, one palette, one way to caption and save.

``figures`` (the paper's figures) and ``power_study`` (the power-sampling comparison) draw with
matplotlib and seaborn on the non-interactive backend set here; each figure function calls
``style`` first, then builds its figure, then ``caption`` and ``save``.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import seaborn as sns

from ..core import atomic

DPI = 150


def style() -> None:
    """One look for all figures, set before each figure so callers cannot leave stale rcParams."""
    sns.set_theme(style="whitegrid", context="paper")


def palette(keys, name: str = "tab10") -> dict:
    """A fixed colour per key from the seaborn palette ``name``, in the order of ``keys``, so the same
    series (run, method, training set) looks the same in every panel."""
    keys = list(keys)
    return dict(zip(keys, sns.color_palette(name, n_colors=max(len(keys), 1))))


def label(labels: dict[str, str] | None, key: str) -> str:
    """The display label of ``key``, or the key itself."""
    return (labels or {}).get(key, key)


def caption(fig, text: str | None) -> None:
    """Caption as small wrapped text under the axes; ``save`` keeps it in the tight bounding box."""
    if not text:
        return
    width = max(40, int(fig.get_figwidth() * 16))
    fig.text(0.5, -0.01, textwrap.fill(text, width), ha="center", va="top", fontsize=8, wrap=False)


def save(fig, stem) -> tuple[Path, Path]:
    """Write ``<stem>.pdf`` and ``<stem>.png`` and close the figure (figures are never reused)."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    pdf, png = Path(f"{stem}.pdf"), Path(f"{stem}.png")
    try:
        for path, kwargs in ((pdf, {}), (png, {"dpi": DPI})):
            with atomic.output(path) as tmp:
                fig.savefig(tmp, bbox_inches="tight", **kwargs)
    finally:
        plt.close(fig)
    return pdf, png


def grid(n: int, width: float = 3.2, height: float = 2.9):
    """A figure with ``n`` panels, at most four to a row; unused panels are hidden."""
    ncols = min(4, n)
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), layout="constrained", squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, axes


def box(ax, text: str, x: float = 0.97, y: float = 0.97) -> None:
    """A small framed note inside the axes; (x, y) is the corner nearest the axes edge."""
    ax.text(
        x,
        y,
        text,
        transform=ax.transAxes,
        ha="right" if x > 0.5 else "left",
        va="top" if y > 0.5 else "bottom",
        fontsize=8,
        bbox={"boxstyle": "round,pad=0.3", "fc": "white", "ec": "0.7", "alpha": 0.9},
        zorder=5,
    )


def align_zero(ax1, ax2) -> None:
    """Put y = 0 at the same height on two twin axes, so curves of different units compare in sign."""
    lims = [(min(lo, 0.0), max(hi, 0.0)) for lo, hi in (ax1.get_ylim(), ax2.get_ylim())]
    below = max(-lo / (hi - lo) for lo, hi in lims)  # share of the height under zero
    if not 0.0 < below < 1.0:
        return
    for ax, (_, hi) in zip((ax1, ax2), lims):
        ax.set_ylim(-below / (1 - below) * hi, hi)


def count_label(value: float, _pos=None) -> str:
    """A count as the paper names model sizes: 30k, 1.5M, 7B."""
    for scale, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


def log_count_xaxis(ax) -> None:
    """A log x axis of counts (parameters) ticked at 1, 2, 3 and 5 per decade and labelled by ``count_label``:
    over a decade or two, matplotlib's default labels its minor ticks in crowded scientific notation."""
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(mticker.LogLocator(subs=(1, 2, 3, 5)))
    ax.xaxis.set_minor_locator(mticker.NullLocator())
    ax.xaxis.set_major_formatter(mticker.FuncFormatter(count_label))
