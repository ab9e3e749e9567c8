"""A run's verl saves on disk: which ``global_step_<k>`` is whole, which step verl's marker may be trusted for, and
the saves no relaunch needs (``prune``). Read by the launch (``verl_checkpoints``) and, after each save, by the
trainers themselves (``verl_plugin``'s trainer, ``prime_checkpoints`` for PRIME's recipe).

A save is **whole** when it holds what its trainer's loader reads: for each model it saves (``TRAINED``) every rank's
model, optimizer and extra-state shard of one world size, non-empty, and the dataloader's ``data.pt``. verl's retention
removes ``global_step_k/actor`` and leaves the rest (a hollow save); verl writes its marker by truncating it and then
writing it, so a node crash or a network filesystem's client cache can leave it empty. The marker is trusted only when
it names a whole save.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

MARKER = "latest_checkpointed_iteration.txt"  # verl's: the step a resume_mode=auto launch loads
STEP_DIR = re.compile(r"^global_step_(\d+)$")
SHARD = re.compile(r"^model_world_size_(\d+)_rank_\d+\.pt$")
# What each trainer's loader reads from global_step_<k>: the models it saves (verl 0.9.1 trainer_base._load_checkpoint:
# the actor, no critic in this study; verl 0.4.1's PRIME recipe: the actor and the implicit PRM, "reward"), each as the
# FSDP checkpoint manager's shards of every rank, and the dataloader's data.pt.
TRAINED = {"verl": ("actor",), "prime": ("actor", "reward")}
SHARD_KINDS = ("model", "optim", "extra_state")
DATALOADER = "data.pt"
# verl's asynchronous save writes no marker (verl 0.9.1 trainer_base._save_checkpoint): refused wherever it could be set.
ASYNC_SAVE = "actor_rollout_ref.actor.checkpoint.async_save"
ASYNC_SAVE_REFUSED = (
    f"{ASYNC_SAVE}=true writes no {MARKER}, so no relaunch could tell a whole save from one cut "
    "short, and every launch would take each save for one cut short: remove it from the overrides"
)


def asks_async_save(overrides) -> bool:
    """Whether Hydra ``overrides`` turn verl's asynchronous save on."""
    for override in overrides:
        key, _, value = override.partition("=")
        if key.lstrip("+~") == ASYNC_SAVE and value.strip().lower() in ("true", "1", "yes", "on"):
            return True
    return False


def peak_saves(keep: int) -> int:
    """The whole saves a run holds at most: ``keep``, the one being written, and the one in ``unlogged/``."""
    return keep + 2


def _whole_model(folder: Path) -> bool:
    sizes = {int(m.group(1)) for m in map(SHARD.match, _names(folder)) if m}
    if len(sizes) != 1:  # no shard, or shards of two world sizes: not one save of one job
        return False
    world = sizes.pop()
    shards = [folder / f"{kind}_world_size_{world}_rank_{rank}.pt" for kind in SHARD_KINDS for rank in range(world)]
    return all(_non_empty(path) for path in shards)


def _names(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir()] if folder.is_dir() else []


def _non_empty(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


def whole(save: str | Path, trainer: str = "verl") -> bool:
    """Whether ``global_step_<k>`` holds everything ``trainer``'s loader reads (``TRAINED``), each file non-empty."""
    save = Path(save)
    return _non_empty(save / DATALOADER) and all(_whole_model(save / model) for model in TRAINED[trainer])


def saved_steps(checkpoints: str | Path) -> list[int]:
    """The steps of the ``global_step_<k>`` directories in ``checkpoints``, in order (cut short and hollow included)."""
    found = [STEP_DIR.match(name) for name in _names(Path(checkpoints))]
    return sorted(int(m.group(1)) for m in found if m)


def whole_steps(checkpoints: str | Path, trainer: str = "verl") -> list[int]:
    """The steps whose save is whole, in order."""
    return [s for s in saved_steps(checkpoints) if whole(Path(checkpoints) / f"global_step_{s}", trainer)]


def marker_text(checkpoints: str | Path) -> str | None:
    """What verl's marker holds (None: there is none)."""
    try:
        return (Path(checkpoints) / MARKER).read_text(errors="replace")
    except FileNotFoundError:
        return None


def trusted_step(checkpoints: str | Path, trainer: str = "verl") -> int | None:
    """The marker's step where it names a whole save; None otherwise (no marker, or one not to trust)."""
    text = (marker_text(checkpoints) or "").strip()
    step = int(text) if text.isdigit() else None
    return step if step is not None and whole(Path(checkpoints) / f"global_step_{step}", trainer) else None


def completed_step(checkpoints: str | Path, trainer: str = "verl") -> int:
    """The last save verl completed and a launch loads: the marker's step where it names a whole save, else 0."""
    return trusted_step(checkpoints, trainer) or 0


def prune(checkpoints: str | Path, keep: int, trainer: str = "verl") -> list[Path]:
    """Remove the saves no relaunch needs: whole saves older than the newest ``keep`` up to the trusted marker, and
    every save below the marker that is not whole (verl's retention leaves ``global_step_k`` without its actor).
    Nothing is removed without a trusted marker, or with ``keep`` below 1. Returns what was removed."""
    checkpoints = Path(checkpoints)
    marker = trusted_step(checkpoints, trainer)
    if marker is None or keep < 1:
        return []
    below = [s for s in saved_steps(checkpoints) if s <= marker]
    kept = [s for s in below if whole(checkpoints / f"global_step_{s}", trainer)][-keep:]
    gone = [checkpoints / f"global_step_{s}" for s in below if s not in kept]
    for path in gone:
        shutil.rmtree(path, ignore_errors=True)
    return gone


def prune_as_configured(trainer_config, trainer: str = "verl") -> list[Path]:
    """``prune`` after a trainer's save: its folder (``default_local_dir``) and ``keep`` (``max_actor_ckpt_to_keep``)
    from the trainer's own config, what was removed said in the trainer's output."""
    keep = int(trainer_config.get("max_actor_ckpt_to_keep") or 0)
    removed = prune(trainer_config.default_local_dir, keep, trainer)
    for path in removed:
        print(f"removed {path}: a save no relaunch needs (the newest {keep} whole saves are kept)")
    return removed
