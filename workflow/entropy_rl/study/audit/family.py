"""The audit's claims as one family: each judged claim's two-way p-value, Holm's step-down over them, and the
ledger's fingerprint that says which margins and bands the verdicts were judged under.

Each claim's own verdict is at the one-sided 5% level each way, so a claim whose truth lies on its line comes out
decisive with probability up to 2α = 10%, and over n such claims about 0.1·n of them would (render.family_note).
Beside it, ``family_verdict`` keeps a decisive verdict only where Holm's procedure over every judged claim's
two-way p-value (twice the smaller of p_reproduce and p_contradict) rejects at a family-wise 5%: the chance of
any decisive verdict by chance across the whole audit is then at most 5%. Both are shown; the per-claim one
answers a reader of one claim, the family one a reader of the audit's totals.
"""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pandas as pd

from .relations import CONTRADICTED, INCONCLUSIVE, REPRODUCED

FAMILY_LEVEL = 0.05


def two_way_p(p_reproduce, p_contradict) -> float:
    """A claim's p-value for being decisive either way (Bonferroni over its two one-sided tests); NaN when the
    claim carries none (a point reading, a check of the paper against itself, a claim not judged)."""
    ps = [float(p) for p in (p_reproduce, p_contradict) if isinstance(p, (int, float))]
    ps = [p for p in ps if math.isfinite(p)]
    return min(1.0, 2 * min(ps)) if len(ps) == 2 else math.nan


def holm(pvalues: list[float], level: float = FAMILY_LEVEL) -> list[bool]:
    """Holm's step-down: which hypotheses are rejected at family-wise ``level`` (NaN never)."""
    idx = [i for i, p in enumerate(pvalues) if math.isfinite(p)]
    order = sorted(idx, key=lambda i: pvalues[i])
    rejected = [False] * len(pvalues)
    for rank, i in enumerate(order):
        if pvalues[i] * (len(order) - rank) >= level:
            break
        rejected[i] = True
    return rejected


def with_family(audit: pd.DataFrame) -> pd.DataFrame:
    """The audit with ``p_two_way`` and ``family_verdict``: a decisive verdict that Holm's procedure keeps at a
    family-wise 5%, else inconclusive; other verdicts as they are."""
    p = [two_way_p(a, b) for a, b in zip(audit["p_reproduce"], audit["p_contradict"])]
    keep = holm(p)
    family = [
        v if v not in (REPRODUCED, CONTRADICTED) or k or not math.isfinite(pv) else INCONCLUSIVE
        for v, k, pv in zip(audit["verdict"], keep, p)
    ]
    return audit.assign(p_two_way=np.asarray(p, dtype=float), family_verdict=family)


def ledger_hash(ledger: dict) -> str:
    """The ledger's fingerprint: SHA-256 of its content (keys sorted), the first 12 hex digits. Two audits with
    different fingerprints were judged against different claims, margins or bands."""
    text = json.dumps(ledger, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]
