"""PRIME resumes on its image's torch, and keeps no more saves than it needs (paper.prime_checkpoints).

verl 0.4.1's PRIME recipe pickles its whole DataLoader with dill and loads it with a bare ``torch.load``: from torch 2.6
(the PRIME image's) on, that load refuses the pickle, so before (c27f923) every PRIME relaunch after its first save
crashed in ``_load_checkpoint``. Here: the recipe's exact save and load calls on this environment's torch; and, where
the recipe is at hand (ENTROPY_RL_PRIME_RECIPE, verl's tag v0.4.1), its own trainer's save and load in a verl 0.4.1
child, the worker groups standing in for the GPU workers.
"""

import json
import os
import subprocess
import sys

import dill
import pytest
import torch
from entropy_rl.paper import prime_checkpoints
from entropy_rl.paper.verl import prime_check
from support import ROOT
from torch.utils.data import DataLoader, RandomSampler


def recipe_saved_loader(folder, step=2):
    """The recipe's save of its loader (``_save_checkpoint``), after ``step`` batches of a seeded RandomSampler."""
    generator = torch.Generator()
    generator.manual_seed(1)
    loader = DataLoader(list(range(10)), batch_size=2, sampler=RandomSampler(list(range(10)), generator=generator))
    batches = iter(loader)
    for _ in range(step):
        next(batches)
    path = folder / f"global_step_{step}" / "data.pt"
    path.parent.mkdir(parents=True)
    torch.save(loader, path, pickle_module=dill)
    return loader, path


def test_the_recipes_bare_load_reads_the_runs_own_loader_and_nothing_else(tmp_path):
    folder = tmp_path / "checkpoints"
    loader, path = recipe_saved_loader(folder)
    with pytest.raises(pickle_error()):  # the recipe as released, on torch >= 2.6
        torch.load(path)
    with prime_checkpoints.trusting_own_loader(folder):
        restored = torch.load(path)  # the recipe's call, unchanged
        with pytest.raises(pickle_error()):
            torch.load(path, weights_only=True)  # asked for explicitly: honoured
        _, elsewhere = recipe_saved_loader(tmp_path / "other")
        with pytest.raises(pickle_error()):
            torch.load(elsewhere)  # the same pickle outside the run's folder: refused
    assert torch.equal(restored.sampler.generator.get_state(), loader.sampler.generator.get_state())
    assert [b.tolist() for b in restored] == [b.tolist() for b in loader]  # the next epoch, as the run would draw it
    with pytest.raises(pickle_error()):
        torch.load(path)  # after the block, torch's own load
    assert torch.load is not None and not hasattr(torch.load, "__wrapped__")


def pickle_error():
    import pickle

    return pickle.UnpicklingError


@pytest.mark.skipif(
    not os.environ.get("ENTROPY_RL_PRIME_RECIPE"), reason="needs verl v0.4.1's recipe/ (ENTROPY_RL_PRIME_RECIPE)"
)
def test_the_recipes_own_trainer_saves_stops_relaunches_and_goes_on(tmp_path):
    site = prime_check.default_site()
    path = [os.environ["ENTROPY_RL_PRIME_RECIPE"], str(site), str(ROOT / "workflow"), str(ROOT / "tests")]
    out = tmp_path / "result.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "prime_resume_child.py"), str(tmp_path / "checkpoints"), str(out)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(path)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    r = json.loads(out.read_text())
    print({k: v for k, v in r.items() if k not in ("generator_at_save",)})
    assert r["recipe_own"].startswith("UnpicklingError: Weights only load failed")  # c27f923: every relaunch crashed
    assert r["saves_after_first_launch"] == [2, 3]  # the recipe keeps every save; pruned to the newest 2 after each
    assert r["resumed_step"] == 3 and r["actor_loaded"] == [3] and r["reward_loaded"] == [3]
    assert r["generator_restored"] and r["next_epoch_resumed"] == r["next_epoch_unstopped"]
    assert r["saves_after_relaunch"] == [3, 4] and r["elsewhere_refused"]


def test_near_the_jobs_time_limit_prime_saves_at_every_validation(monkeypatch):
    """PRIME's recipe saves every save_every steps and validates every test_freq steps; near the job's end (two of the
    longest validation intervals left) its trainer saves at each validation, by the recipe's own check."""
    from entropy_rl.paper import job_time
    from omegaconf import OmegaConf

    class Trainer:
        _validated_at = _longest_between = 0.0
        global_steps = 40
        config = OmegaConf.create({"trainer": {"save_freq": 32, "test_freq": 4}})

    trainer = Trainer()
    OmegaConf.set_struct(trainer.config, True)  # as the recipe leaves it
    monkeypatch.setenv(job_time.END_ENV, repr(__import__("time").time() + job_time.MARGIN_S + 5))
    prime_checkpoints.save_at_each_validation_near_end(trainer)  # the first validation: no interval seen yet
    assert trainer.config.trainer.save_freq == 32
    trainer._validated_at -= 3  # the next one, an interval of 3 s later
    prime_checkpoints.save_at_each_validation_near_end(trainer)
    assert trainer.config.trainer.save_freq == 4 and trainer._longest_between >= 3
