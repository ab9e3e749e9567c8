"""One measurement made on every seed of a study, combined: the spread across seeds is the noise.

A configured run's replicates are independent draws of its RL (each under its own RL seed), from one base model
per model (``replicate_base_models: false``, the mini default, as the paper's runs of one model start from the same
weights) or each from its own pre-trained base model, when the spread holds pre-training's randomness too
(core.spec.with_shared_base_models). Each of a test's ``effects`` becomes its mean over the seeds with the standard error of
that mean (k − 1 degrees of freedom), and the claim is judged on those (``relations.decide``): the spread across seeds
is the noise a difference must stand out from. Replicate k of a treatment and of its baseline share replicate k's base
model, so an effect that is a difference is paired by seed.
"""

from __future__ import annotations

import math

import numpy as np

from .registry import Measured
from .relations import Effect, as_effect
from .stats import t_quantile


def mean_se(values) -> tuple[float, float]:
    """Mean and standard error over seeds (sample standard deviation over the square root of the count)."""
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(len(v)))


def over_seeds(values) -> Effect:
    """An effect's values on each seed, as one effect: their mean, its standard error, k − 1 degrees of freedom.
    A seed that could not define it (NaN) leaves it undefined."""
    mean, se = mean_se(values)
    return Effect(mean, se if math.isfinite(mean) else None, len(values) - 1, len(values))


def combine(per_seed: list[Measured]) -> Measured:
    """The measurements of one claim on each seed (replicate 0 first), as one.

    A number: its mean over seeds, with the 95% t-interval of that mean and, as its ``spread``, the mean's
    standard error over the seeds. A test: each effect's mean over the
    seeds with its standard error, to be judged by the claim's relation. A test that names no effects cannot be
    combined: ValueError.
    """
    k = len(per_seed)
    first = per_seed[0]
    if k < 2:
        return first
    if first.effects is None and first.holds is None:
        values = [float(m.value) for m in per_seed]
        mean, se = mean_se(values)
        half = t_quantile(0.975, k - 1) * se
        return Measured(
            mean,
            f"{first.how}; mean over {k} seeds ({', '.join(f'{v:.3g}' for v in values)})",
            interval=(mean - half, mean + half),
            spread=over_seeds(values),
        )
    if first.effects is None:
        raise ValueError(f"a test made per seed names no effects to combine: {first.how}")
    if any(m.effects is None or m.effects.keys() != first.effects.keys() for m in per_seed):
        raise ValueError(f"seeds of one test disagree on its effects: {first.how}")
    parts, effects = [], {}
    for name in first.effects:
        values = [as_effect(m.effects[name]).estimate for m in per_seed]
        effects[name] = over_seeds(values)
        parts.append(f"{name} {effects[name].estimate:+.3g} ({', '.join(f'{v:+.3g}' for v in values)})")
    return Measured(
        "; ".join(parts),
        f"{first.how}; per seed, then each effect's mean over {k} seeds (seed values), its standard error the "
        "seed-to-seed spread",
        holds=None if any(m.holds is None for m in per_seed) else all(m.holds for m in per_seed),
        effects=effects,
    )
