"""The code stamps a plan writes (results/code/*.json, ``core.modules.stamp``) are those of a parse without the
template cache (.snakemake/behaviour-templates), whether the cache is cold, warm or corrupt. The paper plan's stamps
and an edit's effect on them are checked on tests/workflow/test_paid_work.py's copy of the workflow."""

import json
import os
import subprocess
import sys

import pytest
from entropy_rl.core import modules
from support import ROOT, assert_stamps_uncached, code_stamps, stamp_records


def plan_mini(work):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(work), "-n", "--cores", "2"]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]


def stamps(work) -> dict[str, tuple[str, float]]:
    """Each file of results/code (stamps and their records), its text and time, by name."""
    return {
        name: (text, (work / "results" / "code" / name).stat().st_mtime) for name, text in code_stamps(work).items()
    }


def test_the_mini_plans_stamps_are_a_fresh_parses_through_a_cold_warm_or_corrupt_cache(tmp_path, monkeypatch):
    (tmp_path / "config.yaml").write_text((ROOT / "config.yaml").read_text())
    plan_mini(tmp_path)  # cold: every template parsed and written
    cache = sorted((tmp_path / ".snakemake" / "behaviour-templates").glob("*.json"))
    cold = stamps(tmp_path)
    assert len(stamp_records(tmp_path)) >= 20 and cache, (sorted(cold), len(cache))
    assert_stamps_uncached(tmp_path, ROOT / "workflow" / "entropy_rl", monkeypatch)

    plan_mini(tmp_path)  # warm: every template read
    assert stamps(tmp_path) == cold  # the same bytes, and not one rewritten

    texts = [entry.read_text() for entry in cache]
    for i, entry in enumerate(cache):  # corrupt: not JSON, truncated, another text's template (well formed)
        entry.write_text(["{", texts[i][:40], texts[i - 1]][i % 3])
    plan_mini(tmp_path)
    assert stamps(tmp_path) == cold
    assert [entry.read_text() for entry in cache] == texts  # each parsed again and written anew


@pytest.mark.parametrize(
    "entry",
    [
        "[]",
        '{"key": "K", "text": 1, "refs": [], "imports": []}',
        '{"key": "K", "text": "t", "refs": []}',
        '{"text": "t", "refs": [], "imports": []}',
    ],
)
def test_an_entry_of_another_shape_is_parsed_again(tmp_path, monkeypatch, entry):
    """Entries of another shape (one written before templates kept their imports among them) are not trusted."""
    module = "entropy_rl.paper.launch"
    monkeypatch.setattr(modules, "CACHE_DIR", None)
    modules.clear_caches()
    fresh = modules.closure_hashes(module), modules.closure(module)
    monkeypatch.setattr(modules, "CACHE_DIR", tmp_path)
    modules.clear_caches()
    modules.closure_hashes(module)
    for path in tmp_path.glob("*.json"):
        path.write_text(entry.replace('"K"', json.dumps(path.stem)))  # its own key, where the entry has one
    modules.clear_caches()
    try:
        assert (modules.closure_hashes(module), modules.closure(module)) == fresh
        assert all(json.loads(p.read_text()) != json.loads(entry) for p in tmp_path.glob("*.json"))
    finally:
        modules.clear_caches()
