"""A toy autoregressive model small enough to list every answer, so p^α is exact: the samplers of p^α
(core.power.mcmc, core.power.smc, core.power.sps) are measured against it by tests/core/power/test_power_exactness.py and
benchmarks/power_exactness.py.

Three tokens (two symbols and a stop token), next-token probabilities fixed per prefix (a Dirichlet draw seeded by
the prefix), answers of at most ``MAX_TOKENS`` tokens: 31 answers. The proposal is the workflow's (``Proposer``:
p at temperature 1/α), drawn token by token.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter

import numpy as np
import torch
from entropy_rl.core.power import mcmc as power_mcmc
from entropy_rl.core.power import smc as power_smc
from entropy_rl.core.power import sps as power_sps
from entropy_rl.core.power.methods import SMC, SPS, Power

STOP, VOCAB, MAX_TOKENS, ALPHA = 2, 3, 4, 4.0


@functools.cache
def next_probs(prefix: tuple[int, ...]) -> np.ndarray:
    """p(· | prefix): fixed, uneven, and different for every prefix (so p^α differs from low temperature)."""
    rng = np.random.default_rng(hash(prefix) % 2**32 if prefix else 7)
    return rng.dirichlet(np.full(VOCAB, 1.0))


class ToyProposer:
    """q = p at temperature 1/α, drawn token by token up to a budget or the stop token."""

    stop_ids = (STOP,)

    def __init__(self, alpha: float, rng: np.random.Generator):
        self.alpha, self.rng = alpha, rng

    def extend(self, prefixes, budgets):
        out = []
        for prefix, budget in zip(prefixes, budgets):
            seq, toks, lp, lq = tuple(int(t) for t in prefix[1:]), [], [], []  # prefix[0] is the prompt token
            for _ in range(budget):
                p = next_probs(seq)
                q = p**self.alpha / np.sum(p**self.alpha)
                v = int(self.rng.choice(VOCAB, p=q))
                toks.append(v), lp.append(math.log(p[v])), lq.append(math.log(q[v]))
                seq += (v,)
                if v == STOP:
                    break
            out.append((torch.tensor(toks, dtype=torch.long), torch.tensor(lp), torch.tensor(lq)))
        return out


def answers() -> list[tuple[int, ...]]:
    """Every answer: a stop token after fewer than MAX_TOKENS symbols, or MAX_TOKENS tokens."""
    out = []
    for n in range(MAX_TOKENS + 1):
        for body in itertools.product(range(STOP), repeat=n):
            if n < MAX_TOKENS:
                out.append((*body, STOP))
            elif n == MAX_TOKENS:
                out.append(body)
    # a stop token as the last of MAX_TOKENS tokens ends it too
    return out


def log_prob(y: tuple[int, ...], alpha: float = 1.0) -> float:
    """log of p(y) at temperature 1/alpha token by token (alpha 1: the base model)."""
    total = 0.0
    for t, v in enumerate(y):
        p = next_probs(y[:t]) ** alpha
        total += math.log(p[v] / p.sum())
    return total


def exact(alpha: float, per_token: bool = False) -> dict:
    """p^α over every answer (or, ``per_token``, the low-temperature distribution), normalised."""
    ys = answers()
    logs = np.array([log_prob(y, alpha) if per_token else alpha * log_prob(y) for y in ys])
    w = np.exp(logs - logs.max())
    return dict(zip(ys, w / w.sum()))


def tv(samples: list[tuple[int, ...]], target: dict) -> float:
    counts = Counter(samples)
    return 0.5 * sum(abs(counts.get(y, 0) / len(samples) - p) for y, p in target.items()) + 0.5 * sum(
        c / len(samples) for y, c in counts.items() if y not in target
    )


def floor(target: dict, n: int, rng: np.random.Generator) -> float:
    """The Monte Carlo floor: the distance of ``n`` exact draws from the target."""
    ys = list(target)
    idx = rng.choice(len(ys), size=n, p=np.array(list(target.values())))
    return tv([ys[i] for i in idx], target)


def draw(sampler: str, n: int, seed: int, **settings) -> tuple[list[tuple[int, ...]], float]:
    """``n`` answers of one sampler at ``settings`` (its method's settings, less alpha), and the tokens drawn per
    answer token (plain sampling: 1)."""
    rng = np.random.default_rng(seed)
    proposer, prompts = ToyProposer(ALPHA, rng), [torch.tensor([0])] * n
    if sampler == "low-temp":  # Algorithm 1 with no MH step: the proposal itself
        chains = power_mcmc.sample_chains(proposer, prompts, ALPHA, MAX_TOKENS, 0, MAX_TOKENS, rng)
    elif sampler == "mcmc":
        chains = power_mcmc.method_chains(proposer, prompts, Power(alpha=ALPHA, **settings), 1, MAX_TOKENS, rng)
    elif sampler == "smc":
        chains = power_smc.method_chains(proposer, prompts, SMC(alpha=ALPHA, **settings), 1, MAX_TOKENS, rng)
    else:
        chains = power_sps.method_chains(proposer, prompts, SPS(alpha=ALPHA, **settings), 1, MAX_TOKENS, rng)
    drawn = sum(c.drawn for c in chains) if sampler != "low-temp" else sum(len(c.tokens) for c in chains)
    return [tuple(int(t) for t in c.tokens) for c in chains], drawn / sum(len(c.tokens) for c in chains)
