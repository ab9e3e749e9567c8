"""A run's training command, built from the run and its launch, each resolved once.

``launch_of`` reads, from a scale resolved once (``core.scale.Scale``), what a run's command holds beside the run itself
(``core.run.Run``): its ``Launch``. ``command`` gives both, with the run's ``Reward`` (an argument: the verifiable
reward, or the random-reward control's that ``reward_launch`` chooses), to its trainer's builder in ``TRAINERS``: verl
0.9.1's ``main_ppo``, or PRIME's main on verl 0.4.1. Every setting says whether PRIME's recipe reads it too, and where
it does not, why and what it reads instead; so PRIME's command is written from the same settings, not cut down from
verl's afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core import algorithms, paths
from ..core.run import Run
from ..core.scale import Placement, Scale
from . import prompt_format
from .cost.decode import ROLLOUT_ENGINE
from .platforms import GPU, VERL_OVERRIDES
from .saves import ASYNC_SAVE_REFUSED, asks_async_save
from .verl_names import (
    AGENT_LOOP,
    GEN_BATCHES_KEY,
    KEEP_CHECKPOINTS,
    PLUGIN_MODULE,
    PRIME_MAIN_MODULE,
    RESULTS_PLACEHOLDER,
    REWARD_MODULE,
    TRAINER_MODE,
)


@dataclass(frozen=True)
class Launch:
    """What a run's command holds beside the run's own settings (``core.run.Run``): where it trains (its model's
    placement with the run's own over it: nodes, GPUs, tensor-parallel size, token budget), its model's prompt format,
    the scale's prompt length, and the platform's verl overrides then the site's (``launch.platform`` and
    ``launch.verl_overrides`` in the config: paper.platforms.VERL_OVERRIDES, then the site's, which win)."""

    placement: Placement
    chat_template: str
    max_prompt_length: int
    site_overrides: tuple[str, ...]


def launch_of(scale: Scale, run_id: str) -> Launch:
    """The launch of the run ``run_id`` of a scale; a site whose overrides ask for asynchronous saves is refused."""
    launch = scale.config.get("launch", {})
    overrides = VERL_OVERRIDES[launch.get("platform", GPU)] + tuple(launch.get("verl_overrides", []))
    if asks_async_save(overrides):
        raise ValueError(f"launch.verl_overrides: {ASYNC_SAVE_REFUSED}")
    return Launch(
        scale.placement(run_id),
        scale.model_of(run_id).chat_template,
        scale.config["data"]["max_prompt_length"],
        overrides,
    )


@dataclass(frozen=True)
class Reward:
    """What verl loads a run's reward from (by module name), and the settings it binds to it (reward_kwargs)."""

    module: str
    settings: tuple[str, ...] = ()


VERIFIABLE = Reward(REWARD_MODULE)


@dataclass(frozen=True)
class Setting:
    """One Hydra override; ``prime`` whether verl 0.4.1's PRIME recipe reads it too, and where not, ``why``."""

    override: str
    prime: bool = True
    why: str = ""


def verl_only(override: str, why: str) -> Setting:
    return Setting(override, prime=False, why=why)


V1 = "verl 0.9.1's V1 trainer; verl 0.4.1 has no such key and PRIME runs its own loop"
FSDP = "PRIME runs verl 0.4.1's recipe on that verl's default FSDP workers, as released"


def algorithm_settings(run: Run, covariance_metrics: bool = False) -> list[Setting]:
    """The run's algorithm for ``main_ppo`` (with ``covariance_metrics`` the loss mode is the ``<mode>+cov`` wrapper
    of ``verl_plugin``: the same loss, plus the token counts of Section 4.5's claims in verl's metrics)."""
    loss = run.loss
    loss_mode = loss.loss_mode + ("+cov" if covariance_metrics else "")
    actor = "actor_rollout_ref.actor"
    adv = run.method.estimator
    return [
        Setting(f"algorithm.adv_estimator={adv}"),
        Setting(f"data.train_batch_size={run.prompts_per_step}"),
        Setting(f"data.max_response_length={run.max_response_length}"),
        Setting(f"actor_rollout_ref.rollout.n={run.rollout_n}"),
        Setting(f"actor_rollout_ref.rollout.temperature={run.temperature}"),
        Setting(f"{actor}.optim.lr={run.lr}"),
        Setting(f"{actor}.optim.weight_decay={run.weight_decay}"),
        # verl 0.9.1 reads the optimiser's, never actor.grad_clip
        verl_only(f"{actor}.optim.clip_grad={run.grad_clip}", "verl 0.4.1 reads actor.grad_clip"),
        Setting(f"{actor}.ppo_mini_batch_size={run.ppo_mini_batch_size}"),
        Setting(f"{actor}.ppo_epochs={run.ppo_epochs}"),
        Setting(f"{actor}.loss_agg_mode={loss.loss_agg_mode}"),
        Setting(f"{actor}.clip_ratio_low={loss.clip_ratio_low}"),
        Setting(f"{actor}.clip_ratio_high={loss.clip_ratio_high}"),
        Setting(f"{actor}.clip_ratio_c={loss.clip_ratio_c}"),  # dual-clip bound of the vanilla PPO loss
        Setting(f"{actor}.entropy_coeff={loss.entropy_coeff}"),
        Setting(f"{actor}.use_kl_loss={str(loss.kl_loss_coef > 0).lower()}"),
        Setting(f"{actor}.kl_loss_coef={loss.kl_loss_coef}"),
        Setting(f"{actor}.kl_loss_type={loss.kl_loss_type}"),
        verl_only(f"{actor}.policy_loss.loss_mode={loss_mode}", "PRIME's is set without the +cov plugin suffix"),
        Setting(f"{actor}.policy_loss.clip_cov_ratio={loss.clip_cov_ratio}"),
        Setting(f"{actor}.policy_loss.clip_cov_lb={loss.clip_cov_lb}"),
        Setting(f"{actor}.policy_loss.clip_cov_ub={loss.clip_cov_ub}"),
        Setting(f"{actor}.policy_loss.kl_cov_ratio={loss.kl_cov_ratio}"),
        Setting(f"{actor}.policy_loss.ppo_kl_coef={loss.ppo_kl_coef}"),
        verl_only(
            f"algorithm.filter_groups.enable={str(run.filter_groups).lower()}",
            "PRIME filters groups by accuracy (data.filter_accuracy)",
        ),
        # Appended (verl's config has no such key): the bound of the released scripts, which verl_plugin's trainer
        # honours; verl 0.9.1 would only warn about its own key and refill without end (verl_plugin.GenerationBound).
        verl_only(f"+{GEN_BATCHES_KEY}={run.max_num_gen_batches}", "the generation bound is that V1 trainer's setting"),
        Setting(f"actor_rollout_ref.rollout.val_kwargs.temperature={run.val_protocol.temperature}"),
        Setting(f"actor_rollout_ref.rollout.val_kwargs.n={run.val_protocol.n}"),
        Setting(f"actor_rollout_ref.rollout.val_kwargs.do_sample={str(run.val_protocol.temperature > 0).lower()}"),
        Setting(f"trainer.total_training_steps={run.steps}"),
        Setting(f"trainer.test_freq={run.val_every}"),
        *([Setting(f"trainer.save_freq={run.save_every}")] if run.save_every is not None else []),
        verl_only(
            f"data.seed={run.seed}",
            "not in verl 0.4.1's config; the PRIME trainer reads data.get('seed'), so "
            "PRIME's settings append it (+data.seed)",
        ),
        # The engine's seed (verl's default is 42 for every run); each request's too where the run asks for it
        # (rollout_seeds: per_request, the plugin's agent loop), so that the same run draws the same rollouts again
        # whatever else its engine serves at the time. Off unless asked: on a GPU a seeded request's noise is drawn
        # request by request, up to a third of a decode step at the study's batch (docs/reproducibility.md), for a
        # repeat that continuous batching does not give to the token anyway.
        verl_only(
            f"actor_rollout_ref.rollout.seed={run.seed}",
            "not in verl 0.4.1's rollout config, whose vLLM "
            "engine reads config.get('seed', 0): PRIME's settings append it (+actor_rollout_ref.rollout.seed)",
        ),
        *(
            [
                verl_only(
                    f"actor_rollout_ref.rollout.agent.default_agent_loop={AGENT_LOOP}",
                    "verl 0.4.1's rollout is "
                    "vLLM's SPMD engine without agent loops: PRIME's rollouts are seeded by the engine only",
                )
            ]
            if run.rollout_seeds == "per_request"
            else []
        ),
        *(
            [Setting(f"data.val_max_samples={run.val_max_samples}")] if run.val_max_samples is not None else []
        ),  # the pilot's
    ]


def placement_settings(run: Run, launch: Launch, reward: Reward, root: str) -> list[Setting]:
    """The paper-scale placement of one run: model and data paths, GPUs, memory, checkpoints, resumption, the reward.

    Paths follow the workflow's layout under ``root``, which the launch binds to an absolute path (``launch.bind``):
    verl's workers may start in another working directory. Checkpoints stay in the run's directory (the last
    ``KEEP_CHECKPOINTS`` kept) and ``resume_mode=auto`` makes a requeued job continue from the last one. The reward is
    loaded by module name (``pkg://``), so verl imports it as part of the package."""
    placement, actor = launch.placement, "actor_rollout_ref.actor"
    prompt_len = launch.max_prompt_length
    return [
        Setting(f"actor_rollout_ref.model.path={paths.rooted(paths.MODEL_DIR, root, model=run.model)}"),
        Setting(f"data.train_files={paths.rooted(paths.TRAIN_SET, root, train_set=run.train_data)}"),
        Setting(f"data.val_files={paths.rooted(paths.VALIDATION_SET, root)}"),
        Setting(f"data.max_prompt_length={prompt_len}"),
        Setting("data.filter_overlong_prompts=true"),
        Setting(f"trainer.nnodes={placement.nodes}"),
        Setting(f"trainer.n_gpus_per_node={placement.gpus_per_node}"),
        # Micro-batches packed by tokens, as the authors' scripts do (use_dynamic_bsz=True); the log-prob
        # passes of the rollout and reference follow the actor's settings (verl's oc.select defaults).
        Setting(f"{actor}.use_dynamic_bsz=true"),
        Setting(f"{actor}.ppo_max_token_len_per_gpu={placement.max_token_len_per_gpu}"),
        # FSDP2 where the authors' fork defaulted to FSDP1 (tests/fixtures/released_scripts.yaml, implicit): in verl
        # 0.9.1 the same bf16 compute, fp32 gradient reduction and master weights, optimiser, clipping and token
        # packing (so the same tokens per micro-batch for Clip-Cov and KL-Cov), verl's recommended strategy, and
        # the one its worker runs in the CPU tests (FSDP1 refuses CPU parameters: sync_module_states=True).
        verl_only(f"{actor}.strategy=fsdp2", FSDP),
        verl_only("actor_rollout_ref.ref.strategy=fsdp2", FSDP),
        Setting("actor_rollout_ref.rollout.name=vllm"),
        Setting(f"actor_rollout_ref.rollout.tensor_model_parallel_size={placement.tensor_parallel}"),
        # The engine's room, which decides how many answers it decodes at once and so what a token costs
        # (paper.cost.decode prices it): verl 0.9.1's defaults, explicit so that PRIME's verl 0.4.1 (1,024 sequences
        # by default) holds the same.
        Setting(f"actor_rollout_ref.rollout.gpu_memory_utilization={ROLLOUT_ENGINE.gpu_memory_utilization}"),
        Setting(f"actor_rollout_ref.rollout.max_num_seqs={ROLLOUT_ENGINE.max_num_seqs}"),
        # Explicit, so verl's vLLM server refuses a model whose context is shorter than prompt + response
        # instead of silently capping the responses at the model's max_position_embeddings.
        Setting(f"actor_rollout_ref.rollout.max_model_len={prompt_len + run.max_response_length}"),
        # Only verl 0.9.1's V1 trainer applies algorithm.filter_groups (its replay buffer); never rely on the default.
        verl_only("trainer.use_v1=true", V1),
        # The measures of Eq. 5, Eq. 10 and Eq. 8-9 on each whole update batch (verl_plugin.PaperMeasuresTrainer).
        verl_only(
            f"trainer.v1.trainer_mode={TRAINER_MODE}",
            "the V1 trainer with the paper's measures (verl_plugin) is verl 0.9.1's; PRIME runs verl 0.4.1's loop",
        ),
        verl_only("algorithm.filter_groups.metric=reward", "PRIME filters groups by accuracy (data.filter_accuracy)"),
        Setting("trainer.project_name=entropy-mechanism"),
        Setting(f"trainer.experiment_name={run.id}"),
        # Hydra's record of each launch (its composed config and overrides) in the run's directory: by default Hydra
        # writes outputs/<date>/<time>/ under the job's working directory, the checkout's root.
        Setting(f"hydra.run.dir={paths.rooted(paths.RUN_HYDRA, root, run=run.id)}"),
        Setting(f"trainer.default_local_dir={paths.rooted(paths.RUN_CHECKPOINTS, root, run=run.id)}"),
        Setting(f"trainer.max_actor_ckpt_to_keep={KEEP_CHECKPOINTS}"),
        Setting("trainer.resume_mode=auto"),
        Setting("trainer.val_before_train=true"),
        verl_only(
            f"actor_rollout_ref.model.external_lib={PLUGIN_MODULE}",
            "the covariance plugin wraps verl 0.9.1's "
            "loss API; verl 0.4.1's losses return a 4-tuple and its vanilla loss is not in the registry",
        ),
        *(
            verl_only(
                o,
                "verl 0.4.1 calls it custom_reward_function and PRIME's main never reads it: prime_main hands "
                "the recipe the reward itself",
            )
            for o in reward_overrides(reward)
        ),
        # The file log (its path from VERL_FILE_LOGGER_PATH) is what verl_metrics translates.
        verl_only("trainer.logger=[console,file]", "verl 0.4.1 has no file logger: PRIME logs to tensorboard"),
        # The model's recorded prompt format, the one evaluation and power sampling use too
        # (none for a tokenizer that carries its own template).
        *(Setting(o) for o in filter(None, [prompt_format.verl_override(launch.chat_template)])),
    ]


# verl binds these to the reward function (verl.trainer.ppo.reward.get_custom_reward_fn).
REWARD_PATH = "reward.custom_reward_function.path="
REWARD_NAME = "reward.custom_reward_function.name="


def reward_overrides(reward: Reward) -> list[str]:
    return [f"{REWARD_PATH}pkg://{reward.module}", f"{REWARD_NAME}compute_score", *reward.settings]


def prime_settings(run: Run, launch: Launch, root: str) -> list[str]:
    """PRIME's settings for verl 0.4.1's recipe: the implicit PRM (beta, its own learning rate, the
    policy's token budget per GPU), the paper's group filter, and verl 0.4.1's names of shared settings."""
    budget = launch.placement.max_token_len_per_gpu
    return [
        f"actor_rollout_ref.actor.policy_loss.loss_mode={run.loss.loss_mode}",
        f"actor_rollout_ref.actor.grad_clip={run.grad_clip}",
        f"+data.seed={run.seed}",
        f"+actor_rollout_ref.rollout.seed={run.seed}",
        f"reward_model.model.path={paths.rooted(paths.MODEL_DIR, root, model=run.model)}",
        f"reward_model.model.beta_train={run.prime.beta}",
        f"reward_model.model.optim.lr={run.prime.lr}",
        # The recipe's own 4.0 (prime_trainer.yaml), explicit: the estimate charges the answers it generates.
        f"data.oversample_factor={run.prime.oversample_factor}",
        # The PRM's forward and update micro-batches packed by tokens like the actor's; its update reads
        # ppo_max_token_len_per_gpu, which neither verl's nor the recipe's config defines.
        "reward_model.use_dynamic_bsz=true",
        f"reward_model.forward_max_token_len_per_gpu={budget}",
        f"+reward_model.ppo_max_token_len_per_gpu={budget}",
        # Keep prompts whose accuracy is strictly between 0 and 1: the paper drops all-right and all-wrong groups.
        f"data.filter_accuracy={str(run.filter_groups).lower()}",
        f"data.accuracy_lower_bound={0.5 / run.rollout_n}",
        f"data.accuracy_upper_bound={1 - 0.5 / run.rollout_n}",
        "trainer.logger=[console,tensorboard]",
        # The recipe finds verl's ppo_trainer through file://verl/trainer/config, relative to the working
        # directory: from the workflow's it is not there. verl's installed config package is.
        "hydra.searchpath=[pkg://verl.trainer.config]",
    ]


def verl_main(run: Run, launch: Launch, reward: Reward, root: str) -> list[str]:
    """``python -m verl.trainer.main_ppo`` with every setting, then the site's own overrides (they come last)."""
    settings = algorithm_settings(run, covariance_metrics=True) + placement_settings(run, launch, reward, root)
    return ["python", "-m", "verl.trainer.main_ppo", *(s.override for s in settings), *launch.site_overrides]


def prime_main(run: Run, launch: Launch, reward: Reward, root: str) -> list[str]:
    """PRIME's main (verl-recipe's PRIME on verl 0.4.1, with the verifiable reward) with the settings it reads too."""
    if reward != VERIFIABLE:
        raise ValueError(
            f"run {run.id!r}: PRIME's main hands the recipe {REWARD_MODULE} itself; {reward.module} is "
            "given to verl 0.9.1's runs only"
        )
    settings = algorithm_settings(run, covariance_metrics=True) + placement_settings(run, launch, reward, root)
    read = [s.override for s in settings if s.prime]
    return ["python", "-m", PRIME_MAIN_MODULE, *read, *prime_settings(run, launch, root)]


TRAINERS = {algorithms.VERL: verl_main, algorithms.PRIME: prime_main}


def command(run: Run, launch: Launch, reward: Reward = VERIFIABLE, root: str = RESULTS_PLACEHOLDER) -> list[str]:
    """The run's command, by its trainer's builder."""
    return TRAINERS[run.trainer](run, launch, reward, root)
