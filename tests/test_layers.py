"""The package's layers: the pipeline on top; mini, paper and study import only core; core none of them; the
study loads no torch, verl, vLLM, transformers or math-verify (nor its sympy), and neither does the pipeline that
every Snakemake invocation imports. Checked by import-linter on the
contracts in pyproject.toml (every import in a module's text counts, lazy ones included), and by
importing for real."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from support import ROOT

HEAVY = ("torch", "verl", "vllm", "transformers", "math_verify", "sympy")


def lint_imports(package_parent: Path, cwd: Path) -> subprocess.CompletedProcess:
    """import-linter's own command on the contracts in ``cwd/pyproject.toml``, finding the package
    under ``package_parent`` first."""
    lint = Path(sys.executable).with_name("lint-imports")
    env = {"PYTHONPATH": str(package_parent), "PATH": str(lint.parent)}
    return subprocess.run([str(lint), "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True)


def test_the_layer_contracts_hold():
    proc = lint_imports(ROOT / "workflow", ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 kept, 0 broken" in proc.stdout


def test_a_deliberate_violation_breaks_the_contracts(tmp_path):
    """The same check on a copy of the package with four violations: it must name each one."""
    shutil.copytree(
        ROOT / "workflow" / "entropy_rl", tmp_path / "entropy_rl", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    pkg = tmp_path / "entropy_rl"
    (pkg / "study" / "tables.py").write_text(
        (pkg / "study" / "tables.py").read_text() + "\nfrom ..paper import hub  # noqa\n"
    )
    (pkg / "core" / "atomic.py").write_text(
        (pkg / "core" / "atomic.py").read_text() + "\n\ndef f():\n    from ..mini import data  # noqa\n"
    )
    (pkg / "study" / "analysis.py").write_text(
        (pkg / "study" / "analysis.py").read_text() + "\n\ndef g():\n    import torch  # noqa\n"
    )
    (pkg / "paper" / "hub.py").write_text(
        (pkg / "paper" / "hub.py").read_text() + "\n\ndef h():\n    from ..pipeline import scope  # noqa\n"
    )
    (pkg / "pipeline" / "resources.py").write_text(
        (pkg / "pipeline" / "resources.py").read_text() + "\nimport verl  # noqa\n"
    )
    proc = lint_imports(tmp_path, tmp_path)
    assert proc.returncode == 1
    out = " ".join(proc.stdout.split())
    assert "0 kept, 3 broken" in out
    assert "entropy_rl.study.tables -> entropy_rl.paper.hub" in out
    assert "entropy_rl.core.atomic -> entropy_rl.mini.data" in out
    assert "entropy_rl.study.analysis -> torch" in out
    assert "entropy_rl.paper.hub -> entropy_rl.pipeline.scope" in out
    assert "entropy_rl.pipeline.resources -> verl" in out


def loaded_after_import(modules: list[str]) -> list[str]:
    code = (
        "import importlib, json, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        f"print(json.dumps(sorted(h for h in {HEAVY!r} if h in sys.modules)))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "workflow"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return json.loads(proc.stdout.splitlines()[-1])


def test_study_jobs_and_downloads_load_no_torch_verl_or_vllm():
    study = sorted(
        p.relative_to(ROOT / "workflow").with_suffix("").as_posix().replace("/", ".")
        for p in (ROOT / "workflow" / "entropy_rl" / "study").rglob("*.py")
        if p.name != "__init__.py"
    )
    assert "entropy_rl.study.figures.law" in study and "entropy_rl.study.tables" in study
    assert loaded_after_import(study) == []
    # what a download or a source check loads (workflow/scripts/download.py, check_source.py)
    assert loaded_after_import(["entropy_rl.core.logs", "entropy_rl.paper.hub", "entropy_rl.paper.data"]) == []


def test_the_pipeline_every_snakemake_invocation_imports_loads_no_torch_verl_or_vllm():
    pipeline = sorted(
        f"entropy_rl.pipeline.{p.stem}"
        for p in (ROOT / "workflow" / "entropy_rl" / "pipeline").glob("*.py")
        if p.name != "__init__.py"
    )
    assert "entropy_rl.pipeline.guard" in pipeline and "entropy_rl.pipeline.snakemake_api" in pipeline
    assert loaded_after_import(pipeline) == []
