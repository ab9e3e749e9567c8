"""Grading accepts equivalent answers, rejects wrong ones; pass@k is the unbiased estimator."""

import itertools
import math

import pandas as pd
import pytest

from entropy_rl import evaluate, grading


@pytest.mark.parametrize(
    "gold, response",
    [("-4", " \\boxed{-4}"), ("138/583", "\\boxed{\\frac{138}{583}}"), ("5", "\\boxed{5.0}"),
     ("0.5", "\\boxed{\\frac{1}{2}}"), ("12", "so 7+5=12, \\boxed{12}")],
)  # fmt: skip
def test_equivalent_answers_pass(gold, response):
    assert grading.is_correct(gold, response)


@pytest.mark.parametrize("gold, response", [("5", "\\boxed{6}"), ("12", "\\boxed{1 2}"), ("5", ""), ("3", "\\boxed{-3}")])
def test_wrong_answers_fail(gold, response):
    assert not grading.is_correct(gold, response)


def test_pathological_answer_scores_zero_quickly():
    assert grading.score(["1"], ["\\boxed{" + "{" * 3000 + "}"]) == [0.0]


def brute_pass_at_k(n, c, k):
    draws = list(itertools.combinations(range(n), k))
    return sum(any(i < c for i in d) for d in draws) / len(draws)


@pytest.mark.parametrize("n, c, k", [(8, 0, 1), (8, 3, 1), (8, 3, 4), (8, 7, 2), (6, 6, 3), (5, 1, 5)])
def test_pass_at_k_unbiased(n, c, k):
    assert evaluate.pass_at_k(n, c, k) == pytest.approx(brute_pass_at_k(n, c, k))
    if k == 1:
        assert evaluate.pass_at_k(n, c, k) == pytest.approx(c / n)


def test_summarize_avg_and_pass():
    samples = pd.DataFrame({"problem_id": [0] * 4 + [1] * 4, "correct": [1, 0, 0, 0] + [1, 1, 1, 1]})
    out = evaluate.summarize(samples, [1, 2, 8])
    assert out["avg_at_n"] == pytest.approx(5 / 8)
    assert out["pass_at_2"] == pytest.approx((0.5 + 1.0) / 2)
    assert "pass_at_8" not in out and out["n_samples"] == 4
    assert math.isclose(out["pass_at_1"], out["avg_at_n"])
