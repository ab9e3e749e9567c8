"""Power sampling at mini scale: each sampler of p^α (``core.power.algorithms``: Algorithm 1, Power-SMC, scalable power
sampling) with the proposal drawn from a Hugging Face model by the mini sampler (``HFProposer``,
``generation.decode``), and the power-sampling study's answers to a method (``sample_method``,
``sample_benchmarks``)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import pandas as pd
import torch

from ..core import formats
from ..core.power.algorithms import ALGORITHMS
from ..core.power.mcmc import Chain, answer_rows, plain_costs
from ..core.power.methods import Method, Sampler
from . import generation, models


def pad(seqs: list[torch.Tensor], pad_id: int, left: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Token sequences as one padded batch and its mask: prompts left-padded, responses right-padded
    (verl's rollout layout); at least one column, so an empty response still has a place."""
    width = max(1, max(len(s) for s in seqs))
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, s in enumerate(seqs):
        cols = slice(width - len(s), width) if left else slice(0, len(s))
        ids[i, cols], mask[i, cols] = s, 1
    return ids, mask


class HFProposer:
    """The proposal q = p at temperature 1/α, drawn from a Hugging Face model by ``generation.decode``
    (a ``core.power.mcmc.Proposer``)."""

    def __init__(self, model, tokenizer, alpha: float):
        self.model, self.alpha = model, alpha
        self.pad_id, self.stop_ids = tokenizer.pad_token_id, (tokenizer.eos_token_id,)

    @torch.no_grad()
    def extend(self, prefixes: list[torch.Tensor], budgets: list[int]):
        """Up to ``budgets[i]`` tokens after ``prefixes[i]`` (prompt + response so far), stopping at
        EOS, each continuation with its log p and log q per token."""
        ids, mask = pad(prefixes, self.pad_id, left=True)
        new, logits = generation.decode(
            self.model, ids, mask, 1.0 / self.alpha, max(budgets), self.stop_ids[0], self.pad_id
        )
        # p and q are the softmax of each step's raw logits at temperature 1 and 1/α.
        logp = torch.log_softmax(logits, dim=-1).gather(-1, new[..., None]).squeeze(-1)
        logq = torch.log_softmax(self.alpha * logits, dim=-1).gather(-1, new[..., None]).squeeze(-1)
        results = []
        for i, budget in enumerate(budgets):
            row = new[i, :budget]
            stop = torch.isin(row, torch.tensor(self.stop_ids)).nonzero()
            keep = int(stop[0]) + 1 if len(stop) else len(row)
            results.append((row[:keep].clone(), logp[i, :keep].clone(), logq[i, :keep].clone()))
        return results


def prompt_ids(tokenizer, prompts: list[list[dict]]) -> list[torch.Tensor]:
    """Each prompt's chat-templated token ids, unpadded (chains grow at their own pace)."""
    ids, mask = generation.encode_prompts(tokenizer, prompts)
    return [row[m.bool()] for row, m in zip(ids, mask)]


def to_rollout(tokenizer, chains: list[Chain]) -> generation.Rollout:
    """The chains in the rollout layout (left-padded prompts, right-padded responses) the rest reads."""
    prompt_ids, prompt_mask = pad([c.prompt for c in chains], tokenizer.pad_token_id, left=True)
    response_ids, response_mask = pad([c.tokens for c in chains], tokenizer.pad_token_id, left=False)
    texts = tokenizer.batch_decode(response_ids, skip_special_tokens=True)
    return generation.Rollout(prompt_ids, prompt_mask, response_ids, response_mask, texts)


@torch.no_grad()
def sample_method(
    model,
    tokenizer,
    base,
    prompts,
    answers,
    method: Method,
    n: int,
    max_new_tokens: int,
    seed: int,
    batch_size: int = 256,
    styles: list[str] | None = None,
) -> pd.DataFrame:
    """``n`` graded responses per problem from one method, with what the comparison needs of each:
    the base model's log-likelihood of it (``base``, temperature 1), the tokens drawn to make it and the wall time
    (``seconds``: its batch's sampling time, shared equally by the batch's answers; scoring not included).
    Each is graded by its problem's reward style (``styles``; math-verify when not given).

    ``method`` is ``methods.Sample`` (plain sampling from ``model`` at its temperature: the base
    model, or a trained checkpoint) or a sampler of p^α on ``model`` by its kind (``core.power.algorithms``:
    ``methods.Power``, ``SMC``, ``SPS``, with their settings). ``seed`` fixes every draw.
    """
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    algorithm = ALGORITHMS.get(method.kind)
    proposer = HFProposer(model, tokenizer, method.alpha) if algorithm else None
    rows, per_batch = [], max(1, batch_size // n)
    for start in range(0, len(prompts), per_batch):
        chunk = prompts[start : start + per_batch]
        started = time.perf_counter()
        if algorithm:
            chains = algorithm.chains(proposer, prompt_ids(tokenizer, chunk), method, n, max_new_tokens, rng)
            rollout = to_rollout(tokenizer, chains)
            drawn, acceptance = algorithm.costs(chains)
        else:
            rollout = generation.generate(
                model,
                tokenizer,
                chunk,
                n=n,
                temperature=method.temperature,
                max_new_tokens=max_new_tokens,
                with_log_probs=False,
            )
            drawn, acceptance = plain_costs(rollout.response_mask.sum(dim=1).tolist())
        seconds = (time.perf_counter() - started) / len(rollout.texts)
        base_logp, _ = generation.forward_response(base, rollout, 1.0, with_entropy=False)
        lengths = rollout.response_mask.sum(dim=1).tolist()
        loglik = (base_logp * rollout.response_mask).sum(dim=1).tolist()
        batch = answer_rows(rollout.texts, answers, n, start, lengths, drawn, acceptance, loglik, styles)
        rows += [{**row, "seconds": seconds} for row in batch]
    return pd.DataFrame(rows)


def sample_benchmarks(
    base: str, policy: str, frames: dict[str, pd.DataFrame], sampler: Sampler
) -> Iterator[tuple[str, pd.DataFrame]]:
    """The power-sampling study's entry (the same as ``paper.power_sampling.sample_benchmarks``):
    ``sampler.n`` answers of one method (``sampler.method``) to every problem of each benchmark
    (``frames``, by name, in verl's layout), as ``(name, rows)`` in the order of ``frames``.

    ``policy`` is the model directory the method samples and ``base`` the base model's, which scores
    every answer (both loaded once); ``sampler`` also gives ``max_new_tokens`` and ``seed``."""
    base_model, tokenizer = models.load(base)
    policy_model = base_model if policy == base else models.load(policy)[0]
    for name, frame in frames.items():
        prompts, answers = formats.prompts_and_answers(frame)
        yield (
            name,
            sample_method(
                policy_model,
                tokenizer,
                base_model,
                prompts,
                answers,
                sampler.method,
                sampler.n,
                sampler.max_new_tokens,
                sampler.seed,
                styles=formats.problem_styles(frame),
            ),
        )
