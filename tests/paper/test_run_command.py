"""A run's command from the run resolved once: each trainer's builder writes it whole, the reward an argument."""

import dataclasses

import pytest
import yaml
from entropy_rl.core import spec
from entropy_rl.paper import reward_launch, run_command, verl_names
from support import ROOT

PAPER = spec.with_pilot(
    spec.with_replicates(spec.with_instruct_models(yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]), 0, 1)
)


def test_a_resolved_run_is_frozen_and_names_its_trainer():
    run = run_command.resolve(PAPER, "qwen2.5-7b-prime")
    assert run.trainer == "prime" and run_command.resolve(PAPER, "qwen2.5-7b-grpo").trainer == "verl"
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.id = "another"


def test_prime_reads_the_shared_settings_and_its_own_and_every_verl_only_one_says_why():
    run = run_command.resolve(PAPER, "qwen2.5-7b-prime")
    settings = run_command.algorithm_settings(run.spec, True) + run_command.placement_settings(
        run, run_command.VERIFIABLE, "R"
    )
    command = run_command.command(run, root="R")
    assert command[:3] == ["python", "-m", verl_names.PRIME_MAIN_MODULE]
    assert command[3:] == [s.override for s in settings if s.prime] + run_command.prime_settings(run, "R")
    assert all(s.why for s in settings if not s.prime) and not any(s.why for s in settings if s.prime)
    verl_only = {s.override.split("=")[0] for s in settings if not s.prime}
    assert {"trainer.use_v1", "actor_rollout_ref.model.external_lib", "reward.custom_reward_function.path"} <= verl_only


def test_the_reward_is_an_argument_that_prime_refuses_unless_verifiable():
    run = run_command.resolve(PAPER, "qwen2.5-7b-grpo")
    other = run_command.Reward("some.module", ("+reward.custom_reward_function.reward_kwargs.seed=3",))
    command = run_command.command(run, other)
    at = command.index("reward.custom_reward_function.path=pkg://some.module")
    assert command[at + 1 : at + 3] == ["reward.custom_reward_function.name=compute_score", *other.settings]
    with pytest.raises(ValueError, match="PRIME"):
        run_command.command(run_command.resolve(PAPER, "qwen2.5-7b-prime"), other)


def test_the_one_entry_gives_the_control_its_own_reward():
    control = reward_launch.verl_command(PAPER, "qwen2.5-7b-grpo-random")
    assert "reward.custom_reward_function.path=pkg://entropy_rl.core.random_reward" in control
    assert "reward.custom_reward_function.path=pkg://entropy_rl.core.reward" in reward_launch.verl_command(
        PAPER, "qwen2.5-7b-grpo"
    )
