"""Grading a batch of answers and summarising it, the same at both scales and for every sampler.

Every response is graded by its problem's style: math-verify for math, the code sandbox for code
(``reward.is_correct``). pass@k uses the unbiased estimator of Chen et al. (2021).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import grading, reward


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples with ``c`` correct: 1 − C(n−c, k) / C(n, k)."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got {n}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


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
