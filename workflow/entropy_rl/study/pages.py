"""A table's page for `snakemake --report`: the report shows HTML and images in place but offers a CSV only as a
download, so each table also gets a page with its caption and the table (to 3 significant digits, as its .md)."""

from __future__ import annotations

import html

import pandas as pd

from ..core import pages

# Numbers right-aligned, the first column (the row's name) left.
STYLE = "td,th{text-align:right}th:first-child,td:first-child{text-align:left}"


def table_page(table: pd.DataFrame, title: str, caption: str) -> str:
    """The page: a title, the caption, then the table; a missing value shows as a dash."""
    return pages.html_page(title, f"<p>{html.escape(caption)}</p>{pages.html_frame(table, '.3g', '–')}", STYLE)
