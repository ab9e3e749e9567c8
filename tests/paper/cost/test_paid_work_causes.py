"""The guard's wording of what changed: settings by key, consent by name (the workflow test drives it for real)."""

from entropy_rl.paper.cost import paid_work


def test_a_changed_setting_is_named_by_its_key_and_values():
    recorded = [repr({"lr": 1e-6, "loss": {"entropy_coeff": 0.01, "mode": "vanilla"}}), repr(8), repr("gsm8k")]
    current = {"spec": {"lr": 1e-6, "loss": {"entropy_coeff": 0.02, "mode": "vanilla"}}, "gpus": 8, "train": "gsm8k"}
    assert paid_work.param_causes(current, repr, recorded) == ["setting spec.loss.entropy_coeff: 0.01 -> 0.02"]


def test_a_lone_changed_scalar_is_paired_with_the_lone_recorded_one():
    assert paid_work.param_causes({"seed": 1, "n": 4}, repr, [repr(0), repr(4)]) == ["setting seed: 0 -> 1"]
    assert paid_work.param_causes({"seed": 1, "n": 5}, repr, [repr(0), repr(4)]) == [
        "setting seed changed",
        "setting n changed",
    ]


def test_consent_is_by_name_or_all():
    assert paid_work.allowed("run-a", "all") and paid_work.allowed("run-a", ["run-b", "run-a"])
    assert not paid_work.allowed("run-a", None) and not paid_work.allowed("run-a", ["run-b"])


def test_the_message_prices_every_job_and_says_how_to_consent():
    jobs = [
        paid_work.OutdatedJob("evaluate_vllm", "r1", 4.5, ["code changed: entropy_rl.core.reward"]),
        paid_work.OutdatedJob("train_verl", "r1", 4157.1, ["code changed: entropy_rl.core.reward"]),
    ]
    text = paid_work.message(jobs)
    assert "2 GPU job(s)" in text and "4,162 GPU-hours" in text and "Nothing was submitted" in text
    assert text.index("evaluate_vllm r1") < text.index("train_verl r1")  # in the order given (the guard's)
    assert "rerun_paid=all" in text
