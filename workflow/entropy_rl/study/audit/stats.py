"""Statistics the measurements share: normal and t quantiles, a bootstrap over runs or problems, binomial noise."""

from __future__ import annotations

import math

import numpy as np
import scipy.stats

Z95 = scipy.stats.norm.ppf(0.975)
Z95_ONE_SIDED = scipy.stats.norm.ppf(0.95)


def t_quantile(level: float, df: float) -> float:
    return float(scipy.stats.t.ppf(level, df))


def bootstrap(stat, items: list, n: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% percentile interval of ``stat`` over resamples of ``items`` (runs or problems) with replacement."""
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n):
        pick = [items[i] for i in rng.integers(0, len(items), len(items))]
        try:
            values.append(stat(pick))
        except (ValueError, ZeroDivisionError):
            continue
    values = np.asarray([v for v in values if np.isfinite(v)])
    return float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))


def binomial_se(accuracy_pct: float, n: int) -> float:
    """Standard error (points) of an accuracy measured on ``n`` problems; floored so 0% and 100% keep some."""
    p = accuracy_pct / 100
    return 100 * math.sqrt(max(p * (1 - p), 1e-4) / n)


def lag1(x) -> float:
    """Lag-1 autocorrelation of a series (0 for fewer than 3 points or no variation)."""
    x = np.asarray(x, dtype=float)
    if len(x) < 3 or np.std(x) == 0:
        return 0.0
    d = x - x.mean()
    return float(np.dot(d[:-1], d[1:]) / np.dot(d, d))


def ar1_coefficient(x) -> float:
    """The lag-1 autocorrelation of a series corrected for its downward bias in short series (for an AR(1)
    series E[r] ≈ ρ − (1 + 3ρ)/n, so ρ ≈ (n·r + 1)/(n − 3)), clipped to [0, 0.97]: a negative or tiny r is read
    as no autocorrelation, which never counts the steps as more than they are."""
    n, r = len(x), lag1(x)
    if n < 5 or r <= 0:
        return 0.0
    return float(min(max((n * r + 1) / (n - 3), 0.0), 0.97))


def effective_n(x) -> float:
    """Independent points a series of n autocorrelated steps is worth for its mean, by its lag-1 autocorrelation ρ
    (an AR(1) reading): n(1 − ρ)/(1 + ρ), ρ bias-corrected and raised by half its standard error √((1 − ρ²)/n),
    since a ρ estimated from a short series is itself noisy (benchmarks/audit_calibration.py: at 30 steps the
    bias-corrected ρ alone still gave a one-sided test 5-7% at φ 0.7-0.9, this 3.5-4%)."""
    n, rho = len(x), ar1_coefficient(x)
    if rho > 0:
        rho = min(0.97, rho + 0.5 * math.sqrt((1 - rho**2) / n))
    return n * (1 - rho) / (1 + rho)


def effective_n_correlation(x, y) -> float:
    """Independent pairs a correlation of two autocorrelated series is worth (Bartlett's variance for AR(1)
    series): n(1 − ρxρy)/(1 + ρxρy), ρ their bias-corrected lag-1 autocorrelations."""
    rr = ar1_coefficient(x) * ar1_coefficient(y)
    return len(x) * (1 - rr) / (1 + rr)
