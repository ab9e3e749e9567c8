"""What keeps the GPU-hours estimate inside physics: a measurement holds only for its own architecture, no MFU rises
above the cap, an MFU is a fraction of the GPU it was timed on and is priced on another only by a stated conversion,
and every pass a run computes is charged (the reference's, PRIME's)."""

import json
import warnings

import pytest
import yaml
from entropy_rl.core import spec as run_spec
from entropy_rl.core.scale import build
from entropy_rl.paper.cost import architectures, budget, efficiency, gpus, speed_law, step
from support import ROOT, SPEED_SECONDS, SPEED_STEP, speed_result, verl_dense_and_width

PAPER = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
S = run_spec.with_replicates(run_spec.with_instruct_models(PAPER), 0, 1)
SCALE = build("paper", S)


def arch(model: str):
    return architectures.of_model(SCALE, model)


def point(model: str, mfu: float, peak: float = 989) -> speed_law.Point:
    flops = architectures.update_flops(arch(model), 300, 1500)
    return speed_law.Point(model, arch(model), flops, flops / (mfu * peak * 1e12))


def test_a_measurement_holds_for_its_own_architecture_only():
    """Qwen2.5-7B timed: Mistral-7B and DeepSeek-Math-7B (params_b 7 too) are priced by the fit, not as measured."""
    law = speed_law.fit("update", [point("qwen2.5-1.5b", 0.04), point("qwen2.5-7b", 0.2)], "NVIDIA H100", 989)
    for model, source in (
        ("qwen2.5-7b", "measured"),
        ("qwen2.5-7b-instruct", "measured"),
        ("mistral-7b", "fitted"),
        ("deepseek-math-7b", "fitted"),
        ("qwen2.5-32b", "extrapolated"),
    ):
        assert law.mfu(arch(model), architectures.update_flops(arch(model), 300, 1500))[1] == source, model
    with pytest.raises(ValueError, match="one point per architecture"):
        speed_law.fit("update", [point("qwen2.5-7b", 0.2), point("qwen2.5-7b-instruct", 0.2)], "H100", 989)


def test_a_larger_size_timed_faster_is_capped_with_a_warning():
    """Three sizes where 3B took less time a token than 1.5B: the fit's slope goes to zero, so its MFU would grow with
    the FLOPs without bound; it is held at the cap, said so, and warned once."""
    pts = [point("qwen2.5-0.5b", 0.02), point("qwen2.5-1.5b", 0.05)]
    three = point("qwen2.5-3b", 0.05)
    pts.append(speed_law.Point(three.model, three.arch, three.flops, pts[1].seconds * 0.9))  # faster than 1.5B
    law = speed_law.fit("update", pts, "NVIDIA H100", 989)
    assert law.per_flop_s == 0 or 1 / (law.per_flop_s * 989e12) > speed_law.MFU_CAP
    big = architectures.update_flops(arch("qwen2.5-32b"), 300, 1500)
    with pytest.warns(UserWarning, match="held at the cap"):
        assert law.mfu(arch("qwen2.5-32b"), big) == (speed_law.MFU_CAP, "capped")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per FLOPs, not once per call
        law.mfu(arch("qwen2.5-32b"), big)
    assert speed_law.MFU_CAP < 1


def test_the_table_of_peaks_is_verls():
    from verl.utils.flops_counter import _DEVICE_FLOPS, get_device_flops

    for key, tflops in gpus.PEAK_TFLOPS.items():
        assert _DEVICE_FLOPS[key] == pytest.approx(tflops * 1e12), key
        assert get_device_flops("T", device_name=f"NVIDIA {key}") == pytest.approx(tflops)
    assert [
        gpus.gpu_type(n) for n in ("NVIDIA H200", "NVIDIA GB200", "NVIDIA B200", "NVIDIA A100-SXM4-80GB", "Tesla T4")
    ] == ["H200", "GB200", "B200", "A100", None]
    assert PAPER["budget"]["gpu_peak_tflops"] == gpus.PEAK_TFLOPS[PAPER["budget"]["gpu"]]


def test_a_speed_timed_on_one_gpu_is_priced_on_another_only_by_a_stated_conversion(tmp_path):
    """The pilot's H200 laws under the A100 budget: refused; with 2.5 A100 seconds stated per H200 second, the MFU of
    the A100's peak is the H200's × 989 / (312 × 2.5)."""
    from entropy_rl.paper.cost import speed_report

    laws = speed_report.laws(json.loads(speed_result(tmp_path).read_text()))
    priced = {**S["budget"], "speed_laws": {k: law.to_dict() for k, law in laws.items()}}
    with pytest.raises(gpus.GpuMismatch, match="gpu_conversion.H200"):
        efficiency.mfu(priced, "train_mfu", arch("qwen2.5-0.5b"))
    measured = SPEED_STEP["tokens"] / sum(SPEED_SECONDS["qwen2.5-0.5b"])  # tokens a second on the H200
    converted = {**priced, "gpu_conversion": {"H200": {"factor": 2.5, "source": "a test"}}}
    h200 = laws["update"].points[0].mfu(989)
    assert efficiency.mfu(converted, "train_mfu", arch("qwen2.5-0.5b")) == pytest.approx(h200 * 989 / (312 * 2.5))
    # the same seconds a token: an A100 takes 2.5 × the H200's time for this architecture's tokens
    seconds = budget._seconds(
        laws["update"].points[0].flops, 1, efficiency.mfu(converted, "train_mfu", arch("qwen2.5-0.5b")), converted
    )
    assert seconds == pytest.approx(2.5 / measured)
    on_h200 = {**priced, "gpu": "H200", "gpu_peak_tflops": 989}
    assert efficiency.mfu(on_h200, "train_mfu", arch("qwen2.5-0.5b")) == pytest.approx(h200)


def test_a_timed_architecture_is_priced_at_its_measured_seconds_per_flop(tmp_path):
    """A study run of qwen2.5-0.5b under the pilot's laws (priced on the H200 it was timed on): its update terms are
    the timed seconds a token, scaled by the run's FLOPs a token over the timed batch's, both by verl's own counter
    (D, W read back from it); a run with a reference pass pays one forward more."""
    from entropy_rl.paper.cost import speed_report

    laws = speed_report.laws(json.loads(speed_result(tmp_path).read_text()))
    on_h200 = {
        **S["budget"],
        "gpu": "H200",
        "gpu_peak_tflops": 989,
        "rollout_mfu": float("inf"),
        "speed_laws": {"update": laws["update"].to_dict()},
    }
    dense, width = verl_dense_and_width("qwen2", PAPER["models"]["qwen2.5-0.5b"])
    forward = lambda s: 2 * dense + 2 * s * width
    timed_per_token = sum(SPEED_SECONDS["qwen2.5-0.5b"]) / SPEED_STEP["tokens"]
    timed_flops = 4 * forward(SPEED_STEP["squares"] / SPEED_STEP["tokens"])  # log-prob + one epoch
    run = SCALE.runs["qwen2.5-0.5b-grpo"]
    placement = SCALE.models["qwen2.5-0.5b"].placement
    tokens = run.steps * run.prompts_per_step * run.rollout_n * 1800
    for kl, passes in ((0.0, 4), (0.1, 5)):
        hours = budget.train_gpu_hours(run.but(loss={"kl_loss_coef": kl}), placement, arch("qwen2.5-0.5b"), on_h200, 0)
        expected = tokens * timed_per_token * passes * forward(1800) / timed_flops / 3600
        assert hours == pytest.approx(expected, rel=1e-9)


def test_every_pass_and_every_generated_answer_of_a_step_is_charged():
    """A step's update terms in passes of a forward over its trained tokens, as the trainers' own code runs them: 4 for
    GRPO (verl 0.9.1 ``_step_once``: old log-probs, one epoch of forward and backward), 5 with a KL loss to the
    reference (the 7B ref_kl runs: ``_compute_ref_log_prob``), 10 for PRIME (verl 0.4.1's recipe with update "before":
    ``update_rm``, the PRM's forward and backward and its reference, then ``compute_rm_score``, the PRM and its
    reference again). Its rollout: the answers of the prompts it trains on, and beyond them PRIME's ``oversample_factor``
    (4: 3 more) or the group filter's refills (the budget's expected 2 batches: 1 more)."""
    update, beyond = {}, {}
    for run_id in ("qwen2.5-7b-grpo", "qwen2.5-7b-grpo-refkl0.01", "qwen2.5-7b-prime"):
        run = SCALE.runs[run_id]
        per_pass = run.steps * run.prompts_per_step * run.rollout_n * 1800 * arch("qwen2.5-7b").forward(1800)
        placement = SCALE.models["qwen2.5-7b"].placement
        terms = budget.train_time(run, placement, arch("qwen2.5-7b"), S["budget"], 0).terms()
        update[run_id] = terms["update"] * 3600 * 312e12 * S["budget"]["train_mfu"] / per_pass
        beyond[run_id] = terms["refills"] / terms["rollout"]
    assert update == {
        "qwen2.5-7b-grpo": pytest.approx(4),
        "qwen2.5-7b-grpo-refkl0.01": pytest.approx(5),
        "qwen2.5-7b-prime": pytest.approx(10),
    }
    assert beyond == {
        "qwen2.5-7b-grpo": pytest.approx(1),
        "qwen2.5-7b-grpo-refkl0.01": pytest.approx(1),
        "qwen2.5-7b-prime": pytest.approx(3),
    }
    assert step.generation_factor(SCALE.runs["qwen2.5-7b-grpo"], S["budget"], "bound") == 10
