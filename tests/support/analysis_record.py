"""What the analysis image's record stands for (benchmarks/analysis_root.json, written by benchmarks/analysis_root.py;
tests/paper/images/test_analysis_root.py holds it to today's files): the image (its definition, %test included, and lock:
core.images.digest), the script that builds the image and runs the rules in it, and the Apptainer stand-in it runs
them with. When the key changes, the record no longer stands and the image is built again."""

import hashlib
from pathlib import Path

from entropy_rl.core import images

from . import ROOT

DEFINITION = ROOT / "containers" / "analysis.def"
SCRIPT = ROOT / "benchmarks" / "analysis_root.py"
RECORD = ROOT / "benchmarks" / "analysis_root.json"
STAND_IN = ROOT / "benchmarks" / "apptainer_chroot" / "apptainer"


def key(definition: Path = DEFINITION) -> str:
    """The record's key: the image's digest, then the definition's, the script's and the stand-in's bytes."""
    h = hashlib.sha256(images.digest("analysis", ROOT).encode())
    for path in (definition, SCRIPT, STAND_IN):
        h.update(path.read_bytes())
    return h.hexdigest()
