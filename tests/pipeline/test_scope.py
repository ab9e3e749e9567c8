"""The study a scale config describes (pipeline.scope): what the study plan holds, and a run's facts."""

import pytest
import yaml
from entropy_rl.pipeline import scope
from support import ROOT

CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())
S = {
    "runs": {
        "m-grpo": {"model": "m", "algorithm": "grpo", "treatment": "none"},
        "m-ppo-cov": {"model": "m", "algorithm": "reinforce_plus_plus", "treatment": "clip_cov", "train_data": "code"},
        "m-grpo@r1": {"model": "m", "algorithm": "grpo", "treatment": "none", "replicate_of": "m-grpo"},
    },
    "models": {"m": {"nodes": 2, "gpus_per_node": 4}, "m-it": {"instruct_of": "m"}},
    "artifacts": {"fig": {"runs": ["m-grpo", "m-ppo-cov"]}},
    "data": {"parts": {"p": {"source": "src"}}},
}


@pytest.mark.parametrize("scale", ["mini", "paper"])
def test_the_scope_of_each_scale(scale):
    sc = scope.resolve({**CONFIG, "scale": scale})
    assert sc.mini == (scale == "mini") and sc.scale == scale and sc.seed == 0
    assert sc.runs == sorted(sc.runs) and not any(r.startswith("pilot") for r in sc.runs)
    assert set(sc.runs) | set(sc.pilot_runs) == set(sc.S["runs"])
    assert sc.benchmarks == sorted(CONFIG[scale]["data"]["benchmarks"])
    assert set(sc.artifact_names) <= set(sc.buildable_artifacts) and set(sc.artifact_names) <= set(sc.S["artifacts"])
    assert (sc.pilot is None) == (scale == "mini") and bool(sc.pilot_runs) == (scale == "paper")


def test_seed_and_replicates_from_the_command_line():
    default = scope.resolve({**CONFIG, "scale": "mini"})
    assert default.replicates == CONFIG["mini"].get("replicates", 1)
    one = scope.resolve({**CONFIG, "scale": "mini", "replicates": 1, "seed": 4})
    assert one.replicates == 1 and one.seed == 4 and len(one.runs) < len(default.runs)
    assert not any("@r" in r for r in one.runs)


def test_a_runs_facts():
    assert scope.run_model(S, "m-grpo") == "m"
    assert scope.run_label(S, "m-grpo") == "m GRPO"
    assert scope.run_label(S, "m-ppo-cov") == "m REINFORCE++ + clip_cov (code)"
    assert scope.artifact_runs(S, "fig") == ["m-grpo", "m-ppo-cov"]
    assert scope.with_replicates(S, ["m-grpo", "m-ppo-cov"]) == ["m-grpo", "m-grpo@r1", "m-ppo-cov"]
    assert scope.instruct_base(S, "m-it") == "m" and scope.instruct_base(S, "m") is None
    assert scope.part_source(S, "p") == "src"


def test_replicates_can_share_one_base_model_and_differ_in_rl_seed_alone():
    """replicate_base_models: false: one base model per model (pre-trained under the study's seed), every replicate
    of a run starts RL from it under its own RL seed, and the power study's replicates sample that one model."""
    from entropy_rl.core import run as resolved
    from entropy_rl.core import spec
    from entropy_rl.pipeline import power

    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    mini = config["mini"]
    shared = scope.resolve({**config, "seed": 5, "mini": {**mini, "replicates": 3, "replicate_base_models": False}}).S
    assert set(shared["models"]) == set(mini["models"])
    assert all(m["pretrain_seed"] == mini["pretrain"]["seed"] + 5 for m in shared["models"].values())
    assert shared["models"]["qwen2-m-instruct"]["instruct_of"] == "qwen2-m"
    runs = [resolved.resolve(shared, r) for r in spec.replicates(shared["runs"], "qwen2-m-grpo")]
    assert [r.model for r in runs] == ["qwen2-m"] * 3
    assert [r.seed for r in runs] == [mini["train"]["seed"] + 5 + k for k in range(3)]
    study = power.study(shared, 3, 5)
    assert {study.model(m) for m in study.seeds("base")} == {"qwen2-m"}
    assert [study.seed(m) for m in study.seeds("base")] == [mini["power_sampling"]["seed"] + 5 + k for k in range(3)]
    # replicate_base_models: true: each replicate its own base model, as the power study's replicates
    own = scope.resolve({**config, "seed": 5, "mini": {**mini, "replicates": 3, "replicate_base_models": True}}).S
    assert [
        resolved.resolve(own, x).model for x in spec.replicates(own["runs"], "qwen2-m-grpo")
    ] == spec.replicate_names("qwen2-m", 3)
    assert [power.study(own, 3, 5).model(m) for m in study.seeds("base")] == spec.replicate_names("qwen2-m", 3)
