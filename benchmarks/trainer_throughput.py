"""Throughput of the mini trainer's two phases, for a fixed configuration.

Prints rollout tokens/s (the mini sampler, ``generation.generate``) and optimisation
steps/s (one PPO mini-batch: forward, verl's actor loss, backward, AdamW step).
Run from the repository root: python benchmarks/trainer_throughput.py [--model qwen2-m]
Measures on freshly initialised weights with the model's architecture from
config.yaml, one CPU thread, so numbers compare across machines and commits.
"""

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import yaml
from entropy_rl.core import formats, model_size
from entropy_rl.core.run import resolve
from entropy_rl.mini import algorithms, data, generation, models, tokenizer


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen2-m")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    cfg = yaml.safe_load(Path("config.yaml").read_text())["mini"]
    run = resolve(dict(cfg, runs={"bench": {"model": args.model, "algorithm": "grpo", "treatment": "none"}}), "bench")
    small = dict(cfg["data"], benchmarks={k: dict(v, size=16) for k, v in cfg["data"]["benchmarks"].items()})
    small["pretrain"] = dict(small["pretrain"], prompts=64, repeats=1)
    with tempfile.TemporaryDirectory() as tmp:
        paths = data.prepare_mini_data(small, tmp)
        prompts, answers = formats.prompts_and_answers(formats.load_verl_parquet(paths["train"]))
        texts = [p[-1]["content"] + f" \\boxed{{{a}}}" for p, a in zip(prompts, answers)]
        tokenizer.build_tokenizer(texts, cfg["tokenizer"]["vocab_size"]).save_pretrained(tmp + "/tok")
        model, tok = models.build_mini_model(
            cfg["models"][args.model]["family"], cfg["models"][args.model], tmp + "/tok", 0
        )

    n, per_step, mb = run.rollout_n, run.prompts_per_step, run.ppo_mini_batch_size
    config = algorithms.actor_config(run.loss, n, mb)
    opt = torch.optim.AdamW(model.parameters(), lr=run.lr)
    rollout_rates, update_rates = [], []
    for r in range(args.repeats + 1):  # the first round warms up
        batch = prompts[r * per_step : (r + 1) * per_step]
        model.eval()
        t0 = time.perf_counter()
        rollout = generation.generate(
            model, tok, batch, n=n, temperature=run.temperature, max_new_tokens=run.max_response_length
        )
        t1 = time.perf_counter()
        old_lp = rollout.log_probs  # the sampler's, as the trainer takes them
        rewards = torch.from_numpy(np.random.default_rng(r).integers(0, 2, len(rollout.texts)).astype(np.float32))
        adv = algorithms.compute_advantages("grpo", rewards, rollout.response_mask, np.repeat(np.arange(per_step), n))
        model.train()
        t2 = time.perf_counter()
        updates = 0
        for start in range(0, per_step, mb):
            sel = np.arange(start * n, (start + mb) * n)
            sub = rollout.select(sel)
            lp, _ = generation.forward_response(model, sub, run.temperature, with_entropy=False)
            loss, _ = algorithms.actor_loss(config, lp, old_lp[sel], adv[sel], sub.response_mask)
            opt.zero_grad()
            loss.backward()
            opt.step()
            updates += 1
        t3 = time.perf_counter()
        if r:
            rollout_rates.append(int(rollout.response_mask.sum()) / (t1 - t0))
            update_rates.append(updates / (t3 - t2))
    params = model_size.non_embedding_params(model.config.to_dict())
    print(
        f"model {args.model} ({params} non-embedding parameters), {per_step} prompts x {n} samples, "
        f"max {run.max_response_length} new tokens, mini-batch {mb} prompts, {args.threads} thread(s), {args.repeats} repeats"
    )
    print(
        f"rollout tokens/s:        median {statistics.median(rollout_rates):8.0f}  (min {min(rollout_rates):.0f}, max {max(rollout_rates):.0f})"
    )
    print(
        f"optimisation steps/s:    median {statistics.median(update_rates):8.2f}  (min {min(update_rates):.2f}, max {max(update_rates):.2f})"
    )


if __name__ == "__main__":
    main()
