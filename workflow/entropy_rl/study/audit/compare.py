"""Two audits of the same ledger side by side: which verdicts agree, and how the others moved.

    python -m entropy_rl.study.audit.compare A/audit/audit.csv B/audit/audit.csv

For two studies that differ only in a seed (or in code that should not change the science), each claim's
verdict in both and its measured value. A claim judged in at least one audit (reproduced, contradicted or
inconclusive) counts; "not comparable at this scale" or "not run" in both says nothing about stability. Of the
claims that moved, a **decisive flip** goes from reproduced to contradicted or back: the two studies' data
support opposite answers. For a claim exactly on its line that happens with probability 2α² = 0.5% between two
independent studies, and less off it, so "no flips" is weak evidence of stability: the moves to or from
inconclusive say more. A **move to or from inconclusive** is one study deciding where the other's interval
straddles the line: what a noisier or smaller study is expected to do.

Two audits judged against different ledgers (their ``ledger`` fingerprints differ: other claims, margins or
bands) are not comparable verdict by verdict: ``compare`` refuses them unless told ``--different-ledgers``, and
then says so first.
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from .relations import CONTRADICTED, INCONCLUSIVE, REPRODUCED
from .verdicts import JUDGED, NOT_COMPARABLE

DECISIVE = {REPRODUCED, CONTRADICTED}
AGREE, FLIP, INCONCLUSIVE_MOVE, OTHER = "agree", "decisive flip", "to or from inconclusive", "other move"


def kind_of_move(a: str, b: str) -> str:
    """How a claim's verdict moved between two audits."""
    if a == b:
        return AGREE
    if {a, b} == DECISIVE:
        return FLIP
    if INCONCLUSIVE in (a, b) and {a, b} <= DECISIVE | {INCONCLUSIVE}:
        return INCONCLUSIVE_MOVE
    return OTHER


def compare(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """One row per claim of either audit: both verdicts and measurements, whether the verdicts agree and how they
    moved. ``judged`` marks the claims with a verdict other than "not comparable" in at least one audit."""
    cols = ["id", "verdict", "measured", "why"]
    both = a[cols].merge(b[cols], on="id", how="outer", suffixes=("_a", "_b")).set_index("id")
    va, vb = both["verdict_a"].fillna(NOT_COMPARABLE), both["verdict_b"].fillna(NOT_COMPARABLE)
    both["agree"] = both["verdict_a"] == both["verdict_b"]
    both["move"] = [kind_of_move(x, y) for x, y in zip(va, vb)]
    both["judged"] = va.isin(JUDGED) | vb.isin(JUDGED)
    return both.reset_index()


def agreement(table: pd.DataFrame) -> tuple[int, int]:
    """(claims whose verdicts agree, claims judged in at least one audit)."""
    judged = table[table["judged"]]
    return int(judged["agree"].sum()), len(judged)


def moves(table: pd.DataFrame) -> dict[str, int]:
    """Of the judged claims: how many agree, flipped decisively, moved to or from inconclusive, or moved otherwise."""
    judged = table[table["judged"]]
    return {m: int((judged["move"] == m).sum()) for m in (AGREE, FLIP, INCONCLUSIVE_MOVE, OTHER)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", help="the first audit.csv")
    ap.add_argument("b", help="the second audit.csv")
    ap.add_argument("--different-ledgers", action="store_true", help="compare audits judged against different ledgers")
    args = ap.parse_args(argv)
    a, b = pd.read_csv(args.a), pd.read_csv(args.b)
    ledgers = [str(t["ledger"].iloc[0]) if len(t) else None for t in (a, b)]
    if ledgers[0] != ledgers[1]:
        what = f"judged against different ledgers ({ledgers[0]} against {ledgers[1]}): other claims, margins or bands"
        if not args.different_ledgers:
            print(f"refused: the two audits were {what}; --different-ledgers compares them anyway", file=sys.stderr)
            return 2
        print(f"WARNING: the two audits were {what}, so a moved verdict may be the ledger's doing, not the data's")
    table = compare(a, b)
    same, judged = agreement(table)
    for side, path in (("a", args.a), ("b", args.b)):
        counts = table[f"verdict_{side}"].value_counts().to_dict()
        print(f"{side}: {path}: " + ", ".join(f"{counts.get(v, 0)} {v}" for v in sorted(counts)))
    print(f"verdicts agree on {same} of {judged} judged claims ({100 * same / max(judged, 1):.0f}%)")
    count = moves(table)
    print(
        f"decisive flips (reproduced <-> contradicted): {count[FLIP]}; moves to or from inconclusive: "
        f"{count[INCONCLUSIVE_MOVE]}" + (f"; other moves: {count[OTHER]}" if count[OTHER] else "")
    )
    order = {FLIP: 0, INCONCLUSIVE_MOVE: 1, OTHER: 2, AGREE: 3}
    shown = table[table["judged"]].assign(order=lambda t: t["move"].map(order)).sort_values(["order", "id"])
    for _, row in shown.iterrows():
        mark = {FLIP: "!! ", INCONCLUSIVE_MOVE: "~  ", OTHER: "≠  ", AGREE: "   "}[row["move"]]
        print(
            f"{mark}{row['id']:<40} {row['verdict_a']!s:<13} {row['verdict_b']!s:<13} "
            f"{str(row['measured_a'])[:50]:<50} | {str(row['measured_b'])[:50]}"
        )
        if row["move"] == FLIP:  # the effects and their bounds, both sides: what the two studies saw
            for side in ("a", "b"):
                print(f"       {side}: {str(row[f'why_{side}']).split('. Test:')[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
