"""The RL algorithms under study, wired to verl's own implementations.

Advantages come from verl's registered estimators and the policy loss from
``get_policy_loss_fn`` with verl's ``ActorConfig``; the entropy bonus and the
reference-KL penalty are added the way verl's actor loss
(``verl.workers.utils.losses.ppo_loss``) adds them. The mini trainer and the
paper-scale verl runs therefore optimise the same objective.
"""

from __future__ import annotations

import inspect

import numpy as np
import torch
from verl.trainer.config import AlgoConfig
from verl.trainer.ppo.core_algos import agg_loss, get_adv_estimator_fn, get_policy_loss_fn, kl_penalty
from verl.workers.config import FSDPActorConfig, PolicyLossConfig

from ..core.run import Loss


def token_level_rewards(rewards: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """Outcome reward placed on each response's last token, as verl's reward manager does."""
    out = torch.zeros_like(response_mask, dtype=torch.float32)
    last = (response_mask.sum(dim=1) - 1).clamp(min=0)
    out[torch.arange(len(rewards)), last] = rewards.float()
    return out


def compute_advantages(
    estimator: str, rewards: torch.Tensor, response_mask: torch.Tensor, group_index: np.ndarray, gamma: float = 1.0
) -> torch.Tensor:
    """Token-level advantages from verl's registered advantage ``estimator`` (an algorithm's, core.algorithms), called
    as verl's trainer calls an outcome estimator: the rewards on the last token, the mask, the groups' index and the
    algorithm's config (an estimator takes what it reads of them)."""
    fn = get_adv_estimator_fn(estimator)
    accepts = inspect.signature(fn).parameters
    offered = {"index": group_index, "config": AlgoConfig(adv_estimator=estimator, gamma=gamma)}
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepts.values())
    kwargs = {k: v for k, v in offered.items() if takes_any or k in accepts}
    scores = token_level_rewards(rewards, response_mask)
    adv, _ = fn(token_level_rewards=scores, response_mask=response_mask.float(), **kwargs)
    return adv


def actor_config(
    loss: Loss, rollout_n: int, mini_batch_size: int, max_response_length: int | None = None
) -> FSDPActorConfig:
    """verl's actor config for one run's loss settings (named as in verl's ``actor`` section).

    ``max_response_length`` is the horizon "seq-mean-token-sum-norm" divides by: verl's actor takes
    its batch's response width, the rollout's configured length, while the mini sampler's rollout is
    as wide as its longest answer, so it is passed explicitly."""
    policy_loss = PolicyLossConfig(
        loss_mode=loss.loss_mode,
        clip_cov_ratio=loss.clip_cov_ratio,
        clip_cov_lb=loss.clip_cov_lb,
        clip_cov_ub=loss.clip_cov_ub,
        kl_cov_ratio=loss.kl_cov_ratio,
        ppo_kl_coef=loss.ppo_kl_coef,
    )
    return FSDPActorConfig(
        strategy="fsdp",
        rollout_n=rollout_n,
        ppo_mini_batch_size=mini_batch_size,
        ppo_micro_batch_size_per_gpu=mini_batch_size,
        clip_ratio=loss.clip_ratio_low,
        clip_ratio_low=loss.clip_ratio_low,
        clip_ratio_high=loss.clip_ratio_high,
        clip_ratio_c=loss.clip_ratio_c,  # the dual-clip bound of the vanilla loss
        policy_loss=policy_loss,
        loss_agg_mode=loss.loss_agg_mode,
        entropy_coeff=loss.entropy_coeff,
        use_kl_loss=loss.kl_loss_coef > 0,
        kl_loss_coef=loss.kl_loss_coef,
        kl_loss_type=loss.kl_loss_type,
        use_dynamic_bsz=False,
        global_batch_info={} if max_response_length is None else {"loss_scale_factor": max_response_length},
    )


def actor_loss(
    config: FSDPActorConfig,
    log_prob: torch.Tensor,
    old_log_prob: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    entropy: torch.Tensor | None = None,
    ref_log_prob: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict]:
    """verl's actor objective: policy loss − entropy_coeff·entropy + kl_loss_coef·KL(π‖π_ref)."""
    mask = response_mask.bool()
    policy_loss_fn = get_policy_loss_fn(config.policy_loss.loss_mode)
    pg_loss, metrics = policy_loss_fn(
        old_log_prob=old_log_prob,
        log_prob=log_prob,
        advantages=advantages,
        response_mask=mask,
        loss_agg_mode=config.loss_agg_mode,
        config=config,
    )
    loss = pg_loss
    metrics = {k: float(v) for k, v in metrics.items()}
    metrics["actor/pg_loss"] = float(pg_loss.detach())
    if entropy is not None and config.entropy_coeff != 0:
        entropy_loss = agg_loss(
            loss_mat=entropy, loss_mask=mask, loss_agg_mode=config.loss_agg_mode, **config.global_batch_info
        )
        loss = loss - config.entropy_coeff * entropy_loss
        metrics["actor/entropy_loss"] = float(entropy_loss.detach())
    if config.use_kl_loss:
        kld = kl_penalty(logprob=log_prob, ref_logprob=ref_log_prob, kl_penalty=config.kl_loss_type)
        kl_loss = agg_loss(loss_mat=kld, loss_mask=mask, loss_agg_mode=config.loss_agg_mode, **config.global_batch_info)
        loss = loss + config.kl_loss_coef * kl_loss
        metrics["actor/kl_loss"] = float(kl_loss.detach())
    return loss, metrics
