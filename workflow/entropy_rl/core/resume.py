"""Which run a checkpoint directory belongs to, so a rerun resumes only its own trajectory.

A run keeps its checkpoints in ``results/runs/{run}/checkpoints/`` at both scales
(verl writes its own there at paper scale; the mini trainer's are ``mini.checkpoints``).
The directory records a fingerprint of what wrote it: the run's settings, without the
save frequency, and the contents of the code that trains. A rerun resumes only
the same run with the same code; a directory written by anything else is moved
aside, never deleted, and training starts afresh.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from . import atomic, modules

if TYPE_CHECKING:
    from .run import Run

log = logging.getLogger(__name__)
RECORD = "fingerprint.json"


def fingerprint(run: Run, code_modules=(), **launch) -> str:
    """What determines a run's trajectory: its settings (not how often it saves), what else its ``launch`` sets (verl's
    command at paper scale) and what its code computes (``modules.combined_hash``: a comment, a docstring or a moved
    module leaves a run's checkpoints resumable)."""
    settings = {k: v for k, v in run.params().items() if k != "save_every"} | launch
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    digest.update(modules.combined_hash(*code_modules).encode())
    return digest.hexdigest()


def claim(directory: str | Path, fp: str) -> bool:
    """Make ``directory`` the checkpoint directory of the run ``fp``; True if it already was.

    Checkpoints of another spec or other code cannot continue this run: they are
    moved to ``<directory>.stale-<k>`` with a warning, and False is returned.
    """
    directory = Path(directory)
    record = directory / RECORD
    recorded = json.loads(record.read_text()).get("fingerprint") if record.exists() else None
    if recorded == fp:
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
