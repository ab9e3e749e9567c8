"""Entropy and covariance metrics against their closed forms."""

import math

import pytest
import torch
from entropy_rl.core import metrics
from entropy_rl.core.run import Loss
from entropy_rl.mini import generation


def test_entropy_from_forward_equals_closed_form(tiny_policy):
    model, tok = tiny_policy
    rollout = generation.generate(
        model, tok, [[{"role": "user", "content": "1 + 2 ="}]] * 2, n=3, temperature=1.0, max_new_tokens=6
    )
    with torch.no_grad():
        lp, ent = generation.forward_response(model, rollout, temperature=0.7)
    # Closed form: H = -sum_a p(a) log p(a) of softmax(z / T), at each response position.
    with torch.no_grad():
        logits = model(
            input_ids=rollout.input_ids,
            attention_mask=rollout.attention_mask,
            position_ids=(rollout.attention_mask.cumsum(1) - 1).clamp(min=0),
        ).logits
    p = rollout.prompt_ids.shape[1]
    z = logits[:, p - 1 : p - 1 + rollout.response_ids.shape[1]] / 0.7
    probs = torch.softmax(z.double(), -1)
    closed = -(probs * probs.log()).sum(-1)
    assert torch.allclose(ent.double(), closed, atol=1e-5)
    picked = torch.log_softmax(z.double(), -1).gather(-1, rollout.response_ids[..., None]).squeeze(-1)
    assert torch.allclose(lp.double(), picked, atol=1e-5)
    # Eq. 5: each response's mean over its valid tokens, then the mean over responses.
    m = rollout.response_mask.bool()
    per_response = [float(ent[i][m[i]].mean()) for i in range(len(ent)) if m[i].any()]
    assert metrics.policy_entropy(ent, rollout.response_mask) == pytest.approx(sum(per_response) / len(per_response))


def test_policy_entropy_weighs_responses_not_tokens():
    ent = torch.tensor([[1.0, 1.0, 1.0, 1.0], [3.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1, 1], [1, 0, 0, 0]])
    assert metrics.policy_entropy(ent, mask) == pytest.approx(2.0)  # (1 + 3) / 2; the token mean would be 7/5
    assert math.isnan(metrics.policy_entropy(ent[:0], mask[:0]))


def test_uniform_policy_entropy_is_log_vocab():
    from verl.utils.torch_functional import entropy_from_logits

    assert float(entropy_from_logits(torch.zeros(1, 1, 50))) == pytest.approx(math.log(50), rel=1e-6)


def test_covariance_summary_by_hand():
    # Two responses of two tokens: log-probs and advantages chosen so products are easy.
    lp = torch.tensor([[-1.0, -3.0], [-1.0, -3.0]])
    adv = torch.tensor([[1.0, 1.0], [-1.0, -1.0]])
    mask = torch.ones(2, 2)
    out = metrics.covariance_summary(lp, adv, mask)
    # centred lp = [1, -1, 1, -1], centred adv = [1, 1, -1, -1] -> products [1, -1, -1, 1]
    assert out["cov_all"] == pytest.approx(0.0)
    assert out["cov_top0.02"] == pytest.approx(1.0)  # the single top token
    assert out["cov_top50"] == pytest.approx(1.0)  # top 2 of 4


def test_bandit_covariance_by_hand():
    """Eq. 8-9 on two prompts of two responses: per group Cov(x, exp(x)·A) with x the mean token log-prob."""
    lp = torch.tensor([[-1.0, -3.0], [-1.0, 0.0], [-2.0, -2.0], [-1.0, -1.0]])
    mask = torch.tensor([[1, 1], [1, 0], [1, 1], [1, 1]])
    adv = torch.tensor([[1.0, 1.0], [-1.0, 0.0], [-1.0, -1.0], [1.0, 1.0]])  # one value per response
    out = metrics.bandit_covariance(lp, adv, mask, ["p", "p", "q", "q"], [1.0, 0.0, 0.0, 1.0])
    # prompt p: x = (-2, -1), exp(x)·A = (e^-2, -e^-1); prompt q: x = (-2, -1), exp(x)·A = (-e^-2, e^-1)
    cov = lambda x, y: sum((a - sum(x) / 2) * (b - sum(y) / 2) for a, b in zip(x, y)) / 2  # noqa: E731
    p = cov([-2, -1], [math.exp(-2), -math.exp(-1)])
    q = cov([-2, -1], [-math.exp(-2), math.exp(-1)])
    assert p < 0 < q  # the likelier response right: positive covariance, entropy falls (Theorem 1)
    assert out["bandit_cov"] == pytest.approx((p + q) / 2)
    assert out["bandit_cov_acc0.5"] == pytest.approx((p + q) / 2)
    assert math.isnan(out["bandit_cov_acc0.125"]) and math.isnan(out["bandit_cov_acc0.875"])


def test_bandit_covariance_difficulty_groups_at_eight_responses():
    g = torch.Generator().manual_seed(0)
    lp, adv = -torch.rand(24, 5, generator=g), torch.randn(24, 1, generator=g).expand(24, 5)
    rewards = [1.0] + [0.0] * 7 + [1.0] * 4 + [0.0] * 4 + [1.0] * 7 + [0.0]
    out = metrics.bandit_covariance(lp, adv, torch.ones(24, 5), [i // 8 for i in range(24)], rewards)
    single = [
        metrics.bandit_covariance(
            lp[i * 8 : i * 8 + 8], adv[i * 8 : i * 8 + 8], torch.ones(8, 5), [0] * 8, rewards[i * 8 : i * 8 + 8]
        )["bandit_cov"]
        for i in range(3)
    ]
    assert [out["bandit_cov_acc0.125"], out["bandit_cov_acc0.5"], out["bandit_cov_acc0.875"]] == pytest.approx(single)


def test_loss_token_stats_count_what_verls_losses_touch():
    """Clip-Cov's detached tokens and KL-Cov's penalised ones, counted as verl's own losses select them."""
    from entropy_rl.mini import algorithms
    from support import LOSS
    from verl.trainer.ppo.core_algos import get_policy_loss_fn

    g = torch.Generator().manual_seed(3)
    old = -torch.rand(16, 40, generator=g) * 3
    new, adv = old + 0.05 * torch.randn(16, 40, generator=g), torch.randn(16, 1, generator=g).expand(16, 40) * 4
    mask = torch.ones(16, 40)
    for mode, ratio in [("clip_cov", "clip_cov_ratio"), ("kl_cov", "kl_cov_ratio")]:
        cfg = algorithms.actor_config(Loss(**dict(LOSS, loss_mode=mode, clip_ratio_high=0.2, **{ratio: 0.01})), 8, 16)
        new_param = new.clone().requires_grad_(True)
        loss, logged = get_policy_loss_fn(mode)(old, new_param, adv, mask, "token-mean", cfg)
        stats = metrics.loss_token_stats(cfg, new, old, adv, mask, logged)
        assert stats["response_tokens"] == 640
        if mode == "clip_cov":
            loss.backward()  # a detached token gets no gradient
            assert stats["cov_touched_tokens"] == pytest.approx(float((new_param.grad == 0).sum()))
        else:
            assert stats["cov_touched_tokens"] == 6  # max(1, int(640 * 0.01))
        assert "cliphigher_tokens" not in stats  # clip ratios equal: clip-higher adds no token


def test_clip_higher_band_by_hand():
    from entropy_rl.mini import algorithms
    from support import LOSS

    cfg = algorithms.actor_config(Loss(**dict(LOSS, clip_ratio_low=0.2, clip_ratio_high=0.28)), 2, 2)
    old = torch.zeros(1, 4)
    new = torch.log(torch.tensor([[1.25, 1.25, 1.1, 1.3]]))  # ratios: in band, in band, below, above
    adv = torch.tensor([[1.0, -1.0, 1.0, 1.0]])
    stats = metrics.loss_token_stats(cfg, new, old, adv, torch.ones(1, 4), {})
    cov = (new - new.mean()) * (adv - adv.mean())
    assert stats["cliphigher_tokens"] == 1  # only the first: in band with a positive advantage
    assert set(stats) == set(metrics.LOSS_TOKEN_SUMS) - {"cov_touched_tokens"}  # vanilla: no tokens touched
    assert stats["cliphigher_cov_sum"] == pytest.approx(float(cov[0, 0]))
    pooled = metrics.pooled_loss_stats([stats, {"response_tokens": 4.0}])
    assert pooled["cliphigher_cov"] == pytest.approx(float(cov[0, 0])) and math.isnan(pooled["cov_touched_frac"])


def test_covariance_ignores_masked_tokens():
    lp = torch.tensor([[-1.0, -100.0], [-3.0, 50.0]])
    adv = torch.tensor([[1.0, 9.0], [-1.0, 9.0]])
    mask = torch.tensor([[1, 0], [1, 0]])
    cov = metrics.token_covariance(lp, adv, mask)
    assert cov.tolist() == pytest.approx([1.0, 1.0])
