"""PRIME at paper scale: verl 0.4.1's PRIME recipe, scored by this project's reward.

``python -m entropy_rl.paper.prime_main <overrides>`` is the recipe's ``python -m recipe.prime.main_prime
<overrides>`` (the same Hydra config, ``recipe/prime/config/prime_trainer.yaml``, and the recipe's
own ``run_prime``) with one difference: ``run_prime`` is given ``entropy_rl.core.reward.compute_score``,
the reward every other run of the study uses. The recipe's entry passes none, and it never reads
``custom_reward_function``: verl's PrimeRewardManager then falls back to ``default_compute_score``,
which knows none of this workflow's ``data_source`` names, raises, and the manager scores the
response 0 -- every PRIME step would train on zero rewards without an error.

The recipe's ``main_task``, the Ray task that builds and fits the trainer, is run as ``prime_checkpoints.run_main_task``:
its trainer loads its own pickled dataloader on the image's torch, so that a relaunch resumes, and removes the saves
no relaunch needs after each save (the recipe keeps all of them).

Runs in the prime image (containers/prime.def), where the recipe is importable as ``recipe``.
"""

from __future__ import annotations

import os

import hydra
from recipe.prime import main_prime

from ..core import reward
from . import prime_checkpoints

CONFIG_DIR = os.path.join(os.path.dirname(os.path.abspath(main_prime.__file__)), "config")


def run(config) -> None:
    prime_checkpoints.install(main_prime)
    main_prime.run_prime(config, compute_score=reward.compute_score)


main = hydra.main(config_path=CONFIG_DIR, config_name="prime_trainer", version_base=None)(run)

if __name__ == "__main__":
    main()
