"""Per-step training metrics: the columns of ``results/runs/{run}/metrics.parquet``.

The covariance of a token is the paper's centred cross-product (Section 4.2):
Cov(y_i) = (log π(y_i) − mean_j log π(y_j)) · (A(y_i) − mean_j A(y_j)) over the
N valid tokens of a batch. Table 1 reports the mean of the top p% of tokens.
"""

from __future__ import annotations

import math

import pandas as pd
import torch

# Column name -> fraction of tokens (Table 1: top 0.02%, 0.2%, 2%, 20%, 50%).
COV_TOP = {"cov_top0.02": 0.0002, "cov_top0.2": 0.002, "cov_top2": 0.02, "cov_top20": 0.2, "cov_top50": 0.5}
# Difficulty groups by the share of a prompt's responses that are correct (Figure 8).
ACC_GROUPS = {"cov_acc_low": (0.0, 1 / 3), "cov_acc_mid": (1 / 3, 2 / 3), "cov_acc_high": (2 / 3, 1.0)}
BASE_COLUMNS = [
    "step", "entropy", "entropy_change", "reward_mean", "response_length", "kept_prompt_frac",
    "cov_all", *COV_TOP, *ACC_GROUPS, "pg_loss", "pg_clipfrac", "ppo_kl",
]  # fmt: skip


def masked_token_mean(values: torch.Tensor, mask: torch.Tensor) -> float:
    """Token-level mean over valid tokens: the paper's Eq. 5 when ``values`` are entropies."""
    mask = mask.bool()
    return float(values.detach()[mask].mean()) if mask.any() else math.nan


def token_covariance(log_prob: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Centred log-prob × advantage product of every valid token (flattened)."""
    lp = log_prob[mask.bool()].double()
    adv = advantages[mask.bool()].double()
    return (lp - lp.mean()) * (adv - adv.mean())


def covariance_summary(log_prob, advantages, mask, group_acc: torch.Tensor | None = None) -> dict:
    """Mean covariance over all tokens, over the top p% tokens, and per difficulty group.

    ``group_acc`` gives, per response, the accuracy of its prompt's group; the
    token covariance is then averaged within each difficulty band.
    """
    cov = token_covariance(log_prob, advantages, mask)
    out = {"cov_all": float(cov.mean()) if cov.numel() else math.nan}
    ordered = torch.sort(cov, descending=True).values
    for name, frac in COV_TOP.items():
        k = max(1, math.ceil(frac * len(ordered)))
        out[name] = float(ordered[:k].mean()) if len(ordered) else math.nan
    for name in ACC_GROUPS:
        out[name] = math.nan
    if group_acc is not None and cov.numel():
        token_acc = group_acc[:, None].expand_as(mask)[mask.bool()]
        for name, (lo, hi) in ACC_GROUPS.items():
            sel = (token_acc > lo) & (token_acc <= hi) if lo > 0 else (token_acc >= lo) & (token_acc <= hi)
            if sel.any():
                out[name] = float(cov[sel].mean())
    return out


def complete_table(rows) -> pd.DataFrame:
    """The metrics table from per-step rows: every contract column present, entropy_change derived."""
    frame = pd.DataFrame(rows)
    for col in BASE_COLUMNS:
        if col not in frame:
            frame[col] = math.nan
    frame["entropy_change"] = frame["entropy"].diff()
    return frame
