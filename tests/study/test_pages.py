import pandas as pd
from entropy_rl.study import pages


def test_a_tables_page_holds_its_caption_and_every_cell_as_its_md_rounds_it():
    table = pd.DataFrame(
        {"add1 (GSM8K)": [12.3456, float("nan")], "Avg.": [4.861, 3.8]},
        index=pd.Index(["GRPO", "GRPO + <kl_cov>"], name="Method"),
    )
    page = pages.table_page(table, "Table 2: table02_benchmarks", "Mini scale. Accuracy (%) & more.")
    assert "<title>Table 2: table02_benchmarks</title>" in page
    assert "<p>Mini scale. Accuracy (%) &amp; more.</p>" in page  # escaped, as a caption may hold < or &
    assert page.count("<tr") == 3  # the header and one row a method, the method its first cell
    assert "<th>Method</th>" in page and "<td>GRPO + &lt;kl_cov&gt;</td>" in page
    assert "<td>12.3</td>" in page and "<td>4.86</td>" in page and "<td>–</td>" in page
