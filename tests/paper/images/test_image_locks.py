"""Each image's lock (envs/<stem>.txt) is what its own Python and platform resolve (entropy_rl.paper.images.locks):
resolved again from PyPI by uv for the image's CPython and glibc, wheels only but for the stated source builds.
These tests ask the package registry (a few seconds a lock, uv's cache warm)."""

import importlib.metadata
import os
import re
import subprocess
import sys
from dataclasses import replace

import pytest
from entropy_rl.paper.images import locks as image_locks
from support import ROOT


@pytest.mark.parametrize("name", list(image_locks.LOCKS))
def test_each_lock_is_complete_and_consistent_for_its_images_python_and_platform(name):
    assert image_locks.check(name) == []


def lock_without(stem: str, package: str, tmp_path):
    """The lock with one entry (its name==version line and the hash lines under it) left out."""
    kept, skipping = [], False
    for line in (ROOT / "envs" / f"{stem}.txt").read_text().splitlines(keepends=True):
        if re.match(r"^[^\s#]", line):
            skipping = line.startswith(f"{package}==")
        if not skipping:
            kept.append(line)
    path = tmp_path / f"{stem}.txt"
    path.write_text("".join(kept))
    return path


def test_the_analysis_lock_as_it_was_fails_on_the_setuptools_torch_requires(tmp_path):
    """Before the fix envs/mini.txt had no setuptools: torch 2.13.0 requires setuptools>=77.0.3, the image's venv
    keeps ensurepip's 65.5.0, and `pip check` in %post stopped the build."""
    problems = image_locks.check("analysis", lock_path=lock_without("mini", "setuptools", tmp_path))
    assert len(problems) == 1 and problems[0].startswith("incomplete: a locked distribution requires setuptools")


def test_a_pin_without_a_wheel_for_the_image_fails_unless_it_is_a_stated_source_build(monkeypatch):
    lock = image_locks.LOCKS["analysis"]
    monkeypatch.setitem(image_locks.LOCKS, "analysis", replace(lock, source_builds={}))
    (problem,) = image_locks.check("analysis")
    assert (
        re.search(
            r"(antlr4-python3-runtime|cellpylib|connection-pool|pycosat|zss|pylatexenc)==\S+ has no usable "
            r"wheels",
            problem,
        )
        and "CPython 3.11" in problem
    ), problem


def test_a_stated_source_build_that_is_not_pinned_is_named(monkeypatch):
    lock = image_locks.LOCKS["analysis"]
    monkeypatch.setitem(image_locks.LOCKS, "analysis", replace(lock, source_builds={**lock.source_builds, "x": "-"}))
    assert image_locks.check("analysis") == ["x is listed as a source build but not pinned"]


def entries(stem: str) -> dict[str, str]:
    """A lock's entries by name: the name==version line with its hashes."""
    text = (ROOT / "envs" / f"{stem}.txt").read_text()
    found = re.findall(r"^([^\s#][^\n]*)((?:\n {4}--hash=\S+(?: \\)?)+)", text, re.MULTILINE)
    return {line.split("==")[0]: line.split()[0] + "".join(sorted(re.findall(r"sha256:\w+", h))) for line, h in found}


def test_every_pin_is_hashed_and_the_tests_lock_keeps_the_analysis_images_pins():
    """The test environment is the analysis image's packages, the same files by hash, and the test tools."""
    for lock in image_locks.LOCKS.values():
        text = lock.path().read_text()
        assert len(entries(lock.stem)) == len(image_locks.pins(text)) > 100, lock.stem  # every pin has its hashes
    image, tests = entries("mini"), entries("tests")
    assert {name: tests.get(name) for name in image} == image
    assert {"pytest", "pytest-xdist", "uv"} <= set(tests) - set(image)


@pytest.mark.parametrize("name", [n for n in image_locks.LOCKS if n != "tests"])
def test_each_image_copies_in_its_lock_and_installs_it_by_hash_with_its_python(name):
    lock = image_locks.LOCKS[name]
    definition = (ROOT / "containers" / f"{name}.def").read_text()
    assert f"envs/{lock.stem}.txt /opt/entropy-rl/envs/{lock.stem}.txt" in definition
    installs = re.findall(r"pip install [^\n]*(?:\\\n[^\n]*)*", definition)
    assert installs and all("--no-deps --require-hashes" in cmd for cmd in installs), installs
    assert "/opt/venv/bin/pip check" in definition
    venv = re.search(r"(python[\d.]*) -m venv /opt/venv", definition).group(1)
    if venv == "python":  # the base image's own Python (python:3.11-slim-bookworm)
        assert f"Python {lock.python}." in definition
    else:
        assert venv == f"python{lock.python}"


def test_the_registry_refuses_a_second_lock_of_one_name():
    with pytest.raises(ValueError, match="registered twice"):
        image_locks.register(image_locks.LOCKS["eval"])


@pytest.mark.parametrize("name", [n for n, lock in image_locks.LOCKS.items() if lock.prebuilt])
def test_a_prebuilt_wheel_is_the_locked_release_for_the_images_python(name, tmp_path, monkeypatch):
    """flash-attn's wheel by URL and hash (envs/<stem>-wheels.txt), in place of its source build, with the lock's
    release as the fallback; one for another Python is named."""
    lock = image_locks.LOCKS[name]
    pinned = image_locks.pins(lock.path().read_text())
    ((package, url, digest),) = image_locks.prebuilt_wheels(lock.wheels().read_text())
    assert package == "flash-attn" and url.startswith("https://github.com/") and len(digest) == 64
    assert image_locks.wheel_problems(lock, pinned) == []
    definition = (ROOT / "containers" / f"{name}.def").read_text()
    assert f"pip install --no-deps --require-hashes -r /opt/entropy-rl/envs/{lock.stem}-wheels.txt; then" in definition
    assert "FLASH_ATTENTION_FORCE_BUILD=TRUE" in definition  # the fallback
    other = tmp_path / "envs"
    other.mkdir()
    (other / lock.wheels().name).write_text(lock.wheels().read_text().replace("-cp3", "-cp2"))
    assert any("not a wheel for CPython" in p for p in image_locks.wheel_problems(lock, pinned, tmp_path))


def test_snakemake_plans_with_the_analysis_locks_packages_alone(tmp_path):
    """README's step 1 installs envs/mini.txt alone (the test environment has more: envs/tests.txt). Every distribution
    Snakemake's own process imports to plan, at both scales, the paper plan's launch preflight included, is pinned
    there: the Snakefile's image references need spython, the preflight verl's trainer and what it imports."""
    (tmp_path / "config.yaml").write_text((ROOT / "config.yaml").read_text())
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow"), "HF_TOKEN": "hf_test_token_not_real"}
    imported = set()
    for args in (["-n", "--cores", "2"], ["--config", "scale=paper", "-n", "all"]):
        cmd = [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "snakemake",
            "-s",
            str(ROOT / "Snakefile"),
            "-d",
            str(tmp_path),
        ]
        proc = subprocess.run([*cmd, *args], capture_output=True, text=True, env=env, check=False)
        assert proc.returncode == 0, proc.stderr[-3000:]
        imported |= set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\w+)", proc.stderr, re.MULTILINE))
    assert {"snakemake", "spython", "verl", "transfer_queue"} <= imported  # the plan and the preflight both measured
    owners = importlib.metadata.packages_distributions()
    needed = {image_locks.normalize(d) for module in imported for d in owners.get(module, [])}
    # Of the test environment's lock: a distribution in none (CI's run found colorama, imported only where present)
    # cannot be in the README's install either, and the plan ran without it there.
    needed &= set(image_locks.pins((ROOT / "envs" / "tests.txt").read_text()))
    locked = set(image_locks.pins((ROOT / "envs" / "mini.txt").read_text()))
    assert needed - locked == set()
