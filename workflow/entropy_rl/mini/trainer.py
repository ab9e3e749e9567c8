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
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import torch

from ..core import atomic, formats, logs, metric_columns, metrics, modules, random_reward, resume, reward
from ..core.evaluation import Protocol
from ..core.run import Run
from . import algorithms, checkpoints, evaluate, generation, models, prime

log = logging.getLogger(__name__)


def validation_sets(bench_paths: dict[str, str], protocol: Protocol, size: int) -> dict:
    """The first ``size`` problems of every benchmark, all decoded with the validation ``protocol``.

    Validation samples (temperature 0.6, a few samples per problem, as the paper
    does for AIME and AMC) rather than decoding greedily: a tiny model's greedy
    accuracy moves in jumps when an argmax flips, while the sampled accuracy
    tracks the policy the entropy describes.
    """
    sets = {}
    for name, path in sorted(bench_paths.items()):
        frame = formats.load_verl_parquet(path).head(size)
        sets[name] = ValSet(*formats.prompts_and_answers(frame), formats.problem_styles(frame), protocol)
    return sets


class ValSet(NamedTuple):
    prompts: list
    answers: list[str]
    styles: list[str]  # each problem's reward style (math-verify, or the sandbox for code)
    protocol: Protocol


def validate(model, tokenizer, val_sets: dict, max_new_tokens: int) -> dict:
    """Accuracy on each validation set and their mean. Sets that share a protocol are sampled
    together, in batches as large as ``evaluate.sample_benchmark`` takes, not one call per set."""
    by_protocol: dict[Protocol, list[str]] = {}
    for name, val in val_sets.items():
        by_protocol.setdefault(val.protocol, []).append(name)
    accs = {}
    for protocol, names in by_protocol.items():
        prompts, answers, styles = (
            [x for name in names for x in getattr(val_sets[name], f)] for f in ("prompts", "answers", "styles")
        )
        samples = evaluate.sample_benchmark(
            model, tokenizer, prompts, answers, styles, protocol.temperature, protocol.n, max_new_tokens
        )
        owner = np.repeat(names, [len(val_sets[name].prompts) for name in names])[samples["problem_id"]]
        for name, correct in samples["correct"].groupby(owner):
            accs[f"val_acc/{name}"] = float(correct.mean())
    accs = {f"val_acc/{name}": accs[f"val_acc/{name}"] for name in val_sets}  # the sets' order
    accs["val_acc"] = float(np.mean(list(accs.values())))
    return accs


def group_rows(groups: np.ndarray, n: int) -> np.ndarray:
    """Row indices of the ``n`` responses of each group in ``groups`` (responses are stored grouped)."""
    return (groups[:, None] * n + np.arange(n)[None, :]).reshape(-1)


def minibatches(n_groups: int, groups_per_batch: int, rng: np.random.Generator):
    order = rng.permutation(n_groups)
    for start in range(0, n_groups, groups_per_batch):
        yield order[start : start + groups_per_batch]


def train(run: Run, model_dir: str | Path, train_path: str | Path, val_sets: dict, out_dir: str | Path) -> pd.DataFrame:
    """Train one RL run; writes ``metrics.parquet`` and the final policy ``final/`` under ``out_dir``.

    With the run's ``save_every`` set, the whole state (weights, optimiser moments,
    every random generator, data cursor, metrics so far) is checkpointed under
    ``out_dir/checkpoints`` every ``save_every`` steps; a rerun of the same run
    and code (this module's closure in the package) resumes from the last checkpoint and ends exactly where an
    uninterrupted run would. The checkpoints are removed once the outputs exist.
    """
    out = Path(out_dir)
    training = set_up(run, model_dir, train_path)
    ckpt_dir, save_every = out / "checkpoints", run.save_every
    # Fingerprinted as the rule passes the run (its params): the settings that decide a rerun decide a resume.
    if save_every and resume.claim(ckpt_dir, resume.fingerprint(run, modules.closure(__name__))):
        resume_from(training, ckpt_dir)
    started = time.time()
    for step in range(training.start, run.steps + 1):
        row = training_step(training, step, val_sets)
        training.rows.append(row)
        if step % 10 == 0:
            log.info(
                "step %d entropy %.4f reward %.3f kept %.2f val %s (%.1fs)",
                step,
                row["entropy"],
                row["reward_mean"],
                row["kept_prompt_frac"],
                row.get("val_acc"),
                time.time() - started,
            )
        if save_every and (step + 1) % save_every == 0 and step < run.steps:
            checkpoints.save(ckpt_dir, step + 1, training.snapshot(step + 1))
    return finish(training, out, ckpt_dir)


@dataclass
class Training:
    """What a run's training carries from step to step: the models and optimiser, the numpy generator, the prompt
    order and cursor, and the metric rows so far. A checkpoint (``snapshot``) holds all of it and
    torch's global generator."""

    run: Run
    policy: object
    tokenizer: object
    reference: object | None  # the frozen initial policy, for the KL penalty and PRIME's implicit PRM
    prm: prime.ImplicitPRM | None
    actor: object  # verl's actor config: the loss and its treatment
    optimizer: torch.optim.Optimizer
    rng: np.random.Generator
    prompts: list
    answers: list
    styles: list  # each training prompt's reward style
    order: np.ndarray
    cursor: int = 0
    rows: list = field(default_factory=list)
    start: int = 0  # the first step still to run

    @property
    def code(self) -> bool:
        """Whether the run trains on code (its rewards come from the sandbox)."""
        return any(style.startswith("code:") for style in self.styles)

    def snapshot(self, next_step: int) -> dict:
        prm = self.prm
        return {
            "step": next_step,
            "rows": json.dumps(self.rows),
            "cursor": self.cursor,
            "order": torch.from_numpy(self.order),
            "torch_rng": torch.get_rng_state(),
            "numpy_rng": self.rng.bit_generator.state,
            "policy": self.policy.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            **({"prm": prm.model.state_dict(), "prm_optimizer": prm.optimizer.state_dict()} if prm else {}),
        }

    def restore(self, state: dict) -> None:
        self.policy.load_state_dict(state["policy"])
        self.optimizer.load_state_dict(state["optimizer"])
        if self.prm:
            self.prm.model.load_state_dict(state["prm"])
            self.prm.optimizer.load_state_dict(state["prm_optimizer"])
        torch.set_rng_state(state["torch_rng"])
        self.rng.bit_generator.state = state["numpy_rng"]
        self.order, self.cursor = state["order"].numpy(), state["cursor"]
        self.rows, self.start = json.loads(state["rows"]), state["step"]


class Batch(NamedTuple):
    """One step's responses (``rollout_n`` per prompt, stored grouped), their rewards, and the groups kept."""

    rollout: generation.Rollout
    rewards: np.ndarray
    keep_groups: np.ndarray
    n_prompts: int
    gen_batches: int  # generation batches of prompts_per_step prompts drawn for the step (the last one is kept)


def set_up(run: Run, model_dir: str | Path, train_path: str | Path) -> Training:
    """Seed, load the policy (and the reference and PRM when the loss needs them), the optimiser and the
    training prompts, and draw the first pass's prompt order."""
    torch.manual_seed(run.seed)
    rng = np.random.default_rng(run.seed)
    is_prime = run.method.process_rewards
    policy, tokenizer = models.load(model_dir)
    reference = models.load(model_dir)[0] if run.loss.kl_loss_coef > 0 or is_prime else None
    prm = prime.ImplicitPRM(model_dir, run.prime, reference) if is_prime else None
    actor = algorithms.actor_config(run.loss, run.rollout_n, run.ppo_mini_batch_size, run.max_response_length)
    optimizer = torch.optim.AdamW(policy.parameters(), lr=run.lr, weight_decay=run.weight_decay)
    frame = formats.load_verl_parquet(train_path)
    prompts, answers = formats.prompts_and_answers(frame)
    order = rng.permutation(len(prompts))
    return Training(
        run,
        policy,
        tokenizer,
        reference,
        prm,
        actor,
        optimizer,
        rng,
        prompts,
        answers,
        formats.problem_styles(frame),
        order,
    )


def resume_from(training: Training, ckpt_dir: Path) -> None:
    """Restore the last checkpoint under ``ckpt_dir``, if there is one; the run goes on from its step."""
    found = checkpoints.latest(ckpt_dir)
    if found:
        path, state = found
        training.restore(state)
        log.info("resuming from %s: steps 0-%d done", path, training.start - 1)


def training_step(training: Training, step: int, val_sets: dict) -> dict:
    """Row ``step`` of the metrics: sample and grade a batch with π_t, measure π_t on the groups kept,
    validate every ``val_every`` steps, and update π_t on those groups (except after the last step)."""
    run = training.run
    batch = sample_batch(training, step)
    # The sampler's own log-probs and entropies: those of π_t at the rollout temperature, which verl
    # recomputes with a forward pass only because its rollout engine is another implementation.
    old_log_prob, token_entropy = batch.rollout.log_probs, batch.rollout.entropy
    kept = group_rows(batch.keep_groups, run.rollout_n)
    row = {
        "step": step,
        "entropy": metrics.policy_entropy(token_entropy[kept], batch.rollout.response_mask[kept]),
        "reward_mean": float(batch.rewards.mean()),
        "response_length": float(batch.rollout.response_mask.sum(dim=1).float().mean()),
        "kept_prompt_frac": len(batch.keep_groups) / batch.n_prompts,
        "gen_batches": batch.gen_batches,
    }
    if step % run.val_every == 0 or step == run.steps:
        row.update(validate(training.policy, training.tokenizer, val_sets, run.max_response_length))
    if step < run.steps:
        row.update(update_policy(training, batch, old_log_prob))
    programs = reward.sandbox_columns()
    if training.code:  # the programs this step ran (those not run before in this run), and those stopped for a limit
        row.update(programs)
    return row


class GenerationBoundReached(RuntimeError):
    """Every group of ``max_num_gen_batches`` generation batches was dropped by the group filter."""


def sample_batch(training: Training, step: int) -> Batch:
    """The next ``prompts_per_step`` prompts, ``rollout_n`` responses each, graded.

    Keeps only prompts whose group has both correct and wrong answers: the batch the policy is
    updated on, whose entropy (Eq. 5) the row reports. The kept groups are not topped up to a
    full batch, but a step that keeps none draws the next prompts, at most ``max_num_gen_batches``
    generation batches in all, and then stops the run (``GenerationBoundReached``) as the authors'
    released scripts stop theirs (verl's DAPO recipe raises after that many batches without a full
    batch, and the paper-scale trainer does the same, ``paper.verl_plugin.GenerationBound``). Stopping, not
    skipping the update as before: none of config.yaml's 32 mini runs (seed 0, 61 steps each) had a step that
    kept no group (the fewest kept: 6 of 32), so such a step marks a degenerate run, which a step logged
    without an update would hide. ``gen_batches`` in the metrics counts each step's draws.
    """
    run, n = training.run, training.run.rollout_n
    size, bound = run.prompts_per_step, run.max_num_gen_batches
    training.policy.eval()
    for drawn in range(1, bound + 1):
        if training.cursor + size > len(training.order):
            training.order, training.cursor = training.rng.permutation(len(training.prompts)), 0
        idx = training.order[training.cursor : training.cursor + size]
        training.cursor += len(idx)
        golds = [training.answers[i] for i in idx for _ in range(n)]
        styles = [training.styles[i] for i in idx for _ in range(n)]
        rollout = generation.generate(
            training.policy,
            training.tokenizer,
            [training.prompts[i] for i in idx],
            n=n,
            temperature=run.temperature,
            max_new_tokens=run.max_response_length,
        )
        if run.random_reward:  # the control: a seeded coin per response, the answer never read
            rewards = random_reward.rollout_rewards(run.seed, step, drawn, idx, n)
        else:
            rewards = grade(styles, golds, rollout.texts)
        prompt_acc = rewards.reshape(-1, n).mean(axis=1)
        keep_groups = np.flatnonzero((prompt_acc > 0) & (prompt_acc < 1)) if run.filter_groups else np.arange(len(idx))
        if len(keep_groups):
            return Batch(rollout, rewards, keep_groups, len(idx), drawn)
    raise GenerationBoundReached(
        f"run {run.id}, step {step}: {bound} generation batches ({bound * size} prompts, {bound} x {size}) "
        "kept no prompt group: the group filter (filter_groups) dropped every one, their responses all right or all "
        f"wrong. The authors' released scripts stop here too (max_num_gen_batches={bound}): the data may be too hard "
        "or too easy for the model."
    )


def grade(styles: list[str], golds: list[str], texts: list[str]) -> np.ndarray:
    """A rollout's rewards, 1 for a right answer and 0 otherwise, each graded by its problem's style
    (``core.reward.verdicts``: math-verify, or the sandbox's batch for code)."""
    return np.asarray(reward.verdicts(styles, golds, texts), dtype=np.float32)


def update_policy(training: Training, batch: Batch, old_log_prob: torch.Tensor) -> dict:
    """Advantages of the kept groups and their covariances with the log-probabilities, then the policy update."""
    run, n = training.run, training.run.rollout_n
    keep = group_rows(batch.keep_groups, n)
    data = batch.rollout.select(keep)
    rewards = torch.from_numpy(batch.rewards[keep])
    group_index = np.repeat(batch.keep_groups, n)
    old_lp = old_log_prob[keep]
    mask = data.response_mask
    if training.prm is not None:
        advantages = training.prm.advantages(data, rewards, group_index, n, run.temperature)
    else:
        advantages = algorithms.compute_advantages(run.method.estimator, rewards, mask, group_index, run.gamma)
    ref_lp = None
    if training.reference is not None and run.loss.kl_loss_coef > 0:
        with torch.no_grad():
            ref_lp, _ = generation.forward_response(training.reference, data, run.temperature, with_entropy=False)
    out = metrics.covariance_summary(old_lp, advantages, mask)
    out.update(metrics.bandit_covariance(old_lp, advantages, mask, group_index, batch.rewards[keep]))
    out.update(ppo_epochs(training, data, old_lp, advantages, ref_lp, len(batch.keep_groups)))
    return out


def ppo_epochs(training: Training, data, old_lp, advantages, ref_lp, n_groups: int) -> dict:
    """``ppo_epochs`` passes over the ``n_groups`` kept groups in random mini-batches of ``ppo_mini_batch_size``
    prompts, one optimiser step each with verl's actor loss; the loss statistics pooled over all of them."""
    run, n = training.run, training.run.rollout_n
    training.policy.train()
    step_metrics, token_stats = [], []
    for _ in range(run.ppo_epochs):
        for groups in minibatches(n_groups, run.ppo_mini_batch_size, training.rng):
            sel = group_rows(groups, n)
            mb = data.select(sel)
            log_prob, ent = generation.forward_response(
                training.policy, mb, run.temperature, with_entropy=run.loss.entropy_coeff != 0
            )
            old, adv = old_lp[sel], advantages[sel]
            loss, m = algorithms.actor_loss(
                training.actor, log_prob, old, adv, mb.response_mask, ent, None if ref_lp is None else ref_lp[sel]
            )
            training.optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(training.policy.parameters(), run.grad_clip)
            training.optimizer.step()
            step_metrics.append(m)
            token_stats.append(metrics.loss_token_stats(training.actor, log_prob, old, adv, mb.response_mask, m))
    out = metrics.pooled_loss_stats(token_stats)
    out["pg_loss"] = float(np.mean([m["actor/pg_loss"] for m in step_metrics]))
    out["pg_clipfrac"] = float(np.mean([m.get("actor/pg_clipfrac", math.nan) for m in step_metrics]))
    out["ppo_kl"] = float(np.mean([m.get("actor/ppo_kl", math.nan) for m in step_metrics]))
    return out


def finish(training: Training, out: Path, ckpt_dir: Path) -> pd.DataFrame:
    """Write the final policy and the metrics table, then drop the checkpoints (the outputs now exist)."""
    frame = metric_columns.complete_table(training.rows)
    with atomic.output(out / "final") as tmp:
        training.policy.save_pretrained(tmp)
        training.tokenizer.save_pretrained(tmp)
    atomic.to_parquet(frame, out / "metrics.parquet")
    checkpoints.clear(ckpt_dir)
    return frame


def main(snakemake) -> None:
    """Rule train: one RL run. A rerun after a kill resumes from its checkpoints when the run and this code are
    unchanged (``train``)."""
    job_log = logs.setup(snakemake.log[0], snakemake.threads)
    run = Run.from_params(snakemake.params.spec)
    job_log.info("run spec %s", json.dumps(run.params()))  # the settings it trains with, as its rule passed them
    benchmarks = {Path(p).stem: p for p in snakemake.input.benchmarks}
    val_sets = validation_sets(benchmarks, run.val_protocol, run.val_size)
    run_dir = Path(snakemake.output.final).parent
    assert Path(snakemake.output.metrics) == run_dir / "metrics.parquet"
    train(run, snakemake.input.model, snakemake.input.train, val_sets, run_dir)
