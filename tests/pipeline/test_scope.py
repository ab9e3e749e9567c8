"""The study a scale config describes (pipeline.scope): what the study plan holds, and a run's facts."""

import pytest
import yaml
from entropy_rl.pipeline import scope
from support import ROOT

CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())


@pytest.mark.parametrize("scale", ["mini", "paper", "small"])
def test_the_scope_of_each_scale(scale):
    sc = scope.resolve({**CONFIG, "scale": scale})
    assert sc.mini == (scale == "mini") and sc.scale.name == scale and sc.seed == 0
    assert sc.gpu == (scale == "paper")  # small: verl's and vLLM's rules (not mini), on this machine's CPU
    assert set(sc.scale.runs) == set(sc.scale.config["runs"]) and set(sc.scale.models) == set(sc.scale.config["models"])
    assert sc.runs == sorted(sc.runs) and not any(r.startswith("pilot") for r in sc.runs)
    assert set(sc.runs) | set(sc.pilot_runs) == set(sc.scale.config["runs"])
    assert sc.benchmarks == sorted(CONFIG[scale]["data"]["benchmarks"])
    assert set(sc.artifact_names) <= set(sc.buildable_artifacts) and set(sc.artifact_names) <= set(
        sc.scale.config["artifacts"]
    )
    assert (sc.pilot is None) == (scale != "paper") and bool(sc.pilot_runs) == (scale == "paper")


def test_seed_and_replicates_from_the_command_line():
    default = scope.resolve({**CONFIG, "scale": "mini"})
    assert default.replicates == CONFIG["mini"].get("replicates", 1)
    one = scope.resolve({**CONFIG, "scale": "mini", "replicates": 1, "seed": 4})
    assert one.replicates == 1 and one.seed == 4 and len(one.runs) < len(default.runs)
    assert not any("@r" in r for r in one.runs)


def test_a_runs_facts():
    mini = scope.resolve({**CONFIG, "scale": "mini", "replicates": 2}).scale
    # replicate_base_models: false at mini scale: every replicate of a run on its model's one base model
    assert mini.runs["qwen2-m-grpo"].model == mini.runs["qwen2-m-grpo@r1"].model == "qwen2-m"
    assert scope.run_label(mini, "qwen2-m-grpo") == "qwen2-m GRPO"
    assert scope.run_label(mini, "qwen2-m-grpo-klcov") == "qwen2-m GRPO + kl_cov"
    assert scope.run_label(mini, "qwen2-m-grpo-code") == "qwen2-m GRPO (code)"  # its own training set
    assert scope.artifact_runs(mini, "fig01_entropy_collapse") == ["qwen2-m-grpo"]
    runs = ["qwen2-m-grpo", "qwen2-m-grpo-code"]
    both = ["qwen2-m-grpo", "qwen2-m-grpo@r1", "qwen2-m-grpo-code", "qwen2-m-grpo-code@r1"]
    assert scope.with_replicates(mini, runs) == both
    assert mini.models["qwen2-m-instruct"].instruct_of == "qwen2-m" and mini.models["qwen2-m"].instruct_of is None
    assert mini.models["qwen2-m-instruct"].shape == mini.models["qwen2-m"].shape  # its base's
    paper = scope.resolve({**CONFIG, "scale": "paper"}).scale
    part = paper.config["data"]["train_sets"]["gsm8k"][0]
    assert scope.part_source(paper, part) == paper.config["data"]["parts"][part]["source"]
    assert paper.placement("qwen2.5-32b-grpo").gpus == 32 and paper.placement("pilot-grpo").gpus == 1


def test_replicates_can_share_one_base_model_and_differ_in_rl_seed_alone():
    """replicate_base_models: false: one base model per model (pre-trained under the study's seed), every replicate
    of a run starts RL from it under its own RL seed, and the power study's replicates sample that one model."""
    from entropy_rl.core import spec
    from entropy_rl.pipeline import power

    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    mini = config["mini"]
    shared = scope.resolve(
        {**config, "seed": 5, "mini": {**mini, "replicates": 3, "replicate_base_models": False}}
    ).scale
    assert set(shared.models) == set(mini["models"])
    assert all(m.pretrain_seed == mini["pretrain"]["seed"] + 5 for m in shared.models.values())
    assert shared.models["qwen2-m-instruct"].instruct_of == "qwen2-m"
    runs = [shared.runs[r] for r in shared.replicates("qwen2-m-grpo")]
    assert [r.model for r in runs] == ["qwen2-m"] * 3
    assert [r.seed for r in runs] == [mini["train"]["seed"] + 5 + k for k in range(3)]
    study = power.study(shared, 3, 5)
    assert {study.model(m) for m in study.seeds("base")} == {"qwen2-m"}
    assert [study.seed(m) for m in study.seeds("base")] == [mini["power_sampling"]["seed"] + 5 + k for k in range(3)]
    # replicate_base_models: true: each replicate its own base model, as the power study's replicates
    own = scope.resolve({**config, "seed": 5, "mini": {**mini, "replicates": 3, "replicate_base_models": True}}).scale
    assert [own.runs[x].model for x in own.replicates("qwen2-m-grpo")] == spec.replicate_names("qwen2-m", 3)
    assert [power.study(own, 3, 5).model(m) for m in study.seeds("base")] == spec.replicate_names("qwen2-m", 3)
