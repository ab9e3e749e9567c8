"""The paper drops prompts whose 8 responses are all right or all wrong, and refills the batch.

In verl 0.9.1 only the V1 trainer does this, in its replay buffer. Here the replay buffer is built
by verl's own trainer code (``PPOTrainer._build_replay_buffer``) from a paper run's composed
config, on a real TransferQueue in a local Ray, and fed finished groups as the rollout would.
verl refills without end; the plugin's trainer stops a step after the released scripts'
``max_num_gen_batches`` generation batches (``verl_plugin.GenerationBound``).
"""

import time
import types

import pytest
import torch
import yaml
from entropy_rl.core.scale import build
from entropy_rl.paper import preflight
from entropy_rl.paper.verl import checks
from omegaconf import OmegaConf
from support import ROOT

PAPER = build("paper", yaml.safe_load((ROOT / "config.yaml").read_text())["paper"])


@pytest.fixture(scope="module")
def transfer_queue():
    tq = pytest.importorskip("transfer_queue")
    cfg = checks.compose(preflight.bound_command(PAPER, "qwen2.5-7b-grpo")[3:])
    cfg.transfer_queue.backend.SimpleStorage.num_data_storage_units = 1  # one storage actor: this machine has 2 cores
    tq.init(cfg.transfer_queue)
    yield tq, cfg
    tq.close()
    import ray

    ray.shutdown()


def test_groups_with_equal_rewards_are_dropped_and_refilled(transfer_queue):
    from verl.trainer.ppo.v1.trainer_base import PPOTrainer

    tq, cfg = transfer_queue
    assert cfg.trainer.use_v1 and cfg.algorithm.filter_groups.enable
    n = cfg.actor_rollout_ref.rollout.n
    made = []

    def finished_group(rewards):
        """A prompt whose n responses are scored: trajectories {uid}_{session}_0, then the prompt's tag."""
        uid = f"p{len(made)}"
        made.append((uid, tuple(rewards)))
        for session, reward in enumerate(rewards):
            scores = torch.zeros(1, 4)
            scores[0, -1] = reward  # verl puts the sequence reward on the last response token
            tq.kv_put(
                key=f"{uid}_{session}_0", partition_id="train", fields={"rm_scores": scores}, tag={"status": "finished"}
            )
        tq.kv_put(key=uid, partition_id="train", tag={"is_prompt": True, "status": "finished", "global_steps": 1})

    refills = []

    def refill(count):  # the trainer's _add_prompts_to_generate: new prompts, here with mixed rewards
        refills.append(count)
        for _ in range(count):
            finished_group([1.0, 0.0] * (n // 2))
        return count

    trainer = types.SimpleNamespace(
        config=cfg, trainer_mode=cfg.trainer.v1.trainer_mode, _add_prompts_to_generate=refill
    )
    trainer._resolve_filter_groups_metric = types.MethodType(PPOTrainer._resolve_filter_groups_metric, trainer)
    buffer = PPOTrainer._build_replay_buffer(trainer)
    buffer.poll_interval = 0.01
    for rewards in [[1.0] * n] * 3 + [[0.0] * n] * 3 + [[1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0][:n]] * 2:
        finished_group(rewards)
    groups_in = len(made)

    batch, metrics = buffer.sample(global_steps=1, partition_id="train", batch_size=4)

    kept = {key.split("_")[0] for key in batch.keys}
    rewards = dict(made)
    print(
        f"groups in: {groups_in} (6 with equal rewards), refilled: {refills}, kept: {sorted(kept)}, metrics: {metrics}"
    )
    assert len(kept) == 4 and len(batch.keys) == 4 * n
    assert all(len(set(rewards[uid])) > 1 for uid in kept)  # no group with all-equal rewards survives
    assert metrics["training/filter_groups/evicted_samples"] == 6 and refills and sum(refills) >= 6


def test_paper_measures_read_the_whole_update_batch(transfer_queue):
    """verl's own advantage step on a batch in the TransferQueue, then the plugin trainer's measures:
    the same numbers as entropy_rl.core.metrics on the padded batch (what the mini trainer computes)."""
    from entropy_rl.core import metrics
    from entropy_rl.paper import verl_names, verl_plugin
    from transfer_queue import KVBatchMeta
    from verl.utils.tensordict_utils import list_of_dict_to_tensordict

    tq, cfg = transfer_queue
    assert cfg.trainer.v1.trainer_mode == verl_names.TRAINER_MODE
    g = torch.Generator().manual_seed(5)
    n, keys, rows = cfg.actor_rollout_ref.rollout.n, [], []
    for prompt, right in enumerate([1, 4, 7]):  # the three difficulty groups of Figure 8
        for session in range(n):
            length = int(torch.randint(3, 9, (1,), generator=g))
            scores = torch.zeros(length)
            scores[-1] = float(session < right)
            keys.append(f"m{prompt}_{session}_0")
            rows.append(
                {
                    "uid": f"m{prompt}",
                    "response_mask": torch.ones(length, dtype=torch.int64),
                    "rm_scores": scores,
                    "old_log_probs": -torch.rand(length, generator=g) * 2,
                    "entropy": torch.rand(length, generator=g),
                }
            )
    tq.kv_batch_put(keys=keys, partition_id="train", fields=list_of_dict_to_tensordict(rows))
    batch = KVBatchMeta(partition_id="train", keys=keys, tags=[{} for _ in keys])

    trainer = object.__new__(verl_plugin.PaperMeasuresTrainer)  # only the advantage step runs: it reads config
    trainer.config = cfg
    logged = {}
    verl_plugin.PaperMeasuresTrainer._compute_advantage(trainer, batch, logged)

    padded = tq.kv_batch_get(keys=keys, partition_id="train", select_fields=["advantages"]).to_padded_tensor()
    width = padded["advantages"].shape[1]
    pad = lambda t: torch.nn.functional.pad(t, (0, width - len(t)))  # noqa: E731
    mask, lp, ent = (
        torch.stack([pad(r[k].float()) for r in rows]) for k in ("response_mask", "old_log_probs", "entropy")
    )
    adv = padded["advantages"]
    rewards = [float(r["rm_scores"].sum()) for r in rows]
    uids = [r["uid"] for r in rows]
    expected = {
        "entropy": metrics.policy_entropy(ent, mask),
        **metrics.covariance_summary(lp, adv, mask),
        **metrics.bandit_covariance(lp, adv, mask, uids, rewards),
    }
    print({k: round(v, 4) for k, v in logged.items()})
    assert logged.keys() == {f"paper/{k}" for k in expected}
    for key, value in expected.items():
        assert logged[f"paper/{key}"] == pytest.approx(value, rel=1e-6), key
    # verl's GRPO advantage is one value per response, normalised within each prompt's group
    assert torch.allclose(adv[0, : int(mask[0].sum())], adv[0, 0].expand(int(mask[0].sum())))


# ---- the released scripts' bound on generation batches (verl_plugin.GenerationBound) ---------------------------
# A model that answers every prompt alike, scored by the project's reward: every group is all right or all wrong.
RIGHT, WRONG, GOLD = "1 + 1 = 2, so the answer is \\boxed{2}.", "The answer is \\boxed{3}.", "2"


class Runaway(Exception):
    """The step went on generating far past the bound: verl 0.9.1's replay buffer refills without end."""


class ScoredRollout:
    """Stands in for verl's rollout (``AgentLoopManagerTQ`` over vLLM, which cannot run here): each prompt's n
    responses written into the TransferQueue as verl's agent loop writes them (the prompt ``running``, its
    trajectories with ``rm_scores``, then ``finished``), each scored by the project's reward. ``right(i)`` is how many
    of the i-th prompt's responses are right. Past ``limit`` prompts it stops the test instead of generating on."""

    def __init__(self, tq, n: int, right, limit: int):
        self.tq, self.n, self.right, self.limit, self.prompts = tq, n, right, limit, 0

    def generate_sequences(self, batch):
        from entropy_rl.core.reward import compute_score

        for uid in batch["uid"]:
            if self.prompts >= self.limit:
                raise Runaway(f"still generating after {self.prompts} prompts")
            right = self.right(self.prompts)
            self.prompts += 1
            self.tq.kv_put(key=uid, partition_id="train", tag={"status": "running"})
            for session in range(self.n):
                scores = torch.zeros(1, 4)
                scores[0, -1] = compute_score("math", RIGHT if session < right else WRONG, GOLD)
                self.tq.kv_put(
                    key=f"{uid}_{session}_0",
                    partition_id="train",
                    fields={"rm_scores": scores},
                    tag={"status": "success", "global_steps": int(batch["global_steps"])},
                )
            self.tq.kv_put(key=uid, partition_id="train", tag={"status": "finished"})


def bounded_trainer(transfer_queue, right, train_batch_size=4, limit=1000):
    """``PaperMeasuresTrainer`` as verl's ``main_ppo`` builds it from a paper run's command (its own ``__init__``:
    the replay buffer verl picks for the mode, with the trainer's refill), with this rollout and a dataloader of
    one-prompt batches in place of the workers, the vLLM servers and the dataset, at the step ``global_steps``."""
    import copy

    from entropy_rl.paper import verl_plugin
    from omegaconf import open_dict
    from verl.utils.dataset.rl_dataset import collate_fn

    tq, cfg = transfer_queue
    listed = tq.kv_list("train") or {}
    if listed.get("train"):  # what an earlier test left
        tq.kv_clear(keys=list(listed["train"]), partition_id="train")
    cfg = copy.deepcopy(cfg)
    with open_dict(cfg):
        cfg.data.train_batch_size = train_batch_size
        cfg.data.gen_batch_size = 1  # what PPOTrainer._init_dataloader sets with group filtering on
    trainer = verl_plugin.PaperMeasuresTrainer(cfg)
    trainer.replay_buffer.poll_interval = 0.01
    trainer.global_steps = 7
    prompt = [{"role": "user", "content": "What is 1 + 1? Put the final answer in \\boxed{}."}]
    trainer.train_dataloader = [collate_fn([{"raw_prompt": prompt, "index": i}]) for i in range(16)]
    trainer.train_dataloader_it = None
    trainer.agent_loop_manager = ScoredRollout(tq, cfg.actor_rollout_ref.rollout.n, right, limit)
    return trainer


def test_a_step_whose_groups_are_all_alike_stops_at_the_released_bound(transfer_queue):
    """verl 0.9.1 alone refills such a step without end (its V1 replay buffer); the released scripts stop after
    max_num_gen_batches generation batches. Here the whole step (``PaperMeasuresTrainer.step``) runs on verl's code
    and stops there, with the run, the step and the reason."""
    from entropy_rl.paper import verl_plugin

    trainer = bounded_trainer(transfer_queue, right=lambda i: 8 * (i % 2), limit=200)  # all right, all wrong, ...
    started = time.perf_counter()
    with pytest.raises(RuntimeError, match="^run qwen2.5-7b-grpo, step 7: ") as raised:  # not Runaway
        trainer.step({}, {})
    message = str(raised.value)
    assert isinstance(raised.value, verl_plugin.GenerationBoundReached)
    print(
        f"{type(raised.value).__name__} after {trainer.agent_loop_manager.prompts} prompts, "
        f"{time.perf_counter() - started:.1f} s: {message}"
    )
    # the scripts' value, which the workflow's command carries
    assert PAPER.config["train"]["max_num_gen_batches"] == 10
    assert trainer.agent_loop_manager.prompts == 10 * 4  # every prompt 10 batches of 4 allow, and not one more
    assert message.startswith("run qwen2.5-7b-grpo, step 7: 10 generation batches (40 prompts, 10 x 4)")
    assert "all right or all wrong" in message and "dropped 40 groups" in message


def test_a_step_the_filter_fills_within_the_bound_trains_on_mixed_groups(transfer_queue):
    """The bound takes nothing from a step that fills: groups alike are refilled up to the last prompt allowed."""
    from entropy_rl.paper import verl_names

    # Of the 40 prompts 10 batches of 4 allow, the 1st, 20th, 33rd and 40th get mixed answers.
    mixed = {0, 19, 32, 39}
    trainer = bounded_trainer(transfer_queue, right=lambda i: 3 if i in mixed else 0)
    assert int(OmegaConf.select(trainer.config, verl_names.GEN_BATCHES_KEY)) * 4 == 40
    trainer.prepare_step()  # the step's first generation batch, then the sampling of PPOTrainer._step_once
    batch, metrics = trainer.replay_buffer.sample(global_steps=trainer.global_steps, partition_id="train", batch_size=4)
    assert len({key.split("_")[0] for key in batch.keys}) == 4 and trainer.agent_loop_manager.prompts == 40
    assert trainer.step_prompts / trainer.config.data.train_batch_size == 10  # its gen_batches (paper/gen_batches)
    assert metrics["training/filter_groups/evicted_samples"] == 36


def test_the_settings_the_preflight_refuses_are_ones_verl_ignores(transfer_queue, caplog):
    """What ``ignored_settings`` says of the filter's two bounds, shown on verl's own trainer: the released scripts'
    key draws verl's warning and nothing else, and the in-flight cap never reaches the replay buffer of our mode."""
    import copy
    import logging

    from entropy_rl.paper import verl_plugin
    from entropy_rl.paper.verl import ignored_settings
    from omegaconf import open_dict
    from verl.trainer.ppo.v1.replay_buffer import ReplayBufferAsync

    cfg = copy.deepcopy(transfer_queue[1])
    with open_dict(cfg):
        cfg.algorithm.filter_groups.max_num_gen_batches = 10
        cfg.algorithm.filter_groups.max_inflight_gen_batches = 10
    with caplog.at_level(logging.WARNING, logger="verl.trainer.ppo.v1.trainer_base"):
        trainer = verl_plugin.PaperMeasuresTrainer(cfg)
    assert "algorithm.filter_groups.max_num_gen_batches=10 is ignored" in caplog.text
    assert type(trainer.replay_buffer) is ReplayBufferAsync and trainer.replay_buffer.max_inflight_gen_batches == 1
    refused = ignored_settings.problems(cfg)
    assert [p.split(" is ignored")[0] for p in refused] == [
        "algorithm.filter_groups.max_num_gen_batches=10",
        "algorithm.filter_groups.max_inflight_gen_batches=10",
    ]


class SavingWorkers:
    """The actor worker group's save as verl's FSDP checkpoint manager makes it (one rank's model, optimizer and extra
    state, then its own retention of the saves of this process only); the GPU workers are what this machine lacks."""

    def __init__(self):
        self.saved = []

    def save_checkpoint(self, local_path, hdfs_path, global_step, max_ckpt_to_keep=None):
        import os
        import shutil

        if max_ckpt_to_keep and len(self.saved) >= max_ckpt_to_keep:  # ensure_checkpoint_capacity, as verl's
            for old in self.saved[: len(self.saved) - max_ckpt_to_keep + 1]:
                shutil.rmtree(old, ignore_errors=True)
            self.saved = self.saved[len(self.saved) - max_ckpt_to_keep + 1 :]
        os.makedirs(local_path, exist_ok=True)
        for kind in ("model", "optim", "extra_state"):
            torch.save({"step": global_step}, os.path.join(local_path, f"{kind}_world_size_1_rank_0.pt"))
        self.saved.append(local_path)


def saving_trainer(transfer_queue, checkpoints):
    """``PaperMeasuresTrainer`` from a paper run's config, saving into ``checkpoints`` through ``SavingWorkers``."""
    import copy

    from entropy_rl.paper import verl_plugin
    from omegaconf import open_dict
    from torchdata.stateful_dataloader import StatefulDataLoader

    cfg = copy.deepcopy(transfer_queue[1])
    with open_dict(cfg):
        cfg.trainer.default_local_dir = str(checkpoints)
    trainer = verl_plugin.PaperMeasuresTrainer(cfg)
    trainer.actor_rollout_wg, trainer.train_dataloader = (
        SavingWorkers(),
        StatefulDataLoader(list(range(8)), batch_size=2),
    )
    return trainer


def test_the_trainers_own_save_leaves_only_the_saves_a_relaunch_needs(transfer_queue, tmp_path):
    """verl 0.9.1's own ``_save_checkpoint`` (the dataloader's state, the TransferQueue's, the marker) on a folder
    that holds two earlier launches' saves, which verl's retention never learns of: after each save the plugin's
    trainer keeps the newest ``max_actor_ckpt_to_keep`` whole saves, and removes the hollow ones verl's retention
    leaves. Before (c27f923) the earlier launches' saves stayed for good."""
    from entropy_rl.paper import saves, verl_plugin

    trainer = saving_trainer(transfer_queue, tmp_path)
    for step in (1, 2):  # an earlier launch's saves, then its marker
        trainer.global_steps = step
        verl_plugin.PPOTrainerSync._save_checkpoint(trainer)  # verl's own save alone: no pruning
    trainer.actor_rollout_wg = SavingWorkers()  # a relaunch: a new process, whose retention knows none of them
    held = []
    for step in (3, 4, 5):
        trainer.global_steps = step
        trainer._save_checkpoint()
        held.append(saves.saved_steps(tmp_path))
    print("saves held after each save:", held)
    assert trainer.config.trainer.max_actor_ckpt_to_keep == 2
    assert held == [[2, 3], [3, 4], [4, 5]]
    assert saves.trusted_step(tmp_path) == 5 and saves.whole_steps(tmp_path) == [4, 5]


def test_an_asynchronous_save_is_refused_before_any_step(transfer_queue):
    import copy

    from entropy_rl.paper import verl_plugin
    from entropy_rl.paper.run_command import launch_of
    from omegaconf import open_dict

    _, cfg = transfer_queue
    cfg = copy.deepcopy(cfg)
    with open_dict(cfg):
        cfg.actor_rollout_ref.actor.checkpoint.async_save = True
    with pytest.raises(ValueError, match="writes no latest_checkpointed_iteration.txt"):
        verl_plugin.PaperMeasuresTrainer(cfg)
    overrides = ["actor_rollout_ref.actor.checkpoint.async_save=True"]
    site = build("paper", {**PAPER.config, "launch": {**PAPER.config["launch"], "verl_overrides": overrides}})
    with pytest.raises(ValueError, match="launch.verl_overrides: .*async_save=true writes no"):
        launch_of(site, "qwen2.5-7b-grpo")  # refused when the workflow plans the run, before any job


class NoReplicas:
    """The rollout replicas verl's sync trainer updates after each step (vLLM servers this machine does not start)."""

    def update_weights(self, step):
        return None


def test_near_the_jobs_time_limit_the_trainer_saves_the_step_and_ends_the_run_there(
    transfer_queue, tmp_path, monkeypatch
):
    """verl 0.9.1's V1 trainer has no time limit of its own (its ESI save is the legacy trainer's): the plugin's
    trainer, at the end of a step, once another step and a save would not fit before the job's end, saves that step
    and sets the run's last step to it, so verl validates and logs it and ends its loop; with time to spare it does
    nothing."""
    from entropy_rl.paper import job_time, saves

    trainer = saving_trainer(transfer_queue, tmp_path)
    trainer.checkpoint_manager, trainer.timing_raw, trainer.total_training_steps = NoReplicas(), {}, 1200
    monkeypatch.setenv(job_time.END_ENV, repr(time.time() + 10 * 24 * 3600))  # days left
    for step in (5, 6):
        trainer.global_steps = step
        trainer.on_step_begin()
        trainer.on_step_end()
    assert saves.saved_steps(tmp_path) == [] and trainer.total_training_steps == 1200
    trainer._longest_step = 60.0  # as if a step took a minute: two of them and the margin no longer fit in 400 s
    monkeypatch.setenv(job_time.END_ENV, repr(time.time() + job_time.MARGIN_S + 100))
    trainer.global_steps = 7
    trainer.on_step_begin()
    trainer.on_step_end()
    assert saves.trusted_step(tmp_path) == 7 and trainer.total_training_steps == 7  # saved, and the loop's last step
    trainer.on_step_end()  # a second call saves nothing more
    assert saves.saved_steps(tmp_path) == [7]
