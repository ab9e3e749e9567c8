"""A run's command from the run resolved once: each trainer's builder writes it whole, the reward an argument."""

import dataclasses

import pytest
import yaml
from entropy_rl.core import run as resolved
from entropy_rl.core import spec
from entropy_rl.paper import reward_launch, run_command, verl_names
from support import ROOT

PAPER = spec.with_pilot(
    spec.with_replicates(spec.with_instruct_models(yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]), 0, 1)
)


def test_a_resolved_run_and_its_placement_are_frozen_and_the_run_names_its_trainer():
    run, placement = run_command.resolve(PAPER, "qwen2.5-7b-prime")
    assert run == resolved.resolve(PAPER, "qwen2.5-7b-prime")  # the project's one resolved run
    assert run.trainer == "prime" and run_command.resolve(PAPER, "qwen2.5-7b-grpo")[0].trainer == "verl"
    assert placement.max_prompt_length == PAPER["data"]["max_prompt_length"]
    assert placement.model == spec.run_model_entry(PAPER, "qwen2.5-7b-prime")
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.id = "another"
    with pytest.raises(dataclasses.FrozenInstanceError):
        placement.max_prompt_length = 1


def test_prime_reads_the_shared_settings_and_its_own_and_every_verl_only_one_says_why():
    run, placement = run_command.resolve(PAPER, "qwen2.5-7b-prime")
    settings = run_command.algorithm_settings(run, True) + run_command.placement_settings(
        run, placement, run_command.VERIFIABLE, "R"
    )
    command = run_command.command(run, placement, root="R")
    assert command[:3] == ["python", "-m", verl_names.PRIME_MAIN_MODULE]
    assert command[3:] == [s.override for s in settings if s.prime] + run_command.prime_settings(run, placement, "R")
    assert all(s.why for s in settings if not s.prime) and not any(s.why for s in settings if s.prime)
    verl_only = {s.override.split("=")[0] for s in settings if not s.prime}
    assert {"trainer.use_v1", "actor_rollout_ref.model.external_lib", "reward.custom_reward_function.path"} <= verl_only


def test_the_reward_is_an_argument_that_prime_refuses_unless_verifiable():
    run, placement = run_command.resolve(PAPER, "qwen2.5-7b-grpo")
    other = run_command.Reward("some.module", ("+reward.custom_reward_function.reward_kwargs.seed=3",))
    command = run_command.command(run, placement, other)
    at = command.index("reward.custom_reward_function.path=pkg://some.module")
    assert command[at + 1 : at + 3] == ["reward.custom_reward_function.name=compute_score", *other.settings]
    with pytest.raises(ValueError, match="PRIME"):
        run_command.command(*run_command.resolve(PAPER, "qwen2.5-7b-prime"), other)


def test_the_one_entry_gives_the_control_its_own_reward():
    control = reward_launch.verl_command(PAPER, "qwen2.5-7b-grpo-random")
    assert "reward.custom_reward_function.path=pkg://entropy_rl.core.random_reward" in control
    assert "reward.custom_reward_function.path=pkg://entropy_rl.core.reward" in reward_launch.verl_command(
        PAPER, "qwen2.5-7b-grpo"
    )
