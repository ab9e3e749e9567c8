"""Power sampling at paper scale: Algorithm 1 (``core.power.mcmc``) with the proposal drawn by a
vLLM engine (``VllmProposer``), every chain of an MCMC step in one batched call, and the
power-sampling study's answers to a method (``sample_method``, ``sample_benchmarks``)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator

import numpy as np
import pandas as pd
import torch

from ..core import formats
from ..core.power.mcmc import answer_rows, chain_costs, context_needed, method_chains, plain_costs
from ..core.power.methods import Power, Sample, Sampler
from . import prompt_format

log = logging.getLogger(__name__)


class VllmProposer:
    """The proposal q = p at temperature 1/α, drawn by a vLLM engine: every chain's draft of an MCMC
    step in one ``generate`` call, so the engine batches them (a ``core.power.mcmc.Proposer``).

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
            SamplingParams(
                temperature=1.0 / self.alpha,
                max_tokens=b,
                logprobs=0,
                seed=int(s),
                ignore_eos=True,
                stop_token_ids=list(self.stop_ids),
            )
            for b, s in zip(budgets, seeds)
        ]
        prefixes = [p.tolist() for p in prefixes]
        outputs = self.llm.generate(_tokens_prompts(prefixes), params, use_tqdm=False)
        drafts = [list(out.outputs[0].token_ids) for out in outputs]
        logq = [[pos[t].logprob for pos, t in zip(out.outputs[0].logprobs, d)] for out, d in zip(outputs, drafts)]
        logp = vllm_logprobs(self.llm, prefixes, drafts)
        return [
            (
                torch.tensor(d, dtype=torch.long),
                torch.tensor(lp, dtype=torch.float32),
                torch.tensor(lq, dtype=torch.float32),
            )
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
# which two engines in one process do not suit. vLLM has batch-invariant kernels only for CUDA, ROCm and XPU
# devices (``enable_batch_invariant_mode``: Triton); elsewhere (a CPU) the setting is left off, and the job log says
# so (``batch_invariance_missing``).
REPRODUCIBLE_ENV = {"VLLM_BATCH_INVARIANT": "1"}


def batch_invariance_missing() -> str | None:
    """The device of this machine's vLLM platform when vLLM has no batch-invariant kernels for it (only CUDA,
    ROCm and XPU have them), else None."""
    from vllm.platforms import current_platform

    return None if current_platform.is_cuda_alike() or current_platform.is_xpu() else current_platform.device_type


def vllm_engine(model_dir: str, tensor_parallel: int, seed: int, max_model_len: int, memory: float = 0.85):
    """A vLLM engine whose sampled-token logprobs are log q (after temperature), as ``VllmProposer``
    needs; prompt logprobs stay the model's own log p. ``tensor_parallel`` is the model's own
    (``paper.models.<model>.tensor_parallel``: vLLM refuses a size that does not divide the attention
    heads). Built batch-invariant (``REPRODUCIBLE_ENV``), so a rerun on the same GPU model, vLLM
    version and tensor-parallel size draws the same answers; where vLLM has no batch-invariant kernels (a CPU)
    it is built without, and reruns repeat only as far as the batches do."""
    missing = batch_invariance_missing()
    if missing:
        log.warning("batch invariance off: vLLM has no batch-invariant kernels on %r", missing)
    else:
        os.environ.update(REPRODUCIBLE_ENV)  # read by vLLM when the engine starts, and by its workers
    from vllm import LLM

    return LLM(
        model=model_dir,
        tensor_parallel_size=tensor_parallel,
        seed=seed,
        max_model_len=max_model_len,
        gpu_memory_utilization=memory,
        logprobs_mode="processed_logprobs",
    )


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


def sample_method(
    llm,
    base_llm,
    tokenizer,
    prompts,
    answers,
    styles,
    method: Sample | Power,
    n: int,
    max_new_tokens: int,
    seed: int,
    stop_ids: tuple[int, ...],
    chat_template: str | None = None,
) -> pd.DataFrame:
    """``n`` graded answers per problem from one method with vLLM engines (``vllm_engine``), in the
    rows of ``core.power.mcmc.answer_rows`` (the mini scale's ``sample_method`` gives the same).

    ``method`` is plain sampling (``methods.Sample``) or Algorithm 1 (``methods.Power``). ``llm`` samples (the base model, or an RL checkpoint), ``base_llm``
    scores every answer (the same engine when the method samples the base model). Prompts are
    rendered with ``chat_template`` (``prompt_format.chat_template``: the model's prompt format;
    ``None`` is the tokenizer's own) as vLLM's ``LLM.chat`` would. All problems go to the engine at
    once, so it batches them; a power-sampling method advances all its chains together
    (``VllmProposer``). Answers end at ``stop_ids`` or ``max_new_tokens`` and are graded by their
    problem's style. A prompt too long for an engine's ``max_model_len`` stops the run before any
    draw (vLLM would cut its answers at the context, finish reason "length", which the rows would
    not show). Plain sampling gives problem k the seed ``seed + k·n``: vLLM draws the i-th of a
    request's n answers with seed + i, so no two problems share a random stream.
    """
    from vllm import SamplingParams

    ids = prompt_format.render(tokenizer, prompts, chat_template)
    for engine in {id(llm): llm, id(base_llm): base_llm}.values():
        cap = engine.model_config.max_model_len
        if context_needed(ids, max_new_tokens) > cap:
            longest = max(range(len(ids)), key=lambda i: len(ids[i]))
            raise ValueError(
                f"problem {longest}: its prompt ({len(ids[longest])} tokens) + {max_new_tokens} answer "
                f"tokens + 1 scoring token is over the engine's max_model_len {cap}"
            )
    if isinstance(method, Power):
        drafts, moves = np.random.SeedSequence(seed).spawn(2)  # independent streams: request seeds, cuts and MH draws
        proposer = VllmProposer(llm, method.alpha, stop_ids, drafts)
        chains = method_chains(
            proposer, [torch.tensor(x) for x in ids], method, n, max_new_tokens, np.random.default_rng(moves)
        )
        responses = [c.tokens.tolist() for c in chains]
        drawn, acceptance = chain_costs(chains)
    else:
        params = [
            SamplingParams(
                n=n,
                temperature=method.temperature,
                max_tokens=max_new_tokens,
                seed=seed + k * n,
                ignore_eos=True,
                stop_token_ids=list(stop_ids),
            )
            for k in range(len(ids))
        ]
        outputs = llm.generate(_tokens_prompts(ids), params, use_tqdm=False)
        responses = [list(c.token_ids) for out in outputs for c in out.outputs]
        drawn, acceptance = plain_costs([len(r) for r in responses])
    loglik = [sum(lp) for lp in vllm_logprobs(base_llm, [x for x in ids for _ in range(n)], responses)]
    texts = tokenizer.batch_decode(responses, skip_special_tokens=True)
    lengths = [len(r) for r in responses]
    return pd.DataFrame(answer_rows(texts, answers, n, 0, lengths, drawn, acceptance, loglik, styles))


def sample_benchmarks(
    base: str, policy: str, frames: dict[str, pd.DataFrame], sampler: Sampler
) -> Iterator[tuple[str, pd.DataFrame]]:
    """The power-sampling study's entry (the same as ``mini.power_sampling.sample_benchmarks``):
    ``sampler.n`` answers of one method (``sampler.method``) to every problem of each benchmark
    (``frames``, by name, in verl's layout), as ``(name, rows)`` in the order of ``frames``.

    On the base model's tensor-parallel GPUs (``sampler.engines``): a vLLM engine for
    ``policy`` and, when that is an RL checkpoint, one for ``base`` to score its answers; the two
    share the GPUs' memory. Prompts are in the base model's format (``sampler.engines.chat_template``; its RL
    checkpoints were trained with the same one); the engines' context is the longest prompt + the
    answer (``sampler.max_new_tokens``) + 1. A model vLLM would refuse stops the job before any engine
    starts (``prompt_format.engine_problems``)."""
    from transformers import AutoTokenizer

    engines = sampler.engines
    tokenizer = AutoTokenizer.from_pretrained(base)
    template = prompt_format.chat_template(engines.chat_template, tokenizer)
    stop = stop_ids(base, tokenizer)
    problems = {}
    for name, frame in frames.items():
        prompts, answers = formats.prompts_and_answers(frame)
        problems[name] = (prompts, answers, [rm["style"] for rm in frame["reward_model"]])
    max_model_len = context_needed(
        [ids for prompts, _, _ in problems.values() for ids in prompt_format.render(tokenizer, prompts, template)],
        sampler.max_new_tokens,
    )
    for model in dict.fromkeys([policy, base]):
        trouble = prompt_format.engine_problems(
            model, engines.tensor_parallel, max_model_len, engines.chat_template, base
        )
        if trouble:
            raise SystemExit(f"vLLM would refuse {model}:\n- " + "\n- ".join(trouble))
    two = policy != base
    tp, seed = engines.tensor_parallel, sampler.seed
    llm = vllm_engine(policy, tp, seed, max_model_len, memory=0.42 if two else 0.85)
    base_llm = vllm_engine(base, tp, seed, max_model_len, memory=0.42) if two else llm
    log.info("stop tokens %s; prompt format %s; max_model_len %d", stop, engines.chat_template, max_model_len)
    log.info("engines: %s samples, %s", policy, f"{base} scores (a second engine)" if two else "and scores")
    for name, (prompts, answers, styles) in problems.items():
        yield (
            name,
            sample_method(
                llm,
                base_llm,
                tokenizer,
                prompts,
                answers,
                styles,
                sampler.method,
                sampler.n,
                sampler.max_new_tokens,
                sampler.seed,
                stop,
                template,
            ),
        )
