"""The random-reward control at paper scale (paper.reward_launch): its own verl command and code stamp, every other
run's command and stamp as ``launch`` gives them, and the preflight on the control's command."""

import pytest
import yaml
from entropy_rl.core import spec
from entropy_rl.core.scale import build
from entropy_rl.paper import launch, preflight, reward_launch
from entropy_rl.paper.verl import checks
from support import ROOT

CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
PAPER = build("paper", spec.with_pilot(CONFIG))
RANDOM_RUN = "qwen2.5-7b-grpo-random"
REWARD_PATH = "reward.custom_reward_function.path="


def test_every_other_run_keeps_its_command_and_its_trainers_stamp():
    """What a paid run's job reads (its command param, its code stamp's name and modules) is what launch gives."""
    others = [r for r in PAPER.runs if r != RANDOM_RUN]
    assert len(others) == len(PAPER.runs) - 1
    for run in others:
        r = PAPER.runs[run]
        assert reward_launch.verl_command(PAPER, run) == reward_launch.verl_command(PAPER, run), run
        assert reward_launch.stamp_key(r) == f"train_{r.trainer}"
        assert reward_launch.trainer_modules(r) == launch.TRAINER_MODULES[r.trainer]


def test_the_control_loads_the_random_reward_with_its_seed_and_training_parts():
    r = PAPER.runs[RANDOM_RUN]
    twin = PAPER.runs["qwen2.5-7b-grpo"]
    # Otherwise the main GRPO run's settings.
    assert r == twin.but(id=RANDOM_RUN, treatment=r.treatment, loss={"reward": "random"})
    cmd = reward_launch.verl_command(PAPER, RANDOM_RUN)
    assert (
        f"{REWARD_PATH}pkg://entropy_rl.core.random_reward" in cmd
        and f"{REWARD_PATH}pkg://entropy_rl.core.reward" not in cmd
    )
    assert "reward.custom_reward_function.name=compute_score" in cmd
    assert "+reward.custom_reward_function.reward_kwargs.seed=0" in cmd
    assert "+reward.custom_reward_function.reward_kwargs.random_sources=[eurus2-math-train]" in cmd
    # Else the twin's command, argument for argument, but for the run's own names.
    own = [a for a in cmd if "reward" not in a.split("=")[0]]
    assert own == [
        a.replace("qwen2.5-7b-grpo", RANDOM_RUN) if RANDOM_RUN not in a else a
        for a in reward_launch.verl_command(PAPER, "qwen2.5-7b-grpo")
        if "reward" not in a.split("=")[0]
    ]
    assert reward_launch.stamp_key(r) == "train_verl_random_reward"
    assert reward_launch.trainer_modules(r) == (*launch.TRAINER_MODULES["verl"], "entropy_rl.core.random_reward")


def test_each_replicate_of_the_control_draws_under_its_own_seed():
    replicated = build("paper", spec.with_replicates(CONFIG, base_seed=0, count=3))
    seeds = [
        next(a for a in reward_launch.verl_command(replicated, run) if ".reward_kwargs.seed=" in a)
        for run in spec.replicate_names(RANDOM_RUN, 3)
    ]
    assert [a.rsplit("=", 1)[1] for a in seeds] == ["0", "1", "2"]


def test_the_control_is_refused_a_trainer_that_does_not_load_it():
    runs = PAPER.config["runs"]
    scale = build("paper", {**PAPER.config, "runs": {**runs, "x": {**runs[RANDOM_RUN], "algorithm": "prime"}}})
    with pytest.raises(ValueError, match="random_reward is given to verl 0.9.1's runs only"):
        reward_launch.verl_command(scale, "x")


@pytest.mark.costly
def test_the_controls_command_passes_the_preflight_and_a_broken_one_is_named():
    """verl composes and validates the command, loads the reward by its own loader, the right and wrong answers of a
    validation row are graded, and a training row's draws vary and repeat (reward_launch.random_reward_problems)."""
    r = PAPER.runs[RANDOM_RUN]
    command = preflight.bound_command(PAPER, RANDOM_RUN)
    assert checks.command_problems(command, r) == []
    no_parts = [a.split("=")[0] + "=[]" if ".random_sources=" in a else a for a in command]
    assert any("names no training part" in p for p in checks.command_problems(no_parts, r))
    no_seed = [a for a in command if ".reward_kwargs.seed=" not in a]
    assert any(p.startswith("reward compute_score") and "seed" in p for p in checks.command_problems(no_seed, r))
