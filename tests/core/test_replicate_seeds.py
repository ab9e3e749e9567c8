"""Replicates: each run and base model repeated under its own seed, each an ordinary run of the config."""

import pytest
import yaml
from entropy_rl.core import run as resolved
from entropy_rl.core import spec
from entropy_rl.core.scale import build
from support import ROOT


@pytest.fixture
def mini():
    """The mini scale as the study plan reads it: instruct models with their base's architecture."""
    return spec.with_instruct_models(yaml.safe_load((ROOT / "config.yaml").read_text())["mini"])


def test_one_replicate_and_base_seed_zero_change_nothing(mini):
    mini["replicates"] = 1
    assert spec.with_replicates(mini, 0) == mini
    paper = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
    assert spec.with_replicates(paper, 0) == paper


def test_each_replicate_is_a_run_of_its_own_on_its_own_base_model(mini):
    mini["replicates"], mini["replicate_base_models"] = 3, True
    s = spec.with_replicates(mini, 0)
    assert set(s["runs"]) == {r for run in mini["runs"] for r in (run, f"{run}@r1", f"{run}@r2")}
    assert set(s["models"]) == {m for model in mini["models"] for m in (model, f"{model}@r1", f"{model}@r2")}
    seed = mini["train"]["seed"]
    for k, run in enumerate(build("mini", s).replicates("qwen2-m-grpo-klcov")):
        rep = resolved.resolve(s, run)
        assert rep.id == run and spec.replicate_of(run) == ("qwen2-m-grpo-klcov", k)
        assert rep.model == spec.replicate_names("qwen2-m", 3)[k] and rep.seed == seed + k
        assert rep.replicate_of == "qwen2-m-grpo-klcov" and rep.replicate == k and rep.configured == rep.replicate_of
        # everything but the seed and the model is the configured run's
        plain = resolved.resolve(mini, "qwen2-m-grpo-klcov")
        assert rep == plain.but(id=run, seed=rep.seed, model=rep.model, replicate_of=rep.replicate_of, replicate=k)
        assert s["models"][rep.model]["pretrain_seed"] == mini["pretrain"]["seed"] + k
    # a run's own overrides survive beside the replicate's seed
    pg = resolved.resolve(s, "qwen2-m-pg@r2")
    assert pg.ppo_mini_batch_size == mini["runs"]["qwen2-m-pg"]["overrides"]["ppo_mini_batch_size"]
    assert pg.seed == seed + 2


def test_a_base_seed_moves_every_seed_and_renames_nothing(mini):
    mini["replicates"] = 2
    a, b = spec.with_replicates(mini, 0), spec.with_replicates(mini, 5)
    assert set(a["runs"]) == set(b["runs"]) and set(a["models"]) == set(b["models"])
    for run in a["runs"]:
        assert resolved.resolve(b, run).seed == resolved.resolve(a, run).seed + 5
    for model in a["models"]:
        assert b["models"][model]["pretrain_seed"] == a["models"][model]["pretrain_seed"] + 5


def test_replicate_names_read_back():
    assert spec.replicate_names("qwen2-m-grpo", 3) == ["qwen2-m-grpo", "qwen2-m-grpo@r1", "qwen2-m-grpo@r2"]
    assert [spec.replicate_of(n) for n in spec.replicate_names("x", 3)] == [("x", 0), ("x", 1), ("x", 2)]


def test_learning_rates_scale_inversely_with_width(mini):
    """One rule for every size: lr x lr_reference_width / hidden_size, in pre-training and in RL."""
    unscaled = {k: v for k, v in mini.items() if k != "lr_reference_width"}
    cfg = spec.with_replicates({**unscaled, "lr_reference_width": 64, "replicates": 2})
    widths = {m: cfg["models"][m]["hidden_size"] for m in cfg["models"]}
    for run in cfg["runs"]:
        rep = resolved.resolve(cfg, run)
        base = resolved.resolve(unscaled, rep.configured)
        assert rep.lr == pytest.approx(base.lr * 64 / widths[rep.model])
    for model, width in widths.items():
        tuning = mini["instruct"] if "instruct_of" in cfg["models"][model] else mini["pretrain"]
        assert spec.pretrain_settings(cfg, model)["lr"] == pytest.approx(tuning["lr"] * 64 / width)
    assert spec.pretrain_settings(unscaled, "qwen2-l")["lr"] == mini["pretrain"]["lr"]  # no reference: as configured
    assert {widths[m] for m in widths} - {64}  # the rule moves some model's rate


def test_an_instruct_model_has_its_base_shape_and_tunes_the_same_replicate(mini):
    raw = yaml.safe_load((ROOT / "config.yaml").read_text())["mini"]
    ((name, entry),) = [(m, e) for m, e in raw["models"].items() if "instruct_of" in e]
    base = entry["instruct_of"]
    assert mini["models"][name] == {**raw["models"][base], "instruct_of": base}
    reps = spec.with_replicates({**mini, "replicates": 3, "replicate_base_models": True})["models"]
    assert [reps[r]["instruct_of"] for r in spec.replicate_names(name, 3)] == spec.replicate_names(base, 3)
    with pytest.raises(ValueError, match="not a base model"):
        spec.with_instruct_models({**raw, "models": {**raw["models"], "twice": {"instruct_of": name}}})


def test_a_replicate_count_given_overrides_the_scales(mini):
    """`snakemake --config replicates=N` (pipeline.scope passes it as count)."""
    assert build("mini", spec.with_replicates({**mini, "replicates": 3}, 0, 1)).replicates("qwen2-m-grpo") == [
        "qwen2-m-grpo"
    ]
    assert len(build("mini", spec.with_replicates({**mini, "replicates": 1}, 0, 4)).replicates("qwen2-m-grpo")) == 4
