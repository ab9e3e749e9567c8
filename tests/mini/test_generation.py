"""The mini sampler draws exactly the policy's distribution, and keeps the log-probs the trainer uses."""

import numpy as np
import pytest
import torch
from entropy_rl.core import reward
from entropy_rl.core.evaluation import Protocol
from entropy_rl.mini import generation, models, trainer
from scipy import stats

PROMPTS = [[{"role": "user", "content": f"Calculate {a} + {b}."}] for a, b in [(1, 2), (3, 4), (5, 6), (7, 8), (9, 0)]]
FAMILIES = {
    "qwen2": {"hidden_size": 32, "intermediate_size": 64, "num_layers": 2, "num_heads": 2, "num_kv_heads": 1},
    "llama": {
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_layers": 2,
        "num_heads": 2,
        "num_kv_heads": 1,
        "tie_word_embeddings": False,
    },
    # a window shorter than prompt + response, so the cached decode must apply it as the full forward does
    "mistral": {
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_layers": 2,
        "num_heads": 2,
        "num_kv_heads": 1,
        "sliding_window": 8,
    },
}


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def policy(request, mini_tokenizer):
    model, tok = models.build_mini_model(request.param, FAMILIES[request.param], mini_tokenizer, seed=1)
    return model.eval(), tok


def test_sampled_log_probs_and_entropies_equal_a_separate_forward_pass(policy):
    model, tok = policy
    torch.manual_seed(0)
    rollout = generation.generate(model, tok, PROMPTS, n=4, temperature=0.7, max_new_tokens=12)
    with torch.no_grad():
        log_probs, entropy = generation.forward_response(model, rollout, temperature=0.7)
    mask = rollout.response_mask.bool()
    assert mask.any(dim=1).all() and rollout.response_ids.shape == rollout.log_probs.shape
    assert torch.allclose(rollout.log_probs[mask], log_probs[mask], atol=1e-5)
    assert torch.allclose(rollout.entropy[mask], entropy[mask], atol=1e-5)
    assert (rollout.log_probs[~mask] == 0).all() and (rollout.response_ids[~mask] == tok.pad_token_id).all()


def test_the_models_eager_attention_computes_what_sdpa_computes(policy, tmp_path):
    """The mini models run their eager attention for speed (models.ATTENTION); transformers' default
    gives the same log-probs on a padded batch, with the sliding window where the family has one."""
    model, tok = policy
    assert model.config._attn_implementation == models.ATTENTION == "eager"
    torch.manual_seed(0)
    rollout = generation.generate(model, tok, PROMPTS, n=2, temperature=1.0, max_new_tokens=12)
    model.save_pretrained(tmp_path)
    sdpa = type(model).from_pretrained(tmp_path, attn_implementation="sdpa").eval()
    assert sdpa.config._attn_implementation == "sdpa"
    with torch.no_grad():
        ours, _ = generation.forward_response(model, rollout, temperature=1.0)
        theirs, _ = generation.forward_response(sdpa, rollout, temperature=1.0)
    mask = rollout.response_mask.bool()
    assert torch.allclose(ours[mask], theirs[mask], atol=1e-5)
    assert torch.allclose(rollout.log_probs[mask], theirs[mask], atol=1e-5)


def test_greedy_decoding_takes_the_argmax_of_a_forward_pass(policy):
    model, tok = policy
    rollout = generation.generate(model, tok, PROMPTS, n=1, temperature=0, max_new_tokens=12)
    assert rollout.log_probs is None
    ids, attn = rollout.input_ids, rollout.attention_mask
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=attn, position_ids=(attn.cumsum(1) - 1).clamp(min=0)).logits
    p, mask = rollout.prompt_ids.shape[1], rollout.response_mask.bool()
    argmax = logits[:, p - 1 : p - 1 + rollout.response_ids.shape[1]].argmax(-1)
    assert torch.equal(argmax[mask], rollout.response_ids[mask])


def test_answers_that_share_a_prompt_encoding_are_those_of_separate_copies(policy):
    """decode encodes each prompt once for its n answers; the draws are those of n copies of it."""
    model, tok = policy
    runs = []
    for prompts, n in ((PROMPTS, 3), ([p for p in PROMPTS for _ in range(3)], 1)):
        torch.manual_seed(5)
        runs.append(generation.generate(model, tok, prompts, n=n, temperature=1.0, max_new_tokens=10))
    shared, copies = runs
    assert torch.equal(shared.input_ids, copies.input_ids) and torch.equal(shared.response_ids, copies.response_ids)
    assert torch.allclose(shared.log_probs, copies.log_probs, atol=1e-6)


def test_answers_leaving_the_batch_early_change_no_answer(policy, monkeypatch):
    """Finished answers are dropped from the batch and its KV cache (generation.DROP_FINISHED_SHARE):
    greedy answers are those of a batch that keeps every row to the end, and sampled ones still
    carry the log-probs of a separate forward pass (the test above, at the default share)."""
    model, tok = policy
    runs = {}
    for share in (0.0, 2.0):  # drop finished rows at every step / never
        monkeypatch.setattr(generation, "DROP_FINISHED_SHARE", share)
        runs[share] = generation.generate(model, tok, PROMPTS, n=1, temperature=0, max_new_tokens=12)
    assert torch.equal(runs[0.0].response_ids, runs[2.0].response_ids) and runs[0.0].texts == runs[2.0].texts
    monkeypatch.setattr(generation, "DROP_FINISHED_SHARE", 0.0)
    torch.manual_seed(0)
    rollout = generation.generate(model, tok, PROMPTS, n=4, temperature=1.0, max_new_tokens=12)
    with torch.no_grad():
        log_probs, _ = generation.forward_response(model, rollout, temperature=1.0)
    mask = rollout.response_mask.bool()
    assert torch.allclose(rollout.log_probs[mask], log_probs[mask], atol=1e-5)


def test_sampling_is_seeded(policy):
    model, tok = policy
    runs = []
    for _ in range(2):
        torch.manual_seed(3)
        runs.append(generation.generate(model, tok, PROMPTS, n=3, temperature=1.0, max_new_tokens=8))
    assert torch.equal(runs[0].response_ids, runs[1].response_ids) and runs[0].texts == runs[1].texts


def test_each_draw_follows_its_rows_distribution_exactly():
    """200,000 draws from two rows, one with zero-probability tokens: those never come, and the
    counts fit the probabilities (chi-square) where a biased draw (e.g. off by one token) would not."""
    probs = torch.tensor([[0.5, 0.2, 0.2, 0.1, 0.0], [0.0, 0.01, 0.0, 0.49, 0.5]])
    torch.manual_seed(0)
    draws = torch.cat([generation.draw(probs.repeat(1000, 1)).view(1000, 2) for _ in range(100)])
    for row in range(2):
        counts = np.bincount(draws[:, row].numpy(), minlength=5)
        p = probs[row].double().numpy()
        assert (counts[p == 0] == 0).all()
        assert stats.chisquare(counts[p > 0], p[p > 0] * counts.sum()).pvalue > 1e-3


def test_validation_samples_sets_that_share_a_protocol_together(tiny_policy, monkeypatch):
    """One sampling call per protocol, not per set, and each set still gets its own accuracy
    (grading is replaced by a rule on the gold answer, so the bookkeeping is what is tested)."""
    model, tok = tiny_policy
    monkeypatch.setattr(reward, "is_correct", lambda style, gold, text: gold == "yes")
    greedy, sampled = Protocol(temperature=0.0, n=1), Protocol(temperature=0.6, n=2)
    sets = {
        "b": trainer.ValSet(PROMPTS[:2], ["yes", "no"], ["rule"] * 2, greedy),
        "c": trainer.ValSet(PROMPTS[:1], ["no"], ["rule"], sampled),
        "a": trainer.ValSet(PROMPTS[2:], ["no", "yes", "yes"], ["rule"] * 3, greedy),
    }
    calls = []
    real = generation.generate
    monkeypatch.setattr(generation, "generate", lambda *a, **k: calls.append(len(a[2])) or real(*a, **k))
    accs = trainer.validate(model, tok, sets, max_new_tokens=4)
    assert sorted(calls) == [1, 5]
    assert accs == pytest.approx({"val_acc/b": 0.5, "val_acc/c": 0.0, "val_acc/a": 2 / 3, "val_acc": (0.5 + 2 / 3) / 3})
    assert list(accs) == ["val_acc/b", "val_acc/c", "val_acc/a", "val_acc"]
