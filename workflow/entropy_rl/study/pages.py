"""A table's page for `snakemake --report`: the report shows HTML and images in place but offers a CSV only as a
download, so each table also gets a page with its caption and the table (to 3 significant digits, as its .md)."""

from __future__ import annotations

import html

import pandas as pd

STYLE = ("body{font-family:sans-serif;font-size:13px}table{border-collapse:collapse}"
         "td,th{border:1px solid #bbb;padding:3px 6px;text-align:right}th:first-child,td:first-child{text-align:left}")  # fmt: skip


def table_page(table: pd.DataFrame, title: str, caption: str) -> str:
    """The page: a title, the caption, then the table; a missing value shows as a dash."""
    body = table.reset_index().to_html(index=False, float_format=lambda x: f"{x:.3g}", na_rep="–", border=0)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1><p>{html.escape(caption)}</p>"
            f"{body}</body></html>\n")  # fmt: skip
