"""Two studies' results compared file by file: what a change left byte for byte as it was.

Reads ``<before>/results`` and ``<after>/results`` (logs aside) and prints how many files are byte-identical, how
many PDFs are identical but for their CreationDate (matplotlib stamps the time), which files differ, and which
exist on one side only. Make the two studies in two clones, each with ``PYTHONPATH=<clone>/workflow`` so that its
jobs import its own package (an editable install would give both the same one). Run from anywhere:

    python benchmarks/compare_studies.py /tmp/before /tmp/after
"""

import argparse
import collections
import filecmp
import re
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "workflow")]
from entropy_rl.core import paths  # noqa: E402

DATE = re.compile(rb"/CreationDate \([^)]*\)")


def files(root: Path) -> set[Path]:
    return {p.relative_to(root) for p in root.rglob("*") if p.is_file() and p.relative_to(root).parts[0] != "logs"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    args = parser.parse_args()
    a, b = args.before / paths.RESULTS, args.after / paths.RESULTS
    fa, fb = files(a), files(b)
    same, pdfs, differ = [], [], []
    for rel in sorted(fa & fb):
        if filecmp.cmp(a / rel, b / rel, shallow=False):
            same.append(rel)
        elif rel.suffix == ".pdf" and DATE.sub(b"", (a / rel).read_bytes()) == DATE.sub(b"", (b / rel).read_bytes()):
            pdfs.append(rel)
        else:
            differ.append(rel)
    by_dir = dict(collections.Counter(r.parts[0] for r in same))
    print(f"files in both: {len(fa & fb)}; byte-identical: {len(same)} {by_dir}")
    print(f"PDFs identical but for CreationDate: {len(pdfs)}")
    print("differ:", [str(r) for r in differ])
    print("only before:", sorted(str(r) for r in fa - fb))
    print("only after:", sorted(str(r) for r in fb - fa))


if __name__ == "__main__":
    main()
