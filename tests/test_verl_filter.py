"""The paper drops prompts whose 8 responses are all right or all wrong, and refills the batch.

In verl 0.9.1 only the V1 trainer does this, in its replay buffer. Here the replay buffer is built
by verl's own trainer code (``PPOTrainer._build_replay_buffer``) from a paper run's composed
config, on a real TransferQueue in a local Ray, and fed finished groups as the rollout would.
"""

import types

import pytest
import torch
import yaml

from entropy_rl import preflight
from test_config import ROOT

PAPER = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]


@pytest.fixture(scope="module")
def transfer_queue():
    tq = pytest.importorskip("transfer_queue")
    cfg = preflight.compose(preflight.bound_command(PAPER, "qwen2.5-7b-grpo")[3:])
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
            tq.kv_put(key=f"{uid}_{session}_0", partition_id="train", fields={"rm_scores": scores}, tag={"status": "finished"})
        tq.kv_put(key=uid, partition_id="train", tag={"is_prompt": True, "status": "finished", "global_steps": 1})

    refills = []

    def refill(count):  # the trainer's _add_prompts_to_generate: new prompts, here with mixed rewards
        refills.append(count)
        for _ in range(count):
            finished_group([1.0, 0.0] * (n // 2))
        return count

    trainer = types.SimpleNamespace(config=cfg, trainer_mode=cfg.trainer.v1.trainer_mode, _add_prompts_to_generate=refill)
    trainer._resolve_filter_groups_metric = types.MethodType(PPOTrainer._resolve_filter_groups_metric, trainer)
    buffer = PPOTrainer._build_replay_buffer(trainer)
    buffer.poll_interval = 0.01
    for rewards in [[1.0] * n] * 3 + [[0.0] * n] * 3 + [[1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0][:n]] * 2:
        finished_group(rewards)
    groups_in = len(made)

    batch, metrics = buffer.sample(global_steps=1, partition_id="train", batch_size=4)

    kept = {key.split("_")[0] for key in batch.keys}
    rewards = dict(made)
    print(f"groups in: {groups_in} (6 with equal rewards), refilled: {refills}, kept: {sorted(kept)}, metrics: {metrics}")
    assert len(kept) == 4 and len(batch.keys) == 4 * n
    assert all(len(set(rewards[uid])) > 1 for uid in kept)  # no group with all-equal rewards survives
    assert metrics["training/filter_groups/evicted_samples"] == 6 and refills and sum(refills) >= 6
