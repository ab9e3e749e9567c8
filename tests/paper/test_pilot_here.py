"""The GPU pilot, run here end to end (tests/pilot_here.py): `snakemake pilot --config scale=paper` from the mirror's
download to the report, with verl's own trainer (`main_ppo`, vLLM's engine as its rollout server, the weight sync
between them) and vLLM's own engine for the evaluation and the samplers, held to numbers rather than exit codes.

What only a GPU can still show is listed in docs/paper-scale.md ("What runs without a GPU, in the tests")."""

import json
import re

import pandas as pd
import pytest
import torch
import yaml
from entropy_rl.core import metric_columns
from entropy_rl.paper import verl_metrics
from support import ROOT

pytestmark = pytest.mark.costly  # the pilot: minutes of both cores, scheduled first (tests/conftest.py)

PAPER = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
RUN = "pilot-grpo"
STEPS = 4  # config.yaml paper.pilot: 4 steps, a checkpoint every 2, SIGTERM once step 2 is saved
# |rollout log-ppl - actor log-ppl| of one step's responses: vLLM (bf16) against verl's actor (FSDP, bf16 compute).
# What a rollout left on stale weights differs by is measured from the same log (test below) and must exceed it.
SYNC_TOLERANCE = 0.01


def records(pilot_here, attempt=None) -> list[dict]:
    checkpoints = pilot_here / "results" / "runs" / RUN / "checkpoints"
    logs = verl_metrics.attempt_logs(checkpoints)
    return [r for path in (logs if attempt is None else [logs[attempt]]) for r in verl_metrics.read_jsonl(path)]


def training(records_: list[dict]) -> dict[int, dict]:
    return {r["step"]: r["data"] for r in records_ if "rollout_corr/training_log_ppl" in r["data"]}


def validation(records_: list[dict], step: int) -> dict[str, float]:
    """verl's greedy validation logged at ``step``: accuracy by benchmark."""
    return {k: v for r in records_ if r["step"] == step for k, v in r["data"].items() if k.startswith("val-core/")}


def test_every_stage_passes_with_its_wall_time_and_throughput(pilot_here):
    """`pilot_report` on the run's own logs: each of the 11 stages passed, with its wall time and, for the GPU jobs,
    the throughput it measured; the resumption read from verl's logs; MFUs measured for the next estimate."""
    report = (pilot_here / "results" / "pilot" / "report.md").read_text()
    print(report.split("## Budget")[0])
    assert "11 of 11 stages passed" in report
    rows = [line.split(" | ") for line in report.splitlines() if line.startswith("| ") and " | passed | " in line]
    assert sorted({r[0][2:] for r in rows}) == [
        "download_model",
        "evaluate_vllm",
        "pilot_speed",
        "power_sample_vllm",
        "preflight",
        "preflight_eval",
        "train_verl",
    ]
    train = next(r for r in rows if r[0] == "| train_verl")
    assert "tok/s/GPU training" in train[5] and "generated tok/s rollout" in train[5]
    # SIGTERM lands once step 2 is saved and logged; a step 3 as short as the poll (5 s, when the group filter keeps
    # most groups at once) is logged before it, and then repeated from the checkpoint, as after a real pre-emption.
    assert re.search(
        r"attempt 2 \(verl_log\.2\.jsonl\): steps 3–4, resumed (after step 2|from the checkpoint: "
        r"steps 3–\d repeated)",
        report,
    ), report
    estimate = json.loads((pilot_here / "results" / "pilot" / "estimate.json").read_text())
    assert estimate["pilot_stages"] == "11/11"
    assert {estimate["sources"][k]["source"] for k in ("rollout_mfu", "train_mfu")} == {"measured by size"}


def test_the_speed_job_times_verls_worker_and_vllms_engine_at_each_size(pilot_here):
    """pilot_speed (paper.cost.speed) on the CPU platform: verl's worker built from the speed run's composed command (its
    loss mode, token budget and the site's overrides) timed over a warm-up and the timed steps, vLLM's engine with the
    rollout settings verl gives it; then the report's speed table, laws and MFU by size, and estimate.json's."""
    from entropy_rl.paper.cost import speed_report

    result = json.loads((pilot_here / "results" / "pilot" / "speed.json").read_text())
    (size,) = result["sizes"]  # tests/fixtures/pilot_cpu/paper.yaml: one size, in the mirror model's shape
    update, rollout = size["update"], size["rollout"]
    print(json.dumps({k: v for k, v in update.items() if k != "overrides"}, indent=1), json.dumps(rollout, indent=1))
    assert update["device"] == "cpu" and update["attention"] == "sdpa"  # the site's override (paper.launch)
    assert update["loss_mode"] == "kl_cov+cov" and update["token_budget"] == 30720  # qwen2.5-7b-grpo-klcov's own
    assert update["params"] == 107_072  # 2 layers of 64, vocabulary 512, tied: the overlay's shape
    steps = update["steps"]
    assert [s["warmup"] for s in steps] == [True, False] and all(
        s["log_prob_s"] > 0 and s["update_s"] > 0 for s in steps
    )
    assert steps[0]["tokens"] == steps[1]["tokens"] > 8 * (300 + 750)  # one prompt's 8 answers at the budget's lengths
    assert rollout["generated_tokens"] == 8 * 1500 and rollout["tokens_per_s"] > 0  # ignore_eos: the mean, exactly
    assert rollout["engine"]["max_num_seqs"] == 256 and rollout["engine"]["enforce_eager"] is True  # verl's, the site's
    points = speed_report.points(result)
    assert [p.model for p in points["update"]] == [p.model for p in points["rollout"]] == ["qwen2.5-0.5b"]
    # the site's sdpa is the run's own command here: timed as it is, not as a lower bound; MFUs of the CPU's peak
    assert update["path"] == "sdpa over packed micro-batches (remove-padding), the run's own command"
    assert not update["lower_bound"] and update["peak_tflops"] == rollout["peak_tflops"] == 0.448
    estimate = json.loads((pilot_here / "results" / "pilot" / "estimate.json").read_text())
    assert set(estimate["speed_laws"]) == {"update", "rollout"}
    by_size = estimate["mfu_by_size"]
    assert by_size["qwen2.5-0.5b"]["train_mfu"]["source"] == "measured"
    assert by_size["qwen2.5-32b"]["rollout_mfu"]["source"] == "extrapolated"  # one size measured: every other beyond it
    report = (pilot_here / "results" / "pilot" / "report.md").read_text()
    assert "## Speed by model size" in report and speed_report.RULE in report


def test_the_rollout_follows_the_actor_after_every_weight_sync(pilot_here):
    """After each weight sync (every step, the first one from the dummy-initialised engine), the log-perplexity vLLM
    gave the step's responses equals the one verl's actor recomputes, while the updates between steps move it by
    more than that."""
    steps = training(records(pilot_here))
    assert sorted(steps) == list(range(1, STEPS + 1))
    rows = [
        (k, s["rollout_corr/training_log_ppl"], s["rollout_corr/rollout_log_ppl"], s["actor/grad_norm"])
        for k, s in steps.items()
    ]
    print(
        "step  actor log-ppl  rollout log-ppl  grad norm\n"
        + "\n".join(f"{k:4d}  {a:13.4f}  {r:15.4f}  {g:9.4f}" for k, a, r, g in rows)
    )
    assert all(abs(a - r) < SYNC_TOLERANCE for _, a, r, _ in rows)
    assert all(g > 0 for *_, g in rows)  # every update moved the model


def test_the_resumed_attempt_starts_at_the_saved_step_with_the_saved_weights(pilot_here):
    """Pre-empted once step 2 was saved, relaunched: the second attempt starts at step 3 (whatever steps the first
    logged after the save), validates the weights it loaded before training (at step 2) exactly as the first attempt
    validated the weights it saved, and the run's table has every step once."""
    checkpoints = pilot_here / "results" / "runs" / RUN / "checkpoints"
    assert len(verl_metrics.attempt_logs(checkpoints)) == 2
    first, second = training(records(pilot_here, 0)), training(records(pilot_here, 1))
    assert max(first) >= 2 and min(second) == 3 and max(second) == STEPS
    saved, loaded = (validation(records(pilot_here, attempt), step=2) for attempt in (0, 1))
    print(f"validation of step 2's weights, as saved: {saved}; as loaded: {loaded}")
    # the same values, whatever they are (greedy answers of a 2-step model: all wrong is as valid as any), of every benchmark
    assert saved == loaded and {k.split("/")[1] for k in saved} == set(PAPER["data"]["benchmarks"])
    log = (pilot_here / "results" / "logs" / "train" / f"{RUN}.log").read_text()
    relaunch = log[log.index("pre-emption: verl stopped by SIGTERM") :]
    # what verl loads
    assert "relaunched (below)" in relaunch and "resuming from global_step_2; this launch logs to" in relaunch
    # Hydra's record of the launches in the run's directory, none under the working directory (outputs/).
    assert (pilot_here / "results" / "runs" / RUN / "hydra" / ".hydra" / "overrides.yaml").exists()
    assert not (pilot_here / "outputs").exists()
    metrics = pd.read_parquet(pilot_here / "results" / "runs" / RUN / "metrics.parquet")
    assert sorted(metrics["step"].tolist()) == list(range(STEPS + 1))


def test_each_engines_own_output_is_in_its_jobs_log_in_order(pilot_here):
    """verl's driver and its Ray workers, verl's merger and vLLM's engine print into the rule's log through tee
    (core.logs, engines=True), between the workflow's own lines as they happened: the command, the first launch's
    trainer, the pre-emption, the relaunch's trainer, the merger, the merged model."""
    train = (pilot_here / "results" / "logs" / "train" / f"{RUN}.log").read_text()
    order = [
        train.index("entropy_rl INFO command: "),
        train.index("TaskRunnerV1 pid="),
        train.index("entropy_rl INFO pre-emption: verl stopped by SIGTERM"),
        train.rindex("TaskRunnerV1 pid="),
        train.index("config: ModelMergerConfig(operation='merge'"),
        train.index("entropy_rl INFO merged "),
    ]
    assert order == sorted(order), order
    evaluation = (pilot_here / "results" / "logs" / "evaluate" / f"{RUN}.log").read_text()
    assert "[cpu_worker.py:" in evaluation and evaluation.index("[cpu_worker.py:") < evaluation.index("throughput: ")


def test_the_metrics_table_is_verls_log_translated(pilot_here):
    """metrics.parquet from the real jsonl: each training column verl's (or the plugin's) value at its step, and the
    pooled ratios of the loss plugin recomputed from the logged sums."""
    metrics = pd.read_parquet(pilot_here / "results" / "runs" / RUN / "metrics.parquet").set_index("step")
    steps, checked = training(records(pilot_here)), 0
    for k, data in steps.items():
        row = metrics.loc[k - 1]  # training step k logs the rollout before update k
        assert row["entropy"] == pytest.approx(data["paper/entropy"])
        assert row["reward_mean"] == pytest.approx(data["critic/score/mean"])
        for column, (num, den) in verl_metrics.LOSS_RATIOS.items():
            if num in data and data.get(den):  # the counts of the run's loss mode (vanilla: clip-higher's only)
                assert row[column] == pytest.approx(data[num] / data[den])
                checked += 1
    assert checked == STEPS  # KL-Cov's share of tokens acted on (the pilot's treatment), pooled, at every step
    assert set(metric_columns.BASE_COLUMNS) - {"step"} <= set(metrics.columns)  # step: the index


def test_the_passes_and_prompts_a_step_really_runs_are_what_the_estimate_charges(pilot_here):
    """verl's own step, counted on its workers' model calls (paper.pass_counts): the tokens each forward reads,
    with and without gradients, and each backward carries, over the step's trained tokens (verl's
    perf/total_num_tokens), are the forward-pass equivalents the estimate charges a trained token
    (paper.cost.step.train_passes: a backward counts as two); and the prompts it answered are its batch times the group
    filter's generation batches, which the estimate reads as measured (pilot_measures: paper/gen_batches)."""
    from entropy_rl.paper.cost import step
    from entropy_rl.pipeline import scope
    from snakemake.utils import update_config

    config = yaml.safe_load((pilot_here / "config.yaml").read_text())
    update_config(config, yaml.safe_load((pilot_here / "pilot_cpu.yaml").read_text()))  # as --configfile lays it over
    run = scope.resolve(config).scale.runs[RUN]
    counted = {}
    for k, data in training(records(pilot_here)).items():
        passes = {key.split("/", 2)[2]: v for key, v in data.items() if key.startswith("paper/passes/")}
        forward_equivalents = sum(v * (2 if key.endswith("/backward") else 1) for key, v in passes.items())
        counted[k] = forward_equivalents / data["perf/total_num_tokens"]
        assert (
            passes["actor/train_forward"] == passes["actor/backward"] == data["perf/total_num_tokens"] * run.ppo_epochs
        )
        assert data["paper/gen_prompts"] == data["paper/gen_batches"] * run.prompts_per_step >= run.prompts_per_step
    print({"forward equivalents a trained token": counted, "charged": step.train_passes(run)})
    assert len(counted) >= STEPS and step.train_passes(run) == 4  # KL-Cov: no reference
    assert list(counted.values()) == pytest.approx([step.train_passes(run)] * len(counted), rel=1e-9)


def test_the_merged_model_computes_the_checkpoints_logits(pilot_here):
    """verl's merger's Hugging Face model (``final``, what the evaluation and the RL checkpoint's sampling load)
    against the FSDP checkpoint of the last step it merged: the checkpoint's weights at the bf16 the merger writes by
    design, loaded into the base model's directory at that dtype, give the same logits exactly; and training moved
    the model away from the base."""
    from transformers import AutoModelForCausalLM

    run = pilot_here / "results" / "runs" / RUN
    base_dir = pilot_here / "results" / "models" / "qwen2.5-0.5b"
    shard = run / "checkpoints" / f"global_step_{STEPS}" / "actor" / "model_world_size_1_rank_0.pt"
    # FSDP2's DTensors on one rank: each local shard is the whole parameter (float32, the master weights).
    state = {
        k: v.to_local().to(torch.bfloat16) for k, v in torch.load(shard, weights_only=False, map_location="cpu").items()
    }
    merged = AutoModelForCausalLM.from_pretrained(run / "final", dtype=torch.bfloat16)
    checkpoint = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.bfloat16)
    missing, unexpected = checkpoint.load_state_dict(state, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)  # tied to the embeddings
    base = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.bfloat16)
    ids = torch.tensor([[1, 5, 9, 13, 17, 21, 25, 29]])
    with torch.no_grad():
        logits = {
            name: m(input_ids=ids).logits.float()
            for name, m in [("merged", merged), ("checkpoint", checkpoint), ("base", base)]
        }
    same, moved = (float((logits["merged"] - logits[other]).abs().max()) for other in ("checkpoint", "base"))
    print(f"merged model's logits: max |difference| {same} from the checkpoint's, {moved:.3f} from the base model's")
    assert same == 0.0 and moved > 0.01
