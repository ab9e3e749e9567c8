"""The paper's tables (study.tables): Table 1's covariance groups, Table 2's cells over replicates, and the writer."""

import pandas as pd
import pytest
from entropy_rl.study import tables
from entropy_rl.study.inputs import Inputs
from support.metrics_frames import run_metrics

NAMES = {"x": "x (AIME 2024)", "y": "y"}


def test_table01_and_table02_written_as_csv_and_markdown(tmp_path):
    t1 = tables.table01_covariance_distribution(Inputs(metrics={"r": [run_metrics()]}, labels={"r": "Run"}))
    assert list(t1.index) == ["Top 0.02%", "Top 0.2%", "Top 2%", "Top 20%", "Top 50%", "All"]
    assert t1.loc["All", "Run, first step"] == pytest.approx(0.0012)
    summaries = {"a": [pd.DataFrame({"benchmark": ["x", "y"], "avg_at_n": [0.5, 0.3]})]}
    t2 = tables.table02_benchmarks(Inputs(summaries=summaries, labels={"a": "GRPO"}, benchmark_names=NAMES))
    assert list(t2.columns) == ["x (AIME 2024)", "y", "Avg."] and t2.loc["GRPO", "Avg."] == pytest.approx(40.0)
    csv, md = tables.write(t2, tmp_path / "table02", "Caption here.")
    assert pd.read_csv(csv, index_col=0).loc["GRPO", "y"] == pytest.approx(30.0)
    assert md.read_text().startswith("Caption here.\n\n| Method")


def test_table02_cells_are_the_mean_over_replicates_with_their_standard_error():
    def summary(x, y):
        return pd.DataFrame({"benchmark": ["x", "y"], "avg_at_n": [x, y]})

    summaries = {"a": [summary(0.5, 0.3), summary(0.7, 0.1), summary(0.6, 0.2)], "b": [summary(0.2, 0.2)] * 3}
    t2 = tables.table02_benchmarks(
        Inputs(summaries=summaries, labels={"a": "GRPO", "b": "KL-Cov"}, benchmark_names=NAMES)
    )
    assert list(t2.columns) == ["x (AIME 2024)", "x (AIME 2024) s.e.", "y", "y s.e.", "Avg.", "Avg. s.e."]
    assert t2.loc["GRPO", "x (AIME 2024)"] == pytest.approx(60.0) and t2.loc[
        "GRPO", "x (AIME 2024) s.e."
    ] == pytest.approx(10 / 3**0.5)
    assert t2.loc["GRPO", "Avg."] == pytest.approx(40.0) and t2.loc["GRPO", "Avg. s.e."] == pytest.approx(0.0)
    assert t2.loc["KL-Cov", "y s.e."] == 0.0
    with pytest.raises(ValueError, match="differ in their number of replicates"):
        tables.table02_benchmarks(Inputs(summaries={"a": summaries["a"], "b": summaries["b"][:1]}))
