"""The analysis image built for real (benchmarks/analysis_root.py): its record stands for today's definition and lock,
or the build runs now. The record is keyed (tests/support/analysis_record.py) by the image's digest (definition and
lock), the definition's %test and the build script, so CI builds the image again exactly when one of them changes; a
build already made for a key is kept in the user's cache. The Apptainer stand-in the build uses refuses what it does
not emulate."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support import ROOT, analysis_record
from support.analysis_record import SCRIPT, STAND_IN

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "entropy-rl" / "analysis-root"


def check(record: dict, key: str) -> None:
    """What a build that passed recorded: %test's versions, every job in the image, every output."""
    assert record["key"] == key
    assert record["test_output"].startswith("torch 2.13.0+cpu transformers ")
    jobs = record["jobs_in_image"]
    assert len(jobs) == 4 and all(j["exit"] == 0 for j in jobs), jobs
    assert {j["command"].rsplit(".", 2)[-2] for j in jobs} == {"fit_run", "figure", "table"}
    made = record["outputs_made_in_image"]
    assert len(made["made"]) == made["wanted"] == 7 and all(size > 0 for size in made["made"].values())
    assert all(f.startswith("/opt/venv/") for m, f in made["imported_from"].items() if m != "entropy_rl")
    assert made["imported_from"]["entropy_rl"].startswith("/mnt/snakemake_searchpaths/")


@pytest.mark.costly
def test_the_analysis_image_build_stands_for_its_definition_and_lock(tmp_path):
    key = analysis_record.key()
    committed = json.loads(analysis_record.RECORD.read_text())
    if committed["key"] == key:
        check(committed, key)
        return
    cached = CACHE / f"{key}.json"
    if cached.exists():
        check(json.loads(cached.read_text()), key)
        return
    if os.geteuid() != 0 or not shutil.which("mmdebstrap"):
        message = (
            "containers/analysis.def or envs/mini.txt changed since benchmarks/analysis_root.json was made: "
            "run `python benchmarks/analysis_root.py` as root and commit its record"
        )
        if os.environ.get("CI"):
            pytest.fail(message + " (CI needs root and mmdebstrap to build it)")
        pytest.skip(message)
    record = tmp_path / "record.json"
    proc = subprocess.run(
        ["python", str(SCRIPT), "--root", str(tmp_path / "root"), "--record", str(record)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    check(json.loads(record.read_text()), key)
    CACHE.mkdir(parents=True, exist_ok=True)
    shutil.copy(record, cached)
    print(f"analysis image built for key {key[:12]}; commit {record} as benchmarks/analysis_root.json")


def test_the_record_key_follows_the_definition_the_lock_and_the_build(tmp_path):
    key = analysis_record.key()
    copy = tmp_path / "analysis.def"
    copy.write_text(analysis_record.DEFINITION.read_text().replace("%test\n", "%test\n    true\n"))
    assert analysis_record.key(copy) != key  # %test is not in the image digest, but is in the key


@pytest.mark.parametrize(
    "args, refusal",
    [
        (["exec", "--nv", "/nowhere", "true"], "option --nv is not supported"),
        (["build", "x.sif", "x.def"], "only `exec` and `--version` are supported"),
        (["exec", "/nowhere", "true"], "/nowhere is not a sandbox directory"),
    ],
)
def test_the_apptainer_stand_in_refuses_what_it_does_not_emulate(args, refusal):
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("the stand-in runs as root with unshare")
    proc = subprocess.run([str(STAND_IN), *args], capture_output=True, text=True, check=False)
    assert proc.returncode != 0 and refusal in proc.stderr
    assert subprocess.run([str(STAND_IN), "--version"], capture_output=True, text=True, check=True).stdout.startswith(
        "apptainer version 1."
    )
