"""Power sampling (Karan & Du, 2025, Algorithm 1): responses from p^α of a base model, without training.

The target over a response y to a prompt is π(y) ∝ p(y)^α, with p the base model at
temperature 1; the proposal q is the same model at temperature 1/α. A response grows in
blocks of B tokens. Each block is first extended with q; then each of N_MCMC
Metropolis–Hastings steps picks a position m uniformly among the response's tokens so far,
redraws the response from m to the end of the block with q, and accepts the redraw y' with
probability

    min{1, (p(y') / p(y))^α · q(y_{≥m} | y_{<m}) / q(y'_{≥m} | y_{<m}) · |y| / |y'|}

The shared prefix y_{<m} cancels from both ratios. The last factor is ours: Algorithm 1 draws m
over a block of fixed length, but a response that ends (EOS) inside a block is shorter, and m
is drawn over the response's own |y| positions, so the reverse move's chance differs when a
redraw changes the length. A chain stops after the block in which its response ends, or at
the length limit. Chains are independent; they advance together,
one batched call per MCMC step, each chain with its own m.

This module is the algorithm alone: the proposal comes from a ``Proposer``, a Hugging Face
model's ``generate`` at mini scale (``mini.power_sampling.HFProposer``) or a vLLM engine at paper
scale (``paper.power_sampling.VllmProposer``); every MH step of either goes through ``mh_step``.

Token cost counts every token the proposal drew, in the block extensions and in every
redraw, against which plain sampling draws each response token once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import torch

from .. import scoring
from .methods import Power

# A proposal's continuation of one prefix: its tokens, and log p (temperature 1) and log q
# (temperature 1/α) of each.
Draft = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


class Proposer(Protocol):
    """The proposal q = p at temperature 1/α, as the chains use it."""

    stop_ids: tuple[int, ...]  # the tokens that end a response

    def extend(self, prefixes: list[torch.Tensor], budgets: list[int]) -> list[Draft]:
        """Up to ``budgets[i]`` tokens after ``prefixes[i]`` (prompt + response so far), ending at
        a stop token, each with its log p and log q: every prefix in one batched call."""
        ...


@dataclass
class Chain:
    prompt: torch.Tensor  # the prompt's token ids, unpadded
    tokens: torch.Tensor = field(default_factory=lambda: torch.empty(0, dtype=torch.long))
    logp: torch.Tensor = field(default_factory=lambda: torch.empty(0))  # per token, base model at temperature 1
    logq: torch.Tensor = field(default_factory=lambda: torch.empty(0))  # per token, proposal at temperature 1/α
    drawn: int = 0  # tokens the proposal drew for this chain
    proposals: int = 0
    accepted: int = 0

    def ended(self, stop_ids: tuple[int, ...], max_tokens: int) -> bool:
        return len(self.tokens) >= max_tokens or (len(self.tokens) > 0 and int(self.tokens[-1]) in stop_ids)

    def splice(self, m: int, draft: Draft) -> None:
        """The response's first ``m`` tokens followed by ``draft``."""
        tokens, logp, logq = draft
        self.tokens = torch.cat([self.tokens[:m], tokens])
        self.logp = torch.cat([self.logp[:m], logp])
        self.logq = torch.cat([self.logq[:m], logq])

    def acceptance(self) -> float:
        """The share of MH redraws accepted (NaN before the first)."""
        return self.accepted / self.proposals if self.proposals else math.nan


def log_acceptance(chain: Chain, m: int, draft: Draft, alpha: float) -> float:
    """log of the MH ratio (module docstring) for replacing the response from ``m`` on with ``draft``.

    The cut is uniform over the current response, so a redraw that changes the length changes the
    chance of choosing the reverse move: |y| / |y'| keeps the chain's target p^α."""
    tokens, logp, logq = draft
    return (
        alpha * (float(logp.sum()) - float(chain.logp[m:].sum()))
        + float(chain.logq[m:].sum())
        - float(logq.sum())
        + math.log(len(chain.tokens))
        - math.log(m + len(tokens))
    )


def mh_step(chain: Chain, m: int, draft: Draft, alpha: float, rng: np.random.Generator) -> bool:
    """One Metropolis–Hastings step: count the redraw ``draft`` from position ``m``, accept it with
    probability min(1, ratio) (one uniform from ``rng``) and splice it in if accepted."""
    chain.drawn += len(draft[0])
    chain.proposals += 1
    log_ratio = log_acceptance(chain, m, draft, alpha)
    if math.log(rng.random()) < log_ratio:  # u < A, compared in logs
        chain.splice(m, draft)
        chain.accepted += 1
        return True
    return False


def advance_block(
    proposer: Proposer, chains: list[Chain], end: int, alpha: float, n_mcmc: int, rng: np.random.Generator
) -> None:
    """Extend every chain to ``end`` response tokens (or its EOS), then run ``n_mcmc`` MH steps on each."""
    budgets = [end - len(c.tokens) for c in chains]
    for c, draft in zip(chains, proposer.extend([torch.cat([c.prompt, c.tokens]) for c in chains], budgets)):
        c.drawn += len(draft[0])
        c.splice(len(c.tokens), draft)
    for _ in range(n_mcmc):
        cuts = [int(rng.integers(0, len(c.tokens))) for c in chains]
        drafts = proposer.extend(
            [torch.cat([c.prompt, c.tokens[:m]]) for c, m in zip(chains, cuts)], [end - m for m in cuts]
        )
        for c, m, draft in zip(chains, cuts, drafts):
            mh_step(c, m, draft, alpha, rng)


def sample_chains(
    proposer: Proposer,
    prompt_ids: list[torch.Tensor],
    alpha: float,
    block_size: int,
    n_mcmc: int,
    max_new_tokens: int,
    rng: np.random.Generator,
) -> list[Chain]:
    """One power-sampled response per entry of ``prompt_ids`` (Algorithm 1, all chains in step)."""
    chains = [Chain(p) for p in prompt_ids]
    for k in range(math.ceil(max_new_tokens / block_size)):
        live = [c for c in chains if not c.ended(proposer.stop_ids, max_new_tokens)]
        if not live:
            break
        advance_block(proposer, live, min((k + 1) * block_size, max_new_tokens), alpha, n_mcmc, rng)
    return chains


def method_chains(
    proposer: Proposer,
    prompt_ids: list[torch.Tensor],
    method: Power,
    n: int,
    max_new_tokens: int,
    rng: np.random.Generator,
) -> list[Chain]:
    """``n`` chains per prompt, grouped by prompt (as ``answer_rows`` reads them), with a power
    method's settings (``alpha``, ``block_size``, ``n_mcmc``)."""
    ids = [p for p in prompt_ids for _ in range(n)]
    return sample_chains(proposer, ids, method.alpha, method.block_size, method.n_mcmc, max_new_tokens, rng)


def chain_costs(chains: list[Chain]) -> tuple[list[int], list[float]]:
    """Each chain's tokens drawn and MH acceptance rate, as ``answer_rows`` takes them."""
    return [c.drawn for c in chains], [c.acceptance() for c in chains]


def plain_costs(lengths: list[int]) -> tuple[list[int], list[float]]:
    """The same for plain sampling: one draw per response token, no MH step."""
    return list(lengths), [math.nan] * len(lengths)


def answer_rows(texts, answers, n, start, lengths, drawn, acceptance, loglik, styles=None) -> list[dict]:
    """Graded rows of a grouped batch of answers (``scoring.graded_rows``) with what the comparison
    needs of each: its tokens, the tokens drawn to make it, the MH acceptance rate, and the base
    model's log-likelihood of it, in all and per token."""
    return [
        {
            **row,
            "response_tokens": int(lengths[j]),
            "drawn_tokens": int(drawn[j]),
            "acceptance": acceptance[j],
            "base_loglik": float(loglik[j]),
            "base_loglik_per_token": float(loglik[j]) / max(int(lengths[j]), 1),
        }
        for j, row in enumerate(scoring.graded_rows(texts, answers, n, start, styles))
    ]


def context_needed(prompt_ids: list[list[int]], max_new_tokens: int) -> int:
    """The ``max_model_len`` a power-sampling engine needs: the longest prompt, its longest answer, and
    the one token a scoring request (``paper.power_sampling.vllm_logprobs``) generates after prompt + answer."""
    return max(len(x) for x in prompt_ids) + max_new_tokens + 1
