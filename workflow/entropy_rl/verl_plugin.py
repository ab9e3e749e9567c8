"""Covariance metrics inside verl at paper scale.

verl logs no token covariance, but Table 1 and Figure 8 need it. Importing this
module (verl imports ``actor_rollout_ref.model.external_lib`` in every worker)
registers, for each of verl's loss modes used here, a mode ``<mode>+cov`` that
calls verl's own loss unchanged and adds the covariance summary of
``metrics.covariance_summary`` to the metrics verl logs, as ``actor/cov_*``.
"""

from __future__ import annotations

from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY, get_policy_loss_fn, register_policy_loss

from . import metrics

WRAPPED_MODES = ("vanilla", "clip_cov", "kl_cov")
SUFFIX = "+cov"


def with_covariance(mode: str):
    inner = get_policy_loss_fn(mode)

    def loss_fn(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode="token-mean", config=None, rollout_is_weights=None):
        loss, pg_metrics = inner(
            old_log_prob=old_log_prob, log_prob=log_prob, advantages=advantages, response_mask=response_mask,
            loss_agg_mode=loss_agg_mode, config=config, rollout_is_weights=rollout_is_weights,
        )  # fmt: skip
        summary = metrics.covariance_summary(log_prob.detach(), advantages.detach(), response_mask)
        pg_metrics.update({f"actor/{k}": v for k, v in summary.items() if not k.startswith("cov_acc")})
        return loss, pg_metrics

    loss_fn.__name__ = f"{mode}_with_covariance"
    return loss_fn


for _mode in WRAPPED_MODES:
    if _mode + SUFFIX not in POLICY_LOSS_REGISTRY:
        register_policy_loss(_mode + SUFFIX)(with_covariance(_mode))
