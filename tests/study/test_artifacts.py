"""The paper's artifacts registry: one entry per name (a rule, a function and an output stem)."""

import pytest
from entropy_rl.study import artifacts


def test_a_name_registered_twice_is_refused_and_the_first_entry_kept():
    first = artifacts.ARTIFACTS["fig01_entropy_collapse"]
    other = artifacts.Artifact("figure", "Figure 99", "Something else.")
    with pytest.raises(ValueError, match="artifact 'fig01_entropy_collapse' is registered twice"):
        artifacts.register("fig01_entropy_collapse", other)
    assert artifacts.ARTIFACTS["fig01_entropy_collapse"] is first


def test_a_new_name_is_registered(monkeypatch):
    monkeypatch.setattr(artifacts, "ARTIFACTS", dict(artifacts.ARTIFACTS))
    entry = artifacts.Artifact("table", "Table 9", "A new table.", ("eval",))
    assert artifacts.register("table09_new", entry) is entry
    assert artifacts.ARTIFACTS["table09_new"] is entry
    assert artifacts.output_files("table09_new") == ["results/tables/table09_new.csv", "results/tables/table09_new.md"]
    with pytest.raises(ValueError, match="registered twice"):
        artifacts.register("table09_new", entry)


def test_every_artifact_is_a_figure_or_a_table():
    assert set(artifacts.FIGURES) | set(artifacts.TABLES) == set(artifacts.ARTIFACTS)
    assert not set(artifacts.FIGURES) & set(artifacts.TABLES)
    assert len(artifacts.ARTIFACTS) == 18


def test_a_rules_files_are_read_back_by_run_and_replicate():
    replicates = {"b": ["b", "b@r1"], "a": ["a", "a@r1"]}
    files = ["b.parquet", "b@r1.parquet", "a.parquet", "a@r1.parquet"]
    assert artifacts.by_replicate(replicates, files) == {"b": files[:2], "a": files[2:]}
    with pytest.raises(ValueError, match="3 files for 4 replicates"):
        artifacts.by_replicate(replicates, files[:3])
