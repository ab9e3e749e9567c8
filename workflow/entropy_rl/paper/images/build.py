"""Building the Apptainer images whose files are missing, and printing their references (``core.images``):

python -m entropy_rl.paper.images.build build [NAME ...]
python -m entropy_rl.paper.images.build ref [NAME ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ...core.images import ROOT, ContainerError, image_ref, names


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
            "then rerun `python -m entropy_rl.paper.images.build build`."
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
    parser = argparse.ArgumentParser(prog="python -m entropy_rl.paper.images.build", description=__doc__.split("\n")[0])
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
