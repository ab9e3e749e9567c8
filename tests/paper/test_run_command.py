"""A run's command from the run and its launch, resolved once: each trainer's builder writes it whole, the reward an
argument."""

import dataclasses

import pytest
import yaml
from entropy_rl.core import run as resolved
from entropy_rl.paper import reward_launch, run_command, verl_names
from entropy_rl.pipeline import scope
from support import ROOT

PAPER = scope.resolve({**yaml.safe_load((ROOT / "config.yaml").read_text()), "scale": "paper"}).scale


def test_a_run_and_its_launch_are_frozen_and_the_run_names_its_trainer():
    run, launch = PAPER.runs["qwen2.5-7b-prime"], run_command.launch_of(PAPER, "qwen2.5-7b-prime")
    assert run == resolved.resolve(PAPER.config, "qwen2.5-7b-prime")  # the project's one resolved run
    assert run.trainer == "prime" and PAPER.runs["qwen2.5-7b-grpo"].trainer == "verl"
    assert launch.max_prompt_length == PAPER.config["data"]["max_prompt_length"]
    assert launch.placement == PAPER.placement("qwen2.5-7b-prime") == PAPER.models["qwen2.5-7b"].placement
    assert launch.chat_template == PAPER.models["qwen2.5-7b"].chat_template
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.id = "another"
    with pytest.raises(dataclasses.FrozenInstanceError):
        launch.max_prompt_length = 1


def test_a_placed_run_launches_on_its_own_placement():
    pilot = next(r for r in PAPER.runs if r.startswith("pilot-"))
    launch = run_command.launch_of(PAPER, pilot)
    assert launch.placement.gpus == 1 != PAPER.model_of(pilot).placement.gpus  # the pilot trains on one GPU
    assert f"trainer.n_gpus_per_node={launch.placement.gpus_per_node}" in reward_launch.verl_command(PAPER, pilot)


def test_prime_reads_the_shared_settings_and_its_own_and_every_verl_only_one_says_why():
    run, launch = PAPER.runs["qwen2.5-7b-prime"], run_command.launch_of(PAPER, "qwen2.5-7b-prime")
    settings = run_command.algorithm_settings(run, True) + run_command.placement_settings(
        run, launch, run_command.VERIFIABLE, "R"
    )
    command = run_command.command(run, launch, root="R")
    assert command[:3] == ["python", "-m", verl_names.PRIME_MAIN_MODULE]
    assert command[3:] == [s.override for s in settings if s.prime] + run_command.prime_settings(run, launch, "R")
    assert all(s.why for s in settings if not s.prime) and not any(s.why for s in settings if s.prime)
    verl_only = {s.override.split("=")[0] for s in settings if not s.prime}
    assert {"trainer.use_v1", "actor_rollout_ref.model.external_lib", "reward.custom_reward_function.path"} <= verl_only


def test_the_reward_is_an_argument_that_prime_refuses_unless_verifiable():
    run, launch = PAPER.runs["qwen2.5-7b-grpo"], run_command.launch_of(PAPER, "qwen2.5-7b-grpo")
    other = run_command.Reward("some.module", ("+reward.custom_reward_function.reward_kwargs.seed=3",))
    command = run_command.command(run, launch, other)
    at = command.index("reward.custom_reward_function.path=pkg://some.module")
    assert command[at + 1 : at + 3] == ["reward.custom_reward_function.name=compute_score", *other.settings]
    with pytest.raises(ValueError, match="PRIME"):
        run_command.command(PAPER.runs["qwen2.5-7b-prime"], run_command.launch_of(PAPER, "qwen2.5-7b-prime"), other)


def test_the_one_entry_gives_the_control_its_own_reward():
    control = reward_launch.verl_command(PAPER, "qwen2.5-7b-grpo-random")
    assert "reward.custom_reward_function.path=pkg://entropy_rl.core.random_reward" in control
    assert "reward.custom_reward_function.path=pkg://entropy_rl.core.reward" in reward_launch.verl_command(
        PAPER, "qwen2.5-7b-grpo"
    )
