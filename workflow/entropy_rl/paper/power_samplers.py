"""The samplers of p^α after Algorithm 1 at paper scale: Power-SMC and scalable power sampling
(``core.power.algorithms``) over the vLLM proposal of ``power_sampling`` (``VllmProposer``), in the same rows, with each answer's wall time.

A module of its own rather than a branch of ``power_sampling.sample_method``: a job's code stamp covers the modules
its rule runs, and the jobs of plain sampling and Algorithm 1 (12 at paper scale, about 530 GPU-hours) must not go
out of date for code they never run. ``core.backends.SAMPLERS`` names the module of each method's kind, for the rule's
code stamp and for its script alike. The engines are set up as ``power_sampling.sample_benchmarks`` sets
them up (``engines``); that function keeps its own copy until its jobs change for a reason of their own.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import numpy as np
import pandas as pd
import torch

from ..core import formats
from ..core.power.algorithms import ALGORITHMS
from ..core.power.mcmc import answer_rows, context_needed
from ..core.power.methods import SMC, SPS, Sampler
from . import prompt_format
from .power_sampling import VllmProposer, stop_ids, vllm_engine, vllm_logprobs

log = logging.getLogger(__name__)


def check_context(ids: list[list[int]], engines: list, max_new_tokens: int) -> None:
    """Stop before any draw when a prompt and its answer do not fit an engine's ``max_model_len`` (vLLM would cut the
    answer at the context, which the rows would not show)."""
    for engine in {id(e): e for e in engines}.values():
        cap = engine.model_config.max_model_len
        if context_needed(ids, max_new_tokens) > cap:
            longest = max(range(len(ids)), key=lambda i: len(ids[i]))
            raise ValueError(
                f"problem {longest}: its prompt ({len(ids[longest])} tokens) + {max_new_tokens} answer "
                f"tokens + 1 scoring token is over the engine's max_model_len {cap}"
            )


def sample_method(
    llm,
    base_llm,
    tokenizer,
    prompts,
    answers,
    styles,
    method: SMC | SPS,
    n: int,
    max_new_tokens: int,
    seed: int,
    stop: tuple[int, ...],
    chat_template: str | None = None,
) -> pd.DataFrame:
    """``n`` graded answers per problem by a sampler of p^α (``method.kind`` in ``core.power.algorithms``) on
    ``llm``, scored by ``base_llm``, in the rows of ``power_sampling.sample_method`` plus ``seconds``: the sampling's
    wall time shared equally by its answers (scoring not included). Every answer of every problem advances together,
    so the engine batches them; ``seed`` splits into independent streams for the requests and the sampler's own draws.
    """
    ids = prompt_format.render(tokenizer, prompts, chat_template)
    check_context(ids, [llm, base_llm], max_new_tokens)
    algorithm = ALGORITHMS[method.kind]
    requests, moves = np.random.SeedSequence(seed).spawn(2)
    proposer = VllmProposer(llm, method.alpha, stop, requests)
    started = time.perf_counter()
    chains = algorithm.chains(
        proposer, [torch.tensor(x) for x in ids], method, n, max_new_tokens, np.random.default_rng(moves)
    )
    seconds = (time.perf_counter() - started) / len(chains)
    responses = [c.tokens.tolist() for c in chains]
    drawn, acceptance = algorithm.costs(chains)
    loglik = [sum(lp) for lp in vllm_logprobs(base_llm, [x for x in ids for _ in range(n)], responses)]
    texts = tokenizer.batch_decode(responses, skip_special_tokens=True)
    rows = answer_rows(texts, answers, n, 0, [len(r) for r in responses], drawn, acceptance, loglik, styles)
    return pd.DataFrame([{**row, "seconds": seconds} for row in rows])


def engines(base: str, policy: str, frames: dict[str, pd.DataFrame], sampler: Sampler):
    """The tokenizer, prompt format, stop tokens, problems by benchmark and the two engines (one when ``policy`` is the
    base model) of a sampling job, as ``power_sampling.sample_benchmarks`` builds them: the context is the longest
    prompt + the answer + 1, and a model vLLM would refuse stops the job before any engine starts."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base)
    placement = sampler.engines
    template = prompt_format.chat_template(placement.chat_template, tokenizer)
    problems = {}
    for name, frame in frames.items():
        prompts, answers = formats.prompts_and_answers(frame)
        problems[name] = (prompts, answers, [rm["style"] for rm in frame["reward_model"]])
    rendered = [prompt_format.render(tokenizer, prompts, template) for prompts, _, _ in problems.values()]
    max_model_len = context_needed([ids for part in rendered for ids in part], sampler.max_new_tokens)
    for model in dict.fromkeys([policy, base]):
        tp, template_name = placement.tensor_parallel, placement.chat_template
        trouble = prompt_format.engine_problems(model, tp, max_model_len, template_name, base)
        if trouble:
            raise SystemExit(f"vLLM would refuse {model}:\n- " + "\n- ".join(trouble))
    two = policy != base
    llm = vllm_engine(policy, placement.tensor_parallel, sampler.seed, max_model_len, memory=0.42 if two else 0.85)
    base_llm = vllm_engine(base, placement.tensor_parallel, sampler.seed, max_model_len, memory=0.42) if two else llm
    return tokenizer, template, stop_ids(base, tokenizer), problems, llm, base_llm


def sample_benchmarks(
    base: str, policy: str, frames: dict[str, pd.DataFrame], sampler: Sampler
) -> Iterator[tuple[str, pd.DataFrame]]:
    """The power-sampling study's entry (as ``power_sampling.sample_benchmarks``): ``sampler.n`` answers of one method
    (``sampler.method``, a later sampler of p^α) to every problem of each benchmark, as ``(name, rows)``."""
    tokenizer, template, stop, problems, llm, base_llm = engines(base, policy, frames, sampler)
    log.info("stop tokens %s; prompt format %s; sampler %s", stop, sampler.engines.chat_template, sampler.kind)
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
