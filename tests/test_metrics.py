"""Entropy and covariance metrics against their closed forms."""

import math

import pytest
import torch

from entropy_rl import generation, metrics


def test_entropy_from_forward_equals_closed_form(tiny_policy):
    model, tok = tiny_policy
    rollout = generation.generate(model, tok, [[{"role": "user", "content": "1 + 2 ="}]] * 2, n=3, temperature=1.0, max_new_tokens=6)
    with torch.no_grad():
        lp, ent = generation.forward_response(model, rollout, temperature=0.7)
    # Closed form: H = -sum_a p(a) log p(a) of softmax(z / T), at each response position.
    with torch.no_grad():
        logits = model(input_ids=rollout.input_ids, attention_mask=rollout.attention_mask,
                       position_ids=(rollout.attention_mask.cumsum(1) - 1).clamp(min=0)).logits
    p = rollout.prompt_ids.shape[1]
    z = logits[:, p - 1 : p - 1 + rollout.response_ids.shape[1]] / 0.7
    probs = torch.softmax(z.double(), -1)
    closed = -(probs * probs.log()).sum(-1)
    assert torch.allclose(ent.double(), closed, atol=1e-5)
    picked = torch.log_softmax(z.double(), -1).gather(-1, rollout.response_ids[..., None]).squeeze(-1)
    assert torch.allclose(lp.double(), picked, atol=1e-5)
    # Token-level mean over valid tokens only (Eq. 5).
    m = rollout.response_mask.bool()
    assert metrics.masked_token_mean(ent, rollout.response_mask) == pytest.approx(float(ent[m].mean()))


def test_uniform_policy_entropy_is_log_vocab():
    from verl.utils.torch_functional import entropy_from_logits

    assert float(entropy_from_logits(torch.zeros(1, 1, 50))) == pytest.approx(math.log(50), rel=1e-6)


def test_covariance_summary_by_hand():
    # Two responses of two tokens: log-probs and advantages chosen so products are easy.
    lp = torch.tensor([[-1.0, -3.0], [-1.0, -3.0]])
    adv = torch.tensor([[1.0, 1.0], [-1.0, -1.0]])
    mask = torch.ones(2, 2)
    out = metrics.covariance_summary(lp, adv, mask, group_acc=torch.tensor([0.25, 0.75]))
    # centred lp = [1, -1, 1, -1], centred adv = [1, 1, -1, -1] -> products [1, -1, -1, 1]
    assert out["cov_all"] == pytest.approx(0.0)
    assert out["cov_top0.02"] == pytest.approx(1.0)  # the single top token
    assert out["cov_top50"] == pytest.approx(1.0)  # top 2 of 4
    assert out["cov_acc_low"] == pytest.approx(0.0) and out["cov_acc_high"] == pytest.approx(0.0)
    assert math.isnan(out["cov_acc_mid"])


def test_covariance_ignores_masked_tokens():
    lp = torch.tensor([[-1.0, -100.0], [-3.0, 50.0]])
    adv = torch.tensor([[1.0, 9.0], [-1.0, 9.0]])
    mask = torch.tensor([[1, 0], [1, 0]])
    cov = metrics.token_covariance(lp, adv, mask)
    assert cov.tolist() == pytest.approx([1.0, 1.0])
