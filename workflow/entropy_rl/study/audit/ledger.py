"""The claims ledger (claims.yaml): its checks, Table 2 unfolded into one claim per cell, the paper's
consistency with itself, and the audit table of every claim judged."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...core.ledger import expand_ledger
from ..artifacts import ARTIFACTS
from ..artifacts import POWER as POWER_ARTIFACTS  # noqa: F401  (the power-sampling study's, for the audit's callers)
from . import verdicts
from .data import Study
from .family import ledger_hash, with_family
from .registry import MEASUREMENTS, relation_of
from .relations import CONTRADICTED, MARGINED, REPRODUCED
from .verdicts import COLUMNS, judge


def table2_row_means(table2: dict) -> list[tuple[str, float, float]]:
    """(row, reported Avg., mean of the row's benchmark cells) for every row of the paper's Table 2."""
    out = []
    for model, rows in table2["rows"].items():
        for method_name, cells in rows.items():
            values = dict(zip(table2["columns"], cells))
            mean = float(np.mean([v for c, v in values.items() if c != "Avg."]))
            out.append((f"{model} {method_name}", values["Avg."], mean))
    return out


def consistency_rows(ledger: dict) -> list[dict]:
    """Checks of the paper against itself, which need no run (Table 2's Avg. column)."""
    rows = []
    means = table2_row_means(ledger["table2"])
    worst = max(means, key=lambda r: abs(r[1] - r[2]))
    bad = [r for r in means if abs(r[1] - r[2]) > 0.05 + 1e-9]
    rows.append(
        {
            "id": "table2/avg-is-mean",
            "claim": "Table 2's Avg. column is the mean of the seven benchmark columns",
            "source": "Table 2",
            "kind": "consistency",
            "paper": f"{len(bad)} of {len(means)} rows differ",
            "unit": "",
            "measured": f"largest gap: {worst[0]} reports {worst[1]}, its cells average {worst[2]:.2f}",
            "how": "unweighted mean of each row's benchmark cells, against the reported Avg.",
            "tolerance": "0.05 points (rounding to one decimal)",
            "verdict": REPRODUCED if not bad else CONTRADICTED,
            "why": "the reported average is not the plain mean of the cells; its weighting is not stated"
            if bad
            else "",
        }
    )
    return rows


def check_ledger(ledger: dict) -> None:
    """Every claim names a known measurement and artifact, and ids are unique (after the schema)."""
    seen = set()
    for claim in ledger["claims"]:
        where = f"claims.yaml claim {claim['id']!r}"
        if claim["id"] in seen:
            raise ValueError(f"{where}: duplicate id")
        seen.add(claim["id"])
        if claim["measure"]["fn"] not in MEASUREMENTS:
            raise ValueError(
                f"{where}: unknown measure.fn {claim['measure']['fn']!r}; known are {sorted(MEASUREMENTS)}"
            )
        for name in (claim["measure"]["artifact"], *claim["measure"].get("also", ())):
            if name not in ARTIFACTS:
                raise ValueError(f"{where}: unknown artifact {name!r}; known are {sorted(ARTIFACTS)}")
        if "factor" in claim.get("tolerance", {}) and claim["kind"] != "number":
            raise ValueError(f"{where}: tolerance.factor applies to number claims only")
        if claim["kind"] == "number":
            if "margin" in claim:
                raise ValueError(
                    f"{where}: a number is judged against the paper's value within its tolerance.band; a "
                    "margin is for qualitative claims"
                )
            if claim.get("paper") is not None and not {"band", "factor"} & claim.get("tolerance", {}).keys():
                raise ValueError(
                    f"{where}: a number needs tolerance.band (equivalence to the paper's value, in its unit) "
                    "or tolerance.factor (a point reading), each with its reason"
                )
            continue
        if "contrast" in claim:
            raise ValueError(f"{where}: contrast applies to number claims only")
        relation = relation_of(claim["measure"])
        if relation in MARGINED and "margin" not in claim:
            raise ValueError(
                f"{where}: a claim of {relation.replace('_', ' ')} is an equivalence or non-inferiority test and needs a "
                "margin: {value, why, set}: what difference the claim would call none, why, and when it was set"
            )
        if relation not in MARGINED and "margin" in claim:
            raise ValueError(f"{where}: relation {relation!r} tests against zero and takes no margin")
    if "band" not in ledger["table2"]["tolerance"]:
        raise ValueError(
            "claims.yaml table2: its tolerance needs a band (points), each cell judged against the paper's within it"
        )
    widths = {len(cells) for rows in ledger["table2"]["rows"].values() for cells in rows.values()}
    if widths != {len(ledger["table2"]["columns"])}:
        raise ValueError(
            f"claims.yaml table2: rows must have one value per column ({len(ledger['table2']['columns'])})"
        )


def with_contrasts(ledger: dict, claims: list[dict]) -> list[dict]:
    """Table 2's cells of a method set against GRPO, each with the same model's GRPO cell as its contrast: the
    paper's point is the gap between the two, so an interval that holds both does not decide the cell."""
    grpo = ledger["table2"]["rows"]
    out = []
    for c in claims:
        m = c["measure"]
        if c["id"].startswith("table2/") and m["method"] != "GRPO" and "GRPO" in grpo.get(m["model"], {}):
            column = m.get("benchmark", "Avg.")
            value = grpo[m["model"]]["GRPO"][ledger["table2"]["columns"].index(column)]
            c = {**c, "contrast": {"value": value, "why": f"the paper's GRPO cell, which {m['method']} is set against"}}
        out.append(c)
    return out


def run_audit(ledger: dict, study: Study, not_run: dict[str, float] | None = None) -> pd.DataFrame:
    """The audit table: every claim of the ledger judged (or, for those in ``not_run``, left out of this study with
    the GPU-hours they would add), then the paper's checks against itself."""
    check_ledger(ledger)
    not_run = not_run or {}
    rows = [
        verdicts.not_run(c, not_run[c["id"]], study.scale) if c["id"] in not_run else judge(c, study)
        for c in with_contrasts(ledger, expand_ledger(ledger))
    ]
    rows += [{**dict.fromkeys(COLUMNS, ""), **r} for r in consistency_rows(ledger)]
    return with_family(pd.DataFrame(rows, columns=COLUMNS)).assign(ledger=ledger_hash(ledger))
