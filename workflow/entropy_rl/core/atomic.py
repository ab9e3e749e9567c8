"""Outputs appear whole or not at all: write beside the target, then rename it into place.

A job killed mid-write leaves a hidden temporary (``.<stem>.tmp-<pid><suffix>``), never a
truncated file under the output's own name; a rename within one file system is
atomic. Used for every file a later stage or a resumed run reads.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


@contextlib.contextmanager
def output(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path to write ``path`` (a file or a directory) to; move it into place on success.

    On an exception the temporary is removed and ``path`` is left as it was.
    A directory replaces an existing one by removing it first: there is a moment
    with neither, never one with a mix of old and new files.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # The suffix stays last: writers such as savefig read the format from it.
    tmp = path.with_name(f".{path.stem}.tmp-{os.getpid()}{path.suffix}")
    _remove(tmp)
    try:
        yield tmp
        if tmp.is_dir() and path.exists():
            _remove(path)
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise


def to_parquet(frame, path: str | Path, **kwargs) -> None:
    with output(path) as tmp:
        frame.to_parquet(tmp, **kwargs)


def write_text(path: str | Path, text: str) -> None:
    with output(path) as tmp:
        tmp.write_text(text)
