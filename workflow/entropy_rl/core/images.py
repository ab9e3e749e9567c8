"""The Apptainer image each rule runs in, named after what it is built from: both scales' rules name their images
by these references (pipeline.plan's ``image``); ``paper.images.build`` builds them.

``containers/<name>.def`` builds ``containers/images/<name>-<hash>.sif``, where the hash covers what the
definition puts in the image (every section but %help, %labels and %test, less whole-line comments) and every host
file its ``%files`` section copies in (the pinned package sets in ``envs/``). Editing either gives a new image
reference, so Snakemake sees a changed container for the rules that use it, and
``python -m entropy_rl.paper.images.build build`` builds the images that are missing. The project's own code is not
in the images: rules import it from the checkout.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from .. import PROJECT_DIR

ROOT = PROJECT_DIR
IMAGES = Path("containers") / "images"


class ContainerError(RuntimeError):
    pass


def names(root: Path | str = ROOT) -> list[str]:
    return sorted(p.stem for p in (Path(root) / "containers").glob("*.def"))


def definition(name: str, root: Path | str = ROOT) -> Path:
    path = Path(root) / "containers" / f"{name}.def"
    if not path.is_file():
        raise ContainerError(f"no definition {path} (known: {', '.join(names(root)) or 'none'})")
    return path


def parse(name: str, root: Path | str = ROOT) -> dict:
    """The definition as spython reads it: one recipe per stage."""
    from spython.main.parse.parsers import SingularityParser

    return SingularityParser(str(definition(name, root))).recipe


def dependencies(name: str, root: Path | str = ROOT) -> list[Path]:
    """The host files and folders the definition copies in (its %files sources), relative to root."""
    sources = {line.split()[0] for recipe in parse(name, root).values() for line in recipe.files}
    return sorted(Path(s) for s in sources if not s.startswith("#"))


def _files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]


# Sections that describe or check an image but put nothing a job runs into it: editing them (a stricter %test, a
# comment) must not give every rule that uses the image a new container, which at paper scale reruns GPU jobs.
NOT_CONTENT = ("%help", "%labels", "%test")


def _sections(name: str, root: Path | str) -> list[tuple[str, str, list[str]]]:
    """The definition by section: (its kind, e.g. ``%post``, "" before the first; its header line; its other lines)."""
    sections: list[tuple[str, str, list[str]]] = [("", "", [])]
    for line in definition(name, root).read_text().splitlines():
        if line.startswith("%"):
            sections.append((line.split()[0], line, []))
        else:
            sections[-1][2].append(line)
    return sections


def section(name: str, which: str, root: Path | str = ROOT) -> str:
    """One section's text (``%test``, say), as written (spython turns %test into a script it names, not the text)."""
    return "\n".join(line for kind, _, lines in _sections(name, root) if kind == which for line in lines)


def content(name: str, root: Path | str = ROOT) -> str:
    """The definition's text that shapes the image: without NOT_CONTENT sections and whole-line comments."""
    kept = [
        line
        for kind, header, lines in _sections(name, root)
        if kind not in NOT_CONTENT
        for line in [header, *lines]
        if line.strip() and not line.lstrip().startswith("#")
    ]
    return "\n".join(kept) + "\n"


def digest(name: str, root: Path | str = ROOT) -> str:
    """SHA-256 over the definition's content and every file it copies in, each with its path."""
    root = Path(root)
    h = hashlib.sha256()
    text = content(name, root).encode()
    h.update(f"{definition(name, root).relative_to(root)}\0{len(text)}\0".encode())
    h.update(text)
    for dep in dependencies(name, root):
        if not (root / dep).exists():
            raise ContainerError(f"containers/{name}.def copies in {dep}, which does not exist under {root}")
        for path in _files(root / dep):
            data = path.read_bytes()
            h.update(f"{path.relative_to(root)}\0{len(data)}\0".encode())
            h.update(data)
    return h.hexdigest()


def image_ref(name: str, root: Path | str = ROOT) -> str:
    """The image file a rule's ``container:`` names: containers/images/<name>-<12 hex>.sif under root."""
    return str(Path(root) / IMAGES / f"{name}-{digest(name, root)[:12]}.sif")
