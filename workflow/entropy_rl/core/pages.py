"""The pages the workflow writes, in one small renderer: Markdown tables, and HTML pages with one style.

The audit (study.audit.render), a table's page for the report (study.pages), the pilot's report
(paper.cost.pilot_report) and the configuration reference (core.config_reference) all write through it, so a
page's look or a cell's escaping is changed here once."""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Sequence

# Every page's look: small sans-serif text, ruled cells, left-aligned; a page adds its own rules after these.
STYLE = ("body{font-family:sans-serif;font-size:13px}table{border-collapse:collapse}"
         "td,th{border:1px solid #bbb;padding:3px 6px;vertical-align:top;text-align:left}")  # fmt: skip


def md_cell(value) -> str:
    """A value as one Markdown table cell: a ``|`` escaped, a line break as a space."""
    return str(value).replace("\n", " ").replace("|", "\\|")


def md_table(header: Sequence, rows: Iterable[Sequence]) -> list[str]:
    """A Markdown table's lines: the header, its rule, then one line per row, every cell through ``md_cell``."""
    lines = ["| " + " | ".join(md_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]


def escaped(value) -> str:
    return html.escape(str(value))


def html_table(header: Sequence, rows: Iterable[Sequence], row_styles: Iterable[str] | None = None,
               cell: Callable[[object], str] = escaped) -> str:  # fmt: skip
    """An HTML table; ``cell`` makes each header and body cell's HTML (by default the value escaped), and
    ``row_styles``, where given, is the style attribute of each row."""
    rows = list(rows)
    styles = list(row_styles) if row_styles is not None else [None] * len(rows)
    head = "".join(f"<th>{cell(h)}</th>" for h in header)
    body = "".join((f'<tr style="{style}">' if style else "<tr>") + "".join(f"<td>{cell(c)}</td>" for c in row)
                   + "</tr>" for row, style in zip(rows, styles))  # fmt: skip
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def html_page(title: str, body: str, style: str = "", heading: str | None = None) -> str:
    """A whole page: ``title``, its first heading (``heading``, else the title), then ``body`` (HTML); ``style``
    after ``STYLE``."""
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}{style}</style></head><body><h1>{html.escape(heading or title)}</h1>{body}</body></html>\n")  # fmt: skip
