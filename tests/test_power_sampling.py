"""Power sampling (Algorithm 1 of Karan & Du, 2025): its chains reach p^α, not low-temperature sampling.

The exactness check runs the sampler on the slides' Example 1, a two-token distribution small
enough to enumerate; the model-backed proposal is then checked on a real tiny Hugging Face model.
"""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from entropy_rl import power_sampling

A, B, EOS = 0, 1, 2
# Example 1: p(aa) = 0, p(ab) = 0.40, p(ba) = p(bb) = 0.25, and the remaining 0.10 ends at once.
FIRST = {A: 0.40, B: 0.50, EOS: 0.10}
SECOND = {A: {A: 1e-12, B: 1.0 - 1e-12, EOS: 0.0}, B: {A: 0.5, B: 0.5, EOS: 0.0}}


def next_token(prefix: list[int]) -> dict:
    return FIRST if not prefix else SECOND[prefix[0]]


class TableProposer:
    """Example 1's p as an autoregressive table; q is its per-step softmax at temperature 1/α."""

    eos_id = EOS

    def __init__(self, alpha: float, rng: np.random.Generator):
        self.alpha, self.rng = alpha, rng

    def extend(self, prefixes, budgets):
        out = []
        for prefix, budget in zip(prefixes, budgets):
            seq, lps, lqs = [int(t) for t in prefix], [], []
            for _ in range(budget):
                dist = next_token(seq[1:])  # after the one-token prompt
                tokens = [t for t, pr in dist.items() if pr > 0]
                p = np.array([dist[t] for t in tokens])
                q = p**self.alpha / (p**self.alpha).sum()
                j = self.rng.choice(len(tokens), p=q)
                seq.append(tokens[j])
                lps.append(math.log(p[j]))
                lqs.append(math.log(q[j]))
                if tokens[j] == EOS:
                    break
            new = seq[len(prefix) :]
            out.append((torch.tensor(new, dtype=torch.long), torch.tensor(lps), torch.tensor(lqs)))
        return out


def exact_power(alpha: float) -> dict[tuple, float]:
    seqs = {(EOS,): FIRST[EOS], (A, B): 0.40, (B, A): 0.25, (B, B): 0.25}
    weights = {s: p**alpha for s, p in seqs.items()}
    return {s: w / sum(weights.values()) for s, w in weights.items()}


def frequencies(chains) -> dict[tuple, float]:
    seqs = [tuple(int(t) for t in c.tokens) for c in chains]
    return {s: seqs.count(s) / len(seqs) for s in set(seqs)}


def low_temperature(alpha: float) -> dict[tuple, float]:
    def sharpen(dist):
        z = sum(p**alpha for p in dist.values())
        return {t: p**alpha / z for t, p in dist.items()}

    first = sharpen(FIRST)
    return {(EOS,): first[EOS], **{(x, y): first[x] * sharpen(SECOND[x])[y] for x in (A, B) for y in (A, B)}}


def total_variation(p: dict, q: dict) -> float:
    return 0.5 * sum(abs(p.get(s, 0.0) - q.get(s, 0.0)) for s in set(p) | set(q))


def test_one_block_over_the_whole_response_reaches_p_to_the_alpha():
    alpha, n = 2.0, 4000
    rng = np.random.default_rng(0)
    chains = power_sampling.sample_chains(TableProposer(alpha, rng), [torch.tensor([7])] * n, alpha, 2, 30, 2, rng)
    got, want = frequencies(chains), exact_power(alpha)
    # p^α puts 0.54 on "ab"; low-temperature sampling puts 0.38 on it.
    assert want[(A, B)] == pytest.approx(0.5424, abs=1e-3) and low_temperature(alpha)[(A, B)] == pytest.approx(
        0.381, abs=1e-3
    )
    for seq, p in want.items():
        assert abs(got.get(seq, 0.0) - p) < 4 * math.sqrt(p * (1 - p) / n), (seq, got, want)


def test_blocks_shorter_than_the_response_approach_p_to_the_alpha():
    """With B < T the chain freezes each block's answer when the response ends there (Algorithm 1
    stops after that block), so it is near p^α rather than on it; still far nearer than low temperature."""
    alpha, n = 2.0, 4000
    rng = np.random.default_rng(3)
    chains = power_sampling.sample_chains(TableProposer(alpha, rng), [torch.tensor([7])] * n, alpha, 1, 30, 2, rng)
    got, want, low = frequencies(chains), exact_power(alpha), low_temperature(alpha)
    print(f"TV to p^α: block 1 {total_variation(got, want):.3f}, low temperature {total_variation(low, want):.3f}")
    assert total_variation(got, want) < 0.05 < 0.15 < total_variation(low, want)


def test_without_mcmc_steps_it_is_low_temperature_sampling():
    alpha, n = 2.0, 4000
    rng = np.random.default_rng(1)
    chains = power_sampling.sample_chains(TableProposer(alpha, rng), [torch.tensor([7])] * n, alpha, 2, 0, 2, rng)
    first_a = np.mean([int(c.tokens[0]) == A for c in chains])
    low_temp = 0.40**2 / (0.40**2 + 0.50**2 + 0.10**2)  # 0.381, against p^α's 0.542
    assert abs(first_a - low_temp) < 4 * math.sqrt(low_temp * (1 - low_temp) / n)
    assert all(c.drawn == len(c.tokens) and c.proposals == 0 for c in chains)  # one draw per token


def test_cost_counts_every_drawn_token():
    alpha = 2.0
    rng = np.random.default_rng(2)
    chains = power_sampling.sample_chains(TableProposer(alpha, rng), [torch.tensor([7])] * 200, alpha, 1, 5, 2, rng)
    for c in chains:
        assert c.proposals in (5, 10)  # five redraws in each block the chain ran (block size 1, two blocks)
        assert c.proposals == 5 * len(c.tokens) or c.tokens.tolist() == [EOS]  # an answer may end early in block 2
        assert len(c.tokens) <= c.drawn <= len(c.tokens) + c.proposals * 2
        assert 0 <= c.accepted <= c.proposals


def test_the_model_backed_proposal(tiny_policy):
    model, tok = tiny_policy
    prompts = power_sampling.prompt_ids(tok, [[{"role": "user", "content": f"Calculate {a} + 3."}] for a in range(4)])

    def run(alpha, n_mcmc, seed):
        torch.manual_seed(seed)
        proposer = power_sampling.HFProposer(model, tok, alpha)
        return power_sampling.sample_chains(proposer, prompts, alpha, 4, n_mcmc, 10, np.random.default_rng(seed))

    chains = run(4.0, 3, 0)
    again = run(4.0, 3, 0)
    assert [c.tokens.tolist() for c in chains] == [c.tokens.tolist() for c in again]  # seeds fix every draw
    for c in chains:
        assert 1 <= len(c.tokens) <= 10 and len(c.logp) == len(c.logq) == len(c.tokens)
        assert c.drawn > len(c.tokens) and c.proposals == 3 * math.ceil(len(c.tokens) / 4)
    # The stored log p of each response is the base model's own, recomputed by a forward pass.
    rollout = power_sampling.to_rollout(tok, chains)
    from entropy_rl import generation

    logp, _ = generation.forward_response(model, rollout, 1.0, with_entropy=False)
    for i, c in enumerate(chains):
        assert torch.allclose(logp[i, : len(c.tokens)], c.logp, atol=1e-4)
    # At α = 1 the proposal is the target: every redraw is accepted.
    assert all(c.accepted == c.proposals for c in run(1.0, 3, 1))


def test_every_method_samples_grades_and_costs_the_same_problems(tiny_policy):
    model, tok = tiny_policy
    prompts = [
        [{"role": "user", "content": f"Calculate {a} + 3. Put the final answer in \\boxed{{}}."}] for a in range(3)
    ]
    answers = [str(a + 3) for a in range(3)]
    methods = {
        "base": {"kind": "sample", "temperature": 1.0},
        "low-temp": {"kind": "sample", "temperature": 0.25},
        "power": {"kind": "power", "alpha": 4.0, "block_size": 4, "n_mcmc": 2},
    }
    frames = {
        name: power_sampling.sample_method(model, tok, model, prompts, answers, m, 4, 8, seed=0)
        for name, m in methods.items()
    }
    for name, f in frames.items():
        assert len(f) == 12 and sorted(set(f["problem_id"])) == [0, 1, 2] and f["sample"].max() == 3
        assert (f["base_loglik"] <= 0).all() and (f["response_tokens"] >= 1).all()
        assert f["ground_truth"].tolist() == [a for a in answers for _ in range(4)]
    assert (frames["base"]["drawn_tokens"] == frames["base"]["response_tokens"]).all()  # one draw per token
    assert (frames["power"]["drawn_tokens"] > frames["power"]["response_tokens"]).all()
    assert frames["power"]["acceptance"].between(0, 1).all() and frames["base"]["acceptance"].isna().all()
    again = power_sampling.sample_method(model, tok, model, prompts, answers, methods["power"], 4, 8, seed=0)
    pd.testing.assert_frame_equal(again, frames["power"])
