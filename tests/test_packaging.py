"""The package as ``pip install .`` installs it (not editable): every module of the source tree is in the installed
copy, and the console script runs from outside the checkout. An editable install (the development setup) reads the
source tree itself, so it cannot show a package that pyproject.toml leaves out."""

import os
import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

from support import ROOT

SOURCE = ROOT / "workflow" / "entropy_rl"


def modules_under(package: Path) -> set[str]:
    """The package's Python files, relative to its parent (``entropy_rl/core/modules.py``), bytecode left out."""
    return {p.relative_to(package.parent).as_posix() for p in package.rglob("*.py") if "__pycache__" not in p.parts}


def fresh_venv(where: Path) -> Path:
    """A new virtual environment that sees this interpreter's packages (the dependencies: nothing is downloaded) but
    not this checkout: a path added by a .pth line is not scanned for .pth files, so an editable install's stays out.
    Returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib"), *site.getsitepackages()])
    Path(purelib, "outer-site-packages.pth").write_text("".join(f"{p}\n" for p in ours if Path(p).is_dir()))
    return python


def test_a_plain_install_holds_every_module_and_runs_fit_law(tmp_path):
    source = tmp_path / "source"  # a copy: pip builds in the tree it is given, and the checkout stays clean
    shutil.copytree(SOURCE, source / "workflow" / "entropy_rl", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", source)
    python = fresh_venv(tmp_path / "venv")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV"))}
    env |= {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PATH": f"{python.parent}{os.pathsep}{env.get('PATH', '')}"}
    install = [python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "--quiet", source]
    proc = subprocess.run(install, cwd=outside, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    where = subprocess.run(
        [python, "-c", "import entropy_rl; print(entropy_rl.PACKAGE_DIR)"],
        cwd=outside,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    installed = Path(where)
    assert installed.is_relative_to(tmp_path / "venv"), f"entropy_rl came from {installed}, not the install"
    missing = sorted(modules_under(SOURCE) - modules_under(installed))
    assert not missing, f"left out of the installed package: {missing}"

    help_ = subprocess.run([python.parent / "fit-law", "--help"], cwd=outside, env=env, capture_output=True, text=True)
    assert help_.returncode == 0, help_.stderr[-3000:]
    assert "usage: fit-law" in help_.stdout
