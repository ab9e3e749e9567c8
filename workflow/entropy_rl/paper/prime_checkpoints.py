"""PRIME's saves on the recipe's own trainer (verl 0.4.1's ``recipe/prime``): loadable on its image's torch, and
bounded.

**Loadable.** The recipe saves its whole DataLoader, pickled with dill (``RayPRIMETrainer._save_checkpoint``:
``torch.save(self.train_dataloader, path, pickle_module=dill)``), and loads it with a bare ``torch.load(path)``
(``_load_checkpoint``). The PRIME image has torch 2.6.0 (envs/prime.txt), where ``weights_only`` defaults to True and
refuses that pickle (``UnpicklingError: Weights only load failed``): every relaunch after the run's first save would
crash. ``trusting_own_loader`` lets exactly that load read it: a ``torch.load`` that names no ``weights_only`` of the
file ``global_step_<k>/data.pt`` directly inside the run's own checkpoint folder, while the trainer's
``_load_checkpoint`` runs. Every other load, in that call or elsewhere, keeps torch's default.

Why that is safe: the file is the run's own, written by this run's trainer into the run's folder, which only the
run's owner writes. The same load reads the model, optimizer and extra-state shards of the same folder with
``weights_only=False`` already (verl 0.4.1 ``FSDPCheckpointManager.load_checkpoint``), so whoever could plant a pickle
there could already run code through those: no trust is added.

**Within a job's time limit.** Near it, the trainer saves at every validation step (``save_at_each_validation_near_end``),
and the launch stops it after such a save (``job_time.StopBeforeEnd``).

**Bounded.** The recipe passes no ``max_ckpt_to_keep`` to its worker groups' saves, so it keeps every actor and PRM
save (about 37 of them, 6-7 TB, at 7B): after each save the saves no relaunch needs are removed (``saves.prune``, the
run's ``trainer.max_actor_ckpt_to_keep``), as the launch does before each relaunch (``verl_checkpoints``).

``run_main_task`` is the recipe's ``main_task`` with its trainer class so extended; ``prime_main`` has the recipe's
``run_prime`` submit it (``install``) as it submits its own: the trainer is built in that Ray task's process, not the
driver's.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from pathlib import Path

import torch

from . import job_time, saves


def own_loader(path, checkpoints: str | Path) -> bool:
    """Whether ``path`` is the dataloader file of one of the run's saves: ``<checkpoints>/global_step_<k>/data.pt``."""
    if not isinstance(path, (str, os.PathLike)):
        return False
    path = Path(path).resolve()
    return (
        path.name == saves.DATALOADER
        and bool(saves.STEP_DIR.match(path.parent.name))
        and path.parent.parent == Path(checkpoints).resolve()
    )


@contextlib.contextmanager
def trusting_own_loader(checkpoints: str | Path):
    """While in the block, ``torch.load`` of the run's own ``global_step_<k>/data.pt`` with no ``weights_only`` given
    reads the pickle (``weights_only=False``); every other call is torch's own, unchanged."""
    load = torch.load

    @functools.wraps(load)
    def guarded(f, *args, **kwargs):
        if kwargs.get("weights_only") is None and own_loader(f, checkpoints):
            kwargs["weights_only"] = False
        return load(f, *args, **kwargs)

    torch.load = guarded
    try:
        yield
    finally:
        torch.load = load


def resumable(trainer_cls: type) -> type:
    """The recipe's trainer class, its load trusting the run's own pickled loader, each save followed by a prune."""

    class ResumablePRIMETrainer(trainer_cls):
        resumable = True

        def _load_checkpoint(self):
            with trusting_own_loader(self.config.trainer.default_local_dir):
                return super()._load_checkpoint()

        _validated_at = _longest_between = 0.0

        def _save_checkpoint(self):
            super()._save_checkpoint()
            saves.prune_as_configured(self.config.trainer, "prime")

        def _validate(self):
            save_at_each_validation_near_end(self)
            return super()._validate()

    ResumablePRIMETrainer.__qualname__ = f"Resumable{trainer_cls.__name__}"
    return ResumablePRIMETrainer


# The recipe's main_task function, where ``install`` replaced it in this process (a Ray worker imports the recipe
# afresh, and finds the recipe's own there).
_recipe_main_task = None


def install(main_prime) -> None:
    """Make the recipe's ``run_prime`` submit ``run_main_task`` in place of its ``main_task``, with the same Ray
    resources (``num_cpus=1``, as the recipe asks them)."""
    import ray

    global _recipe_main_task
    if _recipe_main_task is None:
        _recipe_main_task = main_prime.main_task._function  # the recipe's function itself, not its Ray task
    main_prime.main_task = ray.remote(num_cpus=1)(run_main_task)


def save_at_each_validation_near_end(trainer) -> None:
    """Near the job's time limit (``job_time.END_ENV``), save at every validation step from now on: the recipe
    validates every ``test_freq`` steps after the step's update and saves, by its own check, right after
    (``global_steps % save_freq``). Once two validation intervals (the longest seen) would not fit before the end,
    ``save_freq`` becomes ``test_freq``, so the driver, stopped after a save (``job_time.StopBeforeEnd``), loses at
    most ``test_freq`` steps' time at the end of a job, not ``save_every``'s."""
    from omegaconf import open_dict

    now, end, cfg = time.time(), os.environ.get(job_time.END_ENV), trainer.config.trainer
    if trainer._validated_at:
        trainer._longest_between = max(trainer._longest_between, now - trainer._validated_at)
    trainer._validated_at = now
    test_freq = int(cfg.get("test_freq") or 0)
    if not end or test_freq <= 0 or int(cfg.save_freq) == test_freq or not trainer._longest_between:
        return
    if float(end) - now < 2 * trainer._longest_between + job_time.MARGIN_S:
        with open_dict(trainer.config):
            cfg.save_freq = test_freq
        print(f"step {trainer.global_steps}: the job's time limit is near; saving at every validation from now on")


def run_main_task(config, compute_score=None):
    """The recipe's ``main_task`` (it builds the workers, the reward managers and the trainer, then fits), in this Ray
    task's process, with its trainer class ``resumable``."""
    from recipe.prime import main_prime

    recipe_task = _recipe_main_task or main_prime.main_task._function
    if not getattr(main_prime.RayPRIMETrainer, "resumable", False):
        main_prime.RayPRIMETrainer = resumable(main_prime.RayPRIMETrainer)  # main_task reads the module's global
    return recipe_task(config, compute_score)
