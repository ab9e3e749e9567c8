"""A claim's verdict: its measurement made, then judged by the claim's kind, its relation and the ledger's
margin or band.

* ``reproduced`` / ``contradicted`` / ``inconclusive``: a qualitative claim at any scale, on its effects
  (relations.decide: one-sided 5% each way, a claim of no difference or of matching against its margin); a
  number at paper scale, by equivalence to the paper's value within the ledger's band (``tolerance.band``, in
  the number's unit): the measured value's one-sided 95% bounds both inside paper ± band reproduce, one of them
  beyond it contradicts, anything else (a wide or non-finite interval included) is inconclusive. A number set
  against another (``contrast``) is inconclusive when its interval also holds that value. So a noisier study
  gives fewer decisive verdicts, never more reproduced ones.
* ``not comparable at this scale``: a number at mini scale (the measured analogue is still shown), a
  claim whose runs this scale does not have, or a paper value missing from the project's copy of the
  paper. The reason is given.
* ``not run``: a claim left out of this study (``--config claims=...`` or ``budget_gpu_hours=...``);
  the reason gives the GPU-hours its runs would add.

A value the paper reports once, without any spread (``tolerance.factor``), is a point reading: accepted when
measured/paper lies within the stated factor. No error rate can be stated for it, and the row says so.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from . import accuracy, control, covariance, entropy_law, power, random_reward, seeds  # noqa: F401  importing them fills MEASUREMENTS
from .data import NotComparable, Study
from .registry import MEASUREMENTS, Measured, relation_of
from .relations import CONTRADICTED, INCONCLUSIVE, REPRODUCED, Effect, decide
from .stats import Z95

NOT_COMPARABLE, NOT_RUN = "not comparable at this scale", "not run"
VERDICTS = (REPRODUCED, CONTRADICTED, INCONCLUSIVE, NOT_COMPARABLE, NOT_RUN)
JUDGED = (REPRODUCED, CONTRADICTED, INCONCLUSIVE)
COLUMNS = [
    "id",
    "claim",
    "source",
    "kind",
    "paper",
    "unit",
    "measured",
    "how",
    "tolerance",
    "verdict",
    "why",
    "needs",
    "seeds_to_reproduce",
    "seeds_to_contradict",
    "seeds_range_reproduce",
    "seeds_range_contradict",
    "p_reproduce",
    "p_contradict",
]


def _row(claim: dict) -> dict:
    return {
        **dict.fromkeys(COLUMNS, ""),
        "id": claim["id"],
        "claim": claim["claim"],
        "source": claim["source"],
        "kind": claim["kind"],
        "paper": claim.get("paper"),
        "unit": claim.get("unit", ""),
        "measured": None,
        "seeds_to_reproduce": None,
        "seeds_to_contradict": None,
        "p_reproduce": None,
        "p_contradict": None,
    }


def not_run(claim: dict, gpu_hours: float | None, scale: str) -> dict:
    """The row of a claim this study left out: what it would take to judge it."""
    cost = f"; its runs would add {gpu_hours:,.0f} GPU-hours" if scale == "paper" and gpu_hours is not None else ""
    return {
        **_row(claim),
        "verdict": NOT_RUN,
        "why": f"left out of this study (config claims / budget_gpu_hours){cost}",
    }


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
        row.update(
            verdict=d.verdict,
            why=f"{d.detail}. Test: {claim['test']}{note}",
            p_reproduce=d.p_reproduce,
            p_contradict=d.p_contradict,
        )
        if d.verdict == INCONCLUSIVE:
            row.update(plan_columns(d))
        return row
    if "factor" in tol:  # a point reading: the ledger's factor replaces any interval
        interval = factor_interval(float(m.value), tol["factor"])
        row["tolerance"] = (
            f"[{interval[0]:.3g}, {interval[1]:.3g}] (within a factor {tol['factor']:g} of the measured value, "
            f"same sign; a point reading with no error rate): {tol.get('why', '')}"
        )
    else:
        interval = f"measured 95% interval [{m.interval[0]:.3g}, {m.interval[1]:.3g}]" if m.interval is not None else ""
        unit = " points" if claim.get("unit", "") == "%" else claim.get("unit", "")  # a band in % is in points
        band = f"paper ± {tol['band']:g}{unit}" if "band" in tol else ""
        row["tolerance"] = f"{'; '.join(t for t in (interval, band) if t)}: {tol.get('why', '')}"
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
    if "factor" in tol:
        lo, hi = factor_interval(float(m.value), tol["factor"])
        inside = lo <= claim["paper"] <= hi
        return {
            **row,
            "verdict": REPRODUCED if inside else CONTRADICTED,
            "why": f"paper value {'inside' if inside else 'outside'} the factor's range of the measured value: a point "
            f"reading, no error rate{note}",
        }
    if "band" not in tol:
        raise ValueError(
            f"claim {claim['id']!r}: a number judged at paper scale needs tolerance.band or tolerance.factor"
        )
    return {**row, **number_verdict(claim, number_effect(m), tol["band"], note)}


def number_effect(m: Measured) -> Effect:
    """The measured number with its noise: the measurement's own (``spread``), or its 95% interval read as a
    normal one (the wider side's half-width over 1.96, so the bounds hold the interval's)."""
    if m.spread is not None:
        return m.spread
    value = float(m.value)
    if m.interval is None:
        return Effect(value)
    lo, hi = m.interval
    return Effect(value, max(value - lo, hi - value) / Z95)


def number_verdict(claim: dict, measured: Effect, band: float, note: str = "", plan: bool = True) -> dict:
    """The measured number against the paper's, by equivalence within the band (two one-sided tests on measured −
    paper): both one-sided 95% bounds inside paper ± band reproduce, one beyond it contradicts, else inconclusive.
    A claim whose interval also holds the value it is contrasted with (``contrast``) does not decide."""
    effect = replace(measured, estimate=measured.estimate - claim["paper"])
    d = decide({"measured − paper": effect}, "within", band, plan=plan)
    out = {"why": f"{d.detail}{note}", "p_reproduce": d.p_reproduce, "p_contradict": d.p_contradict}
    contrast = claim.get("contrast")
    if d.verdict == REPRODUCED and contrast is not None:
        lo, hi = measured.bounds()
        if lo <= contrast["value"] <= hi:
            return {
                **out,
                "verdict": INCONCLUSIVE,
                "needs": f"an interval narrower than the gap between the paper's {claim['paper']:g} and the "
                f"{contrast['value']:g} it is contrasted with ({contrast['why']}): more samples or seeds",
            }
    if d.verdict == INCONCLUSIVE and plan:
        out.update(plan_columns(d))
    return {**out, "verdict": d.verdict}


def plan_columns(d) -> dict:
    """An inconclusive decision's plan: what it needs in words, the seeds each side needs at the spread's upper
    confidence limit (a number), and the range from the observed spread to that limit (text)."""

    def text(r):
        return "" if r is None else (f"{r[0]}" if r[0] == r[1] else f"{r[0]}–{r[1]}")

    plan = d.plan
    return {
        "needs": d.needs(),
        "seeds_to_reproduce": d.seeds_to_reproduce,
        "seeds_to_contradict": d.seeds_to_contradict,
        "seeds_range_reproduce": text(plan.reproduce) if plan else "",
        "seeds_range_contradict": text(plan.contradict) if plan else "",
    }


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
