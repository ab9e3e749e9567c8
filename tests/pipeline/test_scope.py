"""The study a scale config describes (pipeline.scope): the constants common.smk binds, and a run's facts."""

import pytest
import yaml
from entropy_rl.pipeline import scope
from support import ROOT

CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())
S = {
    "runs": {
        "m-grpo": {"model": "m", "algorithm": "grpo", "treatment": "none"},
        "m-ppo-cov": {"model": "m", "algorithm": "ppo", "treatment": "clip_cov", "train_data": "code"},
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
    assert scope.run_label(S, "m-ppo-cov") == "m PPO + clip_cov (code)"
    assert scope.artifact_runs(S, "fig") == ["m-grpo", "m-ppo-cov"]
    assert scope.with_replicates(S, ["m-grpo", "m-ppo-cov"]) == ["m-grpo", "m-grpo@r1", "m-ppo-cov"]
    assert scope.instruct_base(S, "m-it") == "m" and scope.instruct_base(S, "m") is None
    assert scope.part_source(S, "p") == "src"
