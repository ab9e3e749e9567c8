"""Seeds a new study would need to settle an inconclusive claim: exact power of the test the audit will run.

The observed spread is not the truth: from k seeds its 95% interval spans a factor of several, so the plan is a
range, from the observed standard deviation to its one-sided 80% upper confidence limit (χ² on k − 1 degrees of
freedom). The power is that of the audit's own test at n seeds: Student's t on n − 1 degrees of freedom, its
power from the noncentral t; two one-sided tests (TOST) by their joint power, integrated over the sample
spread. Where the claim has a margin, reproducing it is planned at no difference (θ = 0, the usual planning of
equivalence and non-inferiority studies); elsewhere the plan is at the observed effect, and a side the observed
effect lies away from cannot be planned ("–").

An effect whose noise is not over seeds (problems, validation samples) gives no seed-to-seed spread: its
within-run noise stands in for one, a lower bound, so its plan reads "at least".

Seeds added to this study and judged again are a second look at the same data, which spends α again: the plan
is for a new, confirmatory study judged afresh.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.stats

from .effects import LEVEL, Effect, VarianceRatio

POWER = 0.80
MAX_SEEDS = 10_000
UCL = 0.80  # the one-sided confidence of the spread's upper limit
_GRID = (np.arange(200) + 0.5) / 200  # quantiles of the sample spread's distribution, for the TOST's integral

Condition = tuple[int, float]


@dataclass(frozen=True)
class Plan:
    reproduce: tuple[int, int] | None  # (seeds at the observed spread, at its upper confidence limit)
    contradict: tuple[int, int] | None
    at_least: bool = False  # the spread is within-run noise standing in for the seeds'
    instead: str = ""  # why seeds are not planned, and what would narrow the interval instead

    def text(self) -> str:
        if self.instead:
            return self.instead

        def side(r, what):
            if r is None:
                return f"{what}: not at the observed effect"
            low, high = r
            seeds = f"{low}" if low == high else f"{low}–{high}"
            return f"{what} at {'≥ ' if self.at_least else ''}{seeds} seeds"

        return (
            f"a new study: {side(self.reproduce, 'reproduced')}; {side(self.contradict, 'contradicted')} "
            f"({POWER:.0%} power at one-sided {LEVEL:.0%}, from the observed spread to its {UCL:.0%} upper "
            "confidence limit; seeds added to this study and judged again would spend α again)"
        )


def spreads(effect: Effect) -> tuple[float, float] | None:
    """(sd, its upper confidence limit) of one seed's value of the effect; None without a spread."""
    if effect.se is None or not math.isfinite(effect.se) or not math.isfinite(effect.estimate) or effect.se <= 0:
        return None
    sd = effect.se * math.sqrt(effect.seeds)
    if effect.over_seeds:
        k = effect.seeds - 1
        return sd, sd * math.sqrt(k / scipy.stats.chi2.ppf(1 - UCL, k))
    return sd, sd


def power_one_sided(n: int, distance: float, sd: float, level: float) -> float:
    """Power of the one-sided t-test on the mean of n seeds, at a true distance past the line."""
    return float(scipy.stats.nct.sf(scipy.stats.t.ppf(1 - level, n - 1), n - 1, distance * math.sqrt(n) / sd))


def power_tost(n: int, theta: float, delta: float, sd: float, level: float) -> float:
    """Joint power of the two one-sided tests at ±delta on the mean of n seeds, true difference theta."""
    df = n - 1
    s = sd * np.sqrt(scipy.stats.chi2.ppf(_GRID, df) / df)  # sample spreads, equally likely
    half = scipy.stats.t.ppf(1 - level, df) * s / math.sqrt(n)
    z = sd / math.sqrt(n)
    p = scipy.stats.norm.cdf((delta - half - theta) / z) - scipy.stats.norm.cdf((-delta + half - theta) / z)
    return float(np.clip(p, 0, None).mean())


def smallest_n(power) -> int | None:
    """The fewest seeds (≥ 2) at which ``power(n)`` reaches POWER, by doubling then bisection."""
    lo, hi = 1, 2
    while power(hi) < POWER:
        lo, hi = hi, hi * 2
        if hi > MAX_SEEDS:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if power(mid) >= POWER else (mid, hi)
    return hi


def _range(effect: Effect, power) -> tuple[int, int] | None:
    """Seeds at the observed spread and at its upper limit; power(n, sd)."""
    sds = spreads(effect)
    if sds is None:
        return None
    ns = [smallest_n(lambda n, sd=sd: power(n, sd)) for sd in sds]
    return None if None in ns else (ns[0], ns[1])


def _one(effect: Effect, cond: Condition, margin: float, level: float, at: float | None = None):
    sign, factor = cond
    theta = effect.estimate if at is None else at
    distance = sign * (theta - factor * margin)
    if not math.isfinite(distance) or distance <= 0:
        return None
    if isinstance(effect, VarianceRatio):
        return _variance_ratio(effect, sign, 1 + factor * margin, 1 + theta, level)
    return _range(effect, lambda n, sd: power_one_sided(n, distance, sd, level))


def _variance_ratio(effect: VarianceRatio, sign: int, line: float, truth: float, level: float):
    """Seeds at which the exact χ² test supports ρ above (sign +1) or below the line, were ρ = ``truth``: each
    seed adds its share of the degrees of freedom (the fits are summed over seeds)."""
    per_seed = effect.dof / max(effect.seeds, 1)

    def power(n):
        d = n * per_seed
        if sign > 0:
            return float(scipy.stats.chi2.sf(line * scipy.stats.chi2.ppf(1 - level, d) / truth, d))
        return float(scipy.stats.chi2.cdf(line * scipy.stats.chi2.ppf(level, d) / truth, d))

    n = smallest_n(power)
    return None if n is None else (n, n)


def _tost(effect: Effect, margin: float, level: float):
    return _range(effect, lambda n, sd: power_tost(n, 0.0, margin, sd, level))


def _most(ranges):
    return None if not ranges or None in ranges else (max(r[0] for r in ranges), max(r[1] for r in ranges))


def _fewest(ranges):
    found = [r for r in ranges if r is not None]
    return (min(r[0] for r in found), min(r[1] for r in found)) if found else None


def plan(
    effects: dict[str, Effect],
    reproduce: tuple[Condition, ...],
    contradict: tuple[Condition, ...],
    union_to_reproduce: bool,
    margin: float,
    level: float = LEVEL,
) -> Plan:
    """The seeds each side of a claim would need in a new study (relations.REPRODUCE / CONTRADICT conditions)."""
    es = list(effects.values())
    other = sorted({e.spread_over for e in es if e.spread_over != "seeds"})
    if other:
        units = " and ".join(other)
        return Plan(None, None, instead=f"more {units}, not more seeds: the spread is over the {units}")
    if union_to_reproduce:  # differs: one effect beyond the margin (Bonferroni), or every effect within it
        each = level / (len(es) * len(reproduce))
        rep = _fewest([_one(e, c, margin, each) for e in es for c in reproduce])
        con = _most([_tost(e, margin, level) for e in es])
    else:
        if margin and len(reproduce) == 2:  # within: TOST planned at no difference
            rep = _most([_tost(e, margin, level) for e in es])
        elif margin:  # non-inferiority planned at no difference
            rep = _most([_one(e, c, margin, level, at=0.0) for e in es for c in reproduce])
        else:
            rep = _most([_one(e, c, margin, level) for e in es for c in reproduce])
        each = level / (len(es) * len(contradict))
        con = _fewest([_one(e, c, margin, each) for e in es for c in contradict])
    return Plan(rep, con, at_least=not all(e.over_seeds or isinstance(e, VarianceRatio) for e in es))
