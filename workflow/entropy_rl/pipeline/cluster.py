"""Cluster concerns, paper scale, before any job is submitted: the SLURM jobs' environment without the hub token
(written by the Snakefile's ``onstart``, removed when the run ends) and the hub-access check."""

from __future__ import annotations

import os
from pathlib import Path

from ..paper import hub


def write_job_environment(plan, path: str) -> None:
    """The environment sbatch --export-file submits: this process's, less the token variables (not when jobs run
    locally)."""
    if not plan.local_exec:
        hub.write_environment_without_token(path)


def remove_job_environment(path: str) -> None:
    Path(path).unlink(missing_ok=True)


def hub_downloads(S: dict, model_dir: str, source_dir: str) -> list[tuple[str, dict]]:
    """Every download of the scale (destination, hub entry): its models' and its datasets'."""
    downloads = [(model_dir.format(model=name), entry) for name, entry in S["models"].items()]
    return downloads + [(source_dir.format(source=name), entry) for name, entry in S["data"]["sources"].items()]


def check_hub_access(S: dict, model_dir: str, source_dir: str) -> None:
    """A gated repository still to download, with no token: stop before any job is submitted."""
    mirror = S["hub"]["mirror"]
    for dest, entry in hub_downloads(S, model_dir, source_dir):
        staged = mirror and os.path.isdir(os.path.join(mirror, entry["hub"]))
        if not os.path.exists(dest) and not staged:
            hub.require_token(entry["hub"], entry.get("gated", False))
