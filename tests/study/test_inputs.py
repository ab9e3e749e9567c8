"""What an artifact's function receives (study.inputs): the rule's files read back run by run and seed by seed."""

import pandas as pd
import pytest
from entropy_rl.study import inputs


def test_a_rules_files_are_read_back_by_run_and_replicate():
    replicates = {"b": ["b", "b@r1"], "a": ["a", "a@r1"]}
    files = ["b.parquet", "b@r1.parquet", "a.parquet", "a@r1.parquet"]
    assert inputs.by_replicate(replicates, files) == {"b": files[:2], "a": files[2:]}
    with pytest.raises(ValueError, match="3 files for 4 replicates"):
        inputs.by_replicate(replicates, files[:3])


def test_load_reads_each_series_in_the_rules_order(tmp_path):
    paths = []
    for name, value in (("b", 1), ("b@r1", 2), ("a", 3)):
        paths.append(str(tmp_path / f"{name}.parquet"))
        pd.DataFrame({"step": [0], "entropy": [value]}).to_parquet(paths[-1])
    params = {"replicates": {"b": ["b", "b@r1"], "a": ["a"]}, "labels": {"a": "A"}, "caption": "C.", "fit_steps": 3}
    loaded = inputs.load({"metrics": paths, "code": ["stamp.json"]}, params)
    assert [[int(f["entropy"][0]) for f in frames] for frames in loaded.metrics.values()] == [[1, 2], [3]]
    assert list(loaded.first) == ["b", "a"] and loaded.fit_steps == 3 and loaded.caption == "C."
    assert loaded.samples == {} and loaded.sizes == {}
