"""One measurement made on every seed of a study, combined: the spread across seeds is the noise.

In the miniature a base model is itself a random outcome of pre-training, so a configured run's
replicates (each with its own pre-trained model and RL seed) are independent draws of the whole
pipeline. A claim about a difference holds when the difference is larger than seed-to-seed variation:
each of a test's ``effects`` is tested against zero with Student's t over the seeds (its mean over
its standard error, k - 1 degrees of freedom). Replicate k of a treatment and of its baseline share
base model k, so an effect that is a difference is paired by seed.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.stats

from .registry import Measured


def t_quantile(level: float, seeds: int) -> float:
    return float(scipy.stats.t.ppf(level, seeds - 1))


# What a claim says of an effect with mean ``m`` and standard error ``se`` over ``k`` seeds: directional
# claims at the one-sided 5% level, claims of no difference when 0 lies within the two-sided 95% interval.
RELATIONS = {
    "above": lambda m, se, k: m > t_quantile(0.95, k) * se,
    "below": lambda m, se, k: m < -t_quantile(0.95, k) * se,
    "not_above": lambda m, se, k: m <= t_quantile(0.975, k) * se,
    "not_below": lambda m, se, k: m >= -t_quantile(0.975, k) * se,
    "within": lambda m, se, k: abs(m) <= t_quantile(0.975, k) * se,
}


def mean_se(values) -> tuple[float, float]:
    """Mean and standard error over seeds (sample standard deviation over the square root of the count)."""
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(len(v)))


def combine(per_seed: list[Measured]) -> Measured:
    """The measurements of one claim on each seed (replicate 0 first), as one.

    A number: its mean over seeds, with the 95% t-interval of that mean. A test: decided on its effects,
    each by the claim's relation (``RELATIONS``); an effect that a seed could not define (NaN, as an
    undefined ratio) fails the test. A test that names no effects cannot be combined: ValueError.
    """
    k = len(per_seed)
    first = per_seed[0]
    if k < 2:
        return first
    if first.holds is None:
        values = [float(m.value) for m in per_seed]
        mean, se = mean_se(values)
        half = t_quantile(0.975, k) * se
        return Measured(mean, f"{first.how}; mean over {k} seeds ({', '.join(f'{v:.3g}' for v in values)})",
                        interval=(mean - half, mean + half))  # fmt: skip
    if first.effects is None:
        raise ValueError(f"a test made per seed names no effects to combine: {first.how}")
    relation = first.relation
    if relation not in RELATIONS or any(m.relation != relation or m.effects.keys() != first.effects.keys() for m in per_seed):
        raise ValueError(f"seeds of one test disagree on its effects or relation: {first.how}")
    parts, holds = [], True
    for name in first.effects:
        values = [m.effects[name] for m in per_seed]
        if not all(math.isfinite(v) for v in values):
            parts.append(f"{name}: undefined on a seed ({', '.join(f'{v:.3g}' for v in values)})")
            holds = False
            continue
        mean, se = mean_se(values)
        ok = RELATIONS[relation](mean, se, k)
        parts.append(f"{name} {mean:+.3g} ± {t_quantile(0.975, k) * se:.2g} ({', '.join(f'{v:+.3g}' for v in values)})")
        holds &= ok
    return Measured(
        "; ".join(parts),
        f"{first.how}; per seed, then each effect's mean over {k} seeds with its 95% t half-width (seed values), "
        f"the claim holding when every effect is {relation.replace('_', ' ')} zero beyond seed-to-seed variation",
        holds=bool(holds),
        effects={name: mean_se([m.effects[name] for m in per_seed])[0] for name in first.effects},
        relation=relation,
    )
