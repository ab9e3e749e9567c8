"""A claim's verdict: its measurement made, then judged by the claim's kind, its relation and the ledger's
margin or tolerance.

* ``reproduced`` / ``contradicted`` / ``inconclusive``: a qualitative claim at any scale, on its effects
  (relations.decide: one-sided 5% each way, a claim of no difference or of matching against its margin); a
  number at paper scale, by its acceptance interval: the paper's value outside it contradicts, inside it
  reproduces, unless the interval also holds the value the claim is contrasted with (``contrast``), when the
  data cannot tell the two apart.
* ``not comparable at this scale``: a number at mini scale (the measured analogue is still shown), a
  claim whose runs this scale does not have, or a paper value missing from the project's copy of the
  paper. The reason is given.
* ``not run``: a claim left out of this study (``--config claims=...`` or ``budget_gpu_hours=...``);
  the reason gives the GPU-hours its runs would add.

Tolerances and margins come from the ledger and are set before any result: statistical (a confidence
interval over runs, binomial noise of a benchmark of that size) where the data give a spread, or a stated
factor (``tolerance.factor``: measured/paper within [1/factor, factor]) where the paper reports one value of
one run and nothing to build an interval from. Never fitted to a result.
"""

from __future__ import annotations

import pandas as pd

from . import accuracy, control, covariance, entropy_law, power, random_reward, seeds  # noqa: F401  importing them fills MEASUREMENTS
from .data import NotComparable, Study
from .registry import MEASUREMENTS, Measured, relation_of
from .relations import CONTRADICTED, INCONCLUSIVE, REPRODUCED, decide

NOT_COMPARABLE, NOT_RUN = "not comparable at this scale", "not run"
VERDICTS = (REPRODUCED, CONTRADICTED, INCONCLUSIVE, NOT_COMPARABLE, NOT_RUN)
JUDGED = (REPRODUCED, CONTRADICTED, INCONCLUSIVE)
COLUMNS = ["id", "claim", "source", "kind", "paper", "unit", "measured", "how", "tolerance", "verdict", "why", "needs",
           "seeds_to_reproduce", "seeds_to_contradict"]  # fmt: skip


def _row(claim: dict) -> dict:
    return {**dict.fromkeys(COLUMNS, ""), "id": claim["id"], "claim": claim["claim"], "source": claim["source"],
            "kind": claim["kind"], "paper": claim.get("paper"), "unit": claim.get("unit", ""), "measured": None,
            "seeds_to_reproduce": None, "seeds_to_contradict": None}  # fmt: skip


def not_run(claim: dict, gpu_hours: float | None, scale: str) -> dict:
    """The row of a claim this study left out: what it would take to judge it."""
    cost = f"; its runs would add {gpu_hours:,.0f} GPU-hours" if scale == "paper" and gpu_hours is not None else ""
    return {**_row(claim), "verdict": NOT_RUN, "why": f"left out of this study (config claims / budget_gpu_hours){cost}"}


def _margin_text(claim: dict) -> str:
    margin = claim.get("margin")
    return f"margin {margin['value']:g}{margin.get('unit', '')}: {margin['why']}" if margin else ""


def judge(claim: dict, study: Study) -> dict:
    """One row of the audit: the claim, the paper's value, the measurement and the verdict with its reason (and,
    for an inconclusive claim, what each side would need)."""
    row = _row(claim)
    tol = claim.get("tolerance", {})
    try:
        m = measure(claim["measure"], study)
    except NotComparable as err:
        return {**row, "verdict": NOT_COMPARABLE, "why": str(err)}
    row.update(measured=m.value, how=m.how)
    note = f" (note: {claim['paper_note']})" if claim.get("paper_note") and claim.get("paper") is not None else ""
    if claim["kind"] == "qualitative":
        if m.effects is None:
            raise ValueError(f"claim {claim['id']!r}: {claim['measure']['fn']} names no effects to judge")
        margin = claim.get("margin")
        d = decide(m.effects, relation_of(claim["measure"]), margin["value"] if margin else None)
        row["tolerance"] = "; ".join(t for t in (tol.get("why", ""), _margin_text(claim)) if t)
        row.update(verdict=d.verdict, why=f"{d.detail}. Test: {claim['test']}{note}")
        if d.verdict == INCONCLUSIVE:
            row.update(needs=d.needs(), seeds_to_reproduce=d.seeds_to_reproduce, seeds_to_contradict=d.seeds_to_contradict)
        return row
    interval, rule = m.interval, ""
    if "factor" in tol:  # the ledger's own rule replaces any interval the measurement brings
        interval, rule = (
            factor_interval(float(m.value), tol["factor"]),
            f" (within a factor {tol['factor']:g} of the measured value, same sign)",
        )
    if interval is not None:
        row["tolerance"] = f"[{interval[0]:.3g}, {interval[1]:.3g}]{rule}: {tol.get('why', '')}"
    if claim.get("paper") is None:
        return {
            **row,
            "verdict": NOT_COMPARABLE,
            "why": claim.get("paper_note", "the paper's value is not in the project's copy of the paper"),
        }
    if study.scale != "paper":
        return {
            **row,
            "verdict": NOT_COMPARABLE,
            "why": f"numbers are compared at paper scale; this is the {study.scale} scale's analogue{note}",
        }
    if interval is None:
        raise ValueError(
            f"claim {claim['id']!r}: {claim['measure']['fn']} gives no acceptance interval and the ledger no tolerance.factor"
        )
    return {**row, **number_verdict(claim, interval, note)}


def number_verdict(claim: dict, interval: tuple[float, float], note: str = "") -> dict:
    """A paper value against its acceptance interval: outside contradicts; inside reproduces, unless the
    interval also holds the value the claim is contrasted with (its ``contrast``), so that the paper's number and
    the one it is set against would both pass: then the data do not decide."""
    lo, hi = interval
    if not lo <= claim["paper"] <= hi:
        return {"verdict": CONTRADICTED, "why": f"paper value outside the acceptance interval{note}"}
    contrast = claim.get("contrast")
    if contrast is not None and lo <= contrast["value"] <= hi:
        return {"verdict": INCONCLUSIVE, "why": f"paper value inside the acceptance interval{note}",
                "needs": f"an interval narrower than the gap between the paper's {claim['paper']:g} and the "
                         f"{contrast['value']:g} it is contrasted with ({contrast['why']}): more samples or seeds"}  # fmt: skip
    return {"verdict": REPRODUCED, "why": f"paper value inside the acceptance interval{note}"}


def measure(spec: dict, study: Study) -> Measured:
    """The claim's measurement: on each seed and combined (seeds.combine) when the study has several,
    unless the measurement reads every seed itself."""
    fn = MEASUREMENTS[spec["fn"]]
    kwargs = {k: v for k, v in spec.items() if k != "fn"}
    if study.replicates < 2 or fn.pools_seeds:
        return fn(study, **kwargs)
    return seeds.combine([fn(study.at_seed(k), **kwargs) for k in range(study.replicates)])


def factor_interval(measured: float, factor: float) -> tuple[float, float]:
    """The paper values a measurement accepts within a factor: measured/factor to measured·factor (ordered,
    so a negative measurement accepts only negative values; zero accepts none but zero). The paper value is
    inside exactly when measured/paper lies in [1/factor, factor]: the rule is symmetric in the two."""
    lo, hi = sorted((measured / factor, measured * factor))
    return lo, hi


def verdict_counts(audit: pd.DataFrame) -> dict[str, int]:
    counts = {v: int((audit["verdict"] == v).sum()) for v in VERDICTS}
    return {v: n for v, n in counts.items() if n or v != NOT_RUN}
