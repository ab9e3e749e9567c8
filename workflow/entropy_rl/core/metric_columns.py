"""The metrics contract: the columns of ``results/runs/{run}/metrics.parquet``, one row per step.

Both trainers write them (the mini trainer, and verl through ``paper.verl_metrics``), computed by
``core.metrics``; the study reads them. Named here, without torch, so the study needs none.
"""

from __future__ import annotations

import math

import pandas as pd

# Table 1's token covariance, Eq. 10: the centred log-prob x advantage product of each token of a
# batch; the mean over all tokens, and over the top p% (column -> fraction: 0.02%, 0.2%, 2%, 20%, 50%).
TOKEN_COV = "cov_all"
COV_TOP = {"cov_top0.02": 0.0002, "cov_top0.2": 0.002, "cov_top2": 0.02, "cov_top20": 0.2, "cov_top50": 0.5}
# Figure 8's bandit covariance, Eq. 8-9: per prompt, the covariance over its responses of the
# length-normalised log pi(y|x) and pi(y|x)*A(y, x), averaged over the batch's prompts; and the same
# over only the prompts whose group accuracy is 1, 4 or 7 of 8 (legend "Accuracy=0.125, 0.5, 0.875").
BANDIT_COV = "bandit_cov"
BANDIT_ACC = {"bandit_cov_acc0.125": 0.125, "bandit_cov_acc0.5": 0.5, "bandit_cov_acc0.875": 0.875}
# gen_batches: the prompts a step generated, in batches of prompts_per_step (the released DAPO trainer's
# num_gen_batches): above 1 where the group filter dropped groups and more prompts were drawn for the step.
BASE_COLUMNS = [
    "step",
    "entropy",
    "entropy_change",
    "reward_mean",
    "response_length",
    "kept_prompt_frac",
    "gen_batches",
    TOKEN_COV,
    *COV_TOP,
    BANDIT_COV,
    *BANDIT_ACC,
    "cliphigher_cov",
    "cov_touched_frac",
    "pg_loss",
    "pg_clipfrac",
    "ppo_kl",
]


def complete_table(rows) -> pd.DataFrame:
    """The metrics table from per-step rows: every contract column present, entropy_change derived."""
    frame = pd.DataFrame(rows)
    for col in BASE_COLUMNS:
        if col not in frame:
            frame[col] = math.nan
    frame["entropy_change"] = frame["entropy"].diff()
    return frame
