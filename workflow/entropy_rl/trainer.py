"""The mini-scale RL trainer: verl's algorithms in one CPU process.

Each step mirrors a verl PPO iteration: sample ``rollout_n`` responses for each
of ``prompts_per_step`` prompts, grade them, drop groups that are all correct
or all wrong (as the paper does), recompute old log-probs, compute advantages
with verl's estimator, then take one optimiser step per mini-batch of
``ppo_mini_batch_size`` prompts for ``ppo_epochs`` epochs with verl's actor
loss. Later mini-batches are off-policy, which is what the PPO clip, Clip-Cov
and KL-Cov act on.

Row ``t`` of the metrics describes policy π_t before its update: the entropy (Eq. 5) and the
covariances (Eq. 10, Eq. 8–9) of the batch it is updated on (the groups the filter keeps, as in
verl) and, every ``val_every`` steps, its validation accuracy. ``metrics`` defines each measure.
"""

from __future__ import annotations

import json
import logging
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from . import algorithms, atomic, checkpoints, data, evaluate, generation, grading, metrics, models, prime

log = logging.getLogger(__name__)


def validation_sets(bench_paths: dict[str, str], protocol: dict, size: int) -> dict:
    """The first ``size`` problems of every benchmark, all decoded with the validation ``protocol``.

    Validation samples (temperature 0.6, a few samples per problem, as the paper
    does for AIME and AMC) rather than decoding greedily: a tiny model's greedy
    accuracy moves in jumps when an argmax flips, while the sampled accuracy
    tracks the policy the entropy describes.
    """
    sets = {}
    for name, path in sorted(bench_paths.items()):
        prompts, answers = data.prompts_and_answers(data.load_verl_parquet(path).head(size))
        sets[name] = (prompts, answers, protocol)
    return sets


def validate(model, tokenizer, val_sets: dict, max_new_tokens: int) -> dict:
    accs = {
        f"val_acc/{name}": evaluate.accuracy(model, tokenizer, p, a, proto, max_new_tokens)
        for name, (p, a, proto) in val_sets.items()
    }
    accs["val_acc"] = float(np.mean(list(accs.values())))
    return accs


def group_rows(groups: np.ndarray, n: int) -> np.ndarray:
    """Row indices of the ``n`` responses of each group in ``groups`` (responses are stored grouped)."""
    return (groups[:, None] * n + np.arange(n)[None, :]).reshape(-1)


def minibatches(n_groups: int, groups_per_batch: int, rng: np.random.Generator):
    order = rng.permutation(n_groups)
    for start in range(0, n_groups, groups_per_batch):
        yield order[start : start + groups_per_batch]


def train(
    spec: dict, model_dir: str | Path, train_path: str | Path, val_sets: dict, out_dir: str | Path, code_files=()
) -> pd.DataFrame:
    """Run one RL run; writes ``metrics.parquet`` and the final policy ``final/`` under ``out_dir``.

    With ``save_every`` in the spec, the whole state (weights, optimiser moments,
    every random generator, data cursor, metrics so far) is checkpointed under
    ``out_dir/checkpoints`` every ``save_every`` steps; a rerun of the same spec
    and ``code_files`` resumes from the last checkpoint and ends exactly where an
    uninterrupted run would. The checkpoints are removed once the outputs exist.
    """
    out = Path(out_dir)
    seed = spec["seed"]
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    n, temp, max_len = spec["rollout_n"], spec["temperature"], spec["max_response_length"]
    loss_cfg = spec["loss"]

    policy, tokenizer = models.load(model_dir)
    reference = models.load(model_dir)[0] if loss_cfg["kl_loss_coef"] > 0 or spec["algorithm"] == "prime" else None
    prm = prime.ImplicitPRM(model_dir, spec["prime"], reference) if spec["algorithm"] == "prime" else None
    config = algorithms.actor_config(loss_cfg, n, spec["ppo_mini_batch_size"])
    optimizer = torch.optim.AdamW(policy.parameters(), lr=spec["lr"], weight_decay=spec["weight_decay"])

    prompts, answers = data.prompts_and_answers(data.load_verl_parquet(train_path))
    order = rng.permutation(len(prompts))
    cursor, rows, start = 0, [], 0
    ckpt_dir, save_every = out / "checkpoints", spec.get("save_every")

    def snapshot(next_step: int) -> dict:
        return {
            "step": next_step, "rows": json.dumps(rows), "cursor": cursor, "order": torch.from_numpy(order),
            "torch_rng": torch.get_rng_state(), "numpy_rng": rng.bit_generator.state,
            "policy": policy.state_dict(), "optimizer": optimizer.state_dict(),
            **({"prm": prm.model.state_dict(), "prm_optimizer": prm.optimizer.state_dict()} if prm else {}),
        }  # fmt: skip

    if save_every and checkpoints.claim(ckpt_dir, checkpoints.fingerprint(spec, code_files)):
        found = checkpoints.latest(ckpt_dir)
        if found:
            path, state = found
            policy.load_state_dict(state["policy"])
            optimizer.load_state_dict(state["optimizer"])
            if prm:
                prm.model.load_state_dict(state["prm"])
                prm.optimizer.load_state_dict(state["prm_optimizer"])
            torch.set_rng_state(state["torch_rng"])
            rng.bit_generator.state = state["numpy_rng"]
            order, cursor, rows, start = (
                state["order"].numpy(),
                state["cursor"],
                json.loads(state["rows"]),
                state["step"],
            )
            log.info("resuming from %s: steps 0-%d done", path, start - 1)

    def update(rollout, rewards: np.ndarray, old_log_prob, keep_groups: np.ndarray) -> dict:
        """Advantages of the kept groups, then ``ppo_epochs`` passes of verl's actor loss over mini-batches."""
        keep = group_rows(keep_groups, n)
        batch = rollout.select(keep)
        batch_rewards = torch.from_numpy(rewards[keep])
        group_index = np.repeat(keep_groups, n)
        old_lp = old_log_prob[keep]
        mask = batch.response_mask
        if prm is not None:
            advantages = prm.advantages(batch, batch_rewards, group_index, n, temp)
        else:
            advantages = algorithms.compute_advantages(
                spec["algorithm"], batch_rewards, mask, group_index, spec["gamma"]
            )
        ref_lp = None
        if reference is not None and loss_cfg["kl_loss_coef"] > 0:
            with torch.no_grad():
                ref_lp, _ = generation.forward_response(reference, batch, temp, with_entropy=False)
        out = metrics.covariance_summary(old_lp, advantages, mask)
        out.update(metrics.bandit_covariance(old_lp, advantages, mask, group_index, rewards[keep]))

        policy.train()
        step_metrics, token_stats = [], []
        for _ in range(spec["ppo_epochs"]):
            for groups in minibatches(len(keep_groups), spec["ppo_mini_batch_size"], rng):
                sel = group_rows(groups, n)
                mb = batch.select(sel)
                log_prob, ent = generation.forward_response(
                    policy, mb, temp, with_entropy=loss_cfg["entropy_coeff"] != 0
                )
                loss, m = algorithms.actor_loss(
                    config, log_prob, old_lp[sel], advantages[sel], mb.response_mask, ent,
                    None if ref_lp is None else ref_lp[sel],
                )  # fmt: skip
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(policy.parameters(), spec["grad_clip"])
                optimizer.step()
                step_metrics.append(m)
                token_stats.append(metrics.loss_token_stats(config, log_prob, old_lp[sel], advantages[sel], mb.response_mask, m))
        out.update(metrics.pooled_loss_stats(token_stats))
        out["pg_loss"] = float(np.mean([m["actor/pg_loss"] for m in step_metrics]))
        out["pg_clipfrac"] = float(np.mean([m.get("actor/pg_clipfrac", math.nan) for m in step_metrics]))
        out["ppo_kl"] = float(np.mean([m.get("actor/ppo_kl", math.nan) for m in step_metrics]))
        return out

    started = time.time()
    for step in range(start, spec["steps"] + 1):
        # Keep only prompts whose group has both correct and wrong answers: the batch the policy is
        # updated on, whose entropy (Eq. 5) the row reports. The kept groups are not topped up to a
        # full batch, but a step that keeps none draws the next prompts, up to max_num_gen_batches
        # times, as verl's trainer keeps generating until it has a batch to update on.
        policy.eval()
        for _ in range(max(1, spec["max_num_gen_batches"])):
            if cursor + spec["prompts_per_step"] > len(order):
                order, cursor = rng.permutation(len(prompts)), 0
            idx = order[cursor : cursor + spec["prompts_per_step"]]
            cursor += len(idx)
            golds = [answers[i] for i in idx for _ in range(n)]
            rollout = generation.generate(policy, tokenizer, [prompts[i] for i in idx], n=n, temperature=temp, max_new_tokens=max_len)
            rewards = np.asarray(grading.score(golds, rollout.texts), dtype=np.float32)
            prompt_acc = rewards.reshape(-1, n).mean(axis=1)
            keep_groups = np.flatnonzero((prompt_acc > 0) & (prompt_acc < 1)) if spec["filter_groups"] else np.arange(len(idx))
            if len(keep_groups):
                break
        with torch.no_grad():
            old_log_prob, token_entropy = generation.forward_response(policy, rollout, temp)
        kept = group_rows(keep_groups, n)
        entropy = metrics.policy_entropy(token_entropy[kept], rollout.response_mask[kept])
        row = {
            "step": step,
            "entropy": entropy,
            "reward_mean": float(rewards.mean()),
            "response_length": float(rollout.response_mask.sum(dim=1).float().mean()),
            "kept_prompt_frac": len(keep_groups) / len(idx),
        }
        if step % spec["val_every"] == 0 or step == spec["steps"]:
            row.update(validate(policy, tokenizer, val_sets, max_len))
        if step < spec["steps"]:
            if len(keep_groups):
                row.update(update(rollout, rewards, old_log_prob, keep_groups))
            else:
                log.info("step %d: no prompt with mixed outcomes; no update", step)
        rows.append(row)
        if step % 10 == 0:
            log.info(
                "step %d entropy %.4f reward %.3f kept %.2f val %s (%.1fs)",
                step, entropy, row["reward_mean"], row.get("kept_prompt_frac", math.nan), row.get("val_acc"), time.time() - started,
            )  # fmt: skip
        if save_every and (step + 1) % save_every == 0 and step < spec["steps"]:
            checkpoints.save(ckpt_dir, step + 1, snapshot(step + 1))

    frame = metrics.complete_table(rows)
    with atomic.output(out / "final") as tmp:
        policy.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
    atomic.to_parquet(frame, out / "metrics.parquet")
    checkpoints.clear(ckpt_dir)
    return frame
