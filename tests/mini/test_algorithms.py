"""The mini trainer's advantage and loss wiring gives the numbers verl itself gives."""

import dataclasses

import numpy as np
import pytest
import torch
from entropy_rl.core.run import Loss
from entropy_rl.mini import algorithms
from support import LOSS
from tensordict import TensorDict
from verl.trainer.config import AlgoConfig
from verl.trainer.ppo import core_algos
from verl.utils import tensordict_utils as tu
from verl.workers.utils.losses import ppo_loss
from verl.workers.utils.padding import no_padding_2_padding

BASE = Loss(**LOSS)  # verl's vanilla PPO loss, as a run carries it


def batch(seed=0, groups=3, n=4, length=6):
    g = torch.Generator().manual_seed(seed)
    b = groups * n
    lengths = torch.randint(2, length + 1, (b,), generator=g)
    mask = (torch.arange(length)[None, :] < lengths[:, None]).long()
    rewards = torch.randint(0, 2, (b,), generator=g).float()
    index = np.repeat(np.arange(groups), n)
    return rewards, mask, index


def test_grpo_matches_formula_and_verl():
    rewards, mask, index = batch()
    adv = algorithms.compute_advantages("grpo", rewards, mask, index)
    # The paper's Eq. 3: (r - mean(group)) / std(group), on every response token.
    r = rewards.view(3, 4)
    expected = ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-6)).reshape(-1)
    assert torch.allclose(adv, expected[:, None] * mask, atol=1e-6)
    scores = algorithms.token_level_rewards(rewards, mask)
    direct, _ = core_algos.compute_grpo_outcome_advantage(scores, mask.float(), index)
    assert torch.equal(adv, direct)


def test_reward_sits_on_last_response_token():
    rewards, mask, _ = batch()
    scores = algorithms.token_level_rewards(rewards, mask)
    last = mask.sum(1) - 1
    assert torch.equal(scores.sum(1), rewards)
    assert torch.equal(scores[torch.arange(len(rewards)), last], rewards)


@pytest.mark.parametrize("algorithm", ["rloo", "reinforce_plus_plus"])
def test_other_estimators_match_verl(algorithm):
    rewards, mask, index = batch(seed=3)
    adv = algorithms.compute_advantages(algorithm, rewards, mask, index)
    fn = core_algos.get_adv_estimator_fn(algorithm)
    scores = algorithms.token_level_rewards(rewards, mask)
    kwargs = {"index": index} if algorithm == "rloo" else {}
    direct, _ = fn(token_level_rewards=scores, response_mask=mask.float(), config=AlgoConfig(gamma=1.0), **kwargs)
    assert torch.allclose(adv, direct)
    if algorithm == "rloo":  # leave-one-out baseline, scaled as verl does
        r = rewards.view(3, 4)
        loo = (r - (r.sum(1, keepdim=True) - r) / 3).reshape(-1)
        assert torch.allclose(adv, loo[:, None] * mask, atol=1e-6)


def verl_actor_loss(config, log_prob, old_log_prob, advantages, mask, entropy, ref_log_prob):
    """verl's own actor loss (verl.workers.utils.losses.ppo_loss) on the same tensors.

    ppo_loss takes the model's outputs in verl's unpadded layout; here every
    sequence fills the prompt and response width, so the layout is the flat
    concatenation of prompt and response positions, where position t holds the
    log-prob of token t + 1 (the next-token layout of a causal LM's logits).
    """
    b, p, r = log_prob.shape[0], 2, log_prob.shape[1]

    def unpadded(x):
        return torch.cat([torch.zeros(b, p - 1), x, torch.zeros(b, 1)], dim=1).reshape(-1)

    full_lp, full_ent = unpadded(log_prob), unpadded(entropy)
    data = TensorDict(
        {
            "prompts": torch.ones(b, p, dtype=torch.long),
            "responses": torch.ones(b, r, dtype=torch.long),
            "attention_mask": torch.ones(b, p + r, dtype=torch.long),
            "response_mask": mask.float(),
            "old_log_probs": old_log_prob,
            "advantages": advantages,
            "ref_log_prob": ref_log_prob,
        },
        batch_size=[b],
    )
    tu.assign_non_tensor(data, dp_size=1, batch_num_tokens=None, global_batch_size=None)
    # Sanity: verl's slicing recovers the response log-probs we hand it.
    assert torch.equal(no_padding_2_padding(full_lp, data), log_prob)
    loss, _ = ppo_loss(config, {"log_probs": full_lp, "entropy": full_ent}, data)
    return loss


@pytest.mark.parametrize(
    "treatment",
    [
        {},
        {"entropy_coeff": 0.01},
        {"kl_loss_coef": 0.1},
        {"loss_mode": "clip_cov", "clip_ratio_low": 1.0, "clip_ratio_high": 1.0},
        {"loss_mode": "kl_cov"},
    ],
    ids=["vanilla", "entropy_loss", "ref_kl", "clip_cov", "kl_cov"],
)
def test_actor_loss_matches_verl_ppo_loss(treatment):
    g = torch.Generator().manual_seed(1)
    b, r = 8, 5
    mask = torch.ones(b, r, dtype=torch.long)  # full width, so verl's unpadded layout is exact
    old = -torch.rand(b, r, generator=g) * 3
    log_prob = old + 0.3 * torch.randn(b, r, generator=g)
    adv = torch.randn(b, r, generator=g)
    entropy = torch.rand(b, r, generator=g)
    ref = old + 0.1 * torch.randn(b, r, generator=g)
    settings = dataclasses.replace(BASE, **treatment)
    ours_cfg = algorithms.actor_config(settings, rollout_n=4, mini_batch_size=2)
    verl_cfg = algorithms.actor_config(settings, rollout_n=4, mini_batch_size=2)
    torch.manual_seed(0)  # Clip-Cov picks its tokens at random
    ours, _ = algorithms.actor_loss(ours_cfg, log_prob, old, adv, mask, entropy, ref)
    torch.manual_seed(0)
    theirs = verl_actor_loss(verl_cfg, log_prob, old, adv, mask, entropy, ref)
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-6, abs=1e-7)


def test_treatments_change_the_loss():
    """Each treatment is live: it moves the loss away from vanilla PPO on the same batch."""
    g = torch.Generator().manual_seed(2)
    b, r = 8, 5
    mask = torch.ones(b, r, dtype=torch.long)
    old = -torch.rand(b, r, generator=g) * 3
    log_prob = old + 0.5 * torch.randn(b, r, generator=g)
    adv = torch.randn(b, r, generator=g)
    entropy, ref = torch.rand(b, r, generator=g), old + 0.2
    base, _ = algorithms.actor_loss(algorithms.actor_config(BASE, 4, 2), log_prob, old, adv, mask, entropy, ref)
    for treatment in [
        {"entropy_coeff": 0.05},
        {"kl_loss_coef": 0.5},
        {"loss_mode": "kl_cov"},
        {"clip_ratio_high": 0.1},
    ]:
        cfg = algorithms.actor_config(dataclasses.replace(BASE, **treatment), 4, 2)
        loss, _ = algorithms.actor_loss(cfg, log_prob, old, adv, mask, entropy, ref)
        assert loss.item() != pytest.approx(base.item(), abs=1e-6), treatment


def test_actor_config_carries_run_settings():
    cfg = algorithms.actor_config(
        dataclasses.replace(BASE, loss_mode="kl_cov", kl_cov_ratio=0.002, kl_loss_coef=0.2), 8, 4
    )
    assert cfg.policy_loss.loss_mode == "kl_cov" and cfg.policy_loss.kl_cov_ratio == 0.002
    assert cfg.policy_loss.ppo_kl_coef == 1.0  # the paper's value, not verl's default of 0.1
    assert cfg.clip_ratio_high == 0.28 and cfg.use_kl_loss and cfg.kl_loss_coef == 0.2


def test_seq_mean_token_sum_norm_divides_by_the_configured_response_length():
    """verl's actor divides this mode's loss by its batch's response width, the rollout's configured
    length; the mini rollout is only as wide as its longest answer, so the horizon is passed in and
    the loss does not depend on how much padding a batch carries."""
    g = torch.Generator().manual_seed(3)
    b, r, horizon = 8, 5, 26
    old = -torch.rand(b, r, generator=g) * 3
    log_prob, adv = old + 0.3 * torch.randn(b, r, generator=g), torch.randn(b, r, generator=g)
    mask = torch.ones(b, r, dtype=torch.long)
    pad = lambda t: torch.cat([t, torch.zeros(b, 7, dtype=t.dtype)], dim=1)
    cfg = algorithms.actor_config(
        dataclasses.replace(BASE, loss_agg_mode="seq-mean-token-sum-norm"), 4, 2, max_response_length=horizon
    )
    narrow, _ = algorithms.actor_loss(cfg, log_prob, old, adv, mask)
    wide, _ = algorithms.actor_loss(cfg, pad(log_prob), pad(old), pad(adv), pad(mask))
    assert narrow.item() == pytest.approx(wide.item(), rel=1e-6)
    unscaled = algorithms.actor_config(dataclasses.replace(BASE, loss_agg_mode="seq-mean-token-sum-norm"), 4, 2)
    assert algorithms.actor_loss(unscaled, log_prob, old, adv, mask)[0].item() == pytest.approx(
        narrow.item() * horizon / r, rel=1e-6
    )
