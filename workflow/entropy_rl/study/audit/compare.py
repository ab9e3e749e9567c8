"""Two audits of the same ledger side by side: which verdicts agree.

    python -m entropy_rl.study.audit.compare A/audit/audit.csv B/audit/audit.csv

For two studies that differ only in a seed (or in code that should not change the science), each
claim's verdict in both and its measured value; the agreement rate is over the claims judged in
both (reproduced or not reproduced), since a claim "not comparable at this scale" in both says
nothing about stability.
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from .verdicts import NOT_COMPARABLE


def compare(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """One row per claim of either audit: both verdicts and measurements, and whether the verdicts agree.
    ``judged`` marks the claims with a verdict other than "not comparable" in at least one audit."""
    cols = ["id", "verdict", "measured"]
    both = a[cols].merge(b[cols], on="id", how="outer", suffixes=("_a", "_b")).set_index("id")
    both["agree"] = both["verdict_a"] == both["verdict_b"]
    both["judged"] = (both["verdict_a"].fillna(NOT_COMPARABLE) != NOT_COMPARABLE) | (
        both["verdict_b"].fillna(NOT_COMPARABLE) != NOT_COMPARABLE
    )
    return both.reset_index()


def agreement(table: pd.DataFrame) -> tuple[int, int]:
    """(claims whose verdicts agree, claims judged in at least one audit)."""
    judged = table[table["judged"]]
    return int(judged["agree"].sum()), len(judged)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", help="the first audit.csv")
    ap.add_argument("b", help="the second audit.csv")
    args = ap.parse_args(argv)
    table = compare(pd.read_csv(args.a), pd.read_csv(args.b))
    same, judged = agreement(table)
    for side, path in (("a", args.a), ("b", args.b)):
        counts = table[f"verdict_{side}"].value_counts().to_dict()
        print(f"{side}: {path}: " + ", ".join(f"{counts.get(v, 0)} {v}" for v in sorted(counts)))
    print(f"verdicts agree on {same} of {judged} judged claims ({100 * same / max(judged, 1):.0f}%)")
    for _, row in table[table["judged"]].sort_values(["agree", "id"]).iterrows():
        print(f"{'  ' if row['agree'] else '≠ '}{row['id']:<40} {row['verdict_a']!s:<15} {row['verdict_b']!s:<15} "
              f"{str(row['measured_a'])[:50]:<50} | {str(row['measured_b'])[:50]}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
