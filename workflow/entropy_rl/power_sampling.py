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
one batched call per MCMC step, each chain with its own m: ``HFProposer`` (a Hugging Face
model's ``generate``, mini scale) or ``VllmProposer`` (a vLLM engine, paper scale).

Token cost counts every token the proposal drew, in the block extensions and in every
redraw, against which plain sampling draws each response token once.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from . import evaluate, generation, prompt_format


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


def _pad(seqs: list[torch.Tensor], pad_id: int, left: bool) -> tuple[torch.Tensor, torch.Tensor]:
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
    """The proposal q = p at temperature 1/α, drawn with a Hugging Face model's ``generate``."""

    def __init__(self, model, tokenizer, alpha: float):
        self.model, self.alpha = model, alpha
        self.pad_id, self.stop_ids = tokenizer.pad_token_id, (tokenizer.eos_token_id,)

    @torch.no_grad()
    def extend(self, prefixes: list[torch.Tensor], budgets: list[int]):
        """Up to ``budgets[i]`` tokens after ``prefixes[i]`` (prompt + response so far), stopping at
        EOS, each continuation with its log p and log q per token."""
        ids, mask = _pad(prefixes, self.pad_id, left=True)
        width = ids.shape[1]
        out = self.model.generate(
            input_ids=ids, attention_mask=mask, max_new_tokens=max(budgets), do_sample=True, temperature=1.0 / self.alpha,
            top_k=0, top_p=1.0, pad_token_id=self.pad_id, eos_token_id=list(self.stop_ids),
            output_logits=True, return_dict_in_generate=True,
        )  # fmt: skip
        new = out.sequences[:, width:]
        # generate returns each step's raw logits; p and q are their softmax at temperature 1 and 1/α.
        logits = torch.stack(out.logits, dim=1).float()
        logp = torch.log_softmax(logits, dim=-1).gather(-1, new[..., None]).squeeze(-1)
        logq = torch.log_softmax(self.alpha * logits, dim=-1).gather(-1, new[..., None]).squeeze(-1)
        results = []
        for i, budget in enumerate(budgets):
            row = new[i, :budget]
            stop = torch.isin(row, torch.tensor(self.stop_ids)).nonzero()
            keep = int(stop[0]) + 1 if len(stop) else len(row)
            results.append((row[:keep].clone(), logp[i, :keep].clone(), logq[i, :keep].clone()))
        return results


class VllmProposer:
    """The proposal q = p at temperature 1/α, drawn by a vLLM engine: every chain's draft of an MCMC
    step in one ``generate`` call, so the engine batches them.

    The engine must be built with ``logprobs_mode="processed_logprobs"`` (``vllm_engine``): a drawn
    token's logprob is then taken after the 1/α temperature, i.e. log q. log p comes from a second
    batched call that scores prefix + draft with prompt logprobs, which vLLM computes from the raw
    logits whatever the mode (``vllm_logprobs``). Each request has its own seed, drawn from
    ``seed``, so its draws depend on that seed and its logits alone; the logits of a request repeat
    whatever else is in its batch only with vLLM's batch invariance, which ``vllm_engine`` turns on
    (see there for what that holds on). A draft ends at any of ``stop_ids`` (the tokenizer's EOS and
    the model's generation config's, as vLLM's own stopping has it) or at its budget.
    """

    def __init__(self, llm, alpha: float, stop_ids: tuple[int, ...], seed: int | np.random.SeedSequence):
        self.llm, self.alpha, self.stop_ids = llm, alpha, tuple(stop_ids)
        self.rng = np.random.default_rng(seed)

    def extend(self, prefixes: list[torch.Tensor], budgets: list[int]):
        from vllm import SamplingParams  # the GPU image has vLLM; the mini scale never imports it

        seeds = self.rng.integers(0, 2**31 - 1, size=len(prefixes))
        params = [
            SamplingParams(temperature=1.0 / self.alpha, max_tokens=b, logprobs=0, seed=int(s), ignore_eos=True,
                           stop_token_ids=list(self.stop_ids))
            for b, s in zip(budgets, seeds)
        ]  # fmt: skip
        prefixes = [p.tolist() for p in prefixes]
        outputs = self.llm.generate(_tokens_prompts(prefixes), params, use_tqdm=False)
        drafts = [list(out.outputs[0].token_ids) for out in outputs]
        logq = [[pos[t].logprob for pos, t in zip(out.outputs[0].logprobs, d)] for out, d in zip(outputs, drafts)]
        logp = vllm_logprobs(self.llm, prefixes, drafts)
        return [
            (torch.tensor(d, dtype=torch.long), torch.tensor(lp, dtype=torch.float32), torch.tensor(lq, dtype=torch.float32))
            for d, lp, lq in zip(drafts, logp, logq)
        ]


def _tokens_prompts(token_ids: list[list[int]]) -> list:
    from vllm.inputs import TokensPrompt

    return [TokensPrompt(prompt_token_ids=ids) for ids in token_ids]


def stop_ids(model_dir: str, tokenizer) -> tuple[int, ...]:
    """The tokens that end an answer at paper scale: the tokenizer's EOS and those of the model's
    generation config, which vLLM's own stopping (and so the evaluation) uses."""
    from transformers import GenerationConfig

    ids = {tokenizer.eos_token_id}
    try:
        eos = GenerationConfig.from_pretrained(model_dir).eos_token_id
    except OSError:  # no generation_config.json
        eos = None
    ids |= set(eos if isinstance(eos, list) else [eos])
    return tuple(sorted(i for i in ids if i is not None))


# vLLM repeats a seeded request only if its logits do not depend on what else is batched with it.
# Power sampling batches every chain of an MCMC step together, and with two engines in one process and
# vLLM's engine core in a subprocess the batches depend on timing. VLLM_BATCH_INVARIANT=1 makes each
# request's logits independent of its batch (vllm/model_executor/layers/batch_invariant.py: Triton
# matmul, log-softmax and mean kernels; split-k off; cascade attention off; for tensor parallelism,
# NCCL pinned to one channel and a tree all-reduce, custom all-reduce off: slower decoding). Limits:
# vLLM 0.24's envs.py says it "Requires NVIDIA GPU with compute capability >= 9.0" while its
# batch_invariant.py has an Ampere (SM80) path, and vLLM's docs promise repeats only on the same
# hardware and vLLM version (and so the same GPU model and tensor-parallel size). The alternative,
# VLLM_ENABLE_V1_MULTIPROCESSING=0 (deterministic scheduling), runs the engine core in this process,
# which two engines in one process do not suit.
REPRODUCIBLE_ENV = {"VLLM_BATCH_INVARIANT": "1"}


def vllm_engine(model_dir: str, tensor_parallel: int, seed: int, max_model_len: int, memory: float = 0.85):
    """A vLLM engine whose sampled-token logprobs are log q (after temperature), as ``VllmProposer``
    needs; prompt logprobs stay the model's own log p. ``tensor_parallel`` is the model's own
    (``paper.models.<model>.tensor_parallel``: vLLM refuses a size that does not divide the attention
    heads). Built batch-invariant (``REPRODUCIBLE_ENV``), so a rerun on the same GPU model, vLLM
    version and tensor-parallel size draws the same answers."""
    os.environ.update(REPRODUCIBLE_ENV)  # read by vLLM when the engine starts, and by its workers
    from vllm import LLM

    return LLM(model=model_dir, tensor_parallel_size=tensor_parallel, seed=seed, max_model_len=max_model_len,
               gpu_memory_utilization=memory, logprobs_mode="processed_logprobs")  # fmt: skip


def vllm_logprobs(llm, prefixes: list[list[int]], continuations: list[list[int]]) -> list[list[float]]:
    """log p (temperature 1) of each continuation's tokens after its prefix: one prefill per pair
    with prompt logprobs (one token generated, unused)."""
    from vllm import SamplingParams

    todo = [i for i, c in enumerate(continuations) if c]
    out = [[] for _ in continuations]
    if not todo:
        return out
    scored = llm.generate(
        _tokens_prompts([prefixes[i] + continuations[i] for i in todo]),
        SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0),
        use_tqdm=False,
    )
    for i, res in zip(todo, scored):
        start = len(prefixes[i])  # prompt_logprobs[t] is log p(x_t | x_<t); entry 0 is None
        out[i] = [res.prompt_logprobs[start + j][t].logprob for j, t in enumerate(continuations[i])]
    return out


def advance_block(proposer, chains: list[Chain], end: int, alpha: float, n_mcmc: int, rng: np.random.Generator) -> None:
    """Extend every chain to ``end`` response tokens (or its EOS), then run ``n_mcmc`` MH steps on each."""
    budgets = [end - len(c.tokens) for c in chains]
    for c, (tok, lp, lq) in zip(chains, proposer.extend([torch.cat([c.prompt, c.tokens]) for c in chains], budgets)):
        c.tokens, c.logp, c.logq = torch.cat([c.tokens, tok]), torch.cat([c.logp, lp]), torch.cat([c.logq, lq])
        c.drawn += len(tok)
    for _ in range(n_mcmc):
        cuts = [int(rng.integers(0, len(c.tokens))) for c in chains]
        drafts = proposer.extend(
            [torch.cat([c.prompt, c.tokens[:m]]) for c, m in zip(chains, cuts)], [end - m for m in cuts]
        )
        for c, m, (tok, lp, lq) in zip(chains, cuts, drafts):
            c.drawn += len(tok)
            c.proposals += 1
            # The cut is uniform over the current response, so a redraw that changes the length changes
            # the chance of choosing the reverse move: |y| / |y'| keeps the chain's target p^α.
            log_ratio = (
                alpha * (float(lp.sum()) - float(c.logp[m:].sum()))
                + float(c.logq[m:].sum()) - float(lq.sum())
                + math.log(len(c.tokens)) - math.log(m + len(tok))
            )  # fmt: skip
            if math.log(rng.random()) < log_ratio:  # u < A, compared in logs
                c.tokens, c.logp, c.logq = (
                    torch.cat([c.tokens[:m], tok]),
                    torch.cat([c.logp[:m], lp]),
                    torch.cat([c.logq[:m], lq]),
                )
                c.accepted += 1


def sample_chains(proposer, prompt_ids: list[torch.Tensor], alpha: float, block_size: int, n_mcmc: int,
                  max_new_tokens: int, rng: np.random.Generator) -> list[Chain]:  # fmt: skip
    """One power-sampled response per entry of ``prompt_ids`` (Algorithm 1, all chains in step).

    ``proposer.extend`` draws from q; ``HFProposer`` here, a vLLM engine at paper scale."""
    chains = [Chain(p) for p in prompt_ids]
    for k in range(math.ceil(max_new_tokens / block_size)):
        live = [c for c in chains if not c.ended(proposer.stop_ids, max_new_tokens)]
        if not live:
            break
        advance_block(proposer, live, min((k + 1) * block_size, max_new_tokens), alpha, n_mcmc, rng)
    return chains


def prompt_ids(tokenizer, prompts: list[list[dict]]) -> list[torch.Tensor]:
    """Each prompt's chat-templated token ids, unpadded (chains grow at their own pace)."""
    ids, mask = generation.encode_prompts(tokenizer, prompts)
    return [row[m.bool()] for row, m in zip(ids, mask)]


def to_rollout(tokenizer, chains: list[Chain]) -> generation.Rollout:
    """The chains in the rollout layout (left-padded prompts, right-padded responses) the rest reads."""
    prompt_ids, prompt_mask = _pad([c.prompt for c in chains], tokenizer.pad_token_id, left=True)
    response_ids, response_mask = _pad([c.tokens for c in chains], tokenizer.pad_token_id, left=False)
    texts = tokenizer.batch_decode(response_ids, skip_special_tokens=True)
    return generation.Rollout(prompt_ids, prompt_mask, response_ids, response_mask, texts)


@torch.no_grad()
def sample_method(model, tokenizer, base, prompts, answers, method: dict, n: int, max_new_tokens: int, seed: int,
                  batch_size: int = 256) -> pd.DataFrame:  # fmt: skip
    """``n`` graded responses per problem from one method, with what the comparison needs of each:
    the base model's log-likelihood of it (``base``, temperature 1) and the tokens drawn to make it.

    ``method`` is ``{"kind": "sample", "temperature": t}`` (plain sampling from ``model``: the base
    model, or a trained checkpoint) or ``{"kind": "power", "alpha", "block_size", "n_mcmc"}``
    (Algorithm 1 on ``model``). ``seed`` fixes every draw.
    """
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    proposer = HFProposer(model, tokenizer, method["alpha"]) if method["kind"] == "power" else None
    rows, per_batch = [], max(1, batch_size // n)
    for start in range(0, len(prompts), per_batch):
        chunk = prompts[start : start + per_batch]
        if method["kind"] == "power":
            ids = [p for p in prompt_ids(tokenizer, chunk) for _ in range(n)]
            chains = sample_chains(
                proposer, ids, method["alpha"], method["block_size"], method["n_mcmc"], max_new_tokens, rng
            )
            rollout = to_rollout(tokenizer, chains)
            drawn = [c.drawn for c in chains]
            acceptance = [c.accepted / c.proposals if c.proposals else math.nan for c in chains]
        else:
            rollout = generation.generate(
                model, tokenizer, chunk, n=n, temperature=method["temperature"], max_new_tokens=max_new_tokens
            )
            drawn = rollout.response_mask.sum(dim=1).tolist()
            acceptance = [math.nan] * len(drawn)
        base_logp, _ = generation.forward_response(base, rollout, 1.0, with_entropy=False)
        lengths = rollout.response_mask.sum(dim=1).tolist()
        loglik = (base_logp * rollout.response_mask).sum(dim=1).tolist()
        rows += answer_rows(rollout.texts, answers, n, start, lengths, drawn, acceptance, loglik)
    return pd.DataFrame(rows)


def answer_rows(texts, answers, n, start, lengths, drawn, acceptance, loglik, styles=None) -> list[dict]:
    """Graded rows of a grouped batch of answers (``evaluate.graded_rows``) with what the comparison
    needs of each: its tokens, the tokens drawn to make it, the MH acceptance rate, and the base
    model's log-likelihood of it, in all and per token."""
    return [
        {**row, "response_tokens": int(lengths[j]), "drawn_tokens": int(drawn[j]), "acceptance": acceptance[j],
         "base_loglik": float(loglik[j]), "base_loglik_per_token": float(loglik[j]) / max(int(lengths[j]), 1)}
        for j, row in enumerate(evaluate.graded_rows(texts, answers, n, start, styles))
    ]  # fmt: skip


def context_needed(prompt_ids: list[list[int]], max_new_tokens: int) -> int:
    """The ``max_model_len`` a power-sampling engine needs: the longest prompt, its longest answer, and
    the one token a scoring request (``vllm_logprobs``) generates after prompt + answer."""
    return max(len(x) for x in prompt_ids) + max_new_tokens + 1


def sample_method_vllm(llm, base_llm, tokenizer, prompts, answers, styles, method: dict, n: int, max_new_tokens: int,
                       seed: int, stop_ids: tuple[int, ...], chat_template: str | None = None) -> pd.DataFrame:  # fmt: skip
    """Paper scale: ``sample_method`` with vLLM engines (``vllm_engine``), the same rows.

    ``llm`` samples (the base model, or an RL checkpoint), ``base_llm`` scores every answer (the same
    engine when the method samples the base model). Prompts are rendered with ``chat_template``
    (``prompt_format.chat_template``: the model's prompt format; ``None`` is the tokenizer's own) as
    vLLM's ``LLM.chat`` would. All problems go to the engine at once, so it batches them; a
    power-sampling method advances all its chains together (``VllmProposer``). Answers end at
    ``stop_ids`` or ``max_new_tokens`` and are graded by their problem's style. A prompt too long for
    an engine's ``max_model_len`` stops the run before any draw (vLLM would cut its answers at the
    context, finish reason "length", which the rows would not show). Plain sampling gives problem k
    the seed ``seed + k·n``: vLLM draws the i-th of a request's n answers with seed + i, so no two
    problems share a random stream.
    """
    from vllm import SamplingParams

    ids = prompt_format.render(tokenizer, prompts, chat_template)
    for engine in {id(llm): llm, id(base_llm): base_llm}.values():
        cap = engine.model_config.max_model_len
        if context_needed(ids, max_new_tokens) > cap:
            longest = max(range(len(ids)), key=lambda i: len(ids[i]))
            raise ValueError(f"problem {longest}: its prompt ({len(ids[longest])} tokens) + {max_new_tokens} answer "
                             f"tokens + 1 scoring token is over the engine's max_model_len {cap}")  # fmt: skip
    if method["kind"] == "power":
        drafts, moves = np.random.SeedSequence(seed).spawn(2)  # independent streams: request seeds, cuts and MH draws
        proposer = VllmProposer(llm, method["alpha"], stop_ids, drafts)
        chains = sample_chains(
            proposer, [torch.tensor(x) for x in ids for _ in range(n)], method["alpha"], method["block_size"],
            method["n_mcmc"], max_new_tokens, np.random.default_rng(moves),
        )  # fmt: skip
        responses = [c.tokens.tolist() for c in chains]
        drawn = [c.drawn for c in chains]
        acceptance = [c.accepted / c.proposals if c.proposals else math.nan for c in chains]
    else:
        params = [
            SamplingParams(n=n, temperature=method["temperature"], max_tokens=max_new_tokens, seed=seed + k * n,
                           ignore_eos=True, stop_token_ids=list(stop_ids))
            for k in range(len(ids))
        ]  # fmt: skip
        outputs = llm.generate(_tokens_prompts(ids), params, use_tqdm=False)
        responses = [list(c.token_ids) for out in outputs for c in out.outputs]
        drawn = [len(r) for r in responses]
        acceptance = [math.nan] * len(responses)
    loglik = [sum(lp) for lp in vllm_logprobs(base_llm, [x for x in ids for _ in range(n)], responses)]
    texts = tokenizer.batch_decode(responses, skip_special_tokens=True)
    lengths = [len(r) for r in responses]
    return pd.DataFrame(answer_rows(texts, answers, n, 0, lengths, drawn, acceptance, loglik, styles))
