"""Measurements of Section 3 and Table 1: the covariance that drives entropy change, over steps, by
prompt difficulty and by token."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...core import metric_columns
from .. import analysis
from .data import NotComparable, Study
from .registry import Measured, measurement
from .relations import Effect
from .stats import effective_n, effective_n_correlation


def _quantity(column: str) -> str:
    return {
        metric_columns.BANDIT_COV: "bandit covariance (Eq. 8-9)",
        metric_columns.TOKEN_COV: "token covariance (Eq. 10, all tokens)",
    }.get(column, column)


def correlation_effect(x, y) -> tuple[Effect, float]:
    """The Pearson correlation of two step series on Fisher's z scale, its standard error 1/√(n_eff − 3) with
    n_eff the pairs the autocorrelated series are worth (stats.effective_n_correlation), and n_eff."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    r = float(np.corrcoef(x, y)[0, 1]) if len(x) > 2 and np.std(x) > 0 and np.std(y) > 0 else math.nan
    n_eff = effective_n_correlation(x, y)
    z = math.atanh(max(min(r, 1 - 1e-12), -1 + 1e-12)) if math.isfinite(r) else math.nan
    return Effect(z, 1 / math.sqrt(n_eff - 3) if n_eff > 3 else None), n_eff


def _dynamics_series(metrics, column: str) -> tuple[np.ndarray, np.ndarray]:
    """The covariance at step t and −(H[t+1] − H[t]), over the steps with both (analysis.covariance_dynamics')."""
    m = metrics.sort_values("step")
    both = pd.DataFrame({"cov": m[column], "neg_dH": analysis.entropy_decrease(m)}).dropna()
    return both["cov"].to_numpy(), both["neg_dH"].to_numpy()


@measurement
def covariance_tracks_entropy(study: Study, artifact: str, column: str = metric_columns.BANDIT_COV) -> Measured:
    """Positive, significant Pearson correlation over steps between the covariance (by default the
    paper's Figure 8 quantity, the bandit covariance) at step t and −(H[t+1] − H[t])."""
    run = study.runs(artifact)[0]
    d = analysis.covariance_dynamics(study.metrics(run), column)
    effect, n_eff = correlation_effect(*_dynamics_series(study.metrics(run), column))
    return Measured(
        f"r = {d['pearson_r']:.2f} (p = {d['p_value']:.3g} as if independent, {d['n_steps']} steps worth {n_eff:.1f} independent pairs)",
        f"analysis.covariance_dynamics on {run}: Pearson correlation of {column}, the {_quantity(column)}, at step t with -(H[t+1] - H[t]), "
        "Fisher's z with the steps' autocorrelation counted (effective pairs)",
        holds=bool(d["pearson_r"] > 0 and d["p_value"] < 0.05),
        effects={"Fisher z of r": effect},
    )


def share_effect(positive, share: float) -> Effect:
    """The share of steps where a series is positive, minus ``share``: its standard error binomial over the
    steps' effective count (stats.effective_n of the 0/1 series), floored so 0% and 100% keep some."""
    flags = np.asarray(positive, dtype=float)
    n_eff = max(effective_n(flags), 1.0)
    p = float(flags.mean())
    return Effect(p - share, math.sqrt(max(p * (1 - p), 1 / n_eff) / n_eff))


@measurement
def covariance_positive(study: Study, artifact: str, share: float, column: str = metric_columns.BANDIT_COV) -> Measured:
    run = study.runs(artifact)[0]
    d = analysis.covariance_dynamics(study.metrics(run), column)
    cov = study.metrics(run).sort_values("step")[column].dropna().to_numpy()
    return Measured(
        f"{100 * d['positive_share']:.0f}% of steps (mean {d['mean_cov']:.3g})",
        f"share of the steps of {run} with {column} > 0, the {_quantity(column)}, its noise over the steps' effective count",
        holds=bool(d["positive_share"] >= share),
        effects={f"share of steps - {share:g}": share_effect(cov > 0, share)},
    )


def series_mean(d) -> Effect:
    """The mean of a step series, its standard error over the steps' effective count (stats.effective_n): steps
    of one run are autocorrelated, so they are worth fewer independent points than their number."""
    d = np.asarray(d, dtype=float)
    n = len(d)
    n_eff = min(max(effective_n(d), 2.0), n)
    # The sample variance of autocorrelated steps runs low: E[s²] = σ²·n(1 − 1/n_eff)/(n − 1); undone here.
    var = float(d.var(ddof=1)) * (n - 1) / (n - n / n_eff) if n_eff > 1 else math.nan
    return Effect(float(d.mean()), math.sqrt(var / n_eff), n_eff - 1)


def _paired_steps(metrics) -> Effect:
    """The easiest prompts' bandit covariance minus the hardest's, paired over the steps with both, its standard
    error over those steps' effective count (the Wilcoxon test beside it assumes no normality; this gives the
    interval)."""
    paired = metrics.sort_values("step")[[analysis.HARDEST, analysis.EASIEST]].dropna()
    return series_mean((paired[analysis.EASIEST] - paired[analysis.HARDEST]).to_numpy())


@measurement
def covariance_by_difficulty(study: Study, artifact: str) -> Measured:
    """The bandit covariance of the prompts with accuracy 1/8 lies below that of the prompts with
    accuracy 7/8: one-sided Wilcoxon signed-rank test over the steps with both, p < 0.05."""
    run = study.runs(artifact)[0]
    d = analysis.covariance_by_difficulty(study.metrics(run))
    if d["n_paired_steps"] < 5:
        raise NotComparable(
            f"{run} has {d['n_paired_steps']} steps with prompts of both accuracy 1/8 and 7/8; the test needs 5"
        )
    means = ", ".join(f"acc {metric_columns.BANDIT_ACC[k]:g}: {v:.3g}" for k, v in d["mean"].items())
    p = d["hard_below_easy_p"]
    return Measured(
        f"mean bandit covariance {means}; one-sided Wilcoxon p = {p:.3g}"
        if np.isfinite(p)
        else f"mean bandit covariance {means}; no test: the two groups never differ",
        f"analysis.covariance_by_difficulty on {run}: {analysis.HARDEST} against {analysis.EASIEST} over the {d['n_paired_steps']} steps with both",
        holds=bool(p < 0.05),
        effects={"easiest - hardest (paired over steps)": _paired_steps(study.metrics(run))},
    )


@measurement
def covariance_group(study: Study, artifact: str, group: str) -> Measured:
    """One cell of Table 1: the token covariance (Eq. 10) of one group at training step 1."""
    run = study.runs(artifact)[0]
    dist = analysis.covariance_distribution(study.metrics(run))
    return Measured(
        float(dist[group]),
        f"{group} of {run} at training step 1 (its first step with a measured covariance, row {dist.name})",
    )


@measurement
def covariance_outliers(study: Study, artifact: str, paper_top: float, paper_all: float, within: float) -> Measured:
    """Table 1's outliers: the top 0.02% of tokens over the all-token mean at training step 1, at least
    the paper's ratio (``paper_top`` / ``paper_all``) divided by ``within``. The ratio is undefined, and
    the claim not reproduced, when the all-token mean is not positive."""
    run = study.runs(artifact)[0]
    dist = analysis.covariance_distribution(study.metrics(run))
    top, mean = float(dist["cov_top0.02"]), float(dist["cov_all"])
    paper = paper_top / paper_all
    needed = paper / within
    how = (
        f"Table 1 columns of {run} at training step 1 (row {dist.name}); paper {paper_top:g} / {paper_all:g} = {paper:.0f}x, "
        f"reproduced at {needed:.0f}x or more (within a factor {within:g} of the paper's ratio)"
    )
    effect = "log10(ratio / needed)"
    if not mean > 0:
        return Measured(
            f"undefined: the all-token mean is {mean:.3g} (top 0.02% {top:.3g}); paper {paper:.0f}x",
            how,
            holds=False,
            effects={effect: math.nan},
        )
    ratio = top / mean
    return Measured(
        f"top 0.02% / all = {top:.3g} / {mean:.3g} = {ratio:.0f}x; paper {paper:.0f}x",
        how,
        holds=bool(ratio >= needed),
        effects={effect: math.log10(ratio / needed) if ratio > 0 else math.nan},
    )
