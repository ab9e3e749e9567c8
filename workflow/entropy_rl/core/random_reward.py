"""The random-reward control (issue 42): a reward that ignores the answer.

Clipping alone lowers policy entropy under rewards that carry no information (arXiv 2509.26114), and
random rewards were reported to lift Qwen2.5-Math-7B on MATH-500 (arXiv 2506.10947). A run whose
treatment sets ``reward: random`` (its ``loss.reward``, as a treatment's settings land in ``loss``:
``core.run.Run.random_reward``) is rewarded 1 or 0 with probability 1/2 each, whatever it answers, and is otherwise the
GRPO run it is matched with. Its validation is still graded by the real grader: that is what is measured.

Seeding. A draw is the first 8 bytes of SHA-256 over the run's seed and the response's identity, read
as a number in [0, 1) and compared with 1/2: a rerun, or a run resumed from a checkpoint, draws the same
rewards, and no generator state has to be saved. The identity is what each trainer can name:

* mini scale (``rollout_rewards``): the step, the generation batch of that step, the prompt's row in
  the training set and the response's index in its group, so every response of a run draws afresh;
* paper scale (``compute_score``, loaded by verl): verl 0.9.1 hands a reward function neither the step
  nor the response's index in its group, only the row (``data_source``, ``extra_info.index``) and the
  text, so the draw is keyed on those. An exact repeat of a response to the same prompt draws the same
  reward again; at that scale's lengths (about 1,500 tokens sampled at temperature 1) repeats are rare.

This module is loaded only by random-reward runs (paper.reward_launch), so the code stamp of every
other training job is unchanged by it.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

# The probability of a reward of 1 (Shao et al.'s random reward at gamma = 0.5).
P_ONE = 0.5


def uniform(seed: int, *identity) -> float:
    """A number in [0, 1) fixed by ``seed`` and ``identity`` (JSON-encodable parts), the same in every process."""
    digest = hashlib.sha256(json.dumps([int(seed), *identity]).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def bernoulli(seed: int, *identity) -> float:
    """1.0 with probability ``P_ONE``, else 0.0, fixed by ``seed`` and the response's ``identity``."""
    return 1.0 if uniform(seed, *identity) < P_ONE else 0.0


def rollout_rewards(seed: int, step: int, draw: int, prompt_rows, n: int) -> np.ndarray:
    """The mini trainer's rewards for ``n`` responses to each prompt (rows of the training set), stored
    grouped as the trainer stores them: one fresh draw per (step, generation batch, prompt, response)."""
    return np.asarray(
        [bernoulli(seed, "mini", step, draw, int(row), j) for row in prompt_rows for j in range(n)], dtype=np.float32
    )


def compute_score(
    data_source, solution_str, ground_truth, extra_info=None, *, seed: int, random_sources, code: str = "", **kwargs
) -> float:
    """verl's reward-function signature, its settings bound by ``reward_kwargs`` (paper.reward_launch): rows of
    the ``random_sources`` (the run's training parts) draw their reward; every other row, the validation
    benchmarks' among them, is graded by ``core.reward``. ``code`` (the behaviour hash of this module) is not
    read: it is in the command so that a change of this code changes the run's checkpoint fingerprint."""
    if data_source not in set(random_sources):
        # Imported here: the workflow's planning reads is_random from this module and must not load math-verify.
        from . import reward

        return reward.compute_score(data_source, solution_str, ground_truth, extra_info, **kwargs)
    return bernoulli(seed, "verl", str(data_source), int((extra_info or {}).get("index", -1)), solution_str)
