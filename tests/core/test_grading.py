"""Grading accepts equivalent answers, rejects wrong ones; pass@k is the unbiased estimator."""

import itertools
import math
import random
import time

import math_verify
import pandas as pd
import pytest
from entropy_rl.core import grading, pass_rates


@pytest.mark.parametrize(
    "gold, response",
    [
        ("-4", " \\boxed{-4}"),
        ("138/583", "\\boxed{\\frac{138}{583}}"),
        ("5", "\\boxed{5.0}"),
        ("0.5", "\\boxed{\\frac{1}{2}}"),
        ("12", "so 7+5=12, \\boxed{12}"),
    ],
)
def test_equivalent_answers_pass(gold, response):
    assert grading.is_correct(gold, response)


@pytest.mark.parametrize(
    "gold, response", [("5", "\\boxed{6}"), ("12", "\\boxed{1 2}"), ("5", ""), ("3", "\\boxed{-3}")]
)
def test_wrong_answers_fail(gold, response):
    assert not grading.is_correct(gold, response)


def mini_responses():
    """Responses shaped like the mini models' (worked sums, direct answers, truncations) and variants
    that must not take the integer shortcut wrongly: signs, zeros, spaces, extra numbers and LaTeX."""
    rng = random.Random(0)
    for _ in range(300):
        terms = [rng.randint(0, 9) for _ in range(rng.randint(2, 5))]
        gold = str(sum(terms) if rng.random() < 0.5 else terms[0] - sum(terms[1:]))
        said = str(int(gold) + rng.choice([0, 0, -2, -1, 1, 2]))
        work = ", ".join(f"{a}+{b}={a + b}" for a, b in zip(terms, terms[1:]))
        for response in (f" {work}. \\boxed{{{said}}}", f" \\boxed{{{said}}}", f"{work}. \\boxed{{{said}", f"{work}."):
            yield gold, response
            for variant in (
                response + " 7",
                "7 " + response,
                response.replace("{", "{0", 1),
                response + "}",
                response.replace("{", "{ ", 1),
                response.replace("{", "{+", 1),
                response + " $8$",
                response + " \\boxed{3}",
                f"\\({said}\\) " + response,
            ):
                yield gold, variant


def test_the_integer_shortcut_agrees_with_math_verify():
    """``is_correct`` and ``extract_answer`` settle a lone boxed integer without math-verify; they must
    give math-verify's own verdict and answer string (checked too on all 69,870 distinct graded
    responses of a mini study), and leave everything else to it."""
    pairs = list(mini_responses())
    shortcut = [(g, r) for g, r in pairs if grading._boxed_integer(r) is not None]
    assert 0.2 * len(pairs) < len(shortcut) < len(pairs)  # both paths are exercised
    for gold, response in shortcut:
        assert grading.is_correct(gold, response) == grading._grade_here(gold, response), (gold, response)
        parsed = math_verify.parse(response)
        assert grading.extract_answer(response) == (str(parsed[-1]) if parsed else ""), response


def test_pathological_answer_scores_zero_quickly():
    assert grading.score(["1"], ["\\boxed{" + "{" * 3000 + "}"]) == [0.0]


def brute_pass_at_k(n, c, k):
    draws = list(itertools.combinations(range(n), k))
    return sum(any(i < c for i in d) for d in draws) / len(draws)


@pytest.mark.parametrize("n, c, k", [(8, 0, 1), (8, 3, 1), (8, 3, 4), (8, 7, 2), (6, 6, 3), (5, 1, 5)])
def test_pass_at_k_unbiased(n, c, k):
    assert pass_rates.pass_at_k(n, c, k) == pytest.approx(brute_pass_at_k(n, c, k))
    if k == 1:
        assert pass_rates.pass_at_k(n, c, k) == pytest.approx(c / n)


def test_summarize_avg_and_pass():
    samples = pd.DataFrame({"problem_id": [0] * 4 + [1] * 4, "correct": [1, 0, 0, 0] + [1, 1, 1, 1]})
    out = pass_rates.summarize(samples, [1, 2, 8])
    assert out["avg_at_n"] == pytest.approx(5 / 8)
    assert out["pass_at_2"] == pytest.approx((0.5 + 1.0) / 2)
    assert "pass_at_8" not in out and out["n_samples"] == 4
    assert math.isclose(out["pass_at_1"], out["avg_at_n"])


# ---- grading that cannot stall (math-verify's signal timeouts need the main thread) -----------

FLOOD = "\\boxed{" + "+".join(f"x_{{{i}}}^{{{i}}}" for i in range(20000)) + "}"  # ~400 kB of LaTeX
NESTED = "\\boxed{" + "\\frac{1}{" * 300 + "2" + "}" * 300 + "}"


def test_grading_from_threads_is_right_not_silently_zero():
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(grading.is_correct.__wrapped__, ["5", "5"], ["so \\boxed{5}", "\\boxed{6}"])) == [
            True,
            False,
        ]
        assert list(pool.map(grading.extract_answer, ["so \\boxed{5}"])) == ["5"]


@pytest.mark.parametrize("answer", [FLOOD, NESTED], ids=["flood", "nested"])
def test_pathological_answers_score_zero_within_the_limit(answer):
    from concurrent.futures import ThreadPoolExecutor

    started = time.monotonic()
    assert grading.is_correct.__wrapped__("5", answer) is False
    in_main = time.monotonic() - started
    with ThreadPoolExecutor(1) as pool:
        started = time.monotonic()
        assert pool.submit(grading.is_correct.__wrapped__, "5", answer).result() is False
    in_thread = time.monotonic() - started
    # parse and verify are each capped at TIMEOUT_S; the helper adds its start-up
    assert in_main < 2 * grading.TIMEOUT_S + 2, in_main
    assert in_thread < grading.WALL_S, in_thread


def test_a_helper_that_overruns_is_killed_and_replaced():
    started = time.monotonic()
    assert grading._in_worker(time.sleep, 60, limit_s=2, default="zero") == "zero"
    assert time.monotonic() - started < 10
    assert grading._in_worker(grading.extract_answer, "\\boxed{7}", limit_s=30, default="") == "7"
