"""The audit table as Markdown and as HTML, one row per claim, coloured by verdict in HTML."""

from __future__ import annotations

import html
import math

import pandas as pd

from .verdicts import NOT_COMPARABLE, NOT_REPRODUCED, NOT_RUN, REPRODUCED, verdict_counts


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{round(value, 6) + 0.0:.3g}"  # no -8e-15 for a zero
    return str(value)


def to_markdown(audit: pd.DataFrame, scale: str) -> str:
    counts = verdict_counts(audit)
    lines = [f"# Audit of the paper's claims ({scale} scale)", "",
             ", ".join(f"**{n}** {v}" for v, n in counts.items()) + f" — {len(audit)} entries from claims.yaml.", "",
             "| claim | source | paper | measured | tolerance | verdict |", "|---|---|---|---|---|---|"]  # fmt: skip
    for _, r in audit.iterrows():
        cell = lambda s: str(s).replace("|", "\\|").replace("\n", " ")
        verdict = r["verdict"] + (f" ({r['why']})" if r["why"] else "")
        measured = _fmt(r["measured"]) + (f" — {r['how']}" if r["how"] else "")
        paper = _fmt(r["paper"]) + (r["unit"] if r["paper"] is not None and r["unit"] else "")
        lines.append(
            f"| {cell(r['claim'])} | {cell(r['source'])} | {cell(paper)} | {cell(measured)} | {cell(r['tolerance'])} | {cell(verdict)} |"
        )
    return "\n".join(lines) + "\n"


def to_html(audit: pd.DataFrame, scale: str) -> str:
    counts = verdict_counts(audit)
    colour = {REPRODUCED: "#d8f0d8", NOT_REPRODUCED: "#f6d5d5", NOT_COMPARABLE: "#eeeeee", NOT_RUN: "#f4f0dc"}
    body = []
    for _, r in audit.iterrows():
        cells = [r["claim"], r["source"], _fmt(r["paper"]) + (r["unit"] if r["paper"] is not None else ""),
                 _fmt(r["measured"]), r["how"], r["tolerance"], r["verdict"], r["why"]]  # fmt: skip
        tds = "".join(f"<td>{html.escape(str(c))}</td>" for c in cells)
        body.append(f'<tr style="background:{colour.get(r["verdict"], "white")}">{tds}</tr>')
    head = "".join(
        f"<th>{h}</th>" for h in ("claim", "source", "paper", "measured", "how measured", "tolerance", "verdict", "why")
    )
    summary = ", ".join(f"{n} {v}" for v, n in counts.items())
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Audit ({scale} scale)</title>"
            "<style>body{font-family:sans-serif;font-size:13px}table{border-collapse:collapse}"
            "td,th{border:1px solid #bbb;padding:3px 6px;vertical-align:top;text-align:left}</style></head><body>"
            f"<h1>Audit of the paper's claims ({scale} scale)</h1><p>{summary} — {len(audit)} entries from claims.yaml.</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></body></html>\n")  # fmt: skip
