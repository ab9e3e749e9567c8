"""The speed by model size (paper.cost.speed, paper.cost.speed_law) and what the GPU-hours estimate makes of it: the law's
arithmetic on synthetic measurements, the shapes the pilot builds random weights in, the estimate by size, and the
pilot's report and estimate.json with a speed measurement."""

import json

import pytest
import yaml
from entropy_rl.core import spec as run_spec
from entropy_rl.paper.cost import anchors, budget, pilot_measures, pilot_report, shapes, speed, speed_law, speed_report
from support import FIXTURES, ROOT, speed_result

PAPER = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
S = run_spec.with_replicates(run_spec.with_instruct_models(PAPER), 0, 1)


def test_the_fit_recovers_a_known_per_size_law():
    a, b = 3.0e-15, 2.0e-5  # seconds a token per parameter, and at any size
    law = speed_law.fit("update", {n: a * n * 1e9 + b for n in (0.5, 1.5, 3.0)})
    assert law.per_param_s == pytest.approx(a, rel=1e-6) and law.fixed_s == pytest.approx(b, rel=1e-6)
    # between and beyond the measured sizes: the law, marked by where it stands
    assert law.seconds_per_token(2.0) == (pytest.approx(a * 2e9 + b), "fitted")
    assert law.seconds_per_token(7.0) == (pytest.approx(a * 7e9 + b), "extrapolated")
    assert law.seconds_per_token(0.2)[1] == "extrapolated"
    # at a measured size the measurement itself, not the fit through it
    noisy = speed_law.fit("update", {0.5: 1.1 * (a * 0.5e9 + b), 1.5: a * 1.5e9 + b, 3.0: a * 3e9 + b})
    assert noisy.seconds_per_token(0.5) == (pytest.approx(1.1 * (a * 0.5e9 + b)), "measured")
    # the MFU reproduces the time under the budget's FLOP count: 8·N a token for the update, 2·N for the rollout
    mfu, source = law.mfu(7.0, 312)
    assert mfu == pytest.approx(8 * 7e9 / ((a * 7e9 + b) * 312e12)) and source == "extrapolated"
    rollout = speed_law.fit("rollout", {0.5: 1e-4, 1.5: 2e-4})
    assert rollout.mfu(1.0, 989)[0] == pytest.approx(2 * 1e9 / (1.5e-4 * 989e12))
    assert speed_law.Law.from_dict(json.loads(json.dumps(law.to_dict()))) == law


def test_one_size_holds_its_mfu_and_a_law_never_goes_negative():
    one = speed_law.fit("update", {0.5: 4e-5})  # one size: its MFU held for every size, the time in proportion to N
    assert (one.per_param_s, one.fixed_s) == (pytest.approx(8e-14), 0.0) and one.seconds_per_token(32)[0] == pytest.approx(64 * 4e-5)
    assert one.mfu(32, 312)[0] == pytest.approx(one.mfu(0.5, 312)[0])
    # a larger size measured faster (noise): no negative slope, the fit stays at or above zero everywhere
    flat = speed_law.fit("update", {0.5: 5e-5, 1.5: 4e-5})
    assert flat.per_param_s >= 0 and flat.fixed_s >= 0 and flat.seconds_per_token(70)[0] > 0
    with pytest.raises(ValueError, match="no measured size"):
        speed_law.fit("update", {})
    with pytest.raises(ValueError, match="kind"):
        speed_law.fit("prefill", {0.5: 1.0})


@pytest.mark.parametrize("model", sorted(PAPER["architectures"]))
def test_each_shape_is_its_published_model(model):
    """Each architectures entry agrees with the hub fixture's published config.json fields and counts the model's
    parameters within 10% of the config's params_b (the rounded size in its name)."""
    arch, entry = PAPER["architectures"][model], PAPER["models"][model]
    published = json.loads((FIXTURES / "hub_models" / entry["hub"].replace("/", "--") / "config.json").read_text())
    config = shapes.hf_config(entry["family"], arch)
    for key in ("model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                "vocab_size"):  # fmt: skip
        assert config[key] == published[key], key
    assert shapes.params(entry["family"], arch) / 1e9 == pytest.approx(entry["params_b"], rel=0.10)


def test_every_paper_model_has_a_shape():
    base = {m for m, e in PAPER["models"].items() if not m.endswith("-instruct")}
    assert base == set(PAPER["architectures"])


def test_random_weights_load_in_the_shape(tmp_path):
    import verl_cpu
    from transformers import AutoModelForCausalLM

    tokenizer = verl_cpu.build_tiny_model(tmp_path / "tok", ["Question: 1 + 2? Answer: 3"])
    arch = {"hidden_size": 64, "intermediate_size": 96, "num_layers": 2, "num_heads": 2, "num_kv_heads": 1,
            "vocab_size": 400, "tie_word_embeddings": False}  # fmt: skip
    directory = shapes.write_random_model(tmp_path / "model", "qwen2", arch, tokenizer)
    model = AutoModelForCausalLM.from_pretrained(directory)
    assert sum(p.numel() for p in model.parameters()) == shapes.params("qwen2", arch)
    assert shapes.state_bytes("qwen2", arch) == 16 * shapes.params("qwen2", arch)


def test_the_estimate_prices_each_size_by_its_law():
    """With speed laws in the budget, each training run's update terms take the law's MFU at its size: a 7B run's
    and a 0.5B run's training GPU-hours move by different factors, each that of its own MFU."""
    update = speed_law.fit("update", {0.5: 8 * 0.5e9 / (0.02 * 312e12), 1.5: 8 * 1.5e9 / (0.04 * 312e12)})
    rollout = speed_law.fit("rollout", {0.5: 2 * 0.5e9 / (0.01 * 312e12), 1.5: 2 * 1.5e9 / (0.02 * 312e12)})
    laws = {**S["budget"], "speed_laws": {"update": update.to_dict(), "rollout": rollout.to_dict()}}
    assert budget.mfu(laws, "train_mfu", 0.5) == pytest.approx(0.02)
    assert budget.mfu(laws, "rollout_mfu", 1.5) == pytest.approx(0.02)
    assert budget.mfu(S["budget"], "train_mfu", 7) == S["budget"]["train_mfu"]  # no law: the configured value
    for run in ("qwen2.5-0.5b-grpo", "qwen2.5-7b-grpo"):
        spec, model = run_spec.resolve_run(S, run), run_spec.run_model_entry(S, run)
        rollout_only = {**S["budget"], "train_mfu": float("inf")}
        update_cfg = budget.train_gpu_hours(spec, model, S["budget"], 500) - budget.train_gpu_hours(spec, model, rollout_only, 500)
        with_laws = budget.train_gpu_hours(spec, model, laws, 500)
        rollout_laws = budget.train_gpu_hours(spec, model, {**laws, "speed_laws": {"rollout": rollout.to_dict()},
                                                             "train_mfu": float("inf")}, 500)  # fmt: skip
        train_mfu = budget.mfu(laws, "train_mfu", model["params_b"])
        assert with_laws - rollout_laws == pytest.approx(update_cfg * S["budget"]["train_mfu"] / train_mfu)
    message = budget.estimate_message(2, 10, 1, 0, 0, laws)
    assert "by the pilot's speed laws" in message


def test_the_speed_points_leave_out_the_warmup_and_what_did_not_run(tmp_path):
    result = json.loads(speed_result(tmp_path).read_text())
    points = speed.points(result)
    assert points["update"] == {0.5: pytest.approx(2e-5 + 1.5e-6), 1.5: pytest.approx(2e-5 + 4.5e-6)}
    assert points["rollout"] == {0.5: pytest.approx(1e-4 + 1e-5), 1.5: pytest.approx(1e-4 + 3e-5)}
    rows = {r[0]: r for r in speed.table(result)}
    assert rows["qwen2.5-7b"][3] == "needs 113 GiB" and rows["qwen2.5-7b"][7] == "failed: exit 1 after 30 s"
    assert rows["qwen2.5-0.5b"][2] == "sdpa" and rows["qwen2.5-0.5b"][4] == "0.010"


def test_the_pilot_report_shows_mfu_by_size_and_reestimates_with_it(tmp_path):
    import test_pilot_report as fixture

    root, stages = fixture.make_pilot(tmp_path)
    path = speed_result(tmp_path)
    out = [tmp_path / f"pilot.{ext}" for ext in ("md", "html", "json")]
    plain = pilot_report.write(stages, fixture.study(), *[tmp_path / f"plain.{e}" for e in ("md", "html", "json")])
    summary = pilot_report.write(stages, fixture.study(), *out, speed=path)
    md = out[0].read_text()
    assert "## Speed by model size" in md and "The MFU each model size gets in the estimate" in md
    assert speed_report.RULE in md and pilot_report.SCALING_RULE not in md
    update = speed_law.fit("update", speed.points(json.loads(path.read_text()))["update"])
    assert summary["speed_laws"]["update"] == json.loads(json.dumps(update.to_dict()))
    by_size = summary["mfu_by_size"]
    assert by_size["qwen2.5-0.5b"]["train_mfu"]["source"] == "measured"
    assert by_size["qwen2.5-1.5b-instruct"]["train_mfu"]["source"] == "measured"
    assert by_size["qwen2.5-32b"]["train_mfu"] == {"value": pytest.approx(update.mfu(32, 312)[0]), "source": "extrapolated"}
    assert summary["sources"]["train_mfu"]["source"] == "measured by size"
    # the same report without the speed file: one MFU for every size, and the rule that says so
    assert plain["speed_laws"] == {} and plain["mfu_by_size"] == {}
    rows = fixture.table_rows(md, "study model")
    assert rows[("qwen2.5-32b", "32")][2].endswith(", extrapolated") and rows[("qwen2.5-0.5b", "0.5")][2].endswith(", measured")
    # the study's GPU-hours re-estimated by size: the 32B update at its extrapolated MFU, the 0.5B at its measured one
    S = fixture.study()
    measured = pilot_measures.reestimate(S, {**S["budget"], "speed_laws": summary["speed_laws"]})
    assumed = pilot_measures.reestimate(S, S["budget"])
    ratio = (measured.set_index("model")["update_gpu_hours"] / assumed.set_index("model")["update_gpu_hours"])
    assert ratio["qwen2.5-32b"] == pytest.approx(S["budget"]["train_mfu"] / update.mfu(32, 312)[0])
    assert ratio["qwen2.5-0.5b"] == pytest.approx(S["budget"]["train_mfu"] / by_size["qwen2.5-0.5b"]["train_mfu"]["value"])
    assert json.loads(out[2].read_text())["mfu_by_size"] == json.loads(json.dumps(by_size))


def test_each_anchor_is_counted_as_the_estimate_counts_a_step():
    """A published step's whole-step MFU: its tokens (published tokens/s/GPU × step time × GPUs) split into the mean
    response and the prompt they imply, at 2·N a generated and 8·N a trained token, over the GPU-seconds at peak; the
    budget's by the same count from its two MFUs."""
    for a in anchors.ANCHORS:
        tokens = a.tokens_per_s_per_gpu * a.step_s * a.gpus
        assert 0 < a.mean_prompt < a.mean_response  # short math prompts, as the published setups (4,096 tokens in all)
        flops = a.params_b * 1e9 * (2 * a.samples * a.mean_response + 8 * tokens)
        assert a.step_mfu() == pytest.approx(flops / (a.step_s * a.gpus * anchors.PEAK_TFLOPS[a.hardware] * 1e12))
    assert [round(a.step_mfu(), 3) for a in anchors.ANCHORS] == [0.188, 0.126]  # what the README states
    b = S["budget"]
    seconds = 2 * 1500 / (0.05 * 312e12) + 8 * 1800 / (0.30 * 312e12)  # a 1-parameter model's response, one GPU
    assert anchors.budget_step_mfu(b) == pytest.approx((2 * 1500 + 8 * 1800) / (seconds * 312e12))
    assert round(anchors.budget_step_mfu(b), 3) == 0.161  # what the README states
    lines = anchors.lines(b)
    assert len(lines) == 1 + len(anchors.ANCHORS) and all(a.model in "".join(lines) for a in anchors.ANCHORS)
