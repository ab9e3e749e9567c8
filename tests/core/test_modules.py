"""Code inputs and fingerprints come from a module's import closure, named by module."""

import json
import sys

import pytest
from entropy_rl import PACKAGE_DIR
from entropy_rl.core import modules


def test_closure_follows_imports_across_layers_lazy_ones_included():
    trainer = modules.closure("entropy_rl.mini.trainer")
    # direct (algorithms), through another module (generation via evaluate), across a layer (core.reward)
    assert {
        "entropy_rl.mini.trainer",
        "entropy_rl.mini.algorithms",
        "entropy_rl.mini.generation",
        "entropy_rl.core.reward",
    } <= set(trainer)
    assert "entropy_rl.core.confined.sandbox" in trainer  # reward -> sandbox, two steps away
    assert not any(m.startswith(("entropy_rl.paper", "entropy_rl.study")) for m in trainer)
    # preflight imports prime_check inside a function: still part of what the check runs
    from entropy_rl.paper import preflight

    assert "entropy_rl.paper.verl.prime_check" in preflight.LAUNCH_CODE


def test_plumbing_and_package_inits_are_left_out():
    closure = modules.closure("entropy_rl.mini.trainer")
    assert not set(closure) & modules.PLUMBING  # resume, logs, atomic write: no effect on what a job computes
    assert not any(m.endswith("__init__") or m in ("entropy_rl", "entropy_rl.core") for m in closure)


def test_files_are_the_modules_sources_found_without_importing_them():
    before = set(sys.modules)
    paths = modules.files("entropy_rl.paper.verl_plugin")
    assert str(PACKAGE_DIR / "paper" / "verl_plugin.py") in paths
    assert not {m for m in set(sys.modules) - before if m.startswith(("verl", "torch"))}  # read, not imported


@pytest.fixture(autouse=True)
def fresh_caches():
    """The tests below point the module reader at a throwaway package: no cached reading outlives them."""
    yield
    modules.clear_caches()


def package(tmp_path, monkeypatch, files: dict[str, str]):
    """A throwaway copy of this package's layout: ``modules`` reads ``entropy_rl`` from PACKAGE_DIR."""
    root = tmp_path / "entropy_rl"
    for rel, text in {"__init__.py": "", "core/__init__.py": "", "paper/__init__.py": "", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    monkeypatch.setattr(modules, "PACKAGE_DIR", root)
    modules.clear_caches()
    return root


def test_behaviour_hash_ignores_comments_docstrings_and_moves_but_not_code(tmp_path, monkeypatch):
    root = package(
        tmp_path,
        monkeypatch,
        {
            "core/util.py": "def f(x):\n    return x + 1\n",
            "paper/job.py": "from ..core import util\n\ndef g():\n    return util.f(1)\n",
        },
    )
    before = modules.behaviour_hash("entropy_rl.paper.job")
    (root / "core/util.py").write_text(
        '"""Docs."""\n\n\ndef f(x):  # a comment\n    """More docs."""\n    return x + 1\n'
    )
    assert modules.behaviour_hash("entropy_rl.paper.job") == before
    (root / "core/util.py").rename(root / "paper/util.py")  # moved, its importer updated
    (root / "paper/job.py").write_text("from . import util\n\ndef g():\n    return util.f(1)\n")
    modules.clear_caches()  # as a new process would read it
    assert modules.behaviour_hash("entropy_rl.paper.job") == before
    (root / "paper/util.py").write_text("def f(x):\n    return x + 2\n")  # a change two modules away
    assert modules.behaviour_hash("entropy_rl.paper.job") != before


def test_a_module_that_reads_its_own_name_is_hashed_with_it(tmp_path, monkeypatch):
    root = package(
        tmp_path,
        monkeypatch,
        {
            "core/a.py": "NAME = __name__\n",
            "core/b.py": "NAME = __name__\n",
            "core/c.py": "X = 1\n",
            "core/d.py": "X = 1\n",
        },
    )
    assert modules.behaviour_hash("entropy_rl.core.a") != modules.behaviour_hash("entropy_rl.core.b")
    assert modules.behaviour_hash("entropy_rl.core.c") == modules.behaviour_hash("entropy_rl.core.d")
    assert root


def test_a_stamp_is_rewritten_only_when_behaviour_changes_and_names_the_change(tmp_path, monkeypatch):
    import os

    root = package(
        tmp_path, monkeypatch, {"core/util.py": "X = 1\n", "paper/job.py": "from ..core import util\nY = util.X\n"}
    )
    stamp = tmp_path / "results" / "code" / "job.json"
    os.utime(root / "paper/job.py", (1_000_000, 1_000_000))
    os.utime(root / "core/util.py", (2_000_000, 2_000_000))
    modules.stamp(stamp, "entropy_rl.paper.job")
    assert stamp.stat().st_mtime == 2_000_000  # a new stamp: its sources' latest time, so it outdates nothing new
    text = stamp.read_text()
    (root / "core/util.py").write_text("X = 1  # why\n")
    modules.stamp(stamp, "entropy_rl.paper.job")
    assert stamp.stat().st_mtime == 2_000_000 and stamp.read_text() == text
    (root / "core/util.py").write_text("X = 2\n")
    modules.stamp(stamp, "entropy_rl.paper.job")
    assert stamp.stat().st_mtime > 2_000_000 and stamp.read_text() != text
    assert modules.changed_modules(stamp) == ["entropy_rl.core.util"]  # the origin, not its importer
    (root / "core/util.py").write_text("X = 1\n")
    modules.stamp(stamp, "entropy_rl.paper.job")
    assert stamp.read_text() == text  # changed back: the text Snakemake recorded (its checksum matches again)
    # Then a module moved: the stamp, newer now than the outputs made before the change, must not change (its new
    # text's checksum would not be the recorded one); only its record of names does.
    changed_back = stamp.stat().st_mtime
    (root / "core/util.py").rename(root / "paper/util.py")
    (root / "paper/job.py").write_text("from . import util\nY = util.X\n")
    modules.clear_caches()
    modules.stamp(stamp, "entropy_rl.paper.job")
    assert stamp.read_text() == text and stamp.stat().st_mtime == changed_back
    assert set(json.loads(modules.record_path(stamp).read_text())["modules"]) == {
        "entropy_rl.paper.job",
        "entropy_rl.paper.util",
    }


def test_a_stamp_of_a_package_changes_with_the_modules_its_init_imports(tmp_path, monkeypatch):
    """A rule may name a package its script imports whole (the audit: ``study.audit``): the stamp follows what the
    package's ``__init__`` imports, a comment there changing nothing."""
    root = package(
        tmp_path,
        monkeypatch,
        {
            "paper/audit/__init__.py": "from .measure import f\n",
            "paper/audit/measure.py": "from ..util import g\n\ndef f():\n    return g()\n",
            "paper/util.py": "def g():\n    return 1\n",
        },
    )
    stamp = tmp_path / "results" / "code" / "audit.json"
    modules.stamp(stamp, "entropy_rl.paper.audit")
    text = stamp.read_text()
    (root / "paper/util.py").write_text("def g():\n    return 1  # why\n")
    assert modules.stamp(stamp, "entropy_rl.paper.audit") and stamp.read_text() == text
    (root / "paper/util.py").write_text("def g():\n    return 2\n")  # two modules below the package
    modules.stamp(stamp, "entropy_rl.paper.audit")
    assert stamp.read_text() != text and modules.changed_modules(stamp) == ["entropy_rl.paper.util"]
    (root / "paper/audit/__init__.py").write_text("from .measure import f\n\nLIMIT = 3\n")  # the __init__ alone
    modules.stamp(stamp, "entropy_rl.paper.audit")
    assert modules.changed_modules(stamp) == ["entropy_rl.paper.audit"]  # its record names the package


def every_module() -> list[str]:
    return sorted(
        f"entropy_rl.{p.relative_to(PACKAGE_DIR).with_suffix('').as_posix().replace('/', '.')}"
        for p in PACKAGE_DIR.rglob("*.py")
        if p.name != "__init__.py"
    )


def test_the_disk_cache_gives_the_hashes_a_fresh_parse_gives(tmp_path, monkeypatch):
    """Every module of the package: its closure's hashes read through a cold cache, a warm one (a later process),
    and one whose entries are corrupt or truncated are the hashes of a parse with no cache at all."""
    fresh = {m: modules.closure_hashes(m) for m in every_module()}
    monkeypatch.setattr(modules, "CACHE_DIR", tmp_path / "cache")
    for state in ("cold", "warm", "corrupt"):
        modules.clear_caches()
        if state == "corrupt":
            entries = sorted((tmp_path / "cache").glob("*.json"))
            assert len(entries) > 3  # one a module read (plumbing is read by none)
            entries[0].write_text("{not json")
            entries[1].write_text('{"text": "X", "refs": ["entropy_rl.core.spec"]}')  # a placeholder it lacks
            entries[2].write_text(entries[2].read_text()[:-40])
        assert {m: modules.closure_hashes(m) for m in every_module()} == fresh, state


def test_an_edit_changes_a_cached_hash_and_an_undo_restores_it(tmp_path, monkeypatch):
    root = package(
        tmp_path,
        monkeypatch,
        {
            "core/util.py": "def f(x):\n    return x + 1\n",
            "paper/job.py": "from ..core import util\n\ndef g():\n    return util.f(1)\n",
        },
    )
    monkeypatch.setattr(modules, "CACHE_DIR", tmp_path / "cache")
    before = modules.behaviour_hashes("entropy_rl.paper.job", "entropy_rl.core.util")
    (root / "core/util.py").write_text("def f(x):\n    return x + 2\n")
    edited = modules.behaviour_hashes("entropy_rl.paper.job", "entropy_rl.core.util")
    assert all(edited[m] != before[m] for m in before)  # the module and its importer, in the same process
    (root / "core/util.py").write_text("def f(x):\n    return x + 1\n")
    modules.clear_caches()  # a later process, reading the disk cache
    assert modules.behaviour_hashes("entropy_rl.paper.job", "entropy_rl.core.util") == before
