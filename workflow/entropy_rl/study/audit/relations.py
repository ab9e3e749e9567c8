"""What a claim says of its effects, and the three verdicts the data can give it, each with a p-value.

An effect is a signed quantity a claim is about (a difference, a slope, a share minus its threshold), with
its standard error where the data give one. A claim's *relation* says what it asserts of each effect θ:

* ``above`` / ``below``: θ > 0 / θ < 0 (a directional claim);
* ``not_below`` / ``not_above``: θ > −δ / θ < δ, non-inferiority against the claim's margin δ;
* ``within``: −δ < θ < δ, equivalence (two one-sided tests, TOST; Schuirmann 1987) against the margin δ;
* ``differs``: |θ| > δ on at least one effect, superiority by the margin; its opposite is every effect
  within ±δ. A difference the margin calls none (inside ±δ) never reproduces a claim of a difference.

Each part of a relation is a one-sided condition "θ > c" or "θ < c", tested at the one-sided level α = 5%
(Student's t on the effect's degrees of freedom, or the effect's own exact distribution: ``VarianceRatio``).

* **reproduced** when the data support the claim: every condition of every effect (an intersection–union
  test, valid at α with no correction; Berger & Hsu 1996), or for ``differs`` one of its 2k one-sided
  conditions, Bonferroni-corrected over them. Its p-value ``p_reproduce`` is the largest of the conditions'
  (intersection–union) or k·2 times the smallest (union).
* **contradicted** when they support the opposite of one condition for one effect, Bonferroni-corrected over
  the claim's opposite conditions (``p_contradict``: their count times the smallest p-value); for ``differs``
  when every effect is shown within the margin (intersection–union of TOSTs).
* **inconclusive** otherwise.

So a claim whose truth lies exactly on its line is wrongly reproduced with probability at most α and wrongly
contradicted with probability at most α: decisive by chance at most 2α in all (``benchmarks/audit_calibration.py``
measures both). An effect that cannot be judged (no spread, undefined, or a difference of two trained runs read
on one seed: ``Effect.between_runs``) has p-value 1 both ways.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .effects import LEVEL, Effect, VarianceRatio, as_effect, variance_ratio  # noqa: F401  (re-exported)
from .planning import Plan
from .planning import plan as make_plan

REPRODUCED, CONTRADICTED, INCONCLUSIVE = "reproduced", "contradicted", "inconclusive"

# The relations that need a margin, and those that take none.
MARGINED = ("not_below", "not_above", "within", "differs")
RELATIONS = ("above", "below", *MARGINED)


# A condition: (sign, threshold in units of the margin): sign +1 reads θ > c, −1 reads θ < c; c = factor · δ.
Condition = tuple[int, float]
REPRODUCE: dict[str, tuple[Condition, ...]] = {
    "above": ((+1, 0.0),),
    "below": ((-1, 0.0),),
    "not_below": ((+1, -1.0),),
    "not_above": ((-1, 1.0),),
    "within": ((+1, -1.0), (-1, 1.0)),
    "differs": ((+1, 1.0), (-1, -1.0)),  # beyond the margin, either side: one effect suffices
}
CONTRADICT: dict[str, tuple[Condition, ...]] = {
    "above": ((-1, 0.0),),
    "below": ((+1, 0.0),),
    "not_below": ((-1, -1.0),),
    "not_above": ((+1, 1.0),),
    "within": ((+1, 1.0), (-1, -1.0)),
    "differs": ((+1, -1.0), (-1, 1.0)),  # equivalence: both, for every effect
}
UNION_TO_REPRODUCE = ("differs",)  # the others reproduce on every condition and contradict on any


def p_value(effect: Effect, cond: Condition, margin: float) -> float:
    sign, factor = cond
    return effect.p_above(factor * margin) if sign > 0 else effect.p_below(factor * margin)


def claim_p_values(effects: dict[str, Effect], relation: str, margin: float) -> tuple[float, float]:
    """(p_reproduce, p_contradict) of a claim: the intersection–union test's largest p-value on the side that
    needs every condition, the Bonferroni-corrected smallest on the side any one condition decides."""
    rep = [p_value(e, c, margin) for e in effects.values() for c in REPRODUCE[relation]]
    con = [p_value(e, c, margin) for e in effects.values() for c in CONTRADICT[relation]]
    if relation in UNION_TO_REPRODUCE:
        return min(1.0, len(rep) * min(rep)), max(con)
    return max(rep), min(1.0, len(con) * min(con))


@dataclass
class Decision:
    verdict: str
    detail: str  # each effect with its interval, against what the claim says of it
    p_reproduce: float = 1.0
    p_contradict: float = 1.0
    plan: Plan | None = None  # planning.Plan for an inconclusive claim: the seeds a new study would need
    unjudged: str = ""  # why an effect could not be judged (no spread, one seed of a between-run difference)

    @property
    def seeds_to_reproduce(self) -> int | None:
        return self.plan.reproduce[1] if self.plan and self.plan.reproduce else None

    @property
    def seeds_to_contradict(self) -> int | None:
        return self.plan.contradict[1] if self.plan and self.plan.contradict else None

    def needs(self) -> str:
        """What each side would need, in words, for an inconclusive claim."""
        if self.unjudged:
            return f"at least 2 seeds (replicates): {self.unjudged}"
        return self.plan.text() if self.plan else ""


def describe(relation: str, margin: float | None) -> str:
    if relation in ("above", "below"):
        return f"{relation} 0"
    return {
        "not_below": f"above −{margin:g}",
        "not_above": f"below {margin:g}",
        "within": f"within ±{margin:g}",
        "differs": f"beyond ±{margin:g} (every effect within ±{margin:g} contradicts)",
    }[relation]


def decide(
    effects: dict[str, float | Effect],
    relation: str,
    margin: float | None = None,
    level: float = LEVEL,
    plan: bool = True,
) -> Decision:
    """The three-way verdict on a claim's effects, with its two p-values; for an inconclusive claim (``plan``),
    the seeds a new study would need (planning.plan)."""
    if relation not in RELATIONS:
        raise ValueError(f"unknown relation {relation!r}; known are {RELATIONS}")
    if (relation in MARGINED) != (margin is not None):
        raise ValueError(f"relation {relation!r} {'needs' if relation in MARGINED else 'takes no'} margin")
    effects = {name: as_effect(v) for name, v in effects.items()}
    if not effects:
        raise ValueError("a claim judged on its effects names none")
    m = margin or 0.0
    p_rep, p_con = claim_p_values(effects, relation, m)
    detail = (
        "; ".join(f"{name} {e.text(level)}" for name, e in effects.items())
        + f", claimed {describe(relation, margin)} [brackets: one-sided {1 - level:.0%} bounds]; "
        f"p(reproduce) {p_rep:.2g}, p(contradict) {p_con:.2g}"
    )
    if p_con < level:
        return Decision(CONTRADICTED, detail, p_rep, p_con)
    if p_rep < level:
        return Decision(REPRODUCED, detail, p_rep, p_con)
    unjudged = next((e.why_not for e in effects.values() if not e.judgeable and math.isfinite(e.estimate)), "")
    conditions = (REPRODUCE[relation], CONTRADICT[relation], relation in UNION_TO_REPRODUCE)
    return Decision(
        INCONCLUSIVE, detail, p_rep, p_con, make_plan(effects, *conditions, m, level) if plan else None, unjudged
    )
