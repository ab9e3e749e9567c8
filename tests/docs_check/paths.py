"""Paths of the repository, as the commands' and the links' checks see them: shown relative to its root, within it
or not, and ignored by git (an output of a run, which a fresh clone does not have) or not."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from support import ROOT


def display(path: Path) -> str:
    try:
        return str(Path(path).relative_to(ROOT))
    except ValueError:
        return str(path)


def within(path: Path, root: Path) -> bool:
    return os.path.normpath(path) == os.path.normpath(root) or os.path.normpath(path).startswith(
        os.path.normpath(root) + os.sep
    )


def git_ignored(path: Path, root: Path) -> bool:
    if not within(path, root):
        return False
    # A directory pattern (``results/``) matches a path that does not exist yet only when written as a directory, and
    # a path under it only through that directory: a fresh clone has no results/ to tell git that it is one.
    rel = Path(os.path.relpath(path, root))
    candidates = [str(rel), f"{rel}/", *(f"{parent}/" for parent in rel.parents if str(parent) != ".")]
    proc = subprocess.run(["git", "-C", str(root), "check-ignore", "--", *candidates], check=False, capture_output=True)
    return proc.returncode == 0  # 0: any of them is
