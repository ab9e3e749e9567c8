"""The one renderer of the workflow's pages: a cell never breaks its table, and every page has the same look."""

from entropy_rl.core import pages


def test_a_markdown_cell_keeps_its_table_whole():
    lines = pages.md_table(("a", "b"), [("x|y", "two\nlines"), (1, None)])
    assert lines == ["| a | b |", "|---|---|", "| x\\|y | two lines |", "| 1 | None |"]
    assert all(line.count("|") - line.count("\\|") == 3 for line in lines)


def test_an_html_table_escapes_every_cell_and_styles_each_row():
    table = pages.html_table(("<h>",), [("<b>&",), ("ok",)], ["background:#fff", ""])
    assert table == ("<table><thead><tr><th>&lt;h&gt;</th></tr></thead><tbody>"
                     '<tr style="background:#fff"><td>&lt;b&gt;&amp;</td></tr><tr><td>ok</td></tr></tbody></table>')  # fmt: skip


def test_a_page_has_the_shared_style_then_its_own():
    page = pages.html_page("T <1>", "<p>x</p>", style="td{color:red}", heading="Heading")
    assert page.startswith("<!DOCTYPE html>") and "<title>T &lt;1&gt;</title>" in page and "<h1>Heading</h1><p>x</p>" in page
    assert f"<style>{pages.STYLE}td{{color:red}}</style>" in page and page.endswith("</html>\n")
