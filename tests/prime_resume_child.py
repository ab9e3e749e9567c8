"""Run in a child whose verl is 0.4.1 and whose ``recipe`` is verl's tag v0.4.1 (tests/paper/test_prime_checkpoints.py):
the PRIME recipe's own ``RayPRIMETrainer._save_checkpoint`` and ``_load_checkpoint`` on a run's folder, two steps
trained, saved, stopped and relaunched. The worker groups stand in for the FSDP and vLLM workers this machine cannot
start: each saves and loads its model as verl 0.4.1's FSDP checkpoint manager names its files. Writes what happened
as JSON to argv[2]; argv[1] is the run's checkpoint folder."""

import json
import os
import sys

import torch
from entropy_rl.paper import prime_checkpoints, saves
from omegaconf import OmegaConf
from recipe.prime.prime_ray_trainer import RayPRIMETrainer
from torch.utils.data import DataLoader, RandomSampler


class WorkerGroup:
    def __init__(self):
        self.loaded = []

    def save_checkpoint(self, local_path, hdfs_path=None, global_step=0, max_ckpt_to_keep=None):
        os.makedirs(local_path, exist_ok=True)
        for kind in saves.SHARD_KINDS:
            torch.save({"step": global_step}, os.path.join(local_path, f"{kind}_world_size_1_rank_0.pt"))

    def load_checkpoint(self, path, del_local_after_load=False):
        self.loaded.append(torch.load(os.path.join(path, "model_world_size_1_rank_0.pt"), weights_only=False)["step"])


def launch(trainer_cls, folder):
    """A trainer as the recipe's main_task leaves it before fit: its config, worker groups and dataloader (the recipe's
    own construction, _create_dataloader: a seeded RandomSampler over the prompts)."""
    trainer = object.__new__(trainer_cls)
    trainer.config = OmegaConf.create(
        {
            "trainer": {
                "default_local_dir": folder,
                "default_hdfs_dir": None,
                "resume_mode": "auto",
                "del_local_ckpt_after_load": False,
                "max_actor_ckpt_to_keep": 2,
            }
        }
    )
    trainer.use_rm, trainer.actor_rollout_wg, trainer.rm_wg = True, WorkerGroup(), WorkerGroup()
    generator = torch.Generator()
    generator.manual_seed(7)
    prompts = list(range(12))
    trainer.train_dataloader = DataLoader(
        prompts, batch_size=3, drop_last=True, sampler=RandomSampler(prompts, generator=generator)
    )
    trainer.global_steps = 0
    return trainer


def main(folder: str, out: str) -> None:
    result = {}
    first = launch(prime_checkpoints.resumable(RayPRIMETrainer), folder)
    batches = iter(first.train_dataloader)
    for step in (1, 2, 3):  # trains, saving each step; the launch is then stopped
        result.setdefault("trained", []).append(next(batches).tolist())
        first.global_steps = step
        first._save_checkpoint()
    result["saves_after_first_launch"] = saves.saved_steps(folder)
    result["generator_at_save"] = first.train_dataloader.sampler.generator.get_state().tolist()
    result["next_epoch_unstopped"] = [b.tolist() for b in first.train_dataloader]  # what the loader draws next

    recipe_own = launch(RayPRIMETrainer, folder)  # the recipe as released, on this torch
    try:
        recipe_own._load_checkpoint()
        result["recipe_own"] = "loaded"
    except Exception as err:  # noqa: BLE001 - the failure is the finding
        result["recipe_own"] = f"{type(err).__name__}: {str(err).splitlines()[0]}"

    again = launch(prime_checkpoints.resumable(RayPRIMETrainer), folder)
    again._load_checkpoint()
    result["resumed_step"] = again.global_steps
    result["actor_loaded"], result["reward_loaded"] = again.actor_rollout_wg.loaded, again.rm_wg.loaded
    result["generator_restored"] = (
        again.train_dataloader.sampler.generator.get_state().tolist() == result["generator_at_save"]
    )
    result["next_epoch_resumed"] = [b.tolist() for b in again.train_dataloader]  # the loader goes on
    again.global_steps += 1
    again._save_checkpoint()
    result["saves_after_relaunch"] = saves.saved_steps(folder)
    result["torch"] = torch.__version__
    result["elsewhere_refused"] = _elsewhere_refused(folder)
    with open(out, "w") as fh:
        json.dump(result, fh)


def _elsewhere_refused(folder: str) -> bool:
    """The same pickle outside the run's folder is refused, inside the trusted block too."""
    other = os.path.join(os.path.dirname(folder), "global_step_1")
    os.makedirs(other, exist_ok=True)
    torch.save(DataLoader([1, 2]), os.path.join(other, "data.pt"), pickle_module=__import__("dill"))
    with prime_checkpoints.trusting_own_loader(folder):
        try:
            torch.load(os.path.join(other, "data.pt"))
        except Exception:  # noqa: BLE001
            return True
    return False


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
