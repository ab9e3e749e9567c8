"""Benchmark evaluation with the paper's protocol.

Sampled benchmarks (the AIME/AMC role) draw ``n`` responses at temperature 0.6
and report avg@n; the rest decode greedily. Every response is graded by
math-verify. pass@k uses the unbiased estimator of Chen et al. (2021).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from . import generation, grading, reward


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples with ``c`` correct: 1 − C(n−c, k) / C(n, k)."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got {n}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def sample_benchmark(
    model, tokenizer, prompts, answers, temperature: float, n: int, max_new_tokens: int, batch_size: int = 256
) -> pd.DataFrame:
    """One row per (problem, sample): response, extracted answer, correctness."""
    rows = []
    per_batch = max(1, batch_size // n)
    for start in range(0, len(prompts), per_batch):
        chunk = prompts[start : start + per_batch]
        rollout = generation.generate(
            model, tokenizer, chunk, n=n, temperature=temperature, max_new_tokens=max_new_tokens
        )
        rows += graded_rows(rollout.texts, answers, n, start)
    return pd.DataFrame(rows)


def graded_rows(texts: list[str], answers: list[str], n: int, first_problem: int = 0,
                styles: list[str] | None = None) -> list[dict]:  # fmt: skip
    """One row per response of a grouped batch (``n`` per problem, from problem ``first_problem``),
    graded by its problem's style (``styles``, by problem; math-verify when not given, as at mini
    scale, and the code sandbox for ``code:...``, as at paper scale)."""
    rows = []
    for j, text in enumerate(texts):
        pid = first_problem + j // n
        style = styles[pid] if styles is not None else "rule"
        rows.append({
            "problem_id": pid, "sample": j % n, "response": text,
            "extracted": reward.extract_code(text) if style.startswith("code:") else grading.extract_answer(text),
            "ground_truth": answers[pid], "correct": reward.is_correct(style, answers[pid], text),
        })  # fmt: skip
    return rows


def summarize(samples: pd.DataFrame, ks: list[int]) -> dict:
    """avg@n (mean accuracy over all samples) and unbiased pass@k averaged over problems."""
    per_problem = samples.groupby("problem_id")["correct"].agg(["size", "sum"])
    n = int(per_problem["size"].min())
    out = {"n_problems": len(per_problem), "n_samples": n, "avg_at_n": float(samples["correct"].mean())}
    for k in ks:
        if k <= n:
            out[f"pass_at_{k}"] = float(np.mean([pass_at_k(int(s), int(c), k) for s, c in per_problem.values]))
    return out


@torch.no_grad()
def accuracy(model, tokenizer, prompts, answers, protocol: dict, max_new_tokens: int) -> float:
    samples = sample_benchmark(
        model, tokenizer, prompts, answers, protocol["temperature"], protocol["n"], max_new_tokens
    )
    return float(samples["correct"].mean())


# Evaluation builds one vLLM engine in its process, so it takes vLLM's cheap route to repeatable
# seeded runs: the engine core in this process, which makes scheduling (and so every batch)
# deterministic (VLLM_ENABLE_V1_MULTIPROCESSING=0; vLLM's reproducibility docs). The cost: no
# overlap of the engine's scheduling with this process's Python work, and vLLM reseeds this
# process's global random generators. vLLM repeats only on the same hardware and vLLM version (and
# so the same GPU model and tensor-parallel size).
REPRODUCIBLE_ENV = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}


def vllm_engine(model_dir: str, tensor_parallel: int, seed: int, max_model_len: int):
    """The evaluation engine for one checkpoint: the model's own tensor-parallel size
    (``paper.models.<model>.tensor_parallel``; vLLM refuses one that does not divide the attention
    heads), a context of ``max_model_len`` tokens (prompt + answer), deterministic scheduling
    (``REPRODUCIBLE_ENV``)."""
    import os

    os.environ.update(REPRODUCIBLE_ENV)  # read when the engine starts
    from vllm import LLM

    return LLM(model=model_dir, tensor_parallel_size=tensor_parallel, seed=seed, max_model_len=max_model_len)


def vllm_samples(llm, frame: pd.DataFrame, protocol: dict, max_tokens: int, seed: int,
                 chat_template: str | None = None) -> pd.DataFrame:  # fmt: skip
    """One benchmark through a loaded vLLM engine (paper scale): the same rows as ``sample_benchmark``.

    Prompts go through the model's prompt format as verl's rollout does: ``chat_template`` is
    ``prompt_format.chat_template(<the model's format>, tokenizer)``, and ``None`` leaves vLLM's own
    resolution (the tokenizer's template, refused when there is none). Each response is graded by its
    row's style (math-verify, or the code sandbox). One request per problem k with ``n`` answers and
    seed ``seed + k·n``: vLLM draws a request's i-th answer with its seed + i, so every answer of the
    benchmark has a seed of its own and no two problems share their random draws.
    """
    from vllm import SamplingParams  # the GPU image has vLLM; the mini scale never imports it

    n = protocol["n"]
    params = [SamplingParams(n=n, temperature=protocol["temperature"], max_tokens=max_tokens, seed=seed + k * n)
              for k in range(len(frame))]  # fmt: skip
    template = {} if chat_template is None else {"chat_template": chat_template}
    outputs = llm.chat([list(p) for p in frame["prompt"]], params, use_tqdm=False, **template)
    completions = [c for out in outputs for c in out.outputs]
    gold = list(frame["reward_model"])
    rows = graded_rows([c.text for c in completions], [g["ground_truth"] for g in gold], protocol["n"],
                       styles=[g["style"] for g in gold])  # fmt: skip
    for row, c in zip(rows, completions):
        row["response_tokens"] = len(c.token_ids)
    return pd.DataFrame(rows)
