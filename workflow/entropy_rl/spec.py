"""Run specs: one resolved dict per run, read by the mini trainer and turned into verl overrides.

A run is base model × algorithm × entropy treatment × hyperparameters. Its spec
is the scale's ``train`` defaults, updated by the treatment's settings, then by
the run's own ``overrides`` (the ``loss`` section merges key by key). The keys
follow verl's names so the same spec drives both trainers.
"""

from __future__ import annotations

import copy


def _merge(base: dict, update: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in (update or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def resolve_run(scale_cfg: dict, run_id: str) -> dict:
    """The full, self-contained settings of one run (what the rule passes as ``params``)."""
    run = scale_cfg["runs"][run_id]
    treatment = scale_cfg["treatments"][run["treatment"]]
    spec = _merge(scale_cfg["train"], {"loss": treatment})
    spec = _merge(spec, run.get("overrides", {}))
    # PRIME's settings belong to PRIME runs only: otherwise editing them would
    # change, and so rerun, every other run.
    if run["algorithm"] != "prime":
        spec.pop("prime", None)
    spec.update(run_id=run_id, model=run["model"], algorithm=run["algorithm"], treatment=run["treatment"])
    model = scale_cfg.get("models", {}).get(run["model"], {})
    if "train_data" in run or "train_data" in model:  # a named training set (paper scale: always)
        spec["train_data"] = run.get("train_data", model.get("train_data"))
    return spec


def verl_overrides(spec: dict, covariance_metrics: bool = False) -> list[str]:
    """Hydra overrides for ``python -m verl.trainer.main_ppo`` carrying the same settings.

    With ``covariance_metrics`` the loss mode is the ``<mode>+cov`` wrapper of
    ``verl_plugin`` (same loss, plus the covariance summary in verl's metrics);
    the launch overrides load that plugin into verl's workers.
    """
    loss = spec["loss"]
    loss_mode = loss["loss_mode"] + ("+cov" if covariance_metrics else "")
    actor = "actor_rollout_ref.actor"
    adv = "rloo" if spec["algorithm"] == "prime" else spec["algorithm"]
    return [
        f"algorithm.adv_estimator={adv}",
        f"data.train_batch_size={spec['prompts_per_step']}",
        f"data.max_response_length={spec['max_response_length']}",
        f"actor_rollout_ref.rollout.n={spec['rollout_n']}",
        f"actor_rollout_ref.rollout.temperature={spec['temperature']}",
        f"{actor}.optim.lr={spec['lr']}",
        f"{actor}.optim.weight_decay={spec['weight_decay']}",
        f"{actor}.grad_clip={spec['grad_clip']}",
        f"{actor}.ppo_mini_batch_size={spec['ppo_mini_batch_size']}",
        f"{actor}.ppo_epochs={spec['ppo_epochs']}",
        f"{actor}.loss_agg_mode={loss['loss_agg_mode']}",
        f"{actor}.clip_ratio_low={loss['clip_ratio_low']}",
        f"{actor}.clip_ratio_high={loss['clip_ratio_high']}",
        f"{actor}.entropy_coeff={loss['entropy_coeff']}",
        f"{actor}.use_kl_loss={str(loss['kl_loss_coef'] > 0).lower()}",
        f"{actor}.kl_loss_coef={loss['kl_loss_coef']}",
        f"{actor}.kl_loss_type={loss['kl_loss_type']}",
        f"{actor}.policy_loss.loss_mode={loss_mode}",
        f"{actor}.policy_loss.clip_cov_ratio={loss['clip_cov_ratio']}",
        f"{actor}.policy_loss.clip_cov_lb={loss['clip_cov_lb']}",
        f"{actor}.policy_loss.clip_cov_ub={loss['clip_cov_ub']}",
        f"{actor}.policy_loss.kl_cov_ratio={loss['kl_cov_ratio']}",
        f"{actor}.policy_loss.ppo_kl_coef={loss['ppo_kl_coef']}",
        f"algorithm.filter_groups.enable={str(spec['filter_groups']).lower()}",
        f"actor_rollout_ref.rollout.val_kwargs.temperature={spec['val_protocol']['temperature']}",
        f"actor_rollout_ref.rollout.val_kwargs.n={spec['val_protocol']['n']}",
        f"actor_rollout_ref.rollout.val_kwargs.do_sample={str(spec['val_protocol']['temperature'] > 0).lower()}",
        f"trainer.total_training_steps={spec['steps']}",
        f"trainer.test_freq={spec['val_every']}",
        *([f"trainer.save_freq={spec['save_every']}"] if "save_every" in spec else []),
        f"data.seed={spec['seed']}",
    ]


def verl_launch_overrides(scale_cfg: dict, run_id: str, root: str = "results", reward_fn: str = "reward.py") -> list[str]:
    """The paper-scale placement of one run: model and data paths, GPUs, checkpoints, resumption.

    Paths follow the workflow's layout under ``root``; checkpoints stay in the
    run's directory and ``resume_mode=auto`` makes a requeued job continue
    from the last one. ``reward_fn`` is the file verl loads ``compute_score`` from.
    """
    run = scale_cfg["runs"][run_id]
    model = scale_cfg["models"][run["model"]]
    train_set = resolve_run(scale_cfg, run_id)["train_data"]
    return [
        f"actor_rollout_ref.model.path={root}/models/{run['model']}",
        f"data.train_files={root}/data/train/{train_set}.parquet",
        f"data.val_files={root}/data/benchmarks/validation.parquet",
        f"data.max_prompt_length={scale_cfg['data']['max_prompt_length']}",
        "data.filter_overlong_prompts=true",
        f"trainer.nnodes={model['nodes']}",
        f"trainer.n_gpus_per_node={model['gpus_per_node']}",
        "actor_rollout_ref.rollout.name=vllm",
        f"actor_rollout_ref.rollout.tensor_model_parallel_size={model['tensor_parallel']}",
        "trainer.project_name=entropy-mechanism",
        f"trainer.experiment_name={run_id}",
        f"trainer.default_local_dir={root}/runs/{run_id}/checkpoints",
        "trainer.resume_mode=auto",
        "trainer.val_before_train=true",
        "actor_rollout_ref.model.external_lib=entropy_rl.verl_plugin",
        f"reward.custom_reward_function.path={reward_fn}",
        "reward.custom_reward_function.name=compute_score",
        # The file log (its path from VERL_FILE_LOGGER_PATH) is what verl_metrics translates.
        "trainer.logger=[console,file]",
    ]
