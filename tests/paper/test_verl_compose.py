"""Every verl command the run matrix generates composes against the installed verl's own Hydra config."""

import importlib
import os

import pytest
import verl
import yaml
from entropy_rl.core.run import Loss, Run
from entropy_rl.core.scale import Scale, build
from entropy_rl.paper import run_command, verl_names
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from support import ROOT
from verl.trainer.ppo import core_algos


def verl_overrides(run: Run, covariance_metrics: bool = False) -> list[str]:
    """The run's algorithm settings as verl 0.9.1's overrides (run_command.algorithm_settings)."""
    return [s.override for s in run_command.algorithm_settings(run, covariance_metrics)]


def launch_overrides(scale: Scale, run: str, root: str) -> list[str]:
    """The run's placement as overrides, with the verifiable reward (run_command.placement_settings)."""
    launch = run_command.launch_of(scale, run)
    return [s.override for s in run_command.placement_settings(scale.runs[run], launch, run_command.VERIFIABLE, root)]


CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())
SCALES = {scale: build(scale, CONFIG[scale]) for scale in ("mini", "paper", "small")}
VERL_CONFIG_DIR = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
# PRIME runs through verl-recipe's PRIME trainer, whose config is not part of verl itself.
MAIN_PPO_RUNS = [
    (scale, run) for scale in SCALES for run, r in CONFIG[scale]["runs"].items() if r["algorithm"] != "prime"
]


def composed(overrides):
    with initialize_config_dir(config_dir=VERL_CONFIG_DIR, version_base=None):
        return compose(config_name="ppo_trainer", overrides=overrides)


@pytest.mark.parametrize("scale, run", MAIN_PPO_RUNS, ids=[f"{s}:{r}" for s, r in MAIN_PPO_RUNS])
def test_run_composes_against_verl_config(scale, run):
    scfg = SCALES[scale]
    verl_rules = scfg.kind.engine == "paper"  # paper and small: the command verl's main_ppo runs
    s = scfg.runs[run]
    overrides = verl_overrides(s, covariance_metrics=verl_rules)
    if verl_rules:
        overrides += launch_overrides(scfg, run, "/results")
    cfg = composed(overrides)  # an unknown or misspelt key raises here
    actor = cfg.actor_rollout_ref.actor
    if verl_rules:
        assert actor.policy_loss.loss_mode == s.loss.loss_mode + "+cov"
        importlib.import_module(cfg.actor_rollout_ref.model.external_lib)  # what verl does in each worker
        assert core_algos.get_policy_loss_fn(actor.policy_loss.loss_mode)
    else:
        assert actor.policy_loss.loss_mode == s.loss.loss_mode
    assert actor.policy_loss.ppo_kl_coef == s.loss.ppo_kl_coef  # verl's default (0.1) never leaks through
    assert actor.optim.lr == s.lr and cfg.algorithm.adv_estimator == s.method.estimator
    assert cfg.data.train_batch_size // actor.ppo_mini_batch_size == s.prompts_per_step // s.ppo_mini_batch_size
    assert cfg.algorithm.filter_groups.enable == s.filter_groups
    assert set(OmegaConf.to_container(actor.policy_loss)) >= {"clip_cov_ratio", "kl_cov_ratio"}


def test_paper_hyperparameters_reach_verl():
    paper = SCALES["paper"]
    for run, expected in [("qwen2.5-7b-grpo-klcov", 2e-3), ("qwen2.5-32b-grpo-klcov", 2e-4)]:
        cfg = composed(verl_overrides(paper.runs[run]) + launch_overrides(paper, run, "/results"))
        assert cfg.actor_rollout_ref.actor.policy_loss.kl_cov_ratio == expected  # a fraction, not a percentage
    cfg = composed(verl_overrides(paper.runs["qwen2.5-7b-grpo-clipcov"]))
    actor = cfg.actor_rollout_ref.actor
    assert (actor.policy_loss.clip_cov_ratio, actor.policy_loss.clip_cov_lb, actor.policy_loss.clip_cov_ub) == (
        2e-4,
        1.0,
        5.0,
    )
    assert actor.clip_ratio_low == actor.clip_ratio_high == 1.0
    kl_cov = composed(verl_overrides(paper.runs["qwen2.5-7b-grpo-klcov"]))
    assert kl_cov.actor_rollout_ref.actor.policy_loss.ppo_kl_coef == 1.0  # the paper's KL coefficient, not verl's 0.1
    base = paper.runs["qwen2.5-7b-grpo"]
    assert base.prompts_per_step // base.ppo_mini_batch_size == 2  # Section 2: 512 prompts in updates of 256
    section4 = paper.runs["qwen2.5-7b-grpo-dapo"]
    # Section 4's scripts: 256 in updates of 32
    assert section4.prompts_per_step // section4.ppo_mini_batch_size == 8
    cliphigher = composed(verl_overrides(paper.runs["qwen2.5-7b-grpo-cliphigher"])).actor_rollout_ref.actor
    # the recipe's dual clip, then the treatment
    assert cliphigher.clip_ratio_high == 0.28 and cliphigher.clip_ratio_c == 10.0
    assert composed(verl_overrides(base)).actor_rollout_ref.actor.clip_ratio_c == 3.0  # Section 2: verl's default
    bounded = composed(verl_overrides(section4))
    # The scripts' bound where the plugin's trainer reads it; verl's own key, which it ignores, at verl's default.
    assert OmegaConf.select(bounded, verl_names.GEN_BATCHES_KEY) == 10
    assert bounded.algorithm.filter_groups.max_num_gen_batches == 0
    placed = composed(verl_overrides(base) + launch_overrides(paper, "qwen2.5-32b-grpo", "/results"))
    assert (placed.trainer.nnodes, placed.trainer.n_gpus_per_node, placed.trainer.resume_mode) == (4, 8, "auto")
    assert list(placed.trainer.logger) == ["console", "file"]


def test_misspelt_override_is_refused():
    with pytest.raises(Exception, match="kl_cov_ration"):
        composed(["actor_rollout_ref.actor.policy_loss.kl_cov_ration=0.1"])


def test_loss_plugin_keeps_verls_loss_and_adds_token_counts():
    import torch
    from entropy_rl.mini import algorithms
    from entropy_rl.paper import verl_plugin
    from support import LOSS

    g = torch.Generator().manual_seed(4)
    old = -torch.rand(6, 5, generator=g) * 3
    log_prob, adv = old + 0.3 * torch.randn(6, 5, generator=g), torch.randn(6, 5, generator=g)
    mask = torch.ones(6, 5, dtype=torch.bool)
    for mode in verl_plugin.WRAPPED_MODES:
        cfg = algorithms.actor_config(Loss(**dict(LOSS, loss_mode=mode)), 2, 2)
        torch.manual_seed(0)
        plain, _ = core_algos.get_policy_loss_fn(mode)(old, log_prob, adv, mask, "token-mean", cfg)
        torch.manual_seed(0)
        wrapped, logged = core_algos.get_policy_loss_fn(mode + "+cov")(old, log_prob, adv, mask, "token-mean", cfg)
        assert torch.equal(plain, wrapped)
        stats = verl_plugin.measures.loss_token_stats(cfg, log_prob, old, adv, mask, logged)
        assert {f"actor/{k}": v for k, v in stats.items()}.items() <= logged.items()
        assert ("actor/cov_touched_tokens" in logged) == (mode != "vanilla")


def test_the_rollout_engine_the_estimate_prices_is_the_one_every_command_asks_for():
    """The engine's room (paper.cost.decode.ROLLOUT_ENGINE: its memory share and most concurrent answers) is verl 0.9.1's
    own default and what every run's composed command holds, PRIME's included (verl 0.4.1 would hold 1,024)."""
    from entropy_rl.paper import reward_launch
    from entropy_rl.paper.cost import decode

    with initialize_config_dir(config_dir=VERL_CONFIG_DIR, version_base=None):
        default = compose(config_name="ppo_trainer").actor_rollout_ref.rollout
    engine = decode.ROLLOUT_ENGINE
    assert (default.gpu_memory_utilization, default.max_num_seqs) == (
        engine.gpu_memory_utilization,
        engine.max_num_seqs,
    )
    paper = SCALES["paper"]
    for run in paper.runs:
        command = reward_launch.verl_command(paper, run)
        assert f"actor_rollout_ref.rollout.gpu_memory_utilization={engine.gpu_memory_utilization}" in command, run
        assert f"actor_rollout_ref.rollout.max_num_seqs={engine.max_num_seqs}" in command, run
