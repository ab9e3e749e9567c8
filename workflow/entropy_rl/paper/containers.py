"""The Apptainer image each rule runs in, named after what it is built from, and building it.

``containers/<name>.def`` builds ``containers/images/<name>-<hash>.sif``, where the hash covers what the
definition puts in the image (every section but %help, %labels and %test, less whole-line comments) and every host
file its ``%files`` section copies in (the pinned package sets in ``envs/``). Editing either gives a new image
reference, so Snakemake sees a changed container for
the rules that use it, and ``python -m entropy_rl.paper.containers build`` builds the images that are
missing. The project's own code is not in the images: rules import it from the checkout.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
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


def build(wanted: list[str] | None = None, root: Path | str = ROOT) -> list[str]:
    """Build, with ``apptainer build``, each image whose file is missing; return the ones built."""
    root = Path(root)
    refs = [(name, image_ref(name, root)) for name in wanted or names(root)]
    missing = [(name, ref) for name, ref in refs if not Path(ref).exists()]
    if not missing:
        return []
    apptainer = shutil.which("apptainer")
    if apptainer is None:
        raise ContainerError(
            "apptainer is not on PATH, so these images cannot be built here: "
            + ", ".join(os.path.relpath(ref, root) for _, ref in missing)
            + ". Install Apptainer (https://apptainer.org) or load it (e.g. `module load apptainer`), "
            "then rerun `python -m entropy_rl.paper.containers build`."
        )
    for name, ref in missing:
        partial = Path(ref + ".part")  # renamed once complete: a failed build leaves no image behind
        partial.parent.mkdir(parents=True, exist_ok=True)
        partial.unlink(missing_ok=True)
        cmd = [apptainer, "build", str(partial), f"containers/{name}.def"]
        print("+", " ".join(cmd), flush=True)
        if subprocess.run(cmd, check=False, cwd=root).returncode != 0:
            partial.unlink(missing_ok=True)
            raise ContainerError(f"apptainer build of containers/{name}.def failed (its output is above)")
        os.replace(partial, ref)
    return [ref for _, ref in missing]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m entropy_rl.paper.containers", description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=str(ROOT), help="repository root (default: this checkout)")
    sub = parser.add_subparsers(dest="command", required=True)
    for command, text in [("build", "build the images whose file is missing"), ("ref", "print image references")]:
        sub.add_parser(command, help=text).add_argument("names", nargs="*", help="definitions (default: all)")
    args = parser.parse_args(argv)
    try:
        if args.command == "ref":
            print("\n".join(image_ref(n, args.root) for n in args.names or names(args.root)))
        else:
            built = build(args.names, args.root)
            print(f"built {len(built)} image(s)" if built else "every image is built")
    except ContainerError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
