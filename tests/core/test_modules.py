"""Code inputs and fingerprints come from a module's import closure, named by module."""

import sys

from entropy_rl import PACKAGE_DIR
from entropy_rl.core import modules


def test_closure_follows_imports_across_layers_lazy_ones_included():
    trainer = modules.closure("entropy_rl.mini.trainer")
    # direct (algorithms), through another module (generation via evaluate), across a layer (core.reward)
    assert {"entropy_rl.mini.trainer", "entropy_rl.mini.algorithms", "entropy_rl.mini.generation", "entropy_rl.core.reward"} <= set(trainer)
    assert "entropy_rl.core.sandbox" in trainer  # reward -> sandbox, two steps away
    assert not any(m.startswith(("entropy_rl.paper", "entropy_rl.study")) for m in trainer)
    # preflight imports prime_check inside a function: still part of what the check runs
    from entropy_rl.paper import preflight

    assert "entropy_rl.paper.prime_check" in preflight.LAUNCH_CODE


def test_plumbing_and_package_inits_are_left_out():
    closure = modules.closure("entropy_rl.mini.trainer")
    assert not set(closure) & modules.PLUMBING  # resume, logs, atomic write: no effect on what a job computes
    assert not any(m.endswith("__init__") or m in ("entropy_rl", "entropy_rl.core") for m in closure)


def test_files_are_the_modules_sources_found_without_importing_them():
    before = set(sys.modules)
    paths = modules.files("entropy_rl.paper.verl_plugin")
    assert str(PACKAGE_DIR / "paper" / "verl_plugin.py") in paths
    assert not {m for m in set(sys.modules) - before if m.startswith(("verl", "torch"))}  # read, not imported
