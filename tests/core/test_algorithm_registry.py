"""The algorithm registry (core.algorithms): one entry an algorithm, read by every place that names or runs one."""

import pytest
import torch
from entropy_rl.core import algorithms
from entropy_rl.core.run import Prime
from entropy_rl.mini import algorithms as mini_algorithms
from entropy_rl.study.audit import data as audit_data
from support import a_run, scale_config
from verl.trainer.config import AlgoConfig
from verl.trainer.ppo import core_algos


def test_a_name_is_registered_once_with_a_known_trainer(monkeypatch):
    monkeypatch.setattr(algorithms, "ALGORITHMS", dict(algorithms.ALGORITHMS))
    with pytest.raises(ValueError, match="registered already"):
        algorithms.register(algorithms.Algorithm("grpo", "GRPO again", "grpo"))
    with pytest.raises(ValueError, match="no trainer"):
        algorithms.register(algorithms.Algorithm("x", "X", "grpo", trainer="trl"))


def test_the_papers_algorithms_and_their_estimators_are_verls():
    assert list(algorithms.ALGORITHMS) == ["grpo", "rloo", "reinforce_plus_plus", "prime"]
    for algorithm in algorithms.ALGORITHMS.values():
        assert core_algos.get_adv_estimator_fn(algorithm.estimator)
    prime = algorithms.ALGORITHMS["prime"]
    assert (prime.estimator, prime.trainer, prime.process_rewards) == ("rloo", algorithms.PRIME, True)
    assert [a.label for a in algorithms.ALGORITHMS.values()] == ["GRPO", "RLOO", "REINFORCE++", "PRIME"]


def test_the_audit_names_a_method_by_its_label():
    assert audit_data.method(a_run(algorithm="reinforce_plus_plus")) == "REINFORCE++"


def test_prime_settings_stay_with_the_runs_that_train_a_process_reward_model():
    mini = scale_config("mini")
    assert a_run("qwen2-m-prime").prime == Prime(**mini["train"]["prime"]) and a_run("qwen2-m-grpo").prime is None
    assert "prime" not in a_run("qwen2-m-grpo").params()  # so an edit of PRIME's settings reruns no other run


@pytest.mark.parametrize("estimator", ["grpo", "rloo", "reinforce_plus_plus", "opo", "grpo_passk"])
def test_the_mini_trainer_calls_any_outcome_estimator_as_verls_trainer_does(estimator):
    torch.manual_seed(0)
    rewards = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0])
    mask = torch.ones(8, 5, dtype=torch.long)
    mask[1, 3:] = 0
    index = torch.arange(2).repeat_interleave(4).numpy()
    adv = mini_algorithms.compute_advantages(estimator, rewards, mask, index)
    scores = mini_algorithms.token_level_rewards(rewards, mask)
    fn = core_algos.get_adv_estimator_fn(estimator)
    config = AlgoConfig(adv_estimator=estimator, gamma=1.0)
    kwargs = {"index": index, "config": config} if estimator != "reinforce_plus_plus" else {"config": config}
    direct, _ = fn(token_level_rewards=scores, response_mask=mask.float(), **kwargs)
    assert torch.equal(adv, direct)
