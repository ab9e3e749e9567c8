"""Per-step training metrics: the columns of ``results/runs/{run}/metrics.parquet``.

Every measure here is computed the same way at both scales: the mini trainer calls these
functions directly, and at paper scale ``verl_plugin`` calls them inside verl's trainer (on the
whole update batch) and inside its loss (on each micro-batch, where Clip-Cov and KL-Cov act).

- Entropy is the paper's Eq. 5: each response's mean token entropy, averaged over the responses
  of the batch the policy is updated on (after the group filter), as the authors' trainer logs it
  (``train_entropy/all`` in recipe/dapo/dapo_ray_trainer.py of PRIME-RL/Entropy-Mechanism-of-RL).
- The token covariance (Table 1) is Eq. 10: Cov(y_i) = (log π(y_i) − mean_j log π(y_j)) ·
  (A(y_i) − mean_j A(y_j)) over the N valid tokens of that batch, under the rollout policy.
- The bandit covariance (Figure 8) is Eq. 8–9: per prompt, the covariance over its responses of
  the length-normalised log π(y|x) and π(y|x)·A(y, x), averaged over the prompts of the batch.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from .metric_columns import BANDIT_ACC, COV_TOP


def response_means(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Each response's mean over its valid tokens (a response with none gives NaN)."""
    mask = mask.to(values.dtype)
    return (values.detach() * mask).sum(dim=1) / mask.sum(dim=1)


def policy_entropy(token_entropy: torch.Tensor, mask: torch.Tensor) -> float:
    """The paper's Eq. 5: the mean over responses of each response's mean token entropy."""
    per_response = response_means(token_entropy.double(), mask)
    per_response = per_response[~per_response.isnan()]
    return float(per_response.mean()) if per_response.numel() else math.nan


def token_covariance(log_prob: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Eq. 10 for every valid token (flattened): centred log-prob × centred advantage."""
    lp = log_prob.detach()[mask.bool()].double()
    adv = advantages.detach()[mask.bool()].double()
    return (lp - lp.mean()) * (adv - adv.mean())


def covariance_summary(log_prob, advantages, mask) -> dict:
    """Table 1: the mean token covariance over all tokens and over the top p% of tokens."""
    cov = token_covariance(log_prob, advantages, mask)
    out = {"cov_all": float(cov.mean()) if cov.numel() else math.nan}
    ordered = torch.sort(cov, descending=True).values
    for name, frac in COV_TOP.items():
        k = max(1, math.ceil(frac * len(ordered)))
        out[name] = float(ordered[:k].mean()) if len(ordered) else math.nan
    return out


def bandit_covariance(log_prob, advantages, mask, group_index, rewards) -> dict:
    """Figure 8's covariance (Eq. 8–9), overall and by prompt difficulty.

    For each prompt group: x = (1/|y|) Σ_t log π(y_t) per response (Eq. 9), π(y|x) read as exp(x)
    (the length-normalised probability; the unnormalised product vanishes for long responses), and
    A(y, x) the response's advantage (its mean over its tokens: one value per response for outcome
    estimators). The group's covariance is the population covariance over its responses of x and
    exp(x)·A; ``bandit_cov`` averages it over the groups, ``bandit_cov_acc*`` over the groups whose
    accuracy (mean reward) is 1/8, 4/8 or 7/8.
    """
    x = response_means(log_prob.double(), mask).numpy()
    a = response_means(advantages.double(), mask).numpy()
    groups = pd.DataFrame({"g": np.asarray(group_index), "x": x, "pa": np.exp(x) * a, "r": np.asarray(rewards, float)})
    per_group = groups.groupby("g", sort=False).apply(
        lambda d: pd.Series({"cov": float(np.mean((d.x - d.x.mean()) * (d.pa - d.pa.mean()))), "acc": d.r.mean()}),
        include_groups=False,
    )
    out = {"bandit_cov": float(per_group["cov"].mean()) if len(per_group) else math.nan}
    for name, level in BANDIT_ACC.items():
        sel = np.isclose(per_group["acc"], level) if len(per_group) else []
        out[name] = float(per_group.loc[sel, "cov"].mean()) if np.any(sel) else math.nan
    return out


# loss_token_stats' keys: every one a sum over the call's tokens, so calls add up.
LOSS_TOKEN_SUMS = ("response_tokens", "cov_touched_tokens", "cliphigher_cov_sum", "cliphigher_tokens")


def loss_token_stats(config, log_prob, old_log_prob, advantages, mask, loss_metrics: dict) -> dict:
    """Sums and counts, one loss call at a time, for two claims of Section 4.5.

    - Clip-higher (ε_high > ε_low) lets tokens with A > 0 and 1+ε_low < ratio ≤ 1+ε_high into the
      gradient; their Eq. 10 covariance ("≈ −0.03") is centred over the call's tokens, as verl's
      Clip-Cov and KL-Cov centre theirs: ``cliphigher_cov_sum`` / ``cliphigher_tokens``.
    - Clip-Cov detaches, and KL-Cov penalises, a few tokens of each call ("10^-4 to 10^-3"):
      ``cov_touched_tokens`` / ``response_tokens``. Clip-Cov's count is its own clip fraction
      (verl's ``pg_clipfrac`` of that loss counts exactly the detached tokens); KL-Cov's is the
      top-k size verl selects, max(1, ⌊N·kl_cov_ratio⌋).
    Sums and counts (``LOSS_TOKEN_SUMS``), not ratios, so that totals over calls divide into the
    pooled ratio (at paper scale the worker sums them over each mini-batch's micro-batches:
    ``paper.verl_plugin.SummedCountsWorker``).
    """
    valid = mask.bool()
    n_tokens = int(valid.sum())
    out = {"response_tokens": float(n_tokens)}
    mode = config.policy_loss.loss_mode
    if mode.startswith("clip_cov"):
        out["cov_touched_tokens"] = float(round(float(loss_metrics["actor/pg_clipfrac"]) * n_tokens))
    elif mode.startswith("kl_cov"):
        out["cov_touched_tokens"] = float(max(1, int(n_tokens * config.policy_loss.kl_cov_ratio))) if n_tokens else 0.0
    low, high = config.clip_ratio_low, config.clip_ratio_high
    if high > low and n_tokens:
        lp, adv = log_prob.detach().double(), advantages.detach().double()
        cov = (lp - lp[valid].mean()) * (adv - adv[valid].mean())
        ratio = torch.exp(lp - old_log_prob.detach().double())
        band = valid & (adv > 0) & (ratio > 1 + low) & (ratio <= 1 + high)
        out["cliphigher_cov_sum"] = float(cov[band].sum())
        out["cliphigher_tokens"] = float(band.sum())
    return out


def pooled_loss_stats(stats: list[dict]) -> dict:
    """The step's ``cliphigher_cov`` and ``cov_touched_frac`` from its calls' sums and counts."""
    total = lambda key: sum(s.get(key, 0.0) for s in stats)  # noqa: E731
    has = lambda key: any(key in s for s in stats)  # noqa: E731
    return {
        "cliphigher_cov": total("cliphigher_cov_sum") / total("cliphigher_tokens")
        if total("cliphigher_tokens")
        else math.nan,
        "cov_touched_frac": total("cov_touched_tokens") / total("response_tokens")
        if has("cov_touched_tokens") and total("response_tokens")
        else math.nan,
    }
