"""Each sampler of p^α held to the exact p^α, on a model small enough to list every answer (tests/power_toy.py).

The distance is the total variation between a sampler's answers and p^α. The Monte Carlo floor is the distance of as
many exact draws, about 0.02 for 1,000. The thresholds below hold each sampler at its settings with room for seed
noise; benchmarks/power_exactness.py draws the distance against the number of samples and the settings.
"""

from __future__ import annotations

import math

import numpy as np
import power_toy as toy
import pytest

N = 1000  # answers per sampler


def test_the_toy_model_lists_every_answer_and_its_p_alpha():
    target = toy.exact(toy.ALPHA)
    assert len(target) == 31 and sum(math.exp(toy.log_prob(y)) for y in target) == pytest.approx(1.0)
    low = toy.exact(toy.ALPHA, per_token=True)
    assert 0.5 * sum(abs(low[y] - target[y]) for y in target) > 0.5  # low temperature is another target here
    assert 0.01 < toy.floor(target, N, np.random.default_rng(0)) < 0.04


@pytest.mark.parametrize(
    "sampler, settings, limit",
    [
        ("mcmc", {"block_size": 2, "n_mcmc": 40}, 0.09),
        ("smc", {"particles": 64, "resample_every": 1, "ess_threshold": 0.5}, 0.06),
        ("sps", {"block_size": 1, "candidates": 64, "rollouts": 8, "horizon": 4}, 0.06),
    ],
)
def test_each_sampler_is_within_its_distance_of_p_alpha(sampler, settings, limit):
    answers, _ = toy.draw(sampler, N, 1, **settings)
    assert toy.tv(answers, toy.exact(toy.ALPHA)) < limit


@pytest.mark.parametrize(
    "sampler, small, large",
    [
        ("mcmc", {"block_size": 2, "n_mcmc": 2}, {"block_size": 2, "n_mcmc": 40}),
        (
            "smc",
            {"particles": 4, "resample_every": 1, "ess_threshold": 0.5},
            {"particles": 64, "resample_every": 1, "ess_threshold": 0.5},
        ),
        (
            "sps",
            {"block_size": 1, "candidates": 4, "rollouts": 2, "horizon": 4},
            {"block_size": 1, "candidates": 64, "rollouts": 8, "horizon": 4},
        ),
    ],
)
def test_more_work_brings_each_sampler_closer(sampler, small, large):
    target = toy.exact(toy.ALPHA)
    assert (
        toy.tv(toy.draw(sampler, N, 2, **large)[0], target) < toy.tv(toy.draw(sampler, N, 2, **small)[0], target) - 0.1
    )


def test_low_temperature_is_exact_for_its_own_target_not_for_p_alpha():
    answers, cost = toy.draw("low-temp", N, 3)
    assert toy.tv(answers, toy.exact(toy.ALPHA, per_token=True)) < 0.06
    assert toy.tv(answers, toy.exact(toy.ALPHA)) > 0.4 and cost == 1.0
