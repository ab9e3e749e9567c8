"""avg@n and pass@k of graded samples: the evaluation's summary, the same at both scales.

pass@k uses the unbiased estimator of Chen et al. (2021). Apart from grading (``scoring``), so the
study's jobs that only summarise rows load no grader (math-verify and sympy).
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples with ``c`` correct: 1 − C(n−c, k) / C(n, k)."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got {n}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def summarize(samples: pd.DataFrame, ks: list[int]) -> dict:
    """avg@n (mean accuracy over all samples) and unbiased pass@k averaged over problems."""
    per_problem = samples.groupby("problem_id")["correct"].agg(["size", "sum"])
    n = int(per_problem["size"].min())
    out = {"n_problems": len(per_problem), "n_samples": n, "avg_at_n": float(samples["correct"].mean())}
    for k in ks:
        if k <= n:
            out[f"pass_at_{k}"] = float(np.mean([pass_at_k(int(s), int(c), k) for s, c in per_problem.values]))
    return out
