"""The mini trainer runs every algorithm and treatment and honours the metrics contract."""

import pytest
import torch
import yaml

from contracts import check_metrics
from entropy_rl import data, models, spec, trainer

from test_config import ROOT

BENCH = {
    "easy": {"task": "chain_sum", "size": 8, "params": {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1}, "protocol": {"temperature": 0.0, "n": 1}},
    "hard": {"task": "chain_sum", "size": 8, "params": {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1}, "protocol": {"temperature": 0.6, "n": 2}},
}


DATA = {
    "seed": 1,
    "train": {"from": ["easy", "hard"], "size": 64},
    "pretrain": {"from": ["easy"], "prompts": 200, "repeats": 2, "worked_share": 0.3, "wrong_share": 0.4, "wrong_offsets": [-1, 1]},
}


@pytest.fixture(scope="module")
def setting(tmp_path_factory, mini_tokenizer):
    out = tmp_path_factory.mktemp("trainer")
    paths = data.prepare_mini_data(dict(DATA, benchmarks=BENCH), out)
    arch = dict(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2, num_kv_heads=1)
    model, tok = models.build_mini_model("qwen2", arch, mini_tokenizer, seed=0)
    corpus = data.load_verl_parquet(paths["pretrain"])
    models.pretrain(model, tok, data.prompts_and_answers(corpus)[0], list(corpus["response"]), steps=150, batch_size=32, lr=3e-3, seed=0)
    model.save_pretrained(out / "base")
    tok.save_pretrained(out / "base")
    val = trainer.validation_sets({b: paths[b] for b in BENCH}, {"temperature": 0.6, "n": 2}, 4)
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())["mini"]
    cfg["train"].update(steps=4, prompts_per_step=8, rollout_n=4, ppo_mini_batch_size=4, val_every=2, lr=1e-3)
    return out, paths, val, cfg


@pytest.mark.parametrize(
    "algorithm, treatment",
    [("grpo", "none"), ("rloo", "none"), ("reinforce_plus_plus", "none"), ("prime", "none"),
     ("grpo", "clip_cov"), ("grpo", "kl_cov"), ("grpo", "entropy_loss"), ("grpo", "ref_kl"), ("grpo", "clip_higher")],
)  # fmt: skip
def test_every_algorithm_and_treatment_trains(setting, algorithm, treatment):
    out, paths, val, cfg = setting
    cfg = dict(cfg, runs={"r": {"model": "m", "algorithm": algorithm, "treatment": treatment}})
    # Unfiltered groups so every step updates even when this tiny model's groups agree.
    s = spec.resolve_run(cfg, "r")
    s["filter_groups"] = False
    run_dir = out / f"{algorithm}-{treatment}"
    frame = trainer.train(s, out / "base", paths["train"], val, run_dir)
    check_metrics(frame, list(BENCH), steps=4, val_every=2)
    assert frame["pg_loss"].iloc[:-1].notna().all()
    before, after = models.load(out / "base")[0], models.load(run_dir / "final")[0]
    moved = sum(float((p - q).detach().abs().sum()) for p, q in zip(before.parameters(), after.parameters()))
    assert moved > 0


def test_same_seed_same_run(setting):
    out, paths, val, cfg = setting
    cfg = dict(cfg, runs={"r": {"model": "m", "algorithm": "grpo", "treatment": "none"}})
    s = spec.resolve_run(cfg, "r")
    a = trainer.train(s, out / "base", paths["train"], val, out / "seed-a")
    b = trainer.train(s, out / "base", paths["train"], val, out / "seed-b")
    assert a.equals(b)


def test_group_filter_drops_uniform_groups(setting, monkeypatch):
    """With filtering on, a batch whose groups are all wrong leads to no update."""
    out, paths, val, cfg = setting
    cfg = dict(cfg, runs={"r": {"model": "m", "algorithm": "grpo", "treatment": "none"}})
    s = spec.resolve_run(cfg, "r")
    monkeypatch.setattr(trainer.grading, "score", lambda golds, texts: [0.0] * len(golds))
    frame = trainer.train(s, out / "base", paths["train"], val, out / "filtered")
    assert (frame["kept_prompt_frac"].iloc[:-1] == 0).all() and frame["pg_loss"].isna().all()
    base, final = models.load(out / "base")[0], models.load(out / "filtered" / "final")[0]
    assert all(torch.equal(p, q) for p, q in zip(base.parameters(), final.parameters()))
