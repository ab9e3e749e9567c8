"""Power-SMC (Azizi et al., 2026): p^α sampled by sequential Monte Carlo over a population of partial answers.

The target over a response y is π(y) ∝ p(y)^α (p the base model at temperature 1), as for Algorithm 1
(``mcmc``). N particles grow together from the same proposal q (the base model at temperature 1/α, the
``Proposer`` of ``mcmc``), each carrying a log importance weight that gains α·log p(y_t) − log q(y_t) per
token it draws; with q at temperature 1/α that gain is the same for every token choice at a prefix (the log of
Σ_v p(v|prefix)^α), so particles differ in weight only through their prefixes. After every ``resample_every``
tokens, when the effective sample size 1/ΣW² falls below ``ess_threshold``·N, the population is resampled
systematically (ancestors drawn in proportion to the weights, the weights reset). A particle that has ended (a
stop token, or the length limit) is absorbing: it draws nothing more and its weight stays. When every particle
has ended, the answer is one particle drawn in proportion to its weight.

As N grows the answer's distribution tends to p^α over responses of at most ``max_new_tokens`` tokens; for a finite
N it is biased (one draw of sampling-importance-resampling), which tests/core/power/test_power_exactness.py measures.
The paper's exponent-bridging schedule (α raised from 1 over the first tokens) changes no limit and is left out.

Token cost: every token any particle drew, the price of one answer.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .mcmc import Chain, Proposer
from .methods import SMC


def effective_sample_size(log_w: np.ndarray) -> float:
    """1 / Σ W², W the normalised weights."""
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    return float(1.0 / np.sum(w**2))


def systematic_resample(log_w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Ancestor indices by systematic resampling: one uniform u, positions (u + i) / N on the weights' CDF."""
    w = np.exp(log_w - log_w.max())
    cdf = np.cumsum(w / w.sum())
    cdf[-1] = 1.0
    return np.searchsorted(cdf, (rng.random() + np.arange(len(log_w))) / len(log_w), side="right")


def smc_answers(
    proposer: Proposer,
    prompts: list[torch.Tensor],
    alpha: float,
    particles: int,
    resample_every: int,
    ess_threshold: float,
    max_new_tokens: int,
    rng: np.random.Generator,
) -> list[Chain]:
    """One response to each of ``prompts``, each from a population of its own: ``particles`` partial answers advanced
    ``resample_every`` tokens at a time (every population's live particles in one batched call), weighted towards p^α
    and resampled when their effective size falls below ``ess_threshold``·N; then one drawn by weight. A returned
    chain's ``drawn`` counts every token its population drew."""
    pops = [[Chain(p) for _ in range(particles)] for p in prompts]
    log_w, drawn = np.zeros((len(prompts), particles)), np.zeros(len(prompts), dtype=int)
    ended = lambda c: c.ended(proposer.stop_ids, max_new_tokens)
    while live := [(a, i) for a, pop in enumerate(pops) for i, c in enumerate(pop) if not ended(c)]:
        budgets = [min(resample_every, max_new_tokens - len(pops[a][i].tokens)) for a, i in live]
        drafts = proposer.extend([torch.cat([pops[a][i].prompt, pops[a][i].tokens]) for a, i in live], budgets)
        for (a, i), draft in zip(live, drafts):
            tokens, logp, logq = draft
            drawn[a] += len(tokens)
            log_w[a, i] += alpha * float(logp.sum()) - float(logq.sum())
            pops[a][i].splice(len(pops[a][i].tokens), draft)
        for a in sorted({a for a, _ in live}):
            if effective_sample_size(log_w[a]) < ess_threshold * particles:
                pops[a] = [_copy(pops[a][k]) for k in systematic_resample(log_w[a], rng)]
                log_w[a] = 0.0
    answers = []
    for a, pop in enumerate(pops):
        w = np.exp(log_w[a] - log_w[a].max())
        answers.append(_copy(pop[int(rng.choice(particles, p=w / w.sum()))]))
        answers[-1].drawn = int(drawn[a])
    return answers


def _copy(chain: Chain) -> Chain:
    return Chain(chain.prompt, chain.tokens, chain.logp, chain.logq)


def method_chains(
    proposer: Proposer,
    prompt_ids: list[torch.Tensor],
    method: SMC,
    n: int,
    max_new_tokens: int,
    rng: np.random.Generator,
) -> list[Chain]:
    """``n`` answers per prompt, each from its own population (all advanced together), grouped by prompt (as
    ``mcmc.answer_rows`` reads them), with an SMC method's settings (``alpha``, ``particles``, ``resample_every``,
    ``ess_threshold``)."""
    prompts = [p for p in prompt_ids for _ in range(n)]
    return smc_answers(
        proposer,
        prompts,
        method.alpha,
        method.particles,
        method.resample_every,
        method.ess_threshold,
        max_new_tokens,
        rng,
    )


def costs(chains: list[Chain]) -> tuple[list[int], list[float]]:
    """Each answer's tokens drawn (its population's), and no MH acceptance rate."""
    return [c.drawn for c in chains], [math.nan] * len(chains)
