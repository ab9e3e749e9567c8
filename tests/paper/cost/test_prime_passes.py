"""What a PRIME step computes beyond a GRPO step, counted on verl 0.4.1's recipe itself (tests/prime_passes_child.py)
and held to what the estimate charges (paper.cost.step): the implicit PRM's passes over each trained token, and the
answers generated per answer trained on. Needs the recipe (ENTROPY_RL_PRIME_RECIPE, verl's tag v0.4.1) and verl 0.4.1
(envs/install-prime-check.sh), as the other recipe tests do."""

import json
import os
import subprocess
import sys

import pytest
import yaml
from entropy_rl.core.run import resolve
from entropy_rl.core.scale import build
from entropy_rl.paper import reward_launch
from entropy_rl.paper.cost import step
from entropy_rl.paper.verl import prime_check
from support import ROOT

PAPER = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]


@pytest.mark.skipif(
    not os.environ.get("ENTROPY_RL_PRIME_RECIPE"), reason="needs verl v0.4.1's recipe/ (ENTROPY_RL_PRIME_RECIPE)"
)
def test_a_prime_step_is_charged_the_passes_and_answers_its_recipe_runs(tmp_path):
    """The recipe's update_rm and compute_rm_score (its fit's two calls with update "before") on tiny models: the PRM's
    forward and backward and its reference's forward, then both forwards again, 6 forward-pass equivalents a trained
    token (a backward two); its filter_and_downsample keeps a quarter of the oversampled answers. The estimate charges
    step.PRM_PASSES and the run's oversample_factor, which the run's command sets to the recipe's value."""
    path = [
        os.environ["ENTROPY_RL_PRIME_RECIPE"],
        str(prime_check.default_site()),
        str(ROOT / "workflow"),
        str(ROOT / "tests"),
    ]
    out = tmp_path / "passes.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "prime_passes_child.py"), str(out)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(path)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    counted = json.loads(out.read_text())
    print(counted)
    prm, reference, tokens = counted["counts"]["prm"], counted["counts"]["reference"], counted["trained_tokens"]
    assert (prm["train_forward"], prm["backward"], prm["forward"], reference["forward"]) == (
        tokens,
        tokens,
        tokens,
        2 * tokens,
    )
    assert counted["forward_equivalents"] == step.PRM_PASSES == 6
    run_id = next(r for r, entry in PAPER["runs"].items() if entry["algorithm"] == "prime")
    run = resolve(PAPER, run_id)
    ratio = counted["generated_answers"] / counted["trained_answers"]
    assert (
        ratio
        == counted["oversample_factor"]
        == run.prime.oversample_factor
        == step.generation_factor(run, PAPER["budget"])
    )
    assert f"data.oversample_factor={counted['oversample_factor']}" in reward_launch.verl_command(
        build("paper", PAPER), run_id
    )
    assert step.train_passes(run) == step.actor_passes(run) + counted["forward_equivalents"]
