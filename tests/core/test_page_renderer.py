"""The one renderer of the workflow's pages: a cell never breaks its table, and every page has the same look."""

from entropy_rl.core import pages


def test_a_markdown_cell_keeps_its_table_whole():
    lines = pages.md_table(("a", "b"), [("x|y", "two\nlines"), (1, None)])
    assert lines == ["| a | b |", "|---|---|", "| x\\|y | two lines |", "| 1 | None |"]
    assert all(line.count("|") - line.count("\\|") == 3 for line in lines)


def test_an_html_table_escapes_every_cell_and_styles_each_row():
    table = pages.html_table(("<h>",), [("<b>&",), ("ok",)], ["background:#fff", ""])
    assert table == (
        "<table><thead><tr><th>&lt;h&gt;</th></tr></thead><tbody>"
        '<tr style="background:#fff"><td>&lt;b&gt;&amp;</td></tr><tr><td>ok</td></tr></tbody></table>'
    )


def test_a_page_has_the_shared_style_then_its_own():
    page = pages.html_page("T <1>", "<p>x</p>", style="td{color:red}", heading="Heading")
    assert (
        page.startswith("<!DOCTYPE html>")
        and "<title>T &lt;1&gt;</title>" in page
        and "<h1>Heading</h1><p>x</p>" in page
    )
    assert f"<style>{pages.STYLE}td{{color:red}}</style>" in page and page.endswith("</html>\n")


def test_a_frame_renders_aligned_in_markdown_and_escaped_in_html():
    import pandas as pd

    frame = pd.DataFrame({"acc": [12.3456, float("nan")], "who": ["<a>", "b"]}, index=pd.Index(["x", "y"], name="run"))
    assert pages.md_frame(frame, floatfmt=".3g").splitlines() == [
        "| run   |   acc | who   |",
        "|:------|------:|:------|",
        "| x     |  12.3 | <a>   |",
        "| y     | nan   | b     |",
    ]
    assert pages.md_frame(frame, index=False).splitlines()[0] == "|      acc | who   |"  # floats as "g": 12.3456
    html = pages.html_frame(frame)
    assert "<th>run</th>" in html and "<td>12.3</td>" in html
    assert "<td>–</td>" in html and "<td>&lt;a&gt;</td>" in html
    assert "<th>run</th>" not in pages.html_frame(frame, index=False)
