"""An effect: a signed quantity a claim is about, with the noise the data give it, and its one-sided p-values.

``Effect`` is judged by Student's t (or the normal) on its standard error; ``VarianceRatio`` by the exact χ²
distribution of a variance over a known noise variance (the law fit's misfit)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import scipy.stats

LEVEL = 0.05  # one-sided, each way


@dataclass(frozen=True)
class Effect:
    """A signed quantity with its standard error: over ``seeds`` seeds (``df`` = seeds − 1), or from the noise
    within one study (problems, validation samples, a fit's residuals; ``df`` as that noise gives it, inf for a
    normal approximation). ``se`` None: a point reading with no spread of its own, which one seed cannot judge.

    ``between_runs``: the effect compares two trained runs (or a trained run with the paper's), and its ``se``
    holds only the noise within them (evaluation, fits), not how a run varies with its RL seed. On one seed such
    an effect is not judged: the interval would leave out the largest source of variation (issue 66, defect 7).
    Over seeds its ``se`` is the seeds' spread and it is judged as any other."""

    estimate: float
    se: float | None = None
    df: float = math.inf
    seeds: int = 1
    between_runs: bool = False
    # What the spread is over: "seeds" (or noise within a run, which seeds average down), or another unit that more
    # seeds do not add (the size trend's sizes): a new study's seeds are then not planned (planning.plan).
    spread_over: str = "seeds"

    @property
    def over_seeds(self) -> bool:
        return self.seeds >= 2 and self.df == self.seeds - 1

    @property
    def judgeable(self) -> bool:
        """A finite estimate with a spread that covers what the claim is about."""
        if self.se is None or not math.isfinite(self.estimate) or not math.isfinite(self.se):
            return False
        return not (self.between_runs and not self.over_seeds)

    @property
    def why_not(self) -> str:
        if not math.isfinite(self.estimate):
            return "undefined"
        if self.between_runs and not self.over_seeds and self.se is not None:
            return "a difference between trained runs read on one seed: its spread leaves out the RL seed's"
        return "one seed reads this effect without noise of its own"

    def _cdf(self, x: float) -> float:
        """Student's t (normal at infinite df) distribution function, called on the distribution rather than on a
        frozen one, which costs ten times as much a call (the calibration harness makes millions)."""
        return float(scipy.stats.t.cdf(x, self.df)) if math.isfinite(self.df) else float(scipy.stats.norm.cdf(x))

    def quantile(self, level: float = LEVEL) -> float:
        """The (1 − level) quantile of the effect's t (or normal) distribution."""
        return (
            float(scipy.stats.t.ppf(1 - level, self.df))
            if math.isfinite(self.df)
            else float(scipy.stats.norm.ppf(1 - level))
        )

    def p_above(self, c: float) -> float:
        """One-sided p-value of "θ > c" (small when the data support it)."""
        if not self.judgeable:
            return 1.0
        if self.se == 0:
            return 0.0 if self.estimate > c else 1.0
        return self._cdf(-(self.estimate - c) / self.se)

    def p_below(self, c: float) -> float:
        """One-sided p-value of "θ < c"."""
        if not self.judgeable:
            return 1.0
        if self.se == 0:
            return 0.0 if self.estimate < c else 1.0
        return self._cdf((self.estimate - c) / self.se)

    def bounds(self, level: float = LEVEL) -> tuple[float, float]:
        """The one-sided (1 − level) lower and upper confidence bounds: together, the (1 − 2·level) interval."""
        if self.se is None or not math.isfinite(self.estimate) or not math.isfinite(self.se):
            return -math.inf, math.inf
        half = self.quantile(level) * self.se
        return self.estimate - half, self.estimate + half

    def text(self, level: float = LEVEL) -> str:
        if self.se is None:
            return f"{self.estimate:+.3g} (no spread)"
        lo, hi = self.bounds(level)
        extra = " (one seed: not judged)" if self.between_runs and not self.over_seeds else ""
        return f"{self.estimate:+.3g} [{lo:+.3g}, {hi:+.3g}]{extra}"


@dataclass(frozen=True)
class VarianceRatio(Effect):
    """ρ − 1, where ρ is a variance over a known noise variance, observed as χ² on ``dof`` degrees of freedom
    (χ²/dof estimates ρ; under ρ the statistic is ρ·χ²_dof). Its p-values and bounds are the exact χ² ones,
    not a normal approximation around the estimate (issue 66, defect 1)."""

    chi2: float = math.nan
    dof: int = 0

    @property
    def judgeable(self) -> bool:
        return self.dof > 0 and math.isfinite(self.chi2)

    def p_above(self, c: float) -> float:
        rho = 1 + c
        if not self.judgeable:
            return 1.0
        return 0.0 if rho <= 0 else float(scipy.stats.chi2.sf(self.chi2 / rho, self.dof))

    def p_below(self, c: float) -> float:
        rho = 1 + c
        if not self.judgeable:
            return 1.0
        return 1.0 if rho <= 0 else float(scipy.stats.chi2.cdf(self.chi2 / rho, self.dof))

    def bounds(self, level: float = LEVEL) -> tuple[float, float]:
        if not self.judgeable:
            return -math.inf, math.inf
        return (
            self.chi2 / scipy.stats.chi2.ppf(1 - level, self.dof) - 1,
            self.chi2 / scipy.stats.chi2.ppf(level, self.dof) - 1,
        )


def variance_ratio(chi2: float, dof: int, seeds: int = 1) -> VarianceRatio:
    return VarianceRatio(chi2 / dof - 1 if dof > 0 else math.nan, 0.0, math.inf, seeds, chi2=chi2, dof=dof)


def as_effect(value: float | Effect) -> Effect:
    return value if isinstance(value, Effect) else Effect(float(value))
