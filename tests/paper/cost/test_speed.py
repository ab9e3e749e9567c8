"""The speed by model size (paper.cost.speed, speed_law) and what the GPU-hours estimate makes of it: each
architecture's FLOPs against verl's own counter, the law fitted to the pilot's timed points against an independent
optimiser, the shapes the pilot builds random weights in, the pilot's report with a speed measurement, and the
published anchors counted from their published rows."""

import json
import warnings

import pytest
import yaml
from entropy_rl.core import spec as run_spec
from entropy_rl.core.scale import build, model_of
from entropy_rl.paper.cost import anchors, architectures, pilot_report, shapes, speed, speed_law, speed_report
from entropy_rl.paper.cost.architectures import Architecture
from support import (
    FIXTURES,
    ROOT,
    SPEED_ROLLOUT,
    SPEED_SECONDS,
    SPEED_STEP,
    speed_result,
    verl_dense_and_width,
    verl_flops,
)

PAPER = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
S = run_spec.with_replicates(run_spec.with_instruct_models(PAPER), 0, 1)
SCALE = build("paper", S)
H200 = 989e12  # verl's table, dense bf16


def arch(model: str) -> Architecture:
    return architectures.of_model(SCALE, model)


@pytest.mark.parametrize("model", sorted(PAPER["models"]))
def test_each_architecture_costs_what_verls_counter_says(model):
    """A forward and backward pass over a batch of mixed lengths: ours, per token at the batch's Σs²/Σs, equals verl's
    FlopsCounter on the model's config (its head_dim, its kv heads, its vocabulary); a forward is a third."""
    lengths = [17, 300, 1800, 2900, 4096]
    tokens, squares = sum(lengths), sum(n * n for n in lengths)
    verl = verl_flops(S["models"][model]["family"], PAPER["models"][model], lengths)
    assert arch(model).train(squares / tokens) * tokens == pytest.approx(verl, rel=1e-12)
    assert arch(model).forward(squares / tokens) * tokens == pytest.approx(verl / 3, rel=1e-12)


def test_decoding_a_sequence_costs_one_causal_pass_over_it():
    """Decoding s tokens one at a time reads 0, 1, ..., s-1 cached keys: the FLOPs of one causal forward over the
    sequence (verl's count) less the diagonal each query also reads there, 2·s·W."""
    family, entry = "qwen2", PAPER["models"]["qwen2.5-7b"]
    dense, width = verl_dense_and_width(family, entry)
    s = 1800
    decoded = sum(arch("qwen2.5-7b").decode(t) for t in range(s))
    assert decoded == pytest.approx(verl_flops(family, entry, [s]) / 3 - 2 * s * width, rel=1e-12)
    assert arch("qwen2.5-7b").decode(0) == pytest.approx(2 * dense, rel=1e-12)


def test_the_shapes_differ_where_the_parameter_count_does_not():
    """Three 7B models: the same N, other costs. DeepSeek-Math-7B's full multi-head KV cache is 8.6× Qwen2.5-7B's a
    token (30 layers × 32 heads against 28 × 4, 128 wide); Mistral-7B's 32,768-token head is a fifth of Qwen's."""
    kv = {m: arch(m).kv_cache_bytes() for m in ("qwen2.5-7b", "mistral-7b", "deepseek-math-7b")}
    assert kv["deepseek-math-7b"] / kv["qwen2.5-7b"] == pytest.approx(30 * 32 / (28 * 4))
    assert round(kv["deepseek-math-7b"] / kv["qwen2.5-7b"], 1) == 8.6
    assert len({arch(m) for m in kv}) == 3 and {S["models"][m]["params_b"] for m in kv} == {7}
    # layers × heads: 336 at both 0.5B and 1.5B, 576 at 3B, 784 at 7B, 2,560 at 32B (issue 57)
    width = {
        m: arch(m).layers * arch(m).heads
        for m in ("qwen2.5-0.5b", "qwen2.5-1.5b", "qwen2.5-3b", "qwen2.5-7b", "qwen2.5-32b")
    }
    assert list(width.values()) == [336, 336, 576, 784, 2560]


def test_the_timed_points_are_verls_flops_over_the_measured_seconds(tmp_path):
    """Each size's update point: its FLOPs a token at the timed batch's lengths, by verl's counter (a log-prob pass and
    one epoch: 4/3 of a forward and backward), over the seconds the timed steps took (warm-up left out), of the H200's
    peak: the H200 measurements of issue 57, 0.017 at 0.5B and 0.039 at 1.5B."""
    result = json.loads(speed_result(tmp_path).read_text())
    points = {p.model: p for p in speed_report.points(result)["update"]}
    assert set(points) == {"qwen2.5-0.5b", "qwen2.5-1.5b"}  # 3B was skipped
    lengths = [len(s["input_ids"]) for s in _batch()]
    assert (sum(lengths), sum(n * n for n in lengths)) == (SPEED_STEP["tokens"], SPEED_STEP["squares"])
    for model, expected in (("qwen2.5-0.5b", 0.017), ("qwen2.5-1.5b", 0.039)):
        flops = verl_flops(S["models"][model]["family"], PAPER["models"][model], lengths) * 4 / 3
        mfu = flops / (sum(SPEED_SECONDS[model]) * H200)
        assert points[model].mfu(989) == pytest.approx(mfu, rel=1e-9)
        assert points[model].mfu(989) == pytest.approx(expected, abs=5e-4)
    # the rollout's point: the fraction of its decoding roofline achieved, here memory-bound. By the H200's data sheet
    # (141 GB, 4.8 TB/s) and the probe's engine (half the memory, 256 sequences): 0.5B's bf16 weights shared by the
    # 256 answers it holds, and each token's 12 KiB of K and V (24 layers x 2 heads x 64 x 2 x 2 bytes) for the
    # 1,050 tokens it reads; its FLOPs at the peak take less than half that time.
    rollout = {p.model: p for p in speed_report.points(result)["rollout"]}
    dense, width = verl_dense_and_width("qwen2", PAPER["models"]["qwen2.5-0.5b"])
    weights = 2 * shapes.params("qwen2", PAPER["models"]["qwen2.5-0.5b"])
    kv = 24 * 2 * 64 * 2 * 2
    held = min(256, (141e9 * 0.5 - weights) // (kv * 1050))
    memory_s = (weights / held + kv * 1050) / 4.8e12
    compute_s = (2 * dense + 4 * (300 + 750) * width) / H200
    assert held == 256 and memory_s > 2 * compute_s
    # norms aside
    assert rollout["qwen2.5-0.5b"].mfu(989) == pytest.approx(memory_s * SPEED_ROLLOUT["qwen2.5-0.5b"], rel=1e-4)
    rows = {r[0]: r for r in speed.table(result)}
    assert rows["qwen2.5-3b"][4] == "needs 113 GiB" and rows["qwen2.5-3b"][10] == "failed: exit 1 after 30 s"
    assert rows["qwen2.5-0.5b"][2] == "NVIDIA H200" and rows["qwen2.5-0.5b"][6] == "≥ 0.017"  # a lower bound


def _batch():
    from entropy_rl.paper.cost.update_speed import synthetic_batch

    return synthetic_batch(16, 8, 300, 1500, 8192, 1000, seed=0)


def test_two_sizes_fit_one_efficiency_by_least_relative_error(tmp_path):
    """Two timed sizes: no fixed cost, one efficiency; the one scipy's scalar minimiser finds for Σ(t̂/t − 1)²."""
    from scipy.optimize import minimize_scalar

    laws = speed_report.laws(json.loads(speed_result(tmp_path).read_text()))
    law = laws["update"]
    assert law.form == "efficiency" and law.fixed_s == 0 and law.gpu == "NVIDIA H200" and law.lower_bound
    pts = law.points
    best = minimize_scalar(
        lambda a: sum((a * p.flops / p.seconds - 1) ** 2 for p in pts),
        bounds=(1e-20, 1e-9),
        method="bounded",
        options={"xatol": 1e-24},
    )
    assert law.per_flop_s == pytest.approx(best.x, rel=1e-6)
    efficiency = 1 / (law.per_flop_s * H200)
    assert 0.017 < efficiency < 0.039  # between the two, nearer the larger (the relative error weighs both alike)
    # where each model stands: measured (the same shape, instruct or base), fitted between, extrapolated beyond
    flops = lambda m: architectures.update_flops(arch(m), 300, 1500)
    assert law.mfu(arch("qwen2.5-1.5b-instruct"), flops("qwen2.5-1.5b-instruct")) == (
        pytest.approx(pts[1].mfu(989)),
        "measured",
    )
    assert law.mfu(arch("qwen2.5-7b"), flops("qwen2.5-7b")) == (pytest.approx(efficiency), "extrapolated")
    between = Architecture(**{**vars(arch("qwen2.5-1.5b")), "layers": 14})  # an unmeasured shape between the two
    assert law.mfu(between, flops("qwen2.5-0.5b") * 1.5)[1] == "fitted"
    assert speed_law.Law.from_dict(json.loads(json.dumps(law.to_dict()))) == law


def test_three_sizes_fit_a_fixed_cost_weighted_by_relative_error():
    """Three points off any line: the non-negative fit of t = a·F + b minimises the relative error, as scipy's
    bounded least squares on the relative residuals does; an unweighted fit lands elsewhere."""
    import numpy as np
    from scipy.optimize import least_squares, nnls

    models = ("qwen2.5-0.5b", "qwen2.5-1.5b", "qwen2.5-3b")
    flops = [architectures.update_flops(arch(m), 300, 1500) for m in models]
    seconds = [
        f / (mfu * H200) for f, mfu in zip(flops, (0.017, 0.039, 0.05))
    ]  # 3B's point well off the 0.5B-1.5B line
    law = speed_law.fit(
        "update", [speed_law.Point(m, arch(m), f, t) for m, f, t in zip(models, flops, seconds)], "H200", 989
    )
    assert law.form == "efficiency+fixed"
    ref = least_squares(
        lambda x: (x[0] * 1e-15 * np.array(flops) + x[1] * 1e-6) / np.array(seconds) - 1,
        [1.0, 1.0],
        bounds=([0, 0], [np.inf, np.inf]),
        xtol=1e-15,
        ftol=1e-15,
        gtol=1e-15,
    )
    assert (law.per_flop_s, law.fixed_s) == (
        pytest.approx(ref.x[0] * 1e-15, rel=1e-5),
        pytest.approx(ref.x[1] * 1e-6, rel=1e-5),
    )
    (a, b), _ = nnls(np.array([[f, 1.0] for f in flops]), np.array(seconds))  # unweighted: the 3B point dominates
    assert abs(a / law.per_flop_s - 1) > 0.01 or abs(b / law.fixed_s - 1) > 0.01
    relative = [(law.per_flop_s * f + law.fixed_s) / t - 1 for f, t in zip(flops, seconds)]
    unweighted = [(a * f + b) / t - 1 for f, t in zip(flops, seconds)]
    assert sum(r * r for r in relative) < sum(r * r for r in unweighted)
    assert "a fixed cost" in law.describe()


@pytest.mark.parametrize("model", sorted(PAPER["models"]))
def test_each_shape_is_its_published_model(model):
    """Each model's shape agrees with the hub fixture's published config.json fields and counts the model's
    parameters within 10% of the config's params_b (the rounded size in its name)."""
    arch_, entry = architectures.record(SCALE.models[model].shape), S["models"][model]
    published = json.loads((FIXTURES / "hub_models" / entry["hub"].replace("/", "--") / "config.json").read_text())
    config = shapes.hf_config(entry["family"], arch_)
    for key in (
        "model_type",
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "vocab_size",
    ):
        assert config[key] == published[key], key
    assert shapes.params(entry["family"], arch_) / 1e9 == pytest.approx(entry["params_b"], rel=0.10)


def test_a_shape_is_its_models_own_or_its_bases():
    """A model's shape is the shape keys of its own entry (what random weights are built in, nothing else of it); an
    instruct model without one (the mini scale's ``instruct_of``) has its base's; a model with neither is refused."""
    base = PAPER["models"]["qwen2.5-7b"]
    models = {"base": base, "tuned": {"instruct_of": "base"}, "bare": {"hub": base["hub"], "family": "qwen2"}}
    own = architectures.record(model_of("base", base, None).shape)
    assert set(own) == set(architectures.RECORDED) and all(own[k] == base[k] for k in own)
    tuned = model_of("tuned", models["tuned"], base).shape
    assert architectures.record(tuned) == own
    assert architectures.Architecture.of(tuned) == arch("qwen2.5-7b")
    with pytest.raises(KeyError, match="models.bare: no shape"):
        model_of("bare", models["bare"], None)
    assert architectures.record(SCALE.models["mistral-nemo-12b"].shape)["head_dim"] == 128


def test_random_weights_load_in_the_shape(tmp_path):
    import verl_cpu
    from transformers import AutoModelForCausalLM

    tokenizer = verl_cpu.build_tiny_model(tmp_path / "tok", ["Question: 1 + 2? Answer: 3"])
    arch_ = {
        "hidden_size": 64,
        "intermediate_size": 96,
        "num_layers": 2,
        "num_heads": 2,
        "num_kv_heads": 1,
        "vocab_size": 400,
        "tie_word_embeddings": False,
    }
    directory = shapes.write_random_model(tmp_path / "model", "qwen2", arch_, tokenizer)
    model = AutoModelForCausalLM.from_pretrained(directory)
    assert sum(p.numel() for p in model.parameters()) == shapes.params("qwen2", arch_)
    assert shapes.state_bytes("qwen2", arch_) == 16 * shapes.params("qwen2", arch_)


def test_the_pilot_report_prices_each_architecture_on_the_gpu_it_was_timed_on(tmp_path):
    import test_pilot_report as fixture

    _, stages = fixture.make_pilot(tmp_path)
    path = speed_result(tmp_path)
    out = [tmp_path / f"pilot.{ext}" for ext in ("md", "html", "json")]
    study = fixture.study()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the one-efficiency law is not capped here; nothing to warn of
        summary = pilot_report.write(stages, build("paper", study), *out, speed=path)
    md = out[0].read_text()
    assert "## Speed by model size" in md and speed_report.RULE in md
    # timed on an H200, the budget's A100 with no stated conversion: the measured column is in H200 hours, and says so
    assert (summary["gpu"], summary["gpu_peak_tflops"], summary["gpu_name"]) == ("H200", 989, "NVIDIA H200")
    assert "in H200 hours" in md and "no paper.budget.gpu_conversion for H200" in md
    by_size = summary["mfu_by_size"]
    assert by_size["qwen2.5-1.5b-instruct"]["train_mfu"]["source"] == "measured"
    assert by_size["mistral-7b"]["train_mfu"]["source"] == "extrapolated"
    assert by_size["deepseek-math-7b"]["note"].startswith("KV cache 17.1×")  # over the largest timed, 1.5B's 28 KiB
    rows = fixture.table_rows(md, "study model")
    assert rows[("qwen2.5-32b", "32")][5] == "8 (its room priced; timed at 1)"
    # stated: priced in A100 hours, each measured MFU carried over by the conversion
    study["budget"]["gpu_conversion"] = {"H200": {"factor": 2.5, "source": "a test"}}
    summary = pilot_report.write(stages, build("paper", study), *out, speed=path)
    assert "in A100 hours" in out[0].read_text()


def test_each_anchor_is_counted_with_the_passes_its_system_runs():
    """NeMo RL's GRPO step: generation, the policy's and the reference's log-probs, one training pass. Counted as
    2·N a generated and 10·N a trained token, the published rows give the whole-step MFUs issue 57 states (0.226 and
    0.151 for v0.5.0); counted by architecture, the trained part is 5/3 of verl's forward-and-backward count."""
    by_n = {}
    for a in anchors.ANCHORS:
        tokens = a.tokens_per_s_per_gpu * a.step_s * a.gpus  # as published
        by_n[(a.model, a.source.split("NeMo RL ")[1][:6])] = (
            a.params_b * 1e9 * (2 * a.samples * a.mean_response + 10 * tokens) / (a.step_s * a.gpus * 989e12)
        )
        sequence = round(a.mean_prompt + a.mean_response)
        trained = a.step_flops()[1]
        family = {"Qwen3-32B": "qwen2", "Llama3.1-8B": "llama"}[a.model]
        entry = {
            "hidden_size": a.arch.hidden,
            "intermediate_size": a.arch.intermediate,
            "num_layers": a.arch.layers,
            "num_heads": a.arch.heads,
            "num_kv_heads": a.arch.kv_heads,
            "head_dim": a.arch.head_dim,
            "vocab_size": a.arch.vocab,
            "tie_word_embeddings": a.arch.tied,
        }
        per_token = verl_flops(family, entry, [sequence]) / sequence * 5 / 3
        assert trained / (a.samples * (a.mean_prompt + a.mean_response)) == pytest.approx(per_token, rel=1e-3)
        assert 0.1 < a.step_mfu() < 0.3
    assert round(by_n[("Qwen3-32B", "v0.5.0")], 3) == 0.226 and round(by_n[("Llama3.1-8B", "v0.5.0")], 3) == 0.151
    assert {a.source.split(" @")[1][:12] for a in anchors.ANCHORS} == {"6c7089300fde", "cff17f83bf30"}
    assert anchors.LLAMA31_8B == arch("llama3.1-8b")  # the study's own Llama-3.1-8B shape
    lines = anchors.lines(S["budget"])
    assert len(lines) == 1 + len(anchors.ANCHORS) and all("the step would take" in line for line in lines[1:])


def test_the_published_steps_bound_the_rollouts_efficiency():
    """Each anchor on its own GPU (H100: 989 TFLOPS, 3.35 TB/s, 80 GB): its passes at the budget's update MFU leave its
    generation a fraction of its decoding roofline, at the anchor's generation TP. That fraction lies inside the
    configured range of the rollout's efficiency (config.yaml paper.budget.ranges), whose high end it sets."""
    from entropy_rl.paper.cost import decode

    budget_ = PAPER["budget"]
    low, high = budget_["ranges"]["rollout_mfu"]
    implied = {}
    for a in anchors.ANCHORS:
        context = a.mean_prompt + a.mean_response / 2
        kv, weights = a.arch.kv_cache_bytes() * context, 2 * a.arch.parameters
        held = min(256, (a.generation_tp * 80e9 * 0.5 - weights) // kv)
        roofline = max(a.arch.decode(context) / 989e12, (weights / held + kv) / 3.35e12)
        left = a.step_s * a.gpus - a.step_flops()[1] / (989e12 * budget_["train_mfu"])
        implied[a.model, a.step_s] = a.samples * a.mean_response * roofline / left
        assert a.implied_rollout(budget_) == pytest.approx(implied[a.model, a.step_s], rel=1e-9)
        budget_s = (
            a.samples * a.mean_response * roofline / budget_["rollout_mfu"]
            + a.step_flops()[1] / (989e12 * budget_["train_mfu"])
        ) / a.gpus
        assert a.budget_step_s(budget_) == pytest.approx(budget_s, rel=1e-9)
    assert all(low < v < high for v in implied.values()) and max(implied.values()) > 0.75 * high
    assert decode.ROLLOUT_ENGINE.max_num_seqs == 256
