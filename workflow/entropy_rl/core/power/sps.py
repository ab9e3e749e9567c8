"""Scalable power sampling (Ji et al., 2026): p^α sampled block by block with a look-ahead, without MCMC.

The target over a response y is π(y) ∝ p(y)^α (p the base model at temperature 1), as for Algorithm 1
(``mcmc``). Their Theorem 3.1: the next piece b of a response drawn from π, given the prefix x, has
probability ∝ p(b | x)^α · ζ(x, b), where ζ(x, b) = Σ_f p(f | x, b)^α is the p^α-mass of every future f after b (1
when b ends the response). ζ is estimated during generation by Monte Carlo rollouts (their Eq. 3) and the selection
probabilities corrected for the bias of the ratio by a leave-one-out jackknife (their Eqs. 5-6; bias O(1/M²)).

Each block of B tokens here:

1. draws ``candidates`` blocks b_1..b_L from the proposal q (the base model at temperature 1/α, the ``Proposer`` of
   ``mcmc``), as their Appendix B draws its candidate blocks;
2. estimates ζ of each by ``rollouts`` continuations from q of up to ``horizon`` tokens, by importance sampling:
   ζ(x, b) = E_{f~q}[p(f)^α / q(f)], so log ζ̂ = logsumexp_r Σ_t (α·log p − log q) − log M;
3. draws one of the distinct candidates with probability ∝ p(b)^α ζ̂(b) (their Eq. 13), the jackknife applied to
   those probabilities (negative ones, which the jackknife can give, set to 0: the paper does not say).

The distribution is the exact conditional of p^α restricted to the candidates drawn, up to the noise of ζ̂; it tends
to p^α as the candidates cover the blocks that carry its mass, M grows and the horizon reaches the end
(tests/core/power/test_power_exactness.py measures how close it is at each setting). Two choices differ from the paper:
candidates and rollouts come from q rather than from p (rollouts with their importance weight, so ζ̂ is unbiased
either way), and the candidates are every distinct draw rather than the top K by likelihood. With a horizon shorter
than the rest of the response, ζ counts only the next ``horizon`` tokens: a look-ahead approximation, as in the paper.

Token cost per block: the L candidates' tokens and every rollout token (L·B + L·M·H at most).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .mcmc import Chain, Proposer
from .methods import SPS


def _log_ratio(draft, alpha: float) -> float:
    """log p^α / q of a continuation drawn from q: Σ over its tokens of α·log p − log q."""
    _, logp, logq = draft
    return alpha * float(logp.sum()) - float(logq.sum())


def jackknife(log_base: np.ndarray, log_rollouts: np.ndarray) -> np.ndarray:
    """Selection probabilities over candidates from ``log_base`` (log p^α of each) and ``log_rollouts`` (candidate ×
    rollout: each rollout's log p^α/q; 0 for a candidate that ends the response): the plug-in softmax of
    log_base + log ζ̂ (their Eq. 4) corrected by the leave-one-out jackknife (Eqs. 5-6), negatives set to 0."""
    m = log_rollouts.shape[1]

    def probs(log_zeta):
        z = log_base + log_zeta
        w = np.exp(z - z.max())
        return w / w.sum()

    plug_in = probs(np.logaddexp.reduce(log_rollouts, axis=1) - math.log(m))
    if m < 2:
        return plug_in
    leave_out = [np.logaddexp.reduce(np.delete(log_rollouts, s, axis=1), axis=1) - math.log(m - 1) for s in range(m)]
    corrected = np.clip(m * plug_in - (m - 1) / m * sum(probs(z) for z in leave_out), 0.0, None)
    return corrected / corrected.sum() if corrected.sum() > 0 else plug_in


def _candidates(proposer: Proposer, chains: list[Chain], settings: SPS, max_new_tokens: int) -> list[list]:
    """Each chain's distinct candidate blocks, every chain's L draws in one batched call; the tokens drawn are
    counted on the chain."""
    L = settings.candidates
    budgets = [min(settings.block_size, max_new_tokens - len(c.tokens)) for c in chains]
    drafts = proposer.extend(
        [torch.cat([c.prompt, c.tokens]) for c in chains for _ in range(L)], [b for b in budgets for _ in range(L)]
    )
    distinct = []
    for k, chain in enumerate(chains):
        mine = drafts[k * L : (k + 1) * L]
        chain.drawn += sum(len(d[0]) for d in mine)
        distinct.append(list({tuple(d[0].tolist()): d for d in mine}.values()))  # each candidate once, as their set
    return distinct


def _lookahead(
    proposer: Proposer, chains: list[Chain], distinct: list[list], settings: SPS, max_new_tokens: int
) -> list[np.ndarray]:
    """Each chain's candidate × rollout log p^α/q of M rollouts after each open candidate (0 for one that ends the
    response), every chain's rollouts in one batched call; the tokens drawn are counted on the chain."""
    M = settings.rollouts
    logs = [np.zeros((len(d), M)) for d in distinct]
    ends = lambda k, d: _ends(proposer, chains[k], d, max_new_tokens)
    open_ = [(k, i) for k, blocks in enumerate(distinct) for i, d in enumerate(blocks) if not ends(k, d)]
    if not open_:
        return logs
    prefixes, budgets = [], []
    for k, i in open_:
        chain, block = chains[k], distinct[k][i][0]
        prefixes += [torch.cat([chain.prompt, chain.tokens, block])] * M
        budgets += [min(settings.horizon, max_new_tokens - len(chain.tokens) - len(block))] * M
    rollouts = proposer.extend(prefixes, budgets)
    for j, (k, i) in enumerate(open_):
        mine = rollouts[j * M : (j + 1) * M]
        chains[k].drawn += sum(len(r[0]) for r in mine)
        logs[k][i] = [_log_ratio(r, settings.alpha) for r in mine]
    return logs


def _ends(proposer: Proposer, chain: Chain, draft, max_new_tokens: int) -> bool:
    """Does ``draft`` end the response (a stop token, or the length limit)? Then its future is empty: ζ = 1."""
    tokens = draft[0]
    return len(chain.tokens) + len(tokens) >= max_new_tokens or (
        len(tokens) > 0 and int(tokens[-1]) in proposer.stop_ids
    )


def sps_answers(
    proposer: Proposer,
    prompts: list[torch.Tensor],
    settings: SPS,
    max_new_tokens: int,
    rng: np.random.Generator,
) -> list[Chain]:
    """One response to each of ``prompts``, all grown a block at a time together (``settings``: ``alpha``,
    ``block_size``, ``candidates``, ``rollouts``, ``horizon``); a chain's ``drawn`` counts every candidate and rollout
    token it needed."""
    alpha = settings.alpha
    chains = [Chain(p) for p in prompts]
    while live := [c for c in chains if not c.ended(proposer.stop_ids, max_new_tokens)]:
        distinct = _candidates(proposer, live, settings, max_new_tokens)
        lookahead = _lookahead(proposer, live, distinct, settings, max_new_tokens)
        for chain, blocks, log_rollouts in zip(live, distinct, lookahead):
            log_base = np.array([alpha * float(b[1].sum()) for b in blocks])  # log p(b)^α
            chosen = int(rng.choice(len(blocks), p=jackknife(log_base, log_rollouts)))
            chain.splice(len(chain.tokens), blocks[chosen])
    return chains


def method_chains(
    proposer: Proposer,
    prompt_ids: list[torch.Tensor],
    method: SPS,
    n: int,
    max_new_tokens: int,
    rng: np.random.Generator,
) -> list[Chain]:
    """``n`` answers per prompt (all grown together), grouped by prompt (as ``mcmc.answer_rows`` reads them),
    with an SPS method's settings."""
    prompts = [p for p in prompt_ids for _ in range(n)]
    return sps_answers(proposer, prompts, method, max_new_tokens, rng)


def costs(chains: list[Chain]) -> tuple[list[int], list[float]]:
    """Each answer's tokens drawn (its candidates' and rollouts'), and no MH acceptance rate."""
    return [c.drawn for c in chains], [math.nan] * len(chains)
