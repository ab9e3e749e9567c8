"""Resume state of a training run, and which run a checkpoint directory belongs to.

A run keeps its checkpoints in ``results/runs/{run}/checkpoints/`` at both scales
(verl writes its own there at paper scale; the mini trainer writes ``step_NNNNNN/``).
The directory records a fingerprint of what wrote it: the run spec, without the
save frequency, and the contents of the code that trains. A rerun resumes only
the same run with the same code; a directory written by anything else is moved
aside, never deleted, and training starts afresh.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
from pathlib import Path

import torch

from . import atomic

log = logging.getLogger(__name__)
RECORD = "fingerprint.json"
STEP_DIR = re.compile(r"^step_(\d+)$")


def fingerprint(spec: dict, code_files=()) -> str:
    """What determines a run's trajectory: its settings (not how often it saves) and its code."""
    digest = hashlib.sha256(json.dumps({k: v for k, v in spec.items() if k != "save_every"}, sort_keys=True).encode())
    for path in sorted(map(Path, code_files)):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def claim(directory: str | Path, fp: str) -> bool:
    """Make ``directory`` the checkpoint directory of the run ``fp``; True if it already was.

    Checkpoints of another spec or other code cannot continue this run: they are
    moved to ``<directory>.stale-<k>`` with a warning, and False is returned.
    """
    directory = Path(directory)
    record = directory / RECORD
    if record.exists() and json.loads(record.read_text()).get("fingerprint") == fp:
        return True
    if directory.exists() and any(directory.iterdir()):
        k = 1
        while directory.with_name(f"{directory.name}.stale-{k}").exists():
            k += 1
        aside = directory.with_name(f"{directory.name}.stale-{k}")
        directory.rename(aside)
        log.warning("%s was written by other settings or code; moved to %s, starting afresh", directory, aside)
    directory.mkdir(parents=True, exist_ok=True)
    atomic.write_text(record, json.dumps({"fingerprint": fp}))
    return False


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
