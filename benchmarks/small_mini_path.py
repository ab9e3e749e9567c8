"""The small scale's training step on the mini trainer's path, to set beside verl's: which path a real model on a CPU
should take is a measurement, not a guess (docs/small-scale.md, "Why verl and vLLM").

Runs a small-scale run's own settings (config.yaml ``small.runs.<run>``: prompts per step, answers per prompt, answer
cap, learning rate, loss, group filter) through the mini package's trainer (``mini.trainer.set_up``, ``sample_batch``,
``update_policy``), on the model and training set a small study built (its working directory), and prints each step's
seconds split as verl's timers split them: generation (``gen``: the mini sampler, Hugging Face's model decoding token by
token, which also gives the old log-probs), the old log-probs recomputed by one forward pass (``old_log_prob``: what
verl spends because its sampler is another implementation; the mini trainer skips it, so it is timed apart and not
counted in the step), and the update (``update``: the PPO mini-batches' forward, loss, backward and AdamW step). The
same columns for a verl run are its ``timing_s/gen``, ``timing_s/old_log_prob`` and ``timing_s/update_actor``
(results/runs/<run>/checkpoints/verl_log.1.jsonl).

    python benchmarks/small_mini_path.py WORKDIR [--run smollm2-grpo] [--steps 3] [--threads N]

WORKDIR is a small study's working directory: its model and training set (core.paths MODEL_DIR and TRAIN_SET) are read.
"""

import argparse
import os
import statistics
import time
from pathlib import Path

import torch
import yaml
from entropy_rl.core import paths
from entropy_rl.core import spec as run_spec
from entropy_rl.core.scale import build
from entropy_rl.mini import generation, trainer

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("workdir", type=Path)
    ap.add_argument("--run", default="smollm2-grpo")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    section = yaml.safe_load((ROOT / "config.yaml").read_text())["small"]
    scale = build("small", run_spec.with_shared_base_models(run_spec.with_instruct_models(section)))
    run = scale.runs[args.run]
    model_dir = args.workdir / paths.MODEL_DIR.format(model=run.model)
    train_path = args.workdir / paths.TRAIN_SET.format(train_set=run.train_data)
    print(
        f"{args.run} on the mini trainer: {run.model}, {run.prompts_per_step} prompts x {run.rollout_n} answers of "
        f"up to {run.max_response_length} tokens, lr {run.lr}, {args.threads} threads"
    )

    started = time.perf_counter()
    training = trainer.set_up(run, model_dir, train_path)
    # The mini sampler pads prompts on the left with the tokenizer's pad token, which the mini tokenizers set and
    # SmolLM2's does not: its end-of-turn token pads, as verl's own data loader does for a tokenizer without one.
    tokenizer = training.tokenizer
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    print(
        f"set up (the model in fp32, the optimiser, {len(training.prompts)} prompts): {time.perf_counter() - started:.1f} s"
    )
    rows = []
    for step in range(args.steps):
        t0 = time.perf_counter()
        batch = trainer.sample_batch(training, step)
        t1 = time.perf_counter()
        with torch.no_grad():
            training.policy.eval()
            generation.forward_response(training.policy, batch.rollout, run.temperature, with_entropy=False)
        t2 = time.perf_counter()
        out = trainer.update_policy(training, batch, batch.rollout.log_probs)
        t3 = time.perf_counter()
        tokens = int(batch.rollout.response_mask.sum())
        kept = int(trainer.group_rows(batch.keep_groups, run.rollout_n).size)
        row = {"gen": t1 - t0, "old_log_prob": t2 - t1, "update": t3 - t2, "tokens": tokens, "kept": kept}
        rows.append(row)
        print(
            f"step {step}: gen {row['gen']:.1f} s ({batch.gen_batches} batch(es), {tokens} tokens, "
            f"{tokens / row['gen']:.0f} tokens/s), old log-probs {row['old_log_prob']:.1f} s, update {row['update']:.1f} s "
            f"({kept} answers kept), reward {batch.rewards.mean():.2f}, pg_loss {out['pg_loss']:.3f}"
        )
    mean = {k: statistics.mean(r[k] for r in rows) for k in ("gen", "old_log_prob", "update")}
    print(
        f"mean of {len(rows)} steps: gen {mean['gen']:.1f} s, old log-probs {mean['old_log_prob']:.1f} s (not run by "
        f"the mini trainer), update {mean['update']:.1f} s; a step {mean['gen'] + mean['update']:.1f} s"
    )


if __name__ == "__main__":
    main()
