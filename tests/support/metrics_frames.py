"""A metrics table of the contract with a known entropy curve, covariances and accuracy: the audit's and the
tables' tests build their studies from it."""

import numpy as np
import pandas as pd
from entropy_rl.study import analysis


def run_metrics(
    n=60,
    tau=10.0,
    a=0.3,
    b=1.0,
    h_start=1.0,
    h_end=0.1,
    cov_sign=1.0,
    seed=0,
    length_growth=0.2,
    cliphigher=np.nan,
    touched=np.nan,
    step_noise=False,
):
    """A metrics table of the contract: entropy from h_start to h_end, the bandit covariance (and by
    accuracy group, smaller on hard prompts) and the token covariance following the entropy drop.

    ``step_noise``: each step's entropy drop is its own draw and the covariance follows it step by step, so the
    series vary from step to step as training's do, rather than only along a smooth trend (whose steps are so
    autocorrelated that the audit counts them as a handful of independent points)."""
    rng = np.random.default_rng(seed)
    step = np.arange(n)
    entropy = h_end + (h_start - h_end) * np.exp(-step / tau) + rng.normal(0, 0.002, n)
    drops = 0.01 + rng.normal(0, 0.005, n)
    if step_noise:
        entropy = h_start - np.concatenate([[0.0], np.cumsum(drops[:-1])])
    val = step % 5 == 0
    acc = {
        f"val_acc/{bench}": np.where(
            val, np.clip(analysis.entropy_law(entropy, a, b) + rng.normal(0, 0.01, n), 0, 1), np.nan
        )
        for bench in ("x", "y")
    }
    cov = cov_sign * ((0.05 + 5 * (drops - 0.01)) if step_noise else (0.02 + 0.1 * np.exp(-step / tau)))
    frame = pd.DataFrame(
        {
            "step": step,
            "entropy": entropy,
            "response_length": 10 + length_growth * step,
            "cov_all": cov / 100,
            **acc,
            "bandit_cov": cov,
            "bandit_cov_acc0.125": 0.5 * cov,
            "bandit_cov_acc0.5": cov,
            "bandit_cov_acc0.875": 1.5 * cov,
            "cliphigher_cov": cliphigher,
            "cov_touched_frac": touched,
        }
    )
    for col, k in {"cov_top0.02": 500, "cov_top0.2": 200, "cov_top2": 80, "cov_top20": 20, "cov_top50": 12}.items():
        frame[col] = k * frame["cov_all"]
    frame["val_acc"] = frame[["val_acc/x", "val_acc/y"]].mean(axis=1, skipna=False)
    return frame
