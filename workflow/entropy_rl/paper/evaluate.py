"""Benchmark evaluation with the paper's protocol, at paper scale: one vLLM engine per checkpoint on
the model's tensor-parallel GPUs, for all its benchmarks.

Sampled benchmarks draw ``n`` responses at their protocol's temperature; the rest decode greedily.
Math is graded by math-verify, code run against its tests in the sandbox (``core.scoring``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator

import pandas as pd

from ..core import scoring
from ..core.evaluation import Evaluation, Protocol
from . import prompt_format
from .platforms import ENGINE_ARGS, GPU
from .platforms import ENV as PLATFORM_ENV

log = logging.getLogger(__name__)

# Evaluation builds one vLLM engine in its process, so it takes vLLM's cheap route to repeatable
# seeded runs: the engine core in this process, which makes scheduling (and so every batch)
# deterministic (VLLM_ENABLE_V1_MULTIPROCESSING=0; vLLM's reproducibility docs). The cost: no
# overlap of the engine's scheduling with this process's Python work, and vLLM reseeds this
# process's global random generators. vLLM repeats only on the same hardware and vLLM version (and
# so the same GPU model and tensor-parallel size).
REPRODUCIBLE_ENV = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}


def vllm_engine(model_dir: str, tensor_parallel: int, seed: int, max_model_len: int, platform: str = GPU):
    """The evaluation engine for one checkpoint: the model's own tensor-parallel size
    (``paper.models.<model>.tensor_parallel``; vLLM refuses one that does not divide the attention
    heads), a context of ``max_model_len`` tokens (prompt + answer), deterministic scheduling
    (``REPRODUCIBLE_ENV``), on ``platform`` (paper.platforms: its environment and engine arguments)."""
    os.environ.update({**PLATFORM_ENV[platform], **REPRODUCIBLE_ENV})  # read when the engine starts
    from vllm import LLM

    return LLM(
        model=model_dir,
        tensor_parallel_size=tensor_parallel,
        seed=seed,
        max_model_len=max_model_len,
        **ENGINE_ARGS[platform],
    )


def vllm_samples(
    llm, frame: pd.DataFrame, protocol: Protocol, max_tokens: int, seed: int, chat_template: str | None = None
) -> pd.DataFrame:
    """One benchmark through a loaded vLLM engine: one row per (problem, sample), as the mini scale's
    ``sample_benchmark`` gives, with each response's token count.

    Prompts go through the model's prompt format as verl's rollout does: ``chat_template`` is
    ``prompt_format.chat_template(<the model's format>, tokenizer)``, and ``None`` leaves vLLM's own
    resolution (the tokenizer's template, refused when there is none). Each response is graded by its
    row's style (math-verify, or the code sandbox). One request per problem k with ``n`` answers and
    seed ``seed + k·n``: vLLM draws a request's i-th answer with its seed + i, so every answer of the
    benchmark has a seed of its own and no two problems share their random draws.
    """
    from vllm import SamplingParams  # the GPU image has vLLM; the mini scale never imports it

    n = protocol.n
    params = [
        SamplingParams(n=n, temperature=protocol.temperature, max_tokens=max_tokens, seed=seed + k * n)
        for k in range(len(frame))
    ]
    template = {} if chat_template is None else {"chat_template": chat_template}
    outputs = llm.chat([list(p) for p in frame["prompt"]], params, use_tqdm=False, **template)
    completions = [c for out in outputs for c in out.outputs]
    gold = list(frame["reward_model"])
    rows = scoring.graded_rows(
        [c.text for c in completions],
        [g["ground_truth"] for g in gold],
        n,
        styles=[g["style"] for g in gold],
    )
    for row, c in zip(rows, completions):
        row["response_tokens"] = len(c.token_ids)
    return pd.DataFrame(rows)


def evaluate_benchmarks(
    model: str, frames: dict[str, pd.DataFrame], evaluation: Evaluation
) -> Iterator[tuple[str, pd.DataFrame]]:
    """The evaluation's entry (the same as ``mini.evaluate.evaluate_benchmarks``): the graded
    samples of the model in directory ``model`` on each benchmark (``frames``, by name, in verl's
    layout), as ``(name, samples)`` in the order of ``frames``, each decoded by its protocol (``evaluation.protocols``)
    from ``evaluation.seed``.

    One engine for every benchmark, placed by ``evaluation.engines``: on ``tensor_parallel`` GPUs, with prompts in the
    model's format (``chat_template``; a tokenizer that cannot serve it is refused here) and a context of the longest
    prompt, rendered as vLLM's chat renders it, + ``evaluation.max_new_tokens``. A model vLLM would refuse stops the
    job before the engine starts (``prompt_format.engine_problems``)."""
    from transformers import AutoTokenizer

    engines = evaluation.engines
    tokenizer = AutoTokenizer.from_pretrained(model)
    template = prompt_format.chat_template(engines.chat_template, tokenizer)  # refuses a tokenizer that cannot serve it
    longest = max(
        len(ids) for f in frames.values() for ids in prompt_format.render(tokenizer, list(f["prompt"]), template)
    )
    max_model_len = longest + evaluation.max_new_tokens
    problems = prompt_format.engine_problems(
        model, engines.tensor_parallel, max_model_len, engines.chat_template, model
    )
    if problems:
        raise SystemExit("vLLM would refuse this evaluation:\n- " + "\n- ".join(problems))
    log.info(
        "prompt format %s, tensor parallel %d, max_model_len %d",
        engines.chat_template,
        engines.tensor_parallel,
        max_model_len,
    )
    llm = vllm_engine(model, engines.tensor_parallel, evaluation.seed, max_model_len, engines.platform)
    for name, frame in frames.items():
        protocol = evaluation.protocols[name]
        yield name, vllm_samples(llm, frame, protocol, evaluation.max_new_tokens, evaluation.seed, template)
