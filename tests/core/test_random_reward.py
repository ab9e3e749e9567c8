"""The random-reward control's reward (core.random_reward): independent of the answer, fixed by the seed."""

import numpy as np
import pytest
import yaml
from entropy_rl.core import random_reward, reward, run
from support import ROOT

RIGHT, WRONG = "So the answer is \\boxed{7}.", "So the answer is \\boxed{8}."
TRAIN, BENCH = "eurus2-math-train", "math500"


def score(text, source=TRAIN, seed=0, index=3):
    return random_reward.compute_score(
        source, text, "7", {"index": index, "style": "rule"}, seed=seed, random_sources=[TRAIN]
    )


def test_a_training_row_draws_without_ever_grading_the_answer(monkeypatch):
    monkeypatch.setattr(reward, "compute_score", lambda *a, **k: pytest.fail("the random reward graded an answer"))
    right = [score(f"Step {k}. {RIGHT}") for k in range(400)]
    wrong = [score(f"Step {k}. {WRONG}") for k in range(400)]
    assert set(right) == set(wrong) == {0.0, 1.0}
    # Both near 1/2 (binomial s.e. 0.025 at 400), and a right answer fares no better than a wrong one.
    assert abs(np.mean(right) - 0.5) < 0.1 and abs(np.mean(wrong) - 0.5) < 0.1
    assert abs(np.corrcoef(right, wrong)[0, 1]) < 0.2


def test_the_same_response_to_the_same_row_under_the_same_seed_draws_the_same():
    draws = [score(f"{k} {RIGHT}") for k in range(64)]
    assert draws == [score(f"{k} {RIGHT}") for k in range(64)]  # a rerun, or a resumed run
    assert draws != [score(f"{k} {RIGHT}", seed=1) for k in range(64)]  # another replicate
    assert draws != [score(f"{k} {RIGHT}", index=4) for k in range(64)]  # another prompt


def test_validation_rows_are_graded_by_the_real_grader():
    assert (score(RIGHT, source=BENCH), score(WRONG, source=BENCH)) == (1.0, 0.0)


def test_the_mini_draw_is_fresh_for_each_step_batch_prompt_and_response_and_fixed_by_them():
    rows = np.array([5, 11, 2])
    a = random_reward.rollout_rewards(0, step=3, draw=1, prompt_rows=rows, n=8)
    assert a.shape == (24,) and a.dtype == np.float32 and set(a) == {0.0, 1.0}
    np.testing.assert_array_equal(a, random_reward.rollout_rewards(0, 3, 1, rows, 8))
    others = [random_reward.rollout_rewards(*args, rows, 8) for args in ((1, 3, 1), (0, 4, 1), (0, 3, 2))]
    assert all(not np.array_equal(a, b) for b in others)  # seed, step, generation batch
    # A prompt's draws are its own, wherever it sits in the batch (a group of 8 is stored contiguously).
    np.testing.assert_array_equal(random_reward.rollout_rewards(0, 3, 1, rows[::-1], 8)[:8], a[16:])
    many = random_reward.rollout_rewards(0, 0, 1, np.arange(500), 8)
    assert abs(many.mean() - random_reward.P_ONE) < 0.03  # s.e. 0.008 at 4,000 draws


def test_a_run_selects_the_random_reward_by_its_loss_setting_only():
    grpo = run.resolve(yaml.safe_load((ROOT / "config.yaml").read_text())["mini"], "qwen2-m-grpo")
    assert not grpo.random_reward
    assert grpo.but(loss={"reward": run.RANDOM_REWARD}).random_reward
