"""verl 0.9.1's own training worker, on the composed command of paper runs, on a CPU.

``ActorRolloutRefWorker`` (what verl's V1 trainer builds on every GPU) runs in processes of its own
(``tests/verl_cpu.py``: a CPU platform registered with verl, a gloo group) from each run's composed
``reward_launch.verl_command``, with the CPU-only overrides ``verl_cpu.cpu_overrides`` lists. The tests drive
it through one training step the way the V1 trainer does (old log-probs, verl's advantages, the update
with dynamic batching and the run's ``+cov`` loss mode), read what it logs back through
``paper.verl_metrics`` into the ``metrics.parquet`` columns, save and resume with verl's own checkpoint
code (a save SIGKILLed midway included), and merge the checkpoint with ``verl.model_merger`` into a
Hugging Face model directory (``merged_model_dir``, for a later evaluation to load).
"""

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import torch
import verl_cpu
import yaml
from entropy_rl.core import metric_columns, metrics, spec
from entropy_rl.core.scale import build
from entropy_rl.paper import reward_launch, verl_metrics
from omegaconf import OmegaConf
from support import ROOT
from transformers import AutoModelForCausalLM, AutoTokenizer

pytestmark = pytest.mark.costly  # minutes of a core: scheduled first (tests/conftest.py)

# The paper scale's runs as the workflow resolves them (pipeline.plan: seed 0, one replicate).
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())
PAPER = build("paper", spec.with_replicates(spec.with_instruct_models(CONFIG["paper"]), 0, 1))
# Section 4's four runs, Section 2's GRPO, and Section 2's entropy-loss treatment (no reference model needed).
RUNS = [
    "qwen2.5-7b-grpo-dapo",
    "qwen2.5-7b-grpo-cliphigher",
    "qwen2.5-7b-grpo-clipcov",
    "qwen2.5-7b-grpo-klcov",
    "qwen2.5-7b-grpo",
    "qwen2.5-7b-grpo-ent0.001",
]
MODEL = "qwen2.5-7b"
TOKEN_BUDGET = 64  # tokens per micro-batch: one prompt's 8 sequences (~250 tokens) pack into 4 micro-batches
BENCHMARKS = ["math500"]
# Correct responses (of 8) per prompt, cycled: every group mixed (the group filter drops the others before
# the update), and accuracies 1/8, 4/8 and 7/8 present (Figure 8's bandit covariance by accuracy).
CORRECT = [1, 4, 7, 2, 6, 3, 5, 4]
QUESTIONS = [
    f"Calculate {a} + {b}. Put the final answer in \\boxed{{}}."
    for a, b in [(1, 2), (3, 4), (5, 6), (7, 8), (9, 1), (2, 3), (4, 5), (6, 7)]
]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """The workflow's results directory as the launch binds it: the run's command names the base model
    at ``<root>/models/qwen2.5-7b``, where the tiny model is put, and checkpoints under ``<root>/runs``."""
    root = tmp_path_factory.mktemp("results")
    texts = [f"Calculate {a} + {b}. Put the final answer in \\boxed{{{a + b}}}." for a in range(10) for b in range(10)]
    built = verl_cpu.build_tiny_model(tmp_path_factory.mktemp("tiny"), texts + ["Question: Answer:"])
    (root / "models").mkdir()
    (root / "models" / MODEL).symlink_to(built)
    return root


@pytest.fixture(scope="module")
def tokenizer(root):
    return AutoTokenizer.from_pretrained(root / "models" / MODEL)


@pytest.fixture(scope="module")
def workers():
    """One worker process (world size 1) holding a worker per run; closed with the module."""
    group = verl_cpu.WorkerGroup(1)
    group.call("record_loss_calls")
    yield group
    group.close()


@pytest.fixture(scope="module")
def step(root, tokenizer, workers):
    """Each run's worker, built once, and its first training step (memoised per run)."""
    done = {}

    def run_step(run):
        if run not in done:
            cfg, overrides = verl_cpu.worker_config(PAPER, run, root, world_size=1, token_budget=TOKEN_BUDGET)
            verl_cpu.build_worker(workers, run, cfg)
            n, prompts = cfg.actor_rollout_ref.rollout.n, cfg.data.train_batch_size
            samples = verl_cpu.rollout(tokenizer, QUESTIONS[:prompts], n, CORRECT, seed=0)
            workers.call("loss_calls")  # drop any earlier run's
            result = verl_cpu.train_step(workers, run, cfg, samples)
            result.update(cfg=cfg, overrides=overrides, loss_calls=workers.call("loss_calls")[0])
            done[run] = result
        return done[run]

    return run_step


def table(result):
    """The metrics.parquet table of a step logged as verl's file logger would write it (step 1: row 0)."""
    record = {"step": 1, "data": verl_cpu.logged_metrics(result)}
    return verl_metrics.to_metrics_table([record], BENCHMARKS)


def flatten(tree, prefix=""):
    if isinstance(tree, dict):
        return {k: v for key, sub in tree.items() for k, v in flatten(sub, f"{prefix}{key}.").items()}
    return {prefix[:-1]: tree}


def test_cpu_overrides_are_the_only_difference_from_the_run_command(root):
    run = "qwen2.5-7b-grpo-clipcov"
    cfg, overrides = verl_cpu.worker_config(PAPER, run, root)
    keys = [o.split("=", 1)[0].lstrip("+") for o, _ in overrides]
    assert len(set(keys)) == len(keys) and all(len(reason) > 10 for _, reason in overrides)
    command = reward_launch.verl_command(PAPER, run, str(root))[3:]
    real = flatten(OmegaConf.to_container(verl_cpu.compose(command, resolve=False)))
    test = flatten(OmegaConf.to_container(verl_cpu.compose(command + [o for o, _ in overrides], resolve=False)))
    assert {k for k in real.keys() | test.keys() if real.get(k, "-") != test.get(k, "-")} == set(keys)
    actor = cfg.actor_rollout_ref.actor
    assert (actor.strategy, actor.use_dynamic_bsz, actor.ppo_max_token_len_per_gpu) == ("fsdp2", True, TOKEN_BUDGET)
    assert actor.policy_loss.loss_mode == "clip_cov+cov"
    # The trainer the command names (trainer.v1.trainer_mode) starts the plugin's worker for its actor.
    assert verl_cpu.actor_worker_class(cfg) == "entropy_rl.paper.verl_plugin:SummedCountsWorker"
    assert cfg.actor_rollout_ref.model.path == str(root / "models" / MODEL)


@pytest.mark.parametrize("run", RUNS)
def test_worker_trains_the_run_and_its_metrics_reach_the_table(run, step, tmp_path):
    result = step(run)
    s = PAPER.runs[run]
    worker = result["worker_metrics"][0]
    mode = s.loss.loss_mode
    # One entry per PPO mini-batch: as many as the run has per step (one prompt's 8 responses each here).
    assert len(worker["actor/pg_loss"]) == s.prompts_per_step // s.ppo_mini_batch_size
    assert worker["lr"] == [pytest.approx(s.lr)]
    assert all(math.isfinite(g) and g > 0 for g in worker["grad_norm"])
    # The loss plugin's token counts come out of the real loss, one loss call per micro-batch.
    calls = result["loss_calls"]
    assert sum(c["response_tokens"] for c in calls) == sum(len(x["responses"]) for x in result["batch"])
    assert ("actor/cov_touched_tokens" in worker) == (mode != "vanilla")
    assert ("actor/cliphigher_tokens" in worker) == (s.loss.clip_ratio_high > s.loss.clip_ratio_low)
    assert ("actor/entropy_loss" in worker) == (s.loss.entropy_coeff != 0)

    table(result).to_parquet(tmp_path / "metrics.parquet")
    frame = pd.read_parquet(tmp_path / "metrics.parquet")
    assert set(frame.columns) == {*metric_columns.BASE_COLUMNS, "val_acc", *(f"val_acc/{b}" for b in BENCHMARKS)}
    row = frame.iloc[0]
    print(run, {k: round(v, 6) for k, v in row.items()})
    finite = [
        "entropy",
        "reward_mean",
        "response_length",
        "cov_all",
        *metric_columns.COV_TOP,
        "bandit_cov",
        "pg_loss",
        "ppo_kl",
    ]
    # verl's KL-Cov loss returns no clip fraction (only actor/ppo_kl): its pg_clipfrac column stays NaN.
    assert math.isfinite(row["pg_clipfrac"]) == (mode != "kl_cov")
    levels = {c / 8 for c in CORRECT[: s.prompts_per_step // s.ppo_mini_batch_size]}
    finite += [col for col, acc in metric_columns.BANDIT_ACC.items() if acc in levels]
    assert [col for col in finite if not math.isfinite(row[col])] == []
    assert all(math.isnan(row[col]) for col, acc in metric_columns.BANDIT_ACC.items() if acc not in levels)
    # paper/entropy (Eq. 5) wins over verl's token-mean actor/entropy; both from the worker's log-prob pass.
    batch = result["batch"]
    per_response = [sum(x["entropy"]) / len(x["entropy"]) for x in batch]
    assert row["entropy"] == pytest.approx(sum(per_response) / len(per_response))
    assert row["reward_mean"] == pytest.approx(sum(c for c in CORRECT[: len(batch) // 8]) / len(batch))
    # The pooled loss-token ratios: NaN exactly where nothing was counted.
    pooled = metrics.pooled_loss_stats(calls)
    if mode == "vanilla":
        assert math.isnan(row["cov_touched_frac"])
    else:
        assert math.isfinite(row["cov_touched_frac"]) and math.isfinite(pooled["cov_touched_frac"])
    cliphigher_tokens = sum(c.get("cliphigher_tokens", 0) for c in calls)
    assert math.isfinite(row["cliphigher_cov"]) == (cliphigher_tokens > 0)
    assert math.isnan(row["entropy_change"]) and math.isnan(row["val_acc"])  # one row, no validation


def test_loss_token_ratios_pool_every_micro_batch(step, workers, tokenizer):
    """cliphigher_cov and cov_touched_frac are ratios of sums pooled over every loss call of a step
    (verl_metrics.LOSS_RATIOS), however many micro-batches each mini-batch packs into. Here one prompt's
    long responses pack into more micro-batches than the others'; averaged as verl averages a policy
    loss's metrics (the worker's means of each mini-batch's micro-batches, which the trainer's
    SummedCountsWorker replaces by sums), the table's KL-Cov touched fraction was 0.1064 against 0.0921."""
    run = "qwen2.5-7b-grpo-klcov"
    cfg = step(run)["cfg"]
    samples = verl_cpu.rollout(tokenizer, QUESTIONS[:1], 8, [4], seed=5, max_len=36)
    samples += verl_cpu.rollout(tokenizer, QUESTIONS[1:], 8, CORRECT[1:], seed=5, max_len=4)
    for x in samples[8:]:
        x["uid"] += "-short"
    result = verl_cpu.train_step(workers, run, cfg, samples)
    calls = workers.call("loss_calls")[0]
    mini_batches = [result["batch"][i : i + 8] for i in range(0, len(result["batch"]), 8)]  # no shuffle: in order
    counts = [len(workers.call("micro_batches", run, mb, TOKEN_BUDGET)[0]) for mb in mini_batches]
    if len(set(counts)) < 2 or sum(counts) != len(calls):  # the premise
        raise RuntimeError(f"expected unequal micro-batch counts per mini-batch, got {counts} for {len(calls)} calls")
    row = table(result).iloc[0]
    pooled = metrics.pooled_loss_stats(calls)["cov_touched_frac"]
    print(
        f"micro-batches per mini-batch {counts}; cov_touched_frac in the table {row['cov_touched_frac']:.4f}, "
        f"pooled over the {len(calls)} loss calls {pooled:.4f}"
    )
    assert row["cov_touched_frac"] == pytest.approx(pooled)


def test_packed_micro_batches_match_each_sequence_alone(step, root, workers):
    """Dynamic batching packs several sequences into one micro-batch (verl's remove-padding path, here on
    SDPA): the worker's log-probs and entropies equal the model's on each sequence alone, within bf16
    rounding (FSDP's mixed precision computes in bf16). Attention leaking across the packed sequences
    would move them by about 0.35."""
    result = step("qwen2.5-7b-grpo-clipcov")
    batch = result["batch"]
    packs = workers.call("micro_batches", "qwen2.5-7b-grpo-clipcov", batch[:8], TOKEN_BUDGET)[0]
    print("micro-batch token counts of the first mini-batch:", [sum(p) for p in packs], "sequences:", packs)
    assert len(packs) > 1 and sum(map(sum, packs)) == sum(len(x["input_ids"]) for x in batch[:8])
    assert all(sum(pack) <= TOKEN_BUDGET for pack in packs)
    model_dir = root / "models" / MODEL
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager")
    worst = 0.0
    for x in batch:
        with torch.no_grad():
            logp = torch.log_softmax(model(torch.tensor([x["input_ids"]])).logits[0].float(), -1)
        start = len(x["prompts"]) - 1
        logp = logp[start:-1]
        expected = logp.gather(-1, torch.tensor(x["responses"])[:, None])[:, 0]
        entropy = -(logp.exp() * logp).sum(-1)
        torch.testing.assert_close(torch.tensor(x["old_log_probs"]), expected, rtol=2**-6, atol=1e-3)
        torch.testing.assert_close(torch.tensor(x["entropy"]), entropy, rtol=2**-6, atol=1e-3)
        worst = max(worst, (torch.tensor(x["old_log_probs"]) - expected).abs().max().item())
    print(f"max |log-prob difference| packed vs alone: {worst:.4f}")


def test_token_budget_below_a_sequence_is_refused(root, tokenizer, workers):
    cfg, _ = verl_cpu.worker_config(PAPER, "qwen2.5-7b-grpo-dapo", root, token_budget=12)
    verl_cpu.build_worker(workers, "budget12", cfg)
    samples = verl_cpu.rollout(tokenizer, QUESTIONS[:1], 8, CORRECT, seed=1)
    assert max(len(x["input_ids"]) for x in samples) > 12
    info = {"calculate_entropy": True, "compute_loss": False, "temperature": 1.0}
    with pytest.raises(verl_cpu.WorkerError, match="max_token_len must be greater than the sequence length"):
        workers.call("compute_log_prob", "budget12", samples, info)


def test_world_size_two_logs_identical_metrics_on_both_ranks(root, tokenizer):
    run = "qwen2.5-7b-grpo-klcov"
    cfg, _ = verl_cpu.worker_config(PAPER, run, root, world_size=2, token_budget=TOKEN_BUDGET)
    group = verl_cpu.WorkerGroup(2)
    try:
        group.call("record_loss_calls")
        verl_cpu.build_worker(group, run, cfg)
        samples = verl_cpu.rollout(tokenizer, QUESTIONS, 8, CORRECT, seed=0)
        result = verl_cpu.train_step(group, run, cfg, samples)
        calls = group.call("loss_calls")
    finally:
        group.close()
    # Every metric is gathered over the data-parallel group except verl's per-process host readings (perf/*).
    rank0, rank1 = ({k: v for k, v in m.items() if not k.startswith("perf/")} for m in result["worker_metrics"])
    assert rank0 == rank1 and "actor/cov_touched_tokens" in rank0
    assert [len(shard) for shard in result["shards"]] == [32, 32]
    assert all(calls) and sum(c["response_tokens"] for rank in calls for c in rank) == sum(
        len(x["responses"]) for x in samples
    )
    row = table(result).iloc[0]
    # Pooled over both ranks' loss calls (each rank logs the ranks' mean of its mini-batch totals).
    assert row["cov_touched_frac"] == pytest.approx(
        metrics.pooled_loss_stats([c for rank in calls for c in rank])["cov_touched_frac"]
    )
    assert math.isfinite(row["pg_loss"])


CHECKPOINTED = "qwen2.5-7b-grpo-clipcov"


def assert_same_state(a: dict, b: dict) -> None:
    assert a["model"].keys() == b["model"].keys() and a["optim"].keys() == b["optim"].keys()
    for name in a["model"]:
        assert torch.equal(a["model"][name], b["model"][name]), name
    for key in a["optim"]:
        for field, value in a["optim"][key].items():
            assert torch.equal(torch.as_tensor(value), torch.as_tensor(b["optim"][key][field])), (key, field)
    assert a["lr_scheduler"] == b["lr_scheduler"] and a["param_groups"] == b["param_groups"]


@pytest.fixture(scope="module")
def checkpoints(step, workers, tokenizer, tmp_path_factory):
    """verl's trainer-level save (``PPOTrainer._save_checkpoint``: the actor through the worker's own
    ``save_checkpoint``, the data loader state, then the tracker file) after steps 1 and 2, then the
    save of step 3 SIGKILLed once its first file is written: the module's worker process is killed, as
    a scheduler kills a job (so this comes last). The worker's state at each step."""
    result = step(CHECKPOINTED)
    run, cfg = CHECKPOINTED, OmegaConf.to_container(result["cfg"])
    states = {}
    for k in (1, 2, 3):
        if k > 1:  # another update: new weights and optimiser moments
            samples = verl_cpu.rollout(tokenizer, QUESTIONS, 8, CORRECT, seed=k)
            verl_cpu.train_step(workers, run, result["cfg"], samples)
        states[k] = workers.call("full_state", run)[0]
        if k < 3:
            workers.call("trainer_save", run, cfg, k)
    marker = tmp_path_factory.mktemp("kill") / "written"
    workers.start("save_and_hang", run, cfg, 3, str(marker))
    deadline = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    workers.kill()
    folder = Path(cfg["trainer"]["default_local_dir"])
    return {
        "cfg": cfg,
        "states": states,
        "dir": folder,
        "written": marker.read_text().split("\n"),
        "files": {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()},
    }


def test_checkpoint_resume_restores_exactly_after_a_killed_save(checkpoints):
    states, folder, files = checkpoints["states"], checkpoints["dir"], checkpoints["files"]
    with pytest.raises(AssertionError):
        assert_same_state(states[2], states[3])  # the third update changed the weights
    # The killed save of step 3 had written its model shard only; verl had already deleted step 1's actor
    # checkpoint to make room (max_actor_ckpt_to_keep=2 keeps one besides the one being written; the rotation
    # removes the actor directory, the step's data.pt stays) and had not moved the tracker, written last.
    assert checkpoints["written"] == [str(folder / "global_step_3" / "actor" / "model_world_size_1_rank_0.pt")]
    assert [f for f in files if f.startswith("global_step_3/")] == ["global_step_3/actor/model_world_size_1_rank_0.pt"]
    assert [f for f in files if f.startswith("global_step_1/")] == ["global_step_1/data.pt"]
    assert {
        "global_step_2/actor/model_world_size_1_rank_0.pt",
        "global_step_2/actor/optim_world_size_1_rank_0.pt",
        "global_step_2/actor/extra_state_world_size_1_rank_0.pt",
        "global_step_2/data.pt",
    } <= files
    assert (folder / "latest_checkpointed_iteration.txt").read_text() == "2"
    # The requeued job: a new process builds the worker from the run's config and verl's resume
    # (resume_mode=auto) follows the tracker to step 2, restoring it bit for bit.
    group = verl_cpu.WorkerGroup(1)
    try:
        cfg = checkpoints["cfg"]
        verl_cpu.build_worker(group, CHECKPOINTED, cfg)
        fresh = group.call("full_state", CHECKPOINTED)[0]
        with pytest.raises(AssertionError):
            assert_same_state(fresh, states[2])
        assert group.call("trainer_resume", CHECKPOINTED, cfg)[0] == {"global_steps": 2, "loader_step": 2}
        assert_same_state(group.call("full_state", CHECKPOINTED)[0], states[2])
    finally:
        group.close()


@pytest.fixture(scope="module")
def merged_model_dir(checkpoints, tmp_path_factory):
    """The step-2 checkpoint merged by ``python -m verl.model_merger merge --backend fsdp`` (what
    ``paper.train_job.main`` runs on a run's last checkpoint): a Hugging Face model directory."""
    target = tmp_path_factory.mktemp("merged") / "model"
    actor = os.path.join(checkpoints["dir"], "global_step_2", "actor")
    command = [
        sys.executable,
        "-m",
        "verl.model_merger",
        "merge",
        "--backend",
        "fsdp",
        "--local_dir",
        actor,
        "--target_dir",
        str(target),
    ]
    proc = subprocess.run(command, check=False, capture_output=True, text=True, env={**os.environ, **verl_cpu.ENV})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return target


def test_merged_checkpoint_is_a_loadable_model_with_the_checkpointed_weights(merged_model_dir, checkpoints, root):
    files = set(os.listdir(merged_model_dir))
    assert {"config.json", "tokenizer.json", "tokenizer_config.json"} <= files, files
    assert any(f.endswith(".safetensors") for f in files), files
    tok = AutoTokenizer.from_pretrained(merged_model_dir)
    assert tok.chat_template == AutoTokenizer.from_pretrained(root / "models" / MODEL).chat_template
    merged = AutoModelForCausalLM.from_pretrained(merged_model_dir)
    assert merged.dtype == torch.bfloat16  # verl's merger writes bf16 by design
    checkpointed = {k: v.to(torch.bfloat16) for k, v in checkpoints["states"][2]["model"].items()}
    merged_weights = merged.state_dict()
    assert merged_weights.keys() == checkpointed.keys()
    assert all(torch.equal(merged_weights[k], v) for k, v in checkpointed.items())
    # The same logits as the checkpointed weights in the base model's directory, both in bf16 (loaded at
    # that dtype: a model cast with .to(bf16) would also round its fp32 rotary buffers, and differ).
    saved = AutoModelForCausalLM.from_pretrained(root / "models" / MODEL, dtype=torch.bfloat16)
    saved.load_state_dict(checkpointed)
    ids = torch.tensor([tok(QUESTIONS[0])["input_ids"]])
    with torch.no_grad():
        diff = (merged(ids).logits.float() - saved(ids).logits.float()).abs().max().item()
    print(f"merged vs checkpointed model, max |logit difference| in bf16: {diff}")
    assert diff == 0.0
    config = json.loads((merged_model_dir / "config.json").read_text())
    assert config["hidden_size"] // config["num_attention_heads"] == 32  # a head size vLLM's CPU backend takes
