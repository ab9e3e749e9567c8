"""A decoded token's cost by its roofline (paper.cost.decode), held to physics: the bytes an engine reads for it at the
GPU's memory bandwidth against its FLOPs at the peak, by the data sheets and each model's published shape; and what
the estimate makes of it (paper.cost.budget, efficiency): the same FLOPs, another price, where the KV cache differs."""

import pytest
import yaml
from entropy_rl.core.scale import build
from entropy_rl.paper.cost import architectures, budget, decode, efficiency, speed_law
from support import ROOT

PAPER = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
SCALE = build("paper", PAPER)
A100_BYTES, A100_FLOPS, A100_MEMORY = 2.039e12, 312e12, 80e9  # NVIDIA A100 80GB SXM data sheet; verl's peak table


def arch(model: str):
    return architectures.of_model(SCALE, model)


def test_deepseek_math_reads_five_times_the_bytes_of_qwen_at_the_same_flops():
    """At the runs' own engine (A100-80GB, TP 2, half of each GPU's memory, at most 256 answers), 300 + 1,500 tokens:
    DeepSeek-Math-7B's full multi-head cache (30 layers x 32 heads x 128 x K and V x 2 bytes = 480 KiB a token) fills
    the 80 GB left beside its 13.8 GB of weights with 128 answers of 1,050 tokens, and each decoded token reads
    0.52 GB of cache; Qwen2.5-7B's 56 KiB leaves room for more than its 256. Their FLOPs differ by 9%, their
    rooflines by 5.2x."""
    engine = decode.ROLLOUT_ENGINE.at(2)
    context = 300 + 1500 / 2
    seconds = {}
    for model in ("deepseek-math-7b", "qwen2.5-7b"):
        a = arch(model)
        kv = 2 * a.layers * a.kv_heads * a.head_dim * 2
        weights = 2 * a.parameters
        held = min(256, int((2 * A100_MEMORY * 0.5 - weights) // (kv * context)))
        by_hand = max(a.decode(context) / A100_FLOPS, (weights / held + kv * context) / A100_BYTES)
        roof = decode.roofline(a, 300, 1500, engine, "A100", 312)
        assert (roof.sequences, roof.seconds) == (held, pytest.approx(by_hand, rel=1e-12)), model
        seconds[model] = roof.seconds
    deepseek = arch("deepseek-math-7b")
    assert deepseek.kv_cache_bytes() == 480 * 1024 and decode.sequences(deepseek, context, engine, "A100") == 128
    assert deepseek.kv_cache_bytes() * context / 1e9 == pytest.approx(0.516, abs=1e-3)
    assert arch("qwen2.5-7b").decode(context) / deepseek.decode(context) == pytest.approx(1.10, abs=0.01)
    assert seconds["deepseek-math-7b"] / seconds["qwen2.5-7b"] == pytest.approx(5.2, abs=0.05)


def test_a_bigger_share_of_memory_holds_more_answers_and_a_token_costs_less():
    a = arch("deepseek-math-7b")
    half, most = (decode.roofline(a, 300, 1500, decode.Engine(m, 1024, 2), "A100", 312) for m in (0.5, 0.9))
    assert most.sequences > half.sequences and most.seconds < half.seconds
    with pytest.raises(decode.NoRoom):
        decode.roofline(arch("qwen2.5-32b"), 300, 1500, decode.Engine(0.5, 256, 1), "A100", 312)  # 65 GB > 40


def test_the_estimate_prices_the_same_flops_by_their_bytes():
    """Two runs alike but for the model (DeepSeek-Math-7B and Qwen2.5-7B, GSM8K, Section 2's settings): their rollout
    terms stand as their rooflines a token do (the efficiency is one for both), not as their FLOPs (which differ by
    a tenth)."""
    questions = sum(b["size"] for b in PAPER["data"]["benchmarks"].values())
    terms = {}
    for model in ("deepseek-math-7b", "qwen2.5-7b"):
        run = SCALE.runs["qwen2.5-7b-grpo-gsm8k"].but(model=model)
        placement = SCALE.models[model].placement
        terms[model] = budget.train_time(run, placement, arch(model), PAPER["budget"], questions).terms()
    length = 150, 300  # config.yaml paper.budget.lengths.gsm8k
    roof = {m: decode.roofline(arch(m), *length, decode.ROLLOUT_ENGINE.at(2), "A100", 312).seconds for m in terms}
    ratio = terms["deepseek-math-7b"]["rollout"] / terms["qwen2.5-7b"]["rollout"]
    assert ratio == pytest.approx(roof["deepseek-math-7b"] / roof["qwen2.5-7b"], rel=1e-9)
    assert ratio > 1.8  # at GSM8K's short answers the cache weighs less than at 1,500 tokens, but still doubles it


def test_beyond_three_times_the_timed_flops_a_law_is_a_range():
    """Two update points (issue 57's H200 MFUs at 0.5B and 1.5B): within 3x the larger's FLOPs the law's own value;
    at 32B the one-efficiency law's 0.03 (the value charged) is the low end, the assumed 0.30 the high end, and the
    fixed-cost form through both points (0.13) between them."""
    points = []
    for model, mfu in (("qwen2.5-0.5b", 0.017), ("qwen2.5-1.5b", 0.039)):
        flops = architectures.update_flops(arch(model), 300, 1500)
        points.append(speed_law.Point(model, arch(model), flops, flops / (mfu * 989e12)))
    law = speed_law.fit("update", points, "NVIDIA H200", 989)
    priced = {**PAPER["budget"], "gpu": "H200", "gpu_peak_tflops": 989, "speed_laws": {"update": law.to_dict()}}
    near = efficiency.of(priced, "train_mfu", arch("qwen2.5-3b"), 300, 1500)
    assert not near.spread and near.source == "extrapolated"  # 3B: under 3x 1.5B's FLOPs
    far = efficiency.of(priced, "train_mfu", arch("qwen2.5-32b"), 300, 1500)
    fixed = law.other_forms()[0]
    assert fixed.form == "efficiency+fixed" and far.source == "extrapolated"
    assert far.value == pytest.approx(
        law.mfu(arch("qwen2.5-32b"), architectures.update_flops(arch("qwen2.5-32b"), 300, 1500))[0]
    )
    big = architectures.update_flops(arch("qwen2.5-32b"), 300, 1500)
    assert far.low == pytest.approx(far.value) and far.value < 0.04  # the one-efficiency law: the small models' MFU
    assert far.value < fixed.mfu(arch("qwen2.5-32b"), big)[0] < far.high == PAPER["budget"]["train_mfu"]
