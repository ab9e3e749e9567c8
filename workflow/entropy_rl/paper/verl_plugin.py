"""The paper's measures inside verl at paper scale.

verl logs its own entropy (token-mean over the update batch) and no covariance. This module,
imported by every verl process (``VERL_USE_EXTERNAL_MODULES``, set by the launch, and
``actor_rollout_ref.model.external_lib`` in the workers), adds the measures of ``entropy_rl.core.metrics``
computed exactly as the mini trainer computes them:

- a trainer, ``trainer.v1.trainer_mode=entropy_paper``: verl's synchronous V1 trainer, which after
  verl's own advantage computation reads the update batch (the groups the filter kept) and logs
  Eq. 5's entropy, Table 1's token covariance (Eq. 10) and Figure 8's bandit covariance (Eq. 8–9)
  over the whole batch, as ``paper/*``;
- for each of verl's loss modes used here, a mode ``<mode>+cov`` that calls verl's loss unchanged
  and logs, per micro-batch (where Clip-Cov and KL-Cov select their tokens), the sums and counts of
  ``entropy_rl.core.metrics.loss_token_stats`` as ``actor/*``;
- verl's actor worker with those sums added up over each mini-batch's micro-batches (verl averages
  a policy loss's metrics over them), which the trainer above starts in place of verl's own;
- the released scripts' bound on the group filter's refills (``GenerationBound``), which verl 0.9.1 lacks;
- an agent loop, ``actor_rollout_ref.rollout.agent.default_agent_loop=seeded_single_turn``: verl's single-turn loop
  with a sampling seed per request, so the same run draws the same rollouts again (``request_seed``).
"""

from __future__ import annotations

import hashlib
import json
import os
import time

import numpy as np
import ray
import transfer_queue as tq
from omegaconf import OmegaConf
from verl.experimental.agent_loop.agent_loop import _agent_loop_registry
from verl.experimental.agent_loop.agent_loop import register as register_agent_loop
from verl.experimental.agent_loop.single_turn_agent_loop import SingleTurnAgentLoop
from verl.single_controller.base.decorator import Dispatch, register
from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY, get_policy_loss_fn, register_policy_loss
from verl.trainer.ppo.utils import Role
from verl.trainer.ppo.v1.trainer_base import TRAINER_REGISTRY, register_trainer
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync
from verl.utils.metric import AggregationType, Metric
from verl.workers.engine_workers import ActorRolloutRefWorker

from ..core import metrics as measures  # `metrics` is verl's name for a step's metric dict
from . import job_time, pass_counts, saves
from .verl_names import AGENT_LOOP, GEN_BATCHES_KEY, TRAINER_MODE

WRAPPED_MODES = ("vanilla", "clip_cov", "kl_cov")
SUFFIX = "+cov"
BATCH_FIELDS = ["uid", "response_mask", "rm_scores", "old_log_probs", "advantages", "entropy"]


def with_covariance(mode: str):
    inner = get_policy_loss_fn(mode)

    def loss_fn(
        old_log_prob,
        log_prob,
        advantages,
        response_mask,
        loss_agg_mode="token-mean",
        config=None,
        rollout_is_weights=None,
    ):
        loss, pg_metrics = inner(
            old_log_prob=old_log_prob,
            log_prob=log_prob,
            advantages=advantages,
            response_mask=response_mask,
            loss_agg_mode=loss_agg_mode,
            config=config,
            rollout_is_weights=rollout_is_weights,
        )
        stats = measures.loss_token_stats(config, log_prob, old_log_prob, advantages, response_mask, pg_metrics)
        pg_metrics.update({f"actor/{k}": v for k, v in stats.items()})
        return loss, pg_metrics

    loss_fn.__name__ = f"{mode}_with_covariance"
    return loss_fn


def batch_measures(fields) -> dict:
    """``paper/*`` metrics of one update batch, from the fields verl keeps in its TransferQueue
    (nested per response; ``to_padded_tensor`` pads them as verl's own advantage step does)."""
    batch = fields.to_padded_tensor()
    uid = np.array(batch.pop("uid").tolist(), dtype=object)
    mask = batch["response_mask"].bool()
    rewards = (batch["rm_scores"] * mask).sum(dim=-1).double().numpy()
    log_prob, advantages = batch["old_log_probs"], batch["advantages"]
    out = {"entropy": measures.policy_entropy(batch["entropy"], mask)}
    out.update(measures.covariance_summary(log_prob, advantages, mask))
    out.update(measures.bandit_covariance(log_prob, advantages, mask, uid, rewards))
    return {f"paper/{k}": v for k, v in out.items()}


LOSS_SUMS = {f"actor/{key}" for key in measures.LOSS_TOKEN_SUMS}
# The roles whose workers train the actor, whichever of them verl's trainer maps (with or without rollout and reference).
ACTOR_ROLES = (Role.Actor, Role.ActorRollout, Role.ActorRolloutRef)


def summing_loss_sums(loss_fn):
    """verl's actor loss (``ppo_loss``) with the ``+cov`` sums and counts aggregated as sums.

    ``ppo_loss`` tags a policy loss's metrics MEAN, so the worker would log each mini-batch's mean
    over its micro-batches and the trainer the mean of those: a ratio of two such means weights each
    mini-batch by 1 / its number of micro-batches, which dynamic batching varies. Tagged SUM, each
    mini-batch logs its totals (over data-parallel ranks, their mean) and the ratio of the trainer's
    means is the ratio of the step's pooled sums."""

    def loss(model_output, data, dp_group=None):
        value, metrics = loss_fn(model_output=model_output, data=data, dp_group=dp_group)
        for key in LOSS_SUMS & metrics.keys():
            summed = Metric(AggregationType.SUM)
            summed.extend(metrics[key].values)
            metrics[key] = summed
        return value, metrics

    return loss


class SummedCountsWorker(ActorRolloutRefWorker):
    """verl's actor worker, its loss wrapped by ``summing_loss_sums`` once verl has built it, and the tokens of each
    pass its models run counted (``paper.pass_counts``; ``passes_counted`` reads them)."""

    @register(dispatch_mode=Dispatch.ONE_TO_ALL)
    def init_model(self):
        super().init_model()
        if getattr(self, "loss_fn", None) is not None:  # roles that train (not a reference alone)
            self.loss_fn = summing_loss_sums(self.loss_fn)
            self.actor.set_loss_fn(self.loss_fn)
        self._passes = {}
        for role in ("actor", "ref"):
            worker = getattr(self, role, None)
            if worker is not None and getattr(worker, "engine", None) is not None:
                self._passes[role] = pass_counts.counter()
                pass_counts.count_passes(worker.engine.module, self._passes[role])

    @register(dispatch_mode=Dispatch.ONE_TO_ALL)
    def passes_counted(self) -> dict:
        """Tokens through each pass of each model since the worker started, this rank's."""
        return {role: dict(counts) for role, counts in getattr(self, "_passes", {}).items()}


class GenerationBoundReached(RuntimeError):
    """The group filter kept too few groups for a full batch within the generation batches allowed per step."""


def registered_prompt_groups(partition_id: str = "train") -> int:
    """Prompt groups in verl's TransferQueue partition: those pending, running or finished and not yet evicted
    or sampled, i.e. every group the step could still train on (as verl's own ``_count_tq_prompt_groups``)."""
    data = tq.kv_list(partition_id) or {}
    return sum(1 for tag in data.get(partition_id, {}).values() if tag.get("is_prompt", False))


class GenerationBound:
    """The released scripts' bound on the group filter, which verl 0.9.1 lacks; mixed into ``PaperMeasuresTrainer``.

    The authors' scripts run verl's DAPO recipe (``recipe/dapo/dapo_ray_trainer.py``, ``RayDAPOTrainer.fit``): it
    generates batches of ``gen_batch_size`` (there ``train_batch_size``) prompts until the groups kept fill a batch,
    and raises after ``max_num_gen_batches`` of them. verl 0.9.1's V1 trainer has no bound: its replay buffer evicts
    every finished group whose rewards are all equal and asks the trainer's ``refill_fn`` for fresh prompts, without
    end (``verl/trainer/ppo/v1/replay_buffer.py``: ``ReplayBufferAsync.wait_for_sampleable``, the buffer
    ``PPOTrainer._build_replay_buffer`` builds for every trainer mode but "sync", ours included; the sync
    ``ReplayBuffer.sample`` alike). Its ``algorithm.filter_groups.max_num_gen_batches`` is read only to warn that it
    is ignored (``trainer_base.py``, ``PPOTrainer._resolve_filter_groups_metric``); ``max_inflight_gen_batches``
    caps the prompts in flight, not those generated, and reaches only the sync buffer.

    ``refill_fn`` is the trainer's ``_add_prompts_to_generate``: every prompt of a step after its first batch
    (``prepare_step``) is generated there, so the bound counts them there, dispatches none past
    ``max_num_gen_batches * train_batch_size``, and once a refill is cut short fails the step as soon as the groups
    still registered (kept, or in flight) cannot fill the batch, which the released scripts could not either. The
    bound is the trainer mode's own setting (``verl_names.GEN_BATCHES_KEY``; 0 or absent: none, as 0 in the scripts)."""

    step_prompts = 0  # prompts generated for the current step

    def generation_budget(self) -> int:
        """Prompts one step may generate (0: no bound)."""
        batches = int(OmegaConf.select(self.config, GEN_BATCHES_KEY, default=0) or 0)
        return max(0, batches) * self.config.data.train_batch_size

    def prepare_step(self) -> dict:
        out = super().prepare_step()  # the step's first generation batch: train_batch_size prompts
        self.step_prompts = self.config.data.train_batch_size
        return out

    def step(self, metrics: dict, timing_raw: dict):
        batch = super().step(metrics, timing_raw)
        # The step's prompts in batches of train_batch_size, as the released trainer logs num_gen_batches.
        metrics["paper/gen_batches"] = self.step_prompts / self.config.data.train_batch_size
        metrics["paper/gen_prompts"] = self.step_prompts
        return batch

    def _add_prompts_to_generate(self, num_prompts: int) -> int:
        budget = self.generation_budget()
        dispatch = min(num_prompts, max(0, budget - self.step_prompts)) if budget else num_prompts
        if dispatch:
            super()._add_prompts_to_generate(dispatch)
            self.step_prompts += dispatch
        if dispatch < num_prompts:
            registered = registered_prompt_groups()
            needed = self.config.data.train_batch_size // self.parameter_sync_step
            if registered < needed:
                raise GenerationBoundReached(self.bound_message(budget, registered, needed))
        return dispatch

    def bound_message(self, budget: int, registered: int, needed: int) -> str:
        size = self.config.data.train_batch_size
        batches = budget // size
        return (
            f"run {self.config.trainer.experiment_name}, step {self.global_steps}: {batches} generation batches "
            f"({self.step_prompts} prompts, {batches} x {size}) did not fill a batch of {needed} prompt groups. The "
            f"group filter (algorithm.filter_groups) dropped {self.step_prompts - registered} groups whose responses "
            f"were all right or all wrong, and at most {registered} can still be kept. The authors' released scripts "
            f"raise here too (max_num_gen_batches={batches}): the data may be too hard or too easy for the model."
        )


class BoundedSaves:
    """Saves that a relaunch can always load, never more of them than the run keeps, and one more before the job's
    time limit; mixed into ``PaperMeasuresTrainer``.

    - verl's retention (``max_actor_ckpt_to_keep``) knows only the saves of its own process (``checkpoint_manager``'s
      ``previous_saved_paths``), so each relaunch would leave up to ``keep`` more whole saves behind: after each save
      the saves no relaunch needs are removed (``saves.prune``).
    - An asynchronous save writes no marker (``trainer_base._save_checkpoint``), so no launch could tell a whole save
      from one cut short: it is refused before any step.
    - Where the job has a time limit (``job_time.END_ENV``), once another step and a save would not fit before it
      (the longest of each seen, twice over, and ``job_time.MARGIN_S``), the step just trained is saved, validated
      and logged as verl does any step, and the run ends there: verl's loop ends after a step beyond
      ``total_training_steps``. The next job resumes from that save, so a time limit costs at most a step's time."""

    _began = _longest_step = _longest_save = 0.0

    def __init__(self, config, *args, **kwargs):
        if OmegaConf.select(config, saves.ASYNC_SAVE, default=False):
            raise ValueError(saves.ASYNC_SAVE_REFUSED)
        super().__init__(config, *args, **kwargs)

    def _save_checkpoint(self):
        began = time.time()
        super()._save_checkpoint()
        self._longest_save = max(self._longest_save, time.time() - began)
        saves.prune_as_configured(self.config.trainer)

    def on_step_begin(self):
        now = time.time()
        if self._began:  # the whole of the last step: rollout, update, save, validation, log
            self._longest_step = max(self._longest_step, now - self._began)
        self._began = now
        super().on_step_begin()

    def on_step_end(self):
        super().on_step_end()
        end = os.environ.get(job_time.END_ENV)
        if not end or self.global_steps >= self.total_training_steps:
            return
        step = max(self._longest_step, time.time() - self._began)
        if float(end) - time.time() > 2 * (step + self._longest_save) + job_time.MARGIN_S:
            return
        if saves.completed_step(self.config.trainer.default_local_dir) != self.global_steps:
            self._save_checkpoint()
        print(f"step {self.global_steps} saved before the job's time limit: the run ends here, the next job resumes")
        self.total_training_steps = self.global_steps  # verl's loop ends once this step is validated and logged


class PaperMeasuresTrainer(BoundedSaves, GenerationBound, PPOTrainerSync):
    """verl's synchronous trainer, logging the paper's measures of each update batch, its actor
    workers ``SummedCountsWorker``, its group filter bounded as the released scripts bound it, its saves bounded and
    each one whole (``BoundedSaves``)."""

    def _init_resource_pool_mgr(self):
        super()._init_resource_pool_mgr()
        for role in ACTOR_ROLES:
            if role in self.role_worker_mapping:
                self.role_worker_mapping[role] = ray.remote(SummedCountsWorker)

    _passes_seen: dict = {}

    def step(self, metrics: dict, timing_raw: dict):
        """verl's step, then the tokens each of its models' passes read during it, summed over ranks, as
        ``paper/passes/<role>/<pass>`` (``paper.pass_counts``)."""
        batch = super().step(metrics, timing_raw)
        groups = {
            id(g): g
            for g in (self.actor_rollout_wg, getattr(self, "ref_policy_wg", None))
            if hasattr(g, "passes_counted")
        }
        totals: dict = {}
        for group in groups.values():  # the reference's worker group is the actor's where verl colocates them
            for rank in group.passes_counted():
                for role, counts in rank.items():
                    for kind, tokens in counts.items():
                        totals[f"paper/passes/{role}/{kind}"] = totals.get(f"paper/passes/{role}/{kind}", 0) + tokens
        for key, total in totals.items():
            metrics[key] = total - self._passes_seen.get(key, 0)
        self._passes_seen = totals
        return batch

    def _compute_advantage(self, batch, metrics: dict):
        batch = super()._compute_advantage(batch, metrics=metrics)
        fields = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=BATCH_FIELDS)
        metrics.update(batch_measures(fields))
        return batch


def request_seed(run_seed: int, step, index, prompt, sample: int, sampling: dict) -> int:
    """The sampling seed of one rollout request: a hash of the run's seed, the step, the prompt (its dataset index and
    its messages), the answer's number in its group and the sampling settings (validation's differ from training's).

    vLLM draws a seeded request from a generator of its own, so the answer no longer depends on which other requests
    share the engine's batch, or in what order verl sent them; verl's own ``rollout.full_determinism`` gives every
    request the same seed, which would make a prompt's answers in a group alike."""
    key = json.dumps([int(run_seed), int(step), int(index), prompt, int(sample), sampling], sort_keys=True, default=str)
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "little") & 0x7FFFFFFF


# What the seed is made of, from each request verl's TransferQueue agent-loop worker sends (verl 0.9.1
# trainer/ppo/v1/agent_loop_tq.py ``_run_prompt``: the prompt's fields, ``global_steps`` among them, and
# ``session_id``, the answer's number in its group).
SEED_FIELDS = ("raw_prompt", "global_steps", "index", "session_id")


class SeededSingleTurnAgentLoop(SingleTurnAgentLoop):
    """verl's single-turn agent loop, each request seeded by ``request_seed``: verl's agent-loop worker passes every
    prompt's dataset fields (``index``, ``raw_prompt``, ``global_steps``) and the answer's number (``session_id``).
    A request without one of them is refused: a default would give a whole group one seed (verl's DataProto worker
    passes no ``session_id``), its answers alike and GRPO's advantage zero, with nothing said."""

    async def run(self, sampling_params: dict, **kwargs):
        missing = [field for field in SEED_FIELDS if field not in kwargs]
        if missing:
            raise KeyError(
                f"{AGENT_LOOP}: the request lacks {missing}, from which its seed is made (verl's "
                f"TransferQueue agent-loop worker passes them; this worker passed {sorted(kwargs)})"
            )
        prompt = [dict(message) for message in kwargs["raw_prompt"]]
        seed = request_seed(
            self.config.data.seed,
            kwargs["global_steps"],
            kwargs["index"],
            prompt,
            kwargs["session_id"],
            sampling_params,
        )
        return await super().run({**sampling_params, "seed": seed}, **kwargs)


# verl imports this module in several places of one process; register once (its registries refuse a rebind).
for _mode in WRAPPED_MODES:
    if _mode + SUFFIX not in POLICY_LOSS_REGISTRY:
        register_policy_loss(_mode + SUFFIX)(with_covariance(_mode))
if TRAINER_MODE not in TRAINER_REGISTRY:
    register_trainer(TRAINER_MODE)(PaperMeasuresTrainer)
if AGENT_LOOP not in _agent_loop_registry:  # verl's agent-loop registry would rebind a name silently
    register_agent_loop(AGENT_LOOP)(SeededSingleTurnAgentLoop)
