"""Params compared as text (pipeline.stamps.canonical) and the code stamps the rules take as inputs."""

import yaml
from entropy_rl.pipeline import scope, stamps
from support import ROOT

TEMPLATE = "results/code/{key}.json"


def test_canonical_sorts_keys_at_every_level_and_keeps_lists_in_order():
    value = {"b": [{"y": 1, "x": 2}, 3], "a": {"d": 1, "c": 2}}
    out = stamps.canonical(value)
    assert list(out) == ["a", "b"] and list(out["a"]) == ["c", "d"] and list(out["b"][0]) == ["x", "y"]
    assert out == value and stamps.canonical([3, 1]) == [3, 1] and stamps.canonical(5) == 5
    assert repr(stamps.canonical({"b": 1, "a": 2})) == repr(stamps.canonical({"a": 2, "b": 1}))


def test_a_code_stamp_names_full_modules_at_its_keys_path(monkeypatch):
    calls = []
    monkeypatch.setattr(stamps.modules_closure, "stamp", lambda path, *mods: calls.append((path, mods)) or path)
    assert stamps.code(TEMPLATE, "audit", "study.audit", "entropy_rl.core.spec") == "results/code/audit.json"
    assert calls == [("results/code/audit.json", ("entropy_rl.study.audit", "entropy_rl.core.spec"))]


def test_a_run_and_a_sampler_get_their_own_stamps(monkeypatch):
    monkeypatch.setattr(stamps.modules_closure, "stamp", lambda path, *mods: (path, mods))
    stamps.trainer_code.cache_clear()
    stamps.sampler_stamp.cache_clear()
    paper = scope.resolve({**yaml.safe_load((ROOT / "config.yaml").read_text()), "scale": "paper"})
    keys = {stamps.train_code(TEMPLATE, paper.scale.runs[run])[0] for run in paper.runs}
    assert "results/code/train_verl.json" in keys and "results/code/train_prime.json" in keys
    path, mods = stamps.train_code(TEMPLATE, paper.scale.runs[paper.runs[0]])
    assert mods[0] == "entropy_rl.paper.train_job"  # the job around the trainer: the launch and the log's reading
    assert stamps.power_sampler_code(TEMPLATE, "power")[0] == "results/code/power_sampling_vllm.json"
    assert set(stamps.SAMPLER_CODE.values()) == {"power_sampling_vllm", "power_samplers_vllm"}
    stamps.trainer_code.cache_clear()
    stamps.sampler_stamp.cache_clear()
