"""What a claim says of its effects, and the three verdicts the data can give it.

An effect is a signed quantity a claim is about (a difference, a slope, a share minus its threshold), with
its standard error where the data give one. A claim's *relation* says what it asserts of each effect θ:

* ``above`` / ``below``: θ > 0 / θ < 0 (a directional claim);
* ``not_below`` / ``not_above``: θ > −δ / θ < δ, non-inferiority against the claim's margin δ;
* ``within``: −δ < θ < δ, equivalence (two one-sided tests, TOST) against the margin δ;
* ``differs``: θ ≠ 0 on at least one effect, two-sided, its opposite being equivalence within δ.

Each part of a relation is a one-sided condition "θ > c" or "θ < c", supported when the effect's one-sided
95% confidence bound lies past c (Student's t on the effect's degrees of freedom). A claim is

* **reproduced** when the data support every condition of the claim (for ``differs``, one effect's);
* **contradicted** when they support the opposite of one condition for one effect (θ on the far side of
  zero, or of the margin), at the same level;
* **inconclusive** otherwise: the interval straddles the line. The row then says what each side would
  need: the seeds at which a condition holding at the observed effect and spread would be supported with
  80% power (``seeds_needed``).

A claim of no difference or of matching never passes on a wide interval: it needs the interval inside its
margin, and the margin is the ledger's, set before any result (``claims.yaml``, ``margin``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import scipy.stats

REPRODUCED, CONTRADICTED, INCONCLUSIVE = "reproduced", "contradicted", "inconclusive"
LEVEL = 0.05  # one-sided, each way
POWER = 0.80  # of the seeds-needed calculation
MAX_SEEDS = 10_000

# The relations that need a margin, and those that take none.
MARGINED = ("not_below", "not_above", "within", "differs")
RELATIONS = ("above", "below", *MARGINED)


@dataclass(frozen=True)
class Effect:
    """A signed quantity with its standard error: over ``seeds`` seeds (``df`` = seeds − 1), or from the noise
    within one study (problems, validation samples, a fit's residuals; ``df`` as that noise gives it, inf for a
    normal approximation). ``se`` None: a point reading with no spread of its own, which one seed cannot judge."""

    estimate: float
    se: float | None = None
    df: float = math.inf
    seeds: int = 1

    @property
    def over_seeds(self) -> bool:
        return self.seeds >= 2 and self.df == self.seeds - 1

    def quantile(self, level: float = LEVEL) -> float:
        return float(scipy.stats.t.ppf(1 - level, self.df)) if math.isfinite(self.df) else float(scipy.stats.norm.ppf(1 - level))

    def bounds(self, level: float = LEVEL) -> tuple[float, float]:
        """The one-sided (1 − level) lower and upper confidence bounds: together, the (1 − 2·level) interval."""
        if self.se is None or not math.isfinite(self.estimate):
            return -math.inf, math.inf
        half = self.quantile(level) * self.se
        return self.estimate - half, self.estimate + half

    def text(self, level: float = LEVEL) -> str:
        if self.se is None:
            return f"{self.estimate:+.3g} (no spread)"
        lo, hi = self.bounds(level)
        return f"{self.estimate:+.3g} [{lo:+.3g}, {hi:+.3g}]"


def as_effect(value: float | Effect) -> Effect:
    return value if isinstance(value, Effect) else Effect(float(value))


# A condition: (sign, threshold in units of the margin): sign +1 reads θ > c, −1 reads θ < c; c = factor · δ.
Condition = tuple[int, float]
_REPRODUCE: dict[str, tuple[Condition, ...]] = {
    "above": ((+1, 0.0),), "below": ((-1, 0.0),),
    "not_below": ((+1, -1.0),), "not_above": ((-1, 1.0),), "within": ((+1, -1.0), (-1, 1.0)),
    "differs": ((+1, 0.0), (-1, 0.0)),  # either side, each at half the level
}  # fmt: skip
_CONTRADICT: dict[str, tuple[Condition, ...]] = {
    "above": ((-1, 0.0),), "below": ((+1, 0.0),),
    "not_below": ((-1, -1.0),), "not_above": ((+1, 1.0),), "within": ((+1, 1.0), (-1, -1.0)),
    "differs": ((+1, -1.0), (-1, 1.0)),  # equivalence: both
}  # fmt: skip


def supported(effect: Effect, cond: Condition, margin: float, level: float = LEVEL) -> bool:
    sign, factor = cond
    lo, hi = effect.bounds(level)
    c = factor * margin
    return lo > c if sign > 0 else hi < c


def seeds_needed(effect: Effect, cond: Condition, margin: float, level: float = LEVEL) -> int | None:
    """Seeds at which the condition would be supported with 80% power, were the effect's observed value and
    spread the truth; None when the observed effect lies on the wrong side (no number of seeds supports it), or
    when one seed gives no spread to plan with. An effect whose error is not over seeds (problems, validation
    noise) is assumed to shrink as 1/√seeds, with normal quantiles."""
    sign, factor = cond
    distance = sign * (effect.estimate - factor * margin)
    if effect.se is None or not math.isfinite(distance) or distance <= 0:
        return None
    if effect.se == 0:
        return max(effect.seeds, 2)
    if not effect.over_seeds:
        z = scipy.stats.norm.ppf(1 - level) + scipy.stats.norm.ppf(POWER)
        return max(2, math.ceil(effect.seeds * (z * effect.se / distance) ** 2))
    sd = effect.se * math.sqrt(effect.seeds)
    for n in range(2, MAX_SEEDS + 1):
        if (scipy.stats.t.ppf(1 - level, n - 1) + scipy.stats.t.ppf(POWER, n - 1)) * sd / math.sqrt(n) <= distance:
            return n
    return None


@dataclass
class Decision:
    verdict: str
    detail: str  # each effect with its interval, against what the claim says of it
    seeds_to_reproduce: int | None = None  # for an inconclusive claim: seeds that would settle it either way
    seeds_to_contradict: int | None = None
    no_spread: bool = False  # an effect read once, with no noise of its own: seeds give it one

    def needs(self) -> str:
        """What each side would need, in words, for an inconclusive claim."""
        if self.no_spread:
            return "a spread to judge it by: at least 2 seeds (replicates), since one seed reads this effect without noise of its own"

        def side(n, what):
            return f"{what} at {n} seeds" if n is not None else f"{what}: not at the observed effect and spread"

        return (f"{side(self.seeds_to_reproduce, 'reproduced')}; {side(self.seeds_to_contradict, 'contradicted')} "
                f"(80% power, one-sided {LEVEL:.0%})")  # fmt: skip


def describe(relation: str, margin: float | None) -> str:
    if relation in ("above", "below"):
        return f"{relation} 0"
    return {"not_below": f"above −{margin:g}", "not_above": f"below {margin:g}", "within": f"within ±{margin:g}",
            "differs": f"away from 0 (every effect within ±{margin:g} contradicts)"}[relation]  # fmt: skip


def decide(effects: dict[str, float | Effect], relation: str, margin: float | None = None, level: float = LEVEL) -> Decision:
    """The three-way verdict on a claim's effects (every effect must hold; ``differs``: one must, each side at
    level / (2 · effects), and every effect equivalent within the margin contradicts)."""
    if relation not in RELATIONS:
        raise ValueError(f"unknown relation {relation!r}; known are {RELATIONS}")
    if (relation in MARGINED) != (margin is not None):
        raise ValueError(f"relation {relation!r} {'needs' if relation in MARGINED else 'takes no'} margin")
    effects = {name: as_effect(v) for name, v in effects.items()}
    if not effects:
        raise ValueError("a claim judged on its effects names none")
    m = margin or 0.0
    rep, con = _REPRODUCE[relation], _CONTRADICT[relation]
    detail = ("; ".join(f"{name} {e.text(level)}" for name, e in effects.items())
              + f", claimed {describe(relation, margin)} [brackets: one-sided {1 - level:.0%} bounds]")  # fmt: skip
    undefined = [n for n, e in effects.items() if not math.isfinite(e.estimate)]
    no_spread = any(e.se is None and math.isfinite(e.estimate) for e in effects.values())
    if relation == "differs":
        each = level / (2 * len(effects))
        if any(supported(e, c, m, each) for e in effects.values() for c in rep):
            return Decision(REPRODUCED, detail)
        if not undefined and all(all(supported(e, c, m, level) for c in con) for e in effects.values()):
            return Decision(CONTRADICTED, detail)
        need_rep = [n for e in effects.values() for c in rep if (n := seeds_needed(e, c, m, each)) is not None]
        need_con = [[seeds_needed(e, c, m, level) for c in con] for e in effects.values()]
        con_n = None if any(None in ns for ns in need_con) else max(max(ns) for ns in need_con)
        return Decision(INCONCLUSIVE, detail, min(need_rep, default=None), con_n, no_spread)
    if any(supported(e, c, m, level) for e in effects.values() for c in con):
        return Decision(CONTRADICTED, detail)
    if not undefined and all(supported(e, c, m, level) for e in effects.values() for c in rep):
        return Decision(REPRODUCED, detail)
    need_rep = [seeds_needed(e, c, m, level) for e in effects.values() for c in rep]
    need_con = [n for e in effects.values() for c in con if (n := seeds_needed(e, c, m, level)) is not None]
    return Decision(INCONCLUSIVE, detail, None if None in need_rep or undefined else max(need_rep), min(need_con, default=None),
                    no_spread)
