"""A bad config fails at once, naming the key and what is allowed."""

import copy
import subprocess
import sys

import pytest
import yaml
from entropy_rl.core import config as cfg
from entropy_rl.core import run as resolved
from entropy_rl.paper import run_command, verl_names
from support import ROOT


def verl_overrides(run: resolved.Run, covariance_metrics: bool = False) -> list[str]:
    """The run's algorithm settings as verl 0.9.1's overrides (run_command.algorithm_settings)."""
    return [s.override for s in run_command.algorithm_settings(run, covariance_metrics)]


@pytest.fixture
def config():
    return yaml.safe_load((ROOT / "config.yaml").read_text())


def test_shipped_configs_validate(config):
    cfg.validate(config)
    cfg.validate(yaml.safe_load((ROOT / "tests/smoke/config.yaml").read_text()))


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda c: c["mini"]["train"].update(lrr=1e-3),
            r"mini\.train: unknown key\(s\) \['lrr'\]; allowed keys are \[.*'lr'",
        ),
        (
            lambda c: c["mini"]["runs"]["qwen2-m-grpo"].update(algorithm="gpro"),
            r"mini\.runs\.qwen2-m-grpo\.algorithm: 'gpro' is not allowed; allowed values are \['grpo', 'rloo'",
        ),
        (
            lambda c: c["mini"]["runs"]["qwen2-m-grpo"].update(model="qwen9"),
            r"mini\.runs\.qwen2-m-grpo\.model: unknown model 'qwen9'; models are",
        ),
        (lambda c: c["mini"]["runs"]["qwen2-m-grpo"].update(treatment="cov"), r"treatment: unknown treatment 'cov'"),
        (lambda c: c["mini"]["train"].update(lr=5.0), r"mini\.train\.lr: 5\.0 is greater than the maximum of 1"),
        (
            lambda c: c["mini"]["treatments"]["kl_cov"].update(kl_cov_ratio=0),
            r"mini\.treatments\.kl_cov\.kl_cov_ratio: 0 is less than or equal",
        ),
        (
            lambda c: c.update(scale="huge"),
            r"scale: 'huge' is not allowed; allowed values are \['mini', 'paper', 'small'\]",
        ),
        (
            lambda c: c["mini"]["artifacts"]["fig03_fitted_curves"]["runs"].append("nope"),
            r"artifacts\.fig03_fitted_curves\.runs: unknown run 'nope'",
        ),
        (lambda c: c["mini"].pop("train"), r"config key mini: 'train' is a required property"),
        (
            lambda c: c["mini"]["analysis"].update(early_fit_steps=4),
            r"early_fit_steps: 4 must cover at least 3 validation points",
        ),
        (
            lambda c: c["mini"]["models"]["qwen2-s"].update(hidden_size=52),
            r"models\.qwen2-s\.hidden_size: 52 / num_heads 4 must be an even whole number",
        ),
        (lambda c: c["mini"]["data"]["train"]["from"].append("gsm8k"), r"data\.train\.from: unknown benchmark 'gsm8k'"),
        (
            lambda c: c["mini"]["runs"]["qwen2-m-grpo"].update(train_data="sums"),
            r"mini\.runs\.qwen2-m-grpo\.train_data: unknown training set 'sums'; sets are \['chain-sums', 'code'\]",
        ),
        (
            lambda c: c["mini"]["data"]["train_sets"]["chain-sums"]["from"].append("mul2"),
            r"data\.train_sets\.chain-sums\.from: unknown benchmark 'mul2'",
        ),
        (
            lambda c: c["paper"]["runs"]["qwen2.5-7b-grpo"].update(model="qwen3-7b"),
            r"paper\.runs\.qwen2\.5-7b-grpo\.model: unknown model 'qwen3-7b'",
        ),
        (
            lambda c: c["paper"]["models"]["qwen2.5-7b"].update(hub="not a hub id"),
            r"paper\.models\.qwen2\.5-7b\.hub: 'not a hub id' does not match",
        ),
        (
            lambda c: c["paper"]["runs"]["qwen2.5-7b-grpo-dapo"].update(recipe="section5"),
            r"paper\.runs\.qwen2\.5-7b-grpo-dapo\.recipe: unknown recipe 'section5'; recipes are \['section4-32b', 'section4-7b'\]",
        ),
        (
            lambda c: c["paper"]["recipes"]["section4-7b"].update(ppo_mini_batch=32),
            r"paper\.recipes\.section4-7b: unknown key\(s\) \['ppo_mini_batch'\]",
        ),
        (
            lambda c: c["paper"]["recipes"]["section4-7b"]["loss"].update(clip_ratio_c=1.0),
            r"paper\.recipes\.section4-7b\.loss\.clip_ratio_c: 1\.0 is less than or equal to the minimum of 1",
        ),
        (
            lambda c: c["paper"]["recipes"]["section4-7b"].update(ppo_mini_batch_size=512),
            r"paper\.runs\.qwen2\.5-7b-grpo-\w+: ppo_mini_batch_size \(512\) must not exceed prompts_per_step \(256\) \(from train, recipe 'section4-7b'",
        ),
        (
            lambda c: c["paper"]["data"]["parts"]["eurus2-math-train"].update(source="nowhere"),
            r"config key paper\.data\.parts\.eurus2-math-train\.source: unknown source 'nowhere'; sources are \[.*'eurus2-rl'",
        ),
        (
            lambda c: c["paper"]["data"]["train_sets"]["gsm8k"].append("gsm9k-train"),
            r"config key paper\.data\.train_sets\.gsm8k: unknown part 'gsm9k-train'; parts are \[",
        ),
        (
            lambda c: c["paper"]["models"]["qwen2.5-7b"].update(train_data="gsm9k"),
            r"config key paper\.models\.qwen2\.5-7b\.train_data: unknown train set 'gsm9k'; train sets are \['code', 'dapo-math', 'eurus2-math', 'gsm8k'\]",
        ),
        (
            lambda c: c["mini"]["power_sampling"].update(model="qwen9"),
            r"config key mini\.power_sampling\.model: unknown model 'qwen9'; models are \['llama-m', ",
        ),
        (
            lambda c: c["mini"]["power_sampling"]["runs"].update(grpo="nope"),
            r"config key mini\.power_sampling\.runs\.grpo: unknown run 'nope'; runs are \[",
        ),
        (
            lambda c: c["mini"]["power_sampling"]["benchmarks"].append("gsm8k"),
            r"config key mini\.power_sampling\.benchmarks: unknown benchmark 'gsm8k'; benchmarks are \[",
        ),
        (
            lambda c: c["mini"]["power_sampling"]["sweeps"].update(benchmarks=["add1"]),
            r"config key mini\.power_sampling\.sweeps\.benchmarks: unknown benchmark 'add1'; the study's benchmarks are \['add4', 'addsub', 'arith4'\]",
        ),
    ],
    ids=[
        "misspelt",
        "algorithm",
        "model",
        "treatment",
        "range",
        "ratio",
        "scale",
        "figure-run",
        "missing",
        "early-fit",
        "head-dim",
        "train-from",
        "run-train-set",
        "train-set-from",
        "paper-run-model",
        "paper-hub",
        "run-recipe",
        "recipe-key",
        "recipe-dual-clip",
        "recipe-mini-batch",
        "paper-part-source",
        "paper-train-set-part",
        "paper-model-train-set",
        "power-model",
        "power-run",
        "power-benchmark",
        "power-sweep-benchmark",
    ],
)
def test_bad_config_names_the_key(config, edit, message):
    bad = copy.deepcopy(config)
    edit(bad)
    with pytest.raises(cfg.ConfigError, match=message):
        cfg.validate(bad)


def test_snakemake_refuses_bad_config_before_any_job(tmp_path, config):
    config["mini"]["runs"]["qwen2-m-grpo"]["algorithm"] = "gpro"
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(tmp_path), "-n"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0
    assert "mini.runs.qwen2-m-grpo.algorithm: 'gpro' is not allowed" in proc.stdout + proc.stderr
    assert not (tmp_path / "results").exists()


def test_run_spec_layers_defaults_treatment_and_overrides(config):
    m = config["mini"]
    m["runs"]["qwen2-m-grpo-klcov"]["overrides"] = {"lr": 3e-5, "loss": {"kl_cov_ratio": 0.1}}
    s = resolved.resolve(m, "qwen2-m-grpo-klcov")
    assert s.lr == 3e-5 and s.steps == m["train"]["steps"]
    assert s.loss.loss_mode == "kl_cov" and s.loss.kl_cov_ratio == 0.1
    assert s.loss.clip_ratio_low == m["train"]["loss"]["clip_ratio_low"]
    assert (s.id, s.model, s.algorithm, s.treatment) == ("qwen2-m-grpo-klcov", "qwen2-m", "grpo", "kl_cov")
    assert resolved.Run.from_params(s.params()) == s  # what a rule passes its job reads back as the same run


def test_run_spec_layers_train_recipe_treatment_and_overrides(config):
    p = config["paper"]
    p["runs"]["qwen2.5-7b-grpo-cliphigher"]["overrides"] = {"lr": 2e-6, "loss": {"clip_ratio_low": 0.1}}
    s = resolved.resolve(p, "qwen2.5-7b-grpo-cliphigher")
    # the recipe over train
    assert s.recipe == "section4-7b" and s.prompts_per_step == 256 and s.ppo_mini_batch_size == 32
    # train where the recipe is silent
    assert s.rollout_n == p["train"]["rollout_n"] and s.gamma == p["train"]["gamma"]
    # the recipe's loss, then the treatment
    assert s.loss.clip_ratio_c == 10.0 and s.loss.clip_ratio_high == 0.28
    assert s.loss.clip_ratio_low == 0.1 and s.lr == 2e-6  # the run's overrides last
    assert s.loss.clip_cov_ub == p["train"]["loss"]["clip_cov_ub"]  # loss merges key by key
    assert (
        resolved.resolve(p, "qwen2.5-7b-grpo").recipe is None
        and resolved.resolve(config["mini"], "qwen2-m-grpo").recipe is None
    )
    scope = {k: v for k, v in p.items() if k != "recipes"}  # a reduced config that lost the recipe says so
    with pytest.raises(KeyError, match="names recipe 'section4-7b'"):
        resolved.resolve(scope, "qwen2.5-7b-grpo-cliphigher")


def test_algorithm_settings_reach_only_their_runs(config):
    """Editing PRIME's settings must not change (and so rerun) a GRPO run."""
    m = config["mini"]
    assert resolved.resolve(m, "qwen2-m-prime").prime is not None
    grpo = resolved.resolve(m, "qwen2-m-grpo")
    m["train"]["prime"]["lr"] = 0.5
    assert grpo.prime is None and resolved.resolve(m, "qwen2-m-grpo").params() == grpo.params()
    assert resolved.resolve(m, "qwen2-m-prime").prime.lr == 0.5


def test_verl_overrides_carry_the_same_settings(config):
    s = resolved.resolve(config["mini"], "qwen2-m-grpo-clipcov")
    ov = dict(o.split("=", 1) for o in verl_overrides(s))
    assert ov["algorithm.adv_estimator"] == "grpo"
    assert ov["actor_rollout_ref.actor.policy_loss.loss_mode"] == "clip_cov"
    assert float(ov["actor_rollout_ref.actor.policy_loss.clip_cov_ratio"]) == s.loss.clip_cov_ratio
    assert float(ov["actor_rollout_ref.actor.optim.lr"]) == s.lr
    assert int(ov["actor_rollout_ref.rollout.n"]) == s.rollout_n
    assert ov["actor_rollout_ref.actor.use_kl_loss"] == "false"
    assert float(ov["actor_rollout_ref.actor.clip_ratio_c"]) == s.loss.clip_ratio_c
    assert int(ov[f"+{verl_names.GEN_BATCHES_KEY}"]) == s.max_num_gen_batches
