"""Run specs: one resolved dict per run, read by the mini trainer and turned into verl overrides.

A run is base model × algorithm × entropy treatment × hyperparameters. Its spec
is the scale's ``train`` defaults, updated by the treatment's settings, then by
the run's own ``overrides`` (the ``loss`` section merges key by key). The keys
follow verl's names so the same spec drives both trainers.
"""

from __future__ import annotations

import copy

from . import prompt_format

# What verl imports by name in its workers: the covariance loss plugin and the reward function.
PLUGIN_MODULE = "entropy_rl.verl_plugin"
# The trainer that module registers with verl (verl's synchronous V1 trainer plus the paper's measures).
TRAINER_MODE = "entropy_paper"
REWARD_MODULE = "entropy_rl.reward"
# Checkpoints with optimiser state kept per run (the last two: one to resume from, one spare).
KEEP_CHECKPOINTS = 2


def _merge(base: dict, update: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in (update or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def resolve_run(scale_cfg: dict, run_id: str) -> dict:
    """The full, self-contained settings of one run (what the rule passes as ``params``).

    Layers, each updating the one before (``loss`` merges key by key): the scale's ``train``
    defaults, the run's named ``recipe`` (a partial ``train`` section of the scale's ``recipes``,
    e.g. the paper's Section 4 launch settings), the treatment (into ``loss``), the run's
    ``overrides``. The spec names its recipe (or None).
    """
    run = scale_cfg["runs"][run_id]
    treatment = scale_cfg["treatments"][run["treatment"]]
    recipe = run.get("recipe")
    recipes = scale_cfg.get("recipes", {})
    if recipe is not None and recipe not in recipes:
        raise KeyError(f"run {run_id!r} names recipe {recipe!r}, which this config's recipes do not hold: {sorted(recipes)}")
    spec = _merge(scale_cfg["train"], recipes[recipe] if recipe is not None else {})
    spec = _merge(spec, {"loss": treatment})
    spec = _merge(spec, run.get("overrides", {}))
    # PRIME's settings belong to PRIME runs only: otherwise editing them would
    # change, and so rerun, every other run.
    if run["algorithm"] != "prime":
        spec.pop("prime", None)
    spec.update(run_id=run_id, model=run["model"], algorithm=run["algorithm"], treatment=run["treatment"], recipe=recipe)
    model = scale_cfg.get("models", {}).get(run["model"], {})
    if "train_data" in run or "train_data" in model:  # a named training set (paper scale: always)
        spec["train_data"] = run.get("train_data", model.get("train_data"))
    return spec


def run_scope(scale_cfg: dict, run_id: str) -> dict:
    """The parts of a scale's config that ``resolve_run`` reads for one run: resolving the run from
    them gives its whole spec, and a change elsewhere in the config leaves them as they are."""
    run = scale_cfg["runs"][run_id]
    return {
        "runs": {run_id: run},
        "models": {run["model"]: scale_cfg["models"][run["model"]]},
        "treatments": {run["treatment"]: scale_cfg["treatments"][run["treatment"]]},
        "recipes": {run["recipe"]: scale_cfg["recipes"][run["recipe"]]} if "recipe" in run else {},
        "train": scale_cfg["train"],
    }


def eval_max_new_tokens(scale_cfg: dict, run_id: str) -> int:
    """Tokens an evaluation of the run generates: the scale's cap, or the run's own response cap where
    that is smaller (a model with a short context, like deepseek-math-7b-base, trains and is evaluated
    within it)."""
    return min(scale_cfg["eval"]["max_new_tokens"], resolve_run(scale_cfg, run_id)["max_response_length"])


def verl_overrides(spec: dict, covariance_metrics: bool = False) -> list[str]:
    """Hydra overrides for ``python -m verl.trainer.main_ppo`` carrying the same settings.

    With ``covariance_metrics`` the loss mode is the ``<mode>+cov`` wrapper of
    ``verl_plugin`` (same loss, plus the token counts of Section 4.5's claims in
    verl's metrics); the launch overrides load that plugin into verl's workers.
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
        f"{actor}.optim.clip_grad={spec['grad_clip']}",  # verl 0.9.1 reads the optimiser's, never actor.grad_clip
        f"{actor}.ppo_mini_batch_size={spec['ppo_mini_batch_size']}",
        f"{actor}.ppo_epochs={spec['ppo_epochs']}",
        f"{actor}.loss_agg_mode={loss['loss_agg_mode']}",
        f"{actor}.clip_ratio_low={loss['clip_ratio_low']}",
        f"{actor}.clip_ratio_high={loss['clip_ratio_high']}",
        f"{actor}.clip_ratio_c={loss['clip_ratio_c']}",  # dual-clip bound of the vanilla PPO loss
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
        # For the record: verl 0.9.1's V1 trainer refills filtered groups from its replay buffer and ignores it.
        f"algorithm.filter_groups.max_num_gen_batches={spec['max_num_gen_batches']}",
        f"actor_rollout_ref.rollout.val_kwargs.temperature={spec['val_protocol']['temperature']}",
        f"actor_rollout_ref.rollout.val_kwargs.n={spec['val_protocol']['n']}",
        f"actor_rollout_ref.rollout.val_kwargs.do_sample={str(spec['val_protocol']['temperature'] > 0).lower()}",
        f"trainer.total_training_steps={spec['steps']}",
        f"trainer.test_freq={spec['val_every']}",
        *([f"trainer.save_freq={spec['save_every']}"] if "save_every" in spec else []),
        f"data.seed={spec['seed']}",
    ]


def verl_launch_overrides(scale_cfg: dict, run_id: str, root: str) -> list[str]:
    """The paper-scale placement of one run: model and data paths, GPUs, memory, checkpoints, resumption.

    Paths follow the workflow's layout under ``root``, which the launch binds to an absolute path
    (``launch.bind``): verl's workers may start in another working directory. Checkpoints stay in the run's directory (the last ``KEEP_CHECKPOINTS``
    kept) and ``resume_mode=auto`` makes a requeued job continue from the last one. The reward is
    loaded by module name (``pkg://``), so verl imports it as part of the package.
    """
    run = scale_cfg["runs"][run_id]
    model = scale_cfg["models"][run["model"]]
    spec = resolve_run(scale_cfg, run_id)
    actor = "actor_rollout_ref.actor"
    prompt_len = scale_cfg["data"]["max_prompt_length"]
    return [
        f"actor_rollout_ref.model.path={root}/models/{run['model']}",
        f"data.train_files={root}/data/train/{spec['train_data']}.parquet",
        f"data.val_files={root}/data/benchmarks/validation.parquet",
        f"data.max_prompt_length={prompt_len}",
        "data.filter_overlong_prompts=true",
        f"trainer.nnodes={model['nodes']}",
        f"trainer.n_gpus_per_node={model['gpus_per_node']}",
        # Micro-batches packed by tokens, as the authors' scripts do (use_dynamic_bsz=True); the log-prob
        # passes of the rollout and reference follow the actor's settings (verl's oc.select defaults).
        f"{actor}.use_dynamic_bsz=true",
        f"{actor}.ppo_max_token_len_per_gpu={model['max_token_len_per_gpu']}",
        "actor_rollout_ref.rollout.name=vllm",
        f"actor_rollout_ref.rollout.tensor_model_parallel_size={model['tensor_parallel']}",
        # Explicit, so verl's vLLM server refuses a model whose context is shorter than prompt + response
        # instead of silently capping the responses at the model's max_position_embeddings.
        f"actor_rollout_ref.rollout.max_model_len={prompt_len + spec['max_response_length']}",
        # Only verl 0.9.1's V1 trainer applies algorithm.filter_groups (its replay buffer); never rely on the default.
        "trainer.use_v1=true",
        # The measures of Eq. 5, Eq. 10 and Eq. 8-9 on each whole update batch (verl_plugin.PaperMeasuresTrainer).
        f"trainer.v1.trainer_mode={TRAINER_MODE}",
        "algorithm.filter_groups.metric=reward",
        "trainer.project_name=entropy-mechanism",
        f"trainer.experiment_name={run_id}",
        f"trainer.default_local_dir={root}/runs/{run_id}/checkpoints",
        f"trainer.max_actor_ckpt_to_keep={KEEP_CHECKPOINTS}",
        "trainer.resume_mode=auto",
        "trainer.val_before_train=true",
        f"actor_rollout_ref.model.external_lib={PLUGIN_MODULE}",
        f"reward.custom_reward_function.path=pkg://{REWARD_MODULE}",
        "reward.custom_reward_function.name=compute_score",
        # The file log (its path from VERL_FILE_LOGGER_PATH) is what verl_metrics translates.
        "trainer.logger=[console,file]",
        # The model's recorded prompt format, the one evaluation and power sampling use too
        # (none for a tokenizer that carries its own template).
        *filter(None, [prompt_format.verl_override(model.get("chat_template", "tokenizer"))]),
    ]
