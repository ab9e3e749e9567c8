"""Pinned downloads from the Hugging Face hub, or from a local mirror, verified by checksum.

A repository's revision is resolved once to a commit and written to the lock
file; later runs download that commit and compare every file's SHA-256 with
the lock. A mirror directory pre-staged by cluster admins (``<mirror>/<repo
id>``, common where compute nodes have no internet) stands in for the hub.
The token is read from the environment only and never written anywhere; SLURM jobs are
given the submitting environment without it (``write_environment_without_token``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import yaml

from ..core import atomic, logs

TOKEN_VARIABLES = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")


class HubError(RuntimeError):
    pass


def token() -> str | None:
    return next((os.environ[v] for v in TOKEN_VARIABLES if os.environ.get(v)), None)


def write_environment_without_token(path: str | Path) -> None:
    """This process's environment less the token variables, for ``sbatch --export-file``.

    The format is sbatch's: ``NAME=value`` entries each ended by a NUL byte (values may hold
    newlines). sbatch replaces the environment it submits with the file's, so a job sees what
    ``--export=ALL`` would have given it, token excepted. The file is readable by its owner only
    and replaced atomically, so sbatch never reads half of it.
    """
    # os.environ, the mapping Python code (and a test's monkeypatch) changes: in CI a variable set there
    # was once missing from os.environb in a long-lived test worker.
    data = b"".join(
        os.fsencode(k) + b"=" + os.fsencode(v) + b"\0" for k, v in os.environ.items() if k not in TOKEN_VARIABLES
    )
    with atomic.output(path) as tmp, os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as fh:
        fh.write(data)


def require_token(repo_id: str, gated: bool) -> None:
    """Fail before any job is submitted when a gated repository has no token to reach it."""
    if gated and token() is None:
        raise HubError(f"{repo_id} is gated: accept its licence on the hub, then set HF_TOKEN in the environment")


def sha256(path: str | Path) -> str:
    """A file's SHA-256, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_checksums(root: str | Path) -> dict[str, str]:
    """SHA-256 of every file below ``root`` (hub bookkeeping under .cache excluded), by relative path."""
    root = Path(root)
    files = sorted(p for p in root.rglob("*") if p.is_file() and ".cache" not in p.relative_to(root).parts)
    return {path.relative_to(root).as_posix(): sha256(path) for path in files}


def verify(root: str | Path, expected: dict[str, str], what: str) -> None:
    actual = file_checksums(root)
    missing = sorted(set(expected) - set(actual))
    changed = sorted(p for p in expected if p in actual and actual[p] != expected[p])
    if missing or changed:
        raise HubError(f"{what}: files differ from the lock file (missing {missing}, checksum mismatch {changed})")


def read_lock(path: str | Path) -> dict:
    path = Path(path)
    return yaml.safe_load(path.read_text()) or {} if path.exists() else {}


def write_lock(path: str | Path, lock: dict) -> None:
    atomic.write_text(path, yaml.safe_dump(lock, sort_keys=True))  # never a half-written lock file


def resolve_revision(repo_id: str, repo_type: str, revision: str | None) -> str:
    """The commit a branch, tag or unset revision points to now (needs the hub)."""
    from huggingface_hub import HfApi

    info = HfApi(token=token()).repo_info(repo_id, repo_type=repo_type, revision=revision)
    return info.sha


def fetch(
    repo_id: str,
    repo_type: str,
    dest: str | Path,
    lock_path: str | Path,
    revision: str | None = None,
    mirror: str | Path | None = None,
) -> dict:
    """Bring ``repo_id`` to ``dest`` at its locked commit and verify it; lock it first if new.

    Returns the lock entry. A mirror copy is verified against the lock like a
    download; a repository first seen through a mirror is locked by checksum
    with the mirror's own commit when it has one.
    """
    lock = read_lock(lock_path)
    entry = lock.get(repo_id)
    dest = Path(dest)
    # Fetched and verified beside ``dest``, then renamed into place: a killed download never
    # leaves a partial model under its output's name, and the hub client resumes it next time.
    partial = dest.with_name(f".{dest.name}.partial")
    staged = Path(mirror) / repo_id if mirror else None
    if staged is not None and staged.is_dir():
        if partial.exists():
            shutil.rmtree(partial)
        shutil.copytree(staged, partial)
        commit = entry["commit"] if entry else (revision or "mirror")
    else:
        from huggingface_hub import snapshot_download

        commit = entry["commit"] if entry else resolve_revision(repo_id, repo_type, revision)
        snapshot_download(repo_id, repo_type=repo_type, revision=commit, local_dir=partial, token=token())
    if entry:
        verify(partial, entry["files"], f"{repo_type} {repo_id}@{entry['commit']}")
    else:
        entry = {"type": repo_type, "commit": commit, "files": file_checksums(partial)}
        lock[repo_id] = entry
        write_lock(lock_path, lock)
    if dest.exists():
        shutil.rmtree(dest)
    partial.rename(dest)
    return entry


def main(snakemake) -> None:
    """The download rules' job (download_model, download_dataset): one repository at its locked commit."""
    log = logs.setup(snakemake.log[0])
    p = snakemake.params
    entry = fetch(p.repo, p.repo_type, snakemake.output[0], p.lock, revision=p.revision, mirror=p.mirror)
    log.info("%s %s at %s: %d files verified", p.repo_type, p.repo, entry["commit"], len(entry["files"]))
