"""The audit table as Markdown and as HTML, one row per claim, coloured by verdict in HTML, under a header that
says what the three verdicts mean, how many decisive verdicts chance alone would give, and what would settle each
inconclusive claim."""

from __future__ import annotations

import html
import math

import pandas as pd

from ...core import pages
from .relations import CONTRADICTED, INCONCLUSIVE, LEVEL, REPRODUCED
from .verdicts import JUDGED, NOT_COMPARABLE, NOT_RUN, verdict_counts

MEANING = (
    f"**reproduced**: the data support the claim at the one-sided {LEVEL:.0%} level; **contradicted**: they support "
    "its opposite at the same level; **inconclusive**: neither, the interval straddles the line (the row says what "
    "each side would need). A claim of no difference or of matching is reproduced only when its interval lies inside "
    "the margin the ledger set for it before any result: a wide interval is not evidence of no difference."
)


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{round(value, 6) + 0.0:.3g}"  # no -8e-15 for a zero
    return str(value)


def family_note(audit: pd.DataFrame) -> str:
    """What chance alone gives over the judged claims: each is tested at its own level, not corrected for the
    family (docs/audit.md says why), so the expectation is stated."""
    judged = int(audit["verdict"].isin(JUDGED).sum())
    return (f"{judged} claims were judged, each at the one-sided {LEVEL:.0%} level each way and not corrected for "
            f"the others: were every claim's truth exactly on its line, about {LEVEL * judged:.1f} of them would "
            "still come out decisive (reproduced or contradicted) by chance.")  # fmt: skip


def _seeds(n) -> str:
    return "–" if n is None or (isinstance(n, float) and math.isnan(n)) or n == "" else f"{int(n)}"


def settle_rows(audit: pd.DataFrame) -> list[tuple[str, str, str, str]]:
    """(claim id, seeds to reproduce, seeds to contradict, what it needs) of every inconclusive claim."""
    rows = audit[audit["verdict"] == INCONCLUSIVE]
    return [(r["id"], _seeds(r.get("seeds_to_reproduce")), _seeds(r.get("seeds_to_contradict")), str(r.get("needs") or ""))
            for _, r in rows.iterrows()]  # fmt: skip


ADD_SEEDS = "`snakemake --cores all --config replicates=N` trains only the seeds a study lacks, then judges again."


def to_markdown(audit: pd.DataFrame, scale: str) -> str:
    counts = verdict_counts(audit)
    lines = [f"# Audit of the paper's claims ({scale} scale)", "",
             ", ".join(f"**{n}** {v}" for v, n in counts.items()) + f" — {len(audit)} entries from claims.yaml.", "",
             MEANING, "", family_note(audit), ""]  # fmt: skip
    settle = settle_rows(audit)
    if settle:
        lines += ["## What would settle the inconclusive claims", "",
                  ("Seeds at which each side would be supported with 80% power, were the observed effect and spread the "
                   f"truth (– : not at the observed effect, or no spread to plan with). {ADD_SEEDS}"), ""]  # fmt: skip
        lines += pages.md_table(("claim", "seeds to reproduce", "seeds to contradict"), [s[:3] for s in settle])
        lines += [""]
    rows = []
    for _, r in audit.iterrows():
        verdict = f"**{r['verdict']}**" + (f" ({r['why']})" if r["why"] else "") + (f"; needs: {r['needs']}" if r.get("needs") else "")
        measured = _fmt(r["measured"]) + (f" — {r['how']}" if r["how"] else "")
        paper = _fmt(r["paper"]) + (r["unit"] if r["paper"] is not None and r["unit"] else "")
        rows.append((r["claim"], r["source"], paper, measured, r["tolerance"], verdict))
    lines += ["## Every claim", "", *pages.md_table(("claim", "source", "paper", "measured", "tolerance", "verdict"), rows)]
    return "\n".join(lines) + "\n"


COLOUR = {REPRODUCED: "#d8f0d8", CONTRADICTED: "#f6d5d5", INCONCLUSIVE: "#fbeec8", NOT_COMPARABLE: "#eeeeee", NOT_RUN: "#f4f0dc"}


def _md_inline(text: str) -> str:
    """The header's **bold** as HTML, the rest escaped."""
    parts = html.escape(text).split("**")
    return "".join(f"<b>{p}</b>" if i % 2 else p for i, p in enumerate(parts))


def to_html(audit: pd.DataFrame, scale: str) -> str:
    counts = verdict_counts(audit)
    rows = [(r["claim"], r["source"], _fmt(r["paper"]) + (r["unit"] if r["paper"] is not None else ""), _fmt(r["measured"]),
             r["how"], r["tolerance"], r["verdict"], r["why"], r.get("needs") or "") for _, r in audit.iterrows()]  # fmt: skip
    styles = [f"background:{COLOUR.get(verdict, 'white')}" for verdict in audit["verdict"]]
    table = pages.html_table(("claim", "source", "paper", "measured", "how measured", "tolerance", "verdict", "why",
                              "would need"), rows, styles)  # fmt: skip
    settle = settle_rows(audit)
    settle_html = ""
    if settle:
        settle_html = (f"<h2>What would settle the inconclusive claims</h2><p>Seeds at which each side would be supported "
                       f"with 80% power, were the observed effect and spread the truth (–: not at the observed effect, or "
                       f"no spread to plan with). {_md_inline(ADD_SEEDS.replace('`', ''))}</p>"
                       + pages.html_table(("claim", "seeds to reproduce", "seeds to contradict"), [s[:3] for s in settle]))  # fmt: skip
    summary = ", ".join(f"{n} {v}" for v, n in counts.items())
    body = (f"<p>{summary} — {len(audit)} entries from claims.yaml.</p><p>{_md_inline(MEANING)}</p>"
            f"<p>{html.escape(family_note(audit))}</p>{settle_html}<h2>Every claim</h2>{table}")
    return pages.html_page(f"Audit ({scale} scale)", body, heading=f"Audit of the paper's claims ({scale} scale)")
