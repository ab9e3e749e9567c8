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
