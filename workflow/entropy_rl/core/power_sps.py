"""Scalable power sampling (Ji et al., 2026): p^α sampled block by block with a look-ahead, without MCMC.

The target over a response y is π(y) ∝ p(y)^α (p the base model at temperature 1), as for Algorithm 1
(``power_mcmc``). Their Theorem 3.1: the next piece b of a response drawn from π, given the prefix x, has
probability ∝ p(b | x)^α · ζ(x, b), where ζ(x, b) = Σ_f p(f | x, b)^α is the p^α-mass of every future f after b (1
when b ends the response). ζ is estimated during generation by Monte Carlo rollouts (their Eq. 3) and the selection
probabilities corrected for the bias of the ratio by a leave-one-out jackknife (their Eqs. 5-6; bias O(1/M²)).

Each block of B tokens here:

1. draws ``candidates`` blocks b_1..b_L from the proposal q (the base model at temperature 1/α, the ``Proposer`` of
   ``power_mcmc``), as their Appendix B draws its candidate blocks;
2. estimates ζ of each by ``rollouts`` continuations from q of up to ``horizon`` tokens, by importance sampling:
   ζ(x, b) = E_{f~q}[p(f)^α / q(f)], so log ζ̂ = logsumexp_r Σ_t (α·log p − log q) − log M;
3. draws one of the distinct candidates with probability ∝ p(b)^α ζ̂(b) (their Eq. 13), the jackknife applied to
   those probabilities (negative ones, which the jackknife can give, set to 0: the paper does not say).

The distribution is the exact conditional of p^α restricted to the candidates drawn, up to the noise of ζ̂; it tends
to p^α as the candidates cover the blocks that carry its mass, M grows and the horizon reaches the end
(tests/core/test_power_exactness.py measures how close it is at each setting). Two choices differ from the paper:
candidates and rollouts come from q rather than from p (rollouts with their importance weight, so ζ̂ is unbiased
either way), and the candidates are every distinct draw rather than the top K by likelihood. With a horizon shorter
than the rest of the response, ζ counts only the next ``horizon`` tokens: a look-ahead approximation, as in the paper.

Token cost per block: the L candidates' tokens and every rollout token (L·B + L·M·H at most).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .power_mcmc import Chain, Proposer


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


def _block(proposer: Proposer, chain: Chain, alpha: float, block: int, settings: dict, max_new_tokens: int,
           rng: np.random.Generator) -> int:  # fmt: skip
    """Extend ``chain`` by one block chosen among candidates by their look-ahead; returns the tokens drawn."""
    L, M = settings["candidates"], settings["rollouts"]
    budget = min(block, max_new_tokens - len(chain.tokens))
    prefix = torch.cat([chain.prompt, chain.tokens])
    drafts = proposer.extend([prefix] * L, [budget] * L)
    drawn = sum(len(d[0]) for d in drafts)
    distinct = list({tuple(d[0].tolist()): d for d in drafts}.values())  # each candidate once, as the paper's set
    log_rollouts = np.zeros((len(distinct), M))
    open_ = [i for i, d in enumerate(distinct) if not _ends(proposer, chain, d, max_new_tokens)]
    if open_:
        horizon = [min(settings["horizon"], max_new_tokens - len(chain.tokens) - len(distinct[i][0])) for i in open_]
        prefixes = [torch.cat([prefix, distinct[i][0]]) for i in open_ for _ in range(M)]
        rollouts = proposer.extend(prefixes, [h for h in horizon for _ in range(M)])
        drawn += sum(len(r[0]) for r in rollouts)
        for k, i in enumerate(open_):
            log_rollouts[i] = [_log_ratio(r, alpha) for r in rollouts[k * M : (k + 1) * M]]
    log_base = np.array([alpha * float(d[1].sum()) for d in distinct])  # log p(b)^α
    chosen = int(rng.choice(len(distinct), p=jackknife(log_base, log_rollouts)))
    chain.splice(len(chain.tokens), distinct[chosen])
    return drawn


def _ends(proposer: Proposer, chain: Chain, draft, max_new_tokens: int) -> bool:
    """Does ``draft`` end the response (a stop token, or the length limit)? Then its future is empty: ζ = 1."""
    tokens = draft[0]
    return len(chain.tokens) + len(tokens) >= max_new_tokens or (
        len(tokens) > 0 and int(tokens[-1]) in proposer.stop_ids
    )


def sps_answer(proposer: Proposer, prompt: torch.Tensor, alpha: float, settings: dict, max_new_tokens: int,
               rng: np.random.Generator) -> Chain:  # fmt: skip
    """One response to ``prompt``, grown block by block (``settings``: ``block_size``, ``candidates``, ``rollouts``,
    ``horizon``); its ``drawn`` counts every candidate and rollout token."""
    chain = Chain(prompt)
    while not chain.ended(proposer.stop_ids, max_new_tokens):
        chain.drawn += _block(proposer, chain, alpha, settings["block_size"], settings, max_new_tokens, rng)
    return chain


def method_chains(proposer: Proposer, prompt_ids: list[torch.Tensor], method: dict, n: int, max_new_tokens: int,
                  rng: np.random.Generator) -> list[Chain]:  # fmt: skip
    """``n`` answers per prompt, grouped by prompt (as ``power_mcmc.answer_rows`` reads them), with settings
    ``{"kind": "sps", "alpha", "block_size", "candidates", "rollouts", "horizon"}``."""
    return [sps_answer(proposer, p, method["alpha"], method, max_new_tokens, rng) for p in prompt_ids for _ in range(n)]
