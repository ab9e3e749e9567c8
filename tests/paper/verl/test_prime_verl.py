"""Every PRIME run of the paper matrix launches against verl 0.4.1, the verl its recipe runs on.

The check runs in a child process whose verl is verl 0.4.1 (envs/install-prime-check.sh installs it
into .venv/prime-site): the command composes against that verl's Hydra config and passes its own
validation (RayPPOTrainer._validate_config), its loss and logger settings load as its workers and
trainer load them. With the PRIME recipe at hand (ENTROPY_RL_PRIME_RECIPE, a folder holding
recipe/prime of verl's tag v0.4.1) the launch's own entry runs the recipe's main_task up to the data.
"""

import os

import pytest
import yaml
from entropy_rl.core.scale import build
from entropy_rl.paper import launch, reward_launch
from entropy_rl.paper.verl import prime_check
from support import ROOT

PAPER = build("paper", yaml.safe_load((ROOT / "config.yaml").read_text())["paper"])
PRIME_RUNS = [run for run, r in PAPER.runs.items() if r.trainer == "prime"]
INSTALLED = (prime_check.default_site() / "verl" / "__init__.py").is_file()
needs_site = pytest.mark.skipif(
    not INSTALLED and not os.environ.get("CI"),
    reason=f"verl {prime_check.PRIME_VERL} is not installed for the check: run envs/install-prime-check.sh",
)  # under CI a missing install fails instead


def refused_commands():
    """Commands verl 0.4.1 must refuse, each a PRIME command with one setting broken."""
    cmd = launch.bind(reward_launch.verl_command(PAPER, PRIME_RUNS[0]), "results")
    return {
        "misspelt": [*cmd, "reward_model.model.beta_trian=0.1"],  # an unknown key
        "shared_name": [*cmd, "actor_rollout_ref.actor.optim.clip_grad=1.0"],  # verl 0.9.1's name
        "batch": [*cmd, "trainer.n_gpus_per_node=7"],  # verl's own validation: 256 x 8 not divisible by 7
        "logger": [*cmd, "trainer.logger=[console,file]"],  # no file logger in verl 0.4.1
        "plugin": [*cmd, "actor_rollout_ref.model.external_lib=entropy_rl.paper.verl_plugin"],  # verl 0.9.1's loss API
    }


@pytest.fixture(scope="module")
def checked():
    """One child process checks the matrix's PRIME commands and the broken ones."""
    return prime_check.check_commands({**prime_check.prime_commands(), **refused_commands()}, recipe="")


def test_the_paper_matrix_has_prime_runs_and_they_launch_the_recipe_through_our_entry():
    assert PRIME_RUNS
    for run in PRIME_RUNS:
        cmd = reward_launch.verl_command(PAPER, run)
        assert cmd[1:3] == ["-m", "entropy_rl.paper.prime_main"]
        dropped = [
            o for o in cmd if o.split("=", 1)[0].startswith(("trainer.use_v1", "reward.", "algorithm.filter_groups"))
        ]
        assert dropped == [] and "actor_rollout_ref.actor.policy_loss.loss_mode=vanilla" in cmd


@needs_site
@pytest.mark.parametrize("run", PRIME_RUNS)
def test_prime_command_passes_verl_0_4_1s_composition_and_validation(checked, run):
    result = checked[run]
    assert result["verl"] == prime_check.PRIME_VERL and result["tier"] == "verl"
    assert result["problems"] == []
    s, v = PAPER.runs[run], result["values"]
    assert v["algorithm.adv_estimator"] == "rloo" and v["reward_model.enable"] is True
    assert v["actor_rollout_ref.actor.optim.lr"] == s.lr and v["actor_rollout_ref.actor.grad_clip"] == s.grad_clip
    assert v["actor_rollout_ref.actor.entropy_coeff"] == s.loss.entropy_coeff  # not the recipe's 0.001
    assert (v["reward_model.model.beta_train"], v["reward_model.model.optim.lr"]) == (
        s.prime.beta,
        s.prime.lr,
    )
    assert v["data.seed"] == s.seed and v["actor_rollout_ref.rollout.n"] == s.rollout_n
    assert (
        0 < v["data.accuracy_lower_bound"] < 1 / s.rollout_n
        and 1 - 1 / s.rollout_n < v["data.accuracy_upper_bound"] < 1
    )
    assert v["trainer.logger"] == ["console", "tensorboard"]


@needs_site
def test_the_check_refuses_what_verl_0_4_1_refuses(checked):
    bad = refused_commands()
    assert {name: bool(checked[name]["problems"]) for name in bad} == dict.fromkeys(bad, True)
    assert "divisible" in checked["batch"]["problems"][0] and "file" in checked["logger"]["problems"][0]


@pytest.mark.skipif(
    not os.environ.get("ENTROPY_RL_PRIME_RECIPE"), reason="needs verl v0.4.1's recipe/ (ENTROPY_RL_PRIME_RECIPE)"
)
@needs_site
def test_prime_entry_runs_the_recipes_main_task_up_to_the_data():
    result = prime_check.check_commands(prime_check.prime_commands())
    for run in PRIME_RUNS:
        assert result[run]["tier"] == "recipe" and result[run]["problems"] == []
