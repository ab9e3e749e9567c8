"""The mini trainer's checkpoints: the whole training state every ``save_every`` steps.

Each is ``step_NNNNNN/state.pt`` in the run's checkpoint directory (whose owner ``core.resume``
records), written whole and then renamed, so a killed job leaves no partial checkpoint.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import torch

from ..core import atomic

STEP_DIR = re.compile(r"^step_(\d+)$")


def completed(directory: str | Path) -> list[Path]:
    """The finished mini checkpoints, oldest first (temporaries are hidden and never match)."""
    directory = Path(directory)
    found = [p for p in directory.iterdir() if STEP_DIR.match(p.name)] if directory.is_dir() else []
    return sorted(found, key=lambda p: int(STEP_DIR.match(p.name).group(1)))


def save(directory: str | Path, step: int, state: dict) -> Path:
    """Write ``state`` as the checkpoint of ``step`` (written whole, then renamed), then drop older ones."""
    target = Path(directory) / f"step_{step:06d}"
    with atomic.output(target) as tmp:
        tmp.mkdir()
        torch.save(state, tmp / "state.pt")
    for old in completed(directory)[:-1]:
        shutil.rmtree(old)
    return target


def latest(directory: str | Path) -> tuple[Path, dict] | None:
    steps = completed(directory)
    if not steps:
        return None
    path = steps[-1] / "state.pt"
    try:
        return steps[-1], torch.load(path, weights_only=True)
    except Exception as exc:
        raise RuntimeError(
            f"{path}: unreadable checkpoint ({exc}); delete {steps[-1]} to start this run afresh"
        ) from exc


def clear(directory: str | Path) -> None:
    """A finished run's resume state is no longer needed (its results are the run's outputs)."""
    shutil.rmtree(directory, ignore_errors=True)
