"""The pages the workflow writes, in one small renderer: Markdown tables, and HTML pages with one style.

Every table the workflow writes is rendered here: the audit (study.audit.render), the study's tables and a table's
page for the report (study.tables, study.pages), what each claim costs (pipeline.claims_budget), the pilot's report
(paper.cost.pilot_report) and the configuration reference (core.config_reference), so a page's look or a cell's
escaping is changed here once. Rows of cells go through ``md_table`` and ``html_table``; a DataFrame through
``md_frame`` and ``html_frame`` (pandas' own renderers, aligned, numbers to a format)."""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Sequence

# Every page's look: small sans-serif text, ruled cells, left-aligned; a page adds its own rules after these.
STYLE = (
    "body{font-family:sans-serif;font-size:13px}table{border-collapse:collapse}"
    "td,th{border:1px solid #bbb;padding:3px 6px;vertical-align:top;text-align:left}"
)


def md_cell(value) -> str:
    """A value as one Markdown table cell: a ``|`` escaped, a line break as a space."""
    return str(value).replace("\n", " ").replace("|", "\\|")


def md_table(header: Sequence, rows: Iterable[Sequence]) -> list[str]:
    """A Markdown table's lines: the header, its rule, then one line per row, every cell through ``md_cell``."""
    lines = ["| " + " | ".join(md_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]


def md_frame(frame, floatfmt: str = "g", index: bool = True) -> str:
    """A DataFrame as a Markdown table, aligned (tabulate's pipe format, through pandas): numbers right-aligned on
    their decimal point, each float to ``floatfmt``, the index the first column unless ``index`` is false. Its cells
    are written as they are (``md_cell`` is not applied: a ``|`` in a cell is not escaped)."""
    return frame.to_markdown(index=index, floatfmt=floatfmt)


def escaped(value) -> str:
    return html.escape(str(value))


def html_table(
    header: Sequence,
    rows: Iterable[Sequence],
    row_styles: Iterable[str] | None = None,
    cell: Callable[[object], str] = escaped,
) -> str:
    """An HTML table; ``cell`` makes each header and body cell's HTML (by default the value escaped), and
    ``row_styles``, where given, is the style attribute of each row."""
    rows = list(rows)
    styles = list(row_styles) if row_styles is not None else [None] * len(rows)
    head = "".join(f"<th>{cell(h)}</th>" for h in header)
    body = "".join(
        (f'<tr style="{style}">' if style else "<tr>") + "".join(f"<td>{cell(c)}</td>" for c in row) + "</tr>"
        for row, style in zip(rows, styles)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def html_frame(frame, float_format: str = ".3g", na_rep: str = "–", index: bool = True) -> str:
    """A DataFrame as an HTML table (pandas'): the index as its first columns unless ``index`` is false, each float to
    ``float_format``, a missing value as ``na_rep``; its cells escaped."""
    frame = frame.reset_index() if index else frame
    return frame.to_html(index=False, float_format=lambda x: format(x, float_format), na_rep=na_rep, border=0)


def html_page(title: str, body: str, style: str = "", heading: str | None = None) -> str:
    """A whole page: ``title``, its first heading (``heading``, else the title), then ``body`` (HTML); ``style``
    after ``STYLE``."""
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{STYLE}{style}</style></head><body><h1>{html.escape(heading or title)}</h1>{body}</body></html>\n"
    )
