"""The power-sampling study's methods: built from a scale's config, each name once."""

import copy
import subprocess
import sys
from types import SimpleNamespace

import pytest
import yaml
from entropy_rl.core import backends
from entropy_rl.core.evaluation import Engines, Evaluation, Protocol
from entropy_rl.core.power import methods as power_methods
from support import ROOT

CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())


def build(scale="mini", edit=None):
    power = copy.deepcopy(CONFIG[scale]["power_sampling"])
    if edit:
        edit(power)
    return power_methods.build(power, {run: f"label of {run}" for run in power["runs"].values()})


def test_the_paper_study_has_its_methods_in_order_with_their_settings_and_labels():
    study = build("paper")
    assert list(study.methods) == [
        "base",
        "low-temp",
        "power",
        "smc",
        "sps",
        "grpo",
        "clip-cov",
        "kl-cov",
        "power-alpha1",
        "power-alpha2",
        "power-alpha8",
        "power-mcmc0",
        "power-mcmc2",
        "power-mcmc5",
    ]
    assert study.methods["low-temp"] == {"kind": "sample", "temperature": 0.25}
    assert study.methods["power"] == {"kind": "power", "alpha": 4.0, "block_size": 192, "n_mcmc": 10}
    assert study.methods["power-mcmc2"] == {"kind": "power", "alpha": 4.0, "block_size": 192, "n_mcmc": 2}
    assert study.methods["grpo"] == {"kind": "sample", "temperature": 1.0, "run": "qwen2.5-7b-grpo-dapo"}
    assert study.methods["smc"] == {
        "kind": "smc",
        "alpha": 4.0,
        "particles": 64,
        "resample_every": 64,
        "ess_threshold": 0.5,
    }
    assert study.methods["sps"] == {
        "kind": "sps",
        "alpha": 4.0,
        "block_size": 192,
        "candidates": 8,
        "rollouts": 8,
        "horizon": 192,
    }
    assert list(study.labels) == list(study.methods)
    assert study.labels["low-temp"] == "Low temperature (T = 1/4)"
    assert study.labels["power-alpha2"] == "Power sampling (alpha 2, B 192, N_MCMC 10)"
    assert study.labels["grpo"] == "label of qwen2.5-7b-grpo-dapo"
    assert study.labels["smc"] == "Power-SMC (N 64, ESS < 0.5N, every 64 tokens)"
    assert study.labels["sps"] == "Scalable power sampling (B 192, L 8, M 8, H 192)"


def test_each_artifact_draws_the_main_methods_or_the_sweeps():
    study = build("mini")
    assert (
        study.drawn("main") == study.main == ["base", "low-temp", "power", "smc", "sps", "grpo", "clip-cov", "kl-cov"]
    )
    assert study.drawn("sweep") == study.sweep == [m for m in study.methods if m.startswith("power")]
    caption = study.caption("pass@k against k.", "mini")
    assert caption.startswith("Mini scale, after Karan & Du (2025). pass@k against k. Base model qwen2-m;")
    assert "the same p^alpha from the same proposal: Power-SMC (N 8, " in caption


def test_a_study_without_the_later_samplers_leaves_them_out():
    study = build("mini", lambda p: [p.pop("smc"), p.pop("sps")])
    assert study.main == ["base", "low-temp", "power", "grpo", "clip-cov", "kl-cov"] and "smc" not in study.methods
    assert "later samplers" not in study.caption("x.", "mini")


@pytest.mark.parametrize(
    "kind, module",
    [
        ("sample", "paper.power_sampling"),
        ("power", "paper.power_sampling"),
        ("smc", "paper.power_samplers"),
        ("sps", "paper.power_samplers"),
    ],
)
def test_each_kind_is_sampled_by_one_module_per_scale(kind, module):
    """At paper scale the later samplers live apart, so their code is not in the first jobs' code stamp."""
    assert backends.sampler_module("paper", kind) == module
    assert backends.sampler_module("mini", kind) == "mini.power_sampling"


def test_the_registry_names_a_sampler_for_every_kind_at_every_scale_and_refuses_the_rest():
    scales = set(backends.EVALUATIONS)
    assert set(backends.SAMPLERS) == {(scale, kind) for scale in scales for kind in power_methods.KINDS}
    with pytest.raises(ValueError, match="no sampler for a 'beam' method at scale 'mini'"):
        backends.sampler_module("mini", "beam")
    with pytest.raises(ValueError, match="no sampler for a 'power' method at scale 'huge'"):
        backends.sampler("huge", "power")
    with pytest.raises(ValueError, match=r"no evaluation for scale 'huge': .*\['mini', 'paper'\]"):
        backends.evaluation("huge")


@pytest.mark.parametrize("scale", ["mini", "paper"])
def test_each_registered_module_has_its_entry(scale):
    """Read, not imported (the paper modules import vLLM's machinery lazily, but torch at once)."""
    named = {backends.evaluation_module(scale): "evaluate_benchmarks"}
    named |= {backends.sampler_module(scale, kind): "sample_benchmarks" for kind in power_methods.KINDS}
    for module, entry in named.items():
        text = (ROOT / "workflow" / "entropy_rl" / f"{module.replace('.', '/')}.py").read_text()
        assert f"\ndef {entry}(" in text, module


def test_a_method_is_read_as_its_kinds_type_without_what_routes_its_inputs():
    study = build("paper")
    methods = {name: power_methods.method_of(settings) for name, settings in study.methods.items()}
    assert methods["low-temp"] == power_methods.Sample(temperature=0.25)
    assert methods["grpo"] == power_methods.Sample(temperature=1.0)  # its run picks the policy, not the draws
    assert methods["power-mcmc2"] == power_methods.Power(alpha=4.0, block_size=192, n_mcmc=2)
    assert methods["smc"] == power_methods.SMC(alpha=4.0, particles=64, resample_every=64, ess_threshold=0.5)
    assert methods["sps"] == power_methods.SPS(alpha=4.0, block_size=192, candidates=8, rollouts=8, horizon=192)
    assert {m.kind for m in methods.values()} == set(power_methods.KINDS)
    swept = build("mini", lambda p: p["sweeps"].update(benchmarks=["addsub"]))
    assert power_methods.method_of(swept.methods["power-mcmc0"]).n_mcmc == 0  # its benchmarks left to the rule
    with pytest.raises(ValueError, match="power-sampling kind 'beam' is not one of"):
        power_methods.method_of({"kind": "beam", "width": 4})


def test_a_sampling_job_reads_its_params_once_as_a_sampler():
    settings = {"kind": "power", "alpha": 4.0, "block_size": 192, "n_mcmc": 10}
    mini = SimpleNamespace(backend="mini", method=settings, problems=5, n=4, max_new_tokens=64, seed=3)
    sampler = power_methods.Sampler.from_params(mini)
    assert sampler == power_methods.Sampler(power_methods.Power(4.0, 192, 10), 5, 4, 64, 3)
    assert sampler.kind == "power" and sampler.engines is None
    paper = SimpleNamespace(**vars(mini), tensor_parallel=2, chat_template="plain")
    assert power_methods.Sampler.from_params(paper).engines == Engines(tensor_parallel=2, chat_template="plain")


def test_an_evaluation_job_reads_its_params_once():
    params = SimpleNamespace(
        backend="mini",
        protocols={"addsub": {"temperature": 0.0, "n": 1}, "add5": {"temperature": 0.6, "n": 8}},
        max_new_tokens=32,
        pass_k=[1, 8],
        seed=7,
    )
    settings = Evaluation.from_params(params)
    assert settings.protocols == {"addsub": Protocol(0.0, 1), "add5": Protocol(0.6, 8)}
    assert settings.protocols["addsub"].greedy and settings.pass_k == (1, 8) and settings.engines is None
    assert (settings.max_new_tokens, settings.seed) == (32, 7)


def test_answers_count_the_problems_each_benchmark_has():
    study = build("mini", lambda p: p.update(problems=100, n=4, benchmarks=["addsub", "add4"]))
    assert study.problems({"addsub": {"size": 60}, "add4": {"size": 500}}) == {"addsub": 60, "add4": 100}
    assert study.answers({"addsub": {"size": 60}, "add4": {}}) == 4 * (60 + 100)


def test_the_sweeps_answer_their_own_benchmarks_and_the_main_setting_all():
    study = build(
        "mini",
        lambda p: p.update(
            problems=100,
            n=4,
            benchmarks=["addsub", "add4"],
            sweeps={"alpha": [2.0], "n_mcmc": [1], "benchmarks": ["addsub"]},
        ),
    )
    sizes = {"addsub": {"size": 200}, "add4": {"size": 200}}
    assert study.benchmarks("power-alpha2") == study.benchmarks("power-mcmc1") == ["addsub"]
    assert study.benchmarks("power") == study.benchmarks("base") == study.benchmarks() == ["addsub", "add4"]
    assert (
        study.answers(sizes, "power-mcmc1") == 4 * 100
        and study.answers(sizes, "power") == study.answers(sizes) == 4 * 200
    )
    # a sweep point is the main setting but for its one parameter (the audit's sweep reads it so), its benchmarks aside
    assert {k: v for k, v in study.methods["power-mcmc1"].items() if k != "benchmarks"} == dict(
        study.methods["power"], n_mcmc=1
    )
    assert "sweeps answer addsub only" in study.caption("What.", "mini")
    assert "benchmarks" not in build("paper").methods["power-alpha2"]  # the paper's sweeps answer every benchmark


@pytest.mark.parametrize(
    "edit, name",
    [
        (lambda p: p["runs"].update(power=p["runs"]["grpo"]), "power"),  # an RL method named as a base-model method
        (lambda p: p["sweeps"].update(alpha=[1.0, 2.0, 2.0]), "power-alpha2"),  # a sweep point listed twice
        (lambda p: p["sweeps"].update(alpha=[2, 2.0]), "power-alpha2"),  # two values, one name
    ],
)
def test_a_method_name_registered_twice_is_refused(edit, name):
    with pytest.raises(ValueError, match=f"power-sampling method '{name}' is registered twice"):
        build("mini", edit)


def test_register_refuses_a_name_it_has():
    study = build("mini")
    with pytest.raises(ValueError, match="'base' is registered twice"):
        study.register("base", {"kind": "sample", "temperature": 0.5}, "Other base")
    assert study.methods["base"] == {"kind": "sample", "temperature": 1.0} and study.labels["base"] == "Base (T = 1)"


def test_the_registry_loads_without_torch():
    """The rules and the audit's params read it while the workflow is planned."""
    code = (
        "import sys, entropy_rl.core.power.methods, entropy_rl.core.backends; "
        "assert not {'torch', 'transformers', 'vllm'} & set(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_replicates_repeat_every_method_on_its_own_replicate_of_the_models():
    power = copy.deepcopy(CONFIG["mini"]["power_sampling"])
    study = power_methods.build(
        power, {run: f"label of {run}" for run in power["runs"].values()}, replicates=3, base_seed=2
    )
    plain = [m for m in study.methods if "@r" not in m]
    assert list(study.methods) == plain + [f"{m}@r1" for m in plain] + [f"{m}@r2" for m in plain]
    assert study.main == [
        "base",
        "low-temp",
        "power",
        "smc",
        "sps",
        "grpo",
        "clip-cov",
        "kl-cov",
    ]  # replicate 0's names
    assert "power@r1" not in study.drawn("sweep")
    assert study.seeds("grpo") == ["grpo", "grpo@r1", "grpo@r2"] == study.seeds("grpo@r2")
    assert study.with_seeds(["base", "power"]) == ["base", "base@r1", "base@r2", "power", "power@r1", "power@r2"]
    assert study.methods["grpo@r2"] == dict(study.methods["grpo"], run="qwen2-m-grpo@r2")
    assert study.methods["power@r1"] == study.methods["power"] and study.labels["power@r1"] == study.labels["power"]
    assert [study.model(m) for m in ("base", "kl-cov@r1", "power-mcmc0@r2")] == ["qwen2-m", "qwen2-m@r1", "qwen2-m@r2"]
    assert [study.seed(m) for m in ("base", "base@r1", "base@r2")] == [
        power["seed"] + 2,
        power["seed"] + 3,
        power["seed"] + 4,
    ]
    assert f"3 seeds ({power['seed'] + 2}-{power['seed'] + 4})" in study.caption("Accuracy.", "mini")
    one = build("mini")
    assert (
        one.model("base") == "qwen2-m"
        and one.seed("base") == power["seed"]
        and f"seed {power['seed']}." in one.caption("power01_accuracy", "mini")
    )
