"""The audit table as Markdown and as HTML, one row per claim, coloured by verdict in HTML, under a header that
says what the three verdicts mean, how many decisive verdicts chance alone would give, and what would settle each
inconclusive claim."""

from __future__ import annotations

import html
import math

import pandas as pd

from ...core import pages
from .family import FAMILY_LEVEL
from .relations import CONTRADICTED, INCONCLUSIVE, LEVEL, REPRODUCED
from .verdicts import JUDGED, NOT_COMPARABLE, NOT_RUN, verdict_counts

MEANING = (
    f"**reproduced**: the data support the claim at the one-sided {LEVEL:.0%} level; **contradicted**: they support "
    "its opposite at the same level (Bonferroni-corrected over the claim's effects); **inconclusive**: neither, "
    "the interval straddles the line (the row says what a new study would need). A claim of no difference or of "
    "matching is reproduced only when its interval lies inside its margin, and a number only when its interval lies "
    "inside the paper's value ± its band: a wide interval is not evidence of no difference. A claim whose truth lies "
    f"on its line is wrongly reproduced at most {LEVEL:.0%} of the time and wrongly contradicted at most "
    f"{LEVEL:.0%}: benchmarks/audit_calibration.py measures both, for every kind of test the audit runs "
    "(docs/audit.md)."
)


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{round(value, 6) + 0.0:.3g}"  # no -8e-15 for a zero
    return str(value)


def population(seeds: int | None, shared_base: bool | None) -> str:
    """What the intervals cover: what the study's seeds vary."""
    if not seeds or seeds < 2:
        return (
            "One seed per run: differences between trained runs, and trained runs beside the paper's, are not "
            "judged (their spread over RL seeds is unknown); the other intervals cover noise within the run "
            "(evaluation, validation sampling, fit residuals, autocorrelated steps counted as fewer)."
        )
    varies = (
        "RL's randomness only: every replicate of a run starts from its model's one base model, so the "
        "intervals say nothing of another base model"
        if shared_base
        else "pre-training's and RL's randomness: each replicate of a run starts from its own base model"
    )
    return f"{seeds} seeds per run, varying {varies}."


def family_note(audit: pd.DataFrame) -> str:
    """What chance alone gives over the judged claims, and what the family-wise column keeps."""
    judged = int(audit["verdict"].isin(JUDGED).sum())
    decisive = int(audit["verdict"].isin((REPRODUCED, CONTRADICTED)).sum())
    kept = (
        int(audit["family_verdict"].isin((REPRODUCED, CONTRADICTED)).sum()) if "family_verdict" in audit else decisive
    )
    return (
        f"{judged} claims were judged, each at the one-sided {LEVEL:.0%} level each way: were every claim's "
        f"truth exactly on its line, about {2 * LEVEL * judged:.1f} of them would still come out decisive by chance "
        f"(2 × {LEVEL:.0%} × {judged}). Of the {decisive} decisive verdicts, {kept} survive Holm's procedure over "
        f"all judged claims at a family-wise {FAMILY_LEVEL:.0%} (column family verdict)."
    )


def header_lines(audit: pd.DataFrame, seeds: int | None, shared_base: bool | None) -> list[str]:
    ledger = audit["ledger"].iloc[0] if "ledger" in audit and len(audit) else "unknown"
    return [
        MEANING,
        f"Population: {population(seeds, shared_base)}",
        family_note(audit),
        f"Ledger: claims.yaml, sha256 {ledger} (margins and bands as judged; compare refuses audits of different ledgers).",
    ]


def _seeds(n) -> str:
    return "–" if n is None or (isinstance(n, float) and math.isnan(n)) or n == "" else f"{int(n)}"


def settle_rows(audit: pd.DataFrame) -> list[tuple[str, str, str, str]]:
    """(claim id, seeds to reproduce, seeds to contradict, what it needs) of every inconclusive claim: the seeds as
    a range, from the observed spread to its upper confidence limit."""
    rows = audit[audit["verdict"] == INCONCLUSIVE]

    def seeds(r, side):
        text = r.get(f"seeds_range_{side}")
        return text if isinstance(text, str) and text else _seeds(r.get(f"seeds_to_{side}"))

    return [
        (r["id"], seeds(r, "reproduce"), seeds(r, "contradict"), str(r.get("needs") or "")) for _, r in rows.iterrows()
    ]


ADD_SEEDS = (
    "A plan is for a new study, judged afresh: adding seeds to this one and judging again is a second look "
    "at the same question, which spends the 5% again. `snakemake --cores all -d NEW --config replicates=N seed=S` "
    "runs one."
)


def to_markdown(audit: pd.DataFrame, scale: str, seeds: int | None = None, shared_base: bool | None = None) -> str:
    counts = verdict_counts(audit)
    lines = [
        f"# Audit of the paper's claims ({scale} scale)",
        "",
        ", ".join(f"**{n}** {v}" for v, n in counts.items()) + f" — {len(audit)} entries from claims.yaml.",
        "",
    ]
    for text in header_lines(audit, seeds, shared_base):
        lines += [text, ""]
    settle = settle_rows(audit)
    if settle:
        lines += [
            "## What would settle the inconclusive claims",
            "",
            (
                "Seeds at which a new study would support each side with 80% power, from the observed spread to its "
                f"80% upper confidence limit (– : not at the observed effect, or no spread to plan with). {ADD_SEEDS}"
            ),
            "",
        ]
        lines += pages.md_table(("claim", "seeds to reproduce", "seeds to contradict"), [s[:3] for s in settle])
        lines += [""]
    rows = []
    for _, r in audit.iterrows():
        family = r.get("family_verdict")
        held = f" [family: {family}]" if isinstance(family, str) and family and family != r["verdict"] else ""
        verdict = (
            f"**{r['verdict']}**{held}"
            + (f" ({r['why']})" if r["why"] else "")
            + (f"; needs: {r['needs']}" if r.get("needs") else "")
        )
        measured = _fmt(r["measured"]) + (f" — {r['how']}" if r["how"] else "")
        paper = _fmt(r["paper"]) + (r["unit"] if r["paper"] is not None and r["unit"] else "")
        rows.append((r["claim"], r["source"], paper, measured, r["tolerance"], verdict))
    lines += [
        "## Every claim",
        "",
        *pages.md_table(("claim", "source", "paper", "measured", "tolerance", "verdict"), rows),
    ]
    return "\n".join(lines) + "\n"


COLOUR = {
    REPRODUCED: "#d8f0d8",
    CONTRADICTED: "#f6d5d5",
    INCONCLUSIVE: "#fbeec8",
    NOT_COMPARABLE: "#eeeeee",
    NOT_RUN: "#f4f0dc",
}


def _md_inline(text: str) -> str:
    """The header's **bold** as HTML, the rest escaped."""
    parts = html.escape(text).split("**")
    return "".join(f"<b>{p}</b>" if i % 2 else p for i, p in enumerate(parts))


def to_html(audit: pd.DataFrame, scale: str, seeds: int | None = None, shared_base: bool | None = None) -> str:
    counts = verdict_counts(audit)
    rows = [
        (
            r["claim"],
            r["source"],
            _fmt(r["paper"]) + (r["unit"] if r["paper"] is not None else ""),
            _fmt(r["measured"]),
            r["how"],
            r["tolerance"],
            r["verdict"],
            r.get("family_verdict") or "",
            r["why"],
            r.get("needs") or "",
        )
        for _, r in audit.iterrows()
    ]
    styles = [f"background:{COLOUR.get(verdict, 'white')}" for verdict in audit["verdict"]]
    table = pages.html_table(
        (
            "claim",
            "source",
            "paper",
            "measured",
            "how measured",
            "tolerance",
            "verdict",
            "family verdict (Holm)",
            "why",
            "would need",
        ),
        rows,
        styles,
    )
    settle = settle_rows(audit)
    settle_html = ""
    if settle:
        settle_html = (
            f"<h2>What would settle the inconclusive claims</h2><p>Seeds at which a new study would support each "
            f"side with 80% power, from the observed spread to its 80% upper confidence limit (–: not at the "
            f"observed effect, or no spread to plan with). {_md_inline(ADD_SEEDS.replace('`', ''))}</p>"
            + pages.html_table(("claim", "seeds to reproduce", "seeds to contradict"), [s[:3] for s in settle])
        )
    summary = ", ".join(f"{n} {v}" for v, n in counts.items())
    head = "".join(f"<p>{_md_inline(t)}</p>" for t in header_lines(audit, seeds, shared_base))
    body = f"<p>{summary} — {len(audit)} entries from claims.yaml.</p>{head}{settle_html}<h2>Every claim</h2>{table}"
    return pages.html_page(f"Audit ({scale} scale)", body, heading=f"Audit of the paper's claims ({scale} scale)")
