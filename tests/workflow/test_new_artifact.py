"""A new figure is one change in one place: a function with its decorator, and (for a paper figure) its runs in
config.yaml. In a copy of the workflow, adding one such function makes its rule, its inputs, its outputs and its
code stamp, and the config's schema accepts its name; a name no function registers is refused."""

import os
import shutil
import subprocess
import sys

import yaml
from support import ROOT

FIGURE = '''

@artifact("figure", "Figure 99", "Entropy against the step, once more.")
def fig99_entropy_again(d: Inputs, stem) -> tuple[Path, Path]:
    """A figure added by a test: one function, registered, and nothing else in the package."""
    return step_curves(d, stem, "fig99", ("entropy",), "Entropy again")
'''


def snakemake(wf, *args):
    env = {**os.environ, "PYTHONPATH": str(wf / "workflow")}  # the copy's package, not the checkout's
    cmd = [sys.executable, "-m", "snakemake", "-s", str(wf / "Snakefile"), "-d", str(wf), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)


def test_a_new_figure_is_its_function_and_its_runs(tmp_path):
    wf = tmp_path / "wf"
    wf.mkdir()
    for name in ("Snakefile", "claims.yaml", "config.yaml", "containers", "envs", "workflow"):
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy2
        copy(
            ROOT / name,
            wf / name,
            **({"ignore": shutil.ignore_patterns("__pycache__", "*.egg-info")} if copy is shutil.copytree else {}),
        )
    config = wf / "config.yaml"
    cfg = yaml.safe_load(config.read_text())
    cfg["mini"]["artifacts"]["fig99_entropy_again"] = {"runs": ["qwen2-m-grpo"]}
    config.write_text(yaml.safe_dump(cfg, sort_keys=False))
    refused = snakemake(wf, "-n", "fig99_entropy_again")  # its runs configured, its function not yet written
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "'fig99_entropy_again' is not allowed" in said, said[-2000:]

    control = wf / "workflow" / "entropy_rl" / "study" / "figures" / "control.py"
    control.write_text(control.read_text() + FIGURE)
    plan = snakemake(wf, "-n", "fig99_entropy_again")
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert "rule fig99_entropy_again:" in plan.stdout
    assert "output: results/figures/fig99_entropy_again.pdf, results/figures/fig99_entropy_again.png" in plan.stdout
    assert "results/code/fig99_entropy_again.json" in plan.stdout  # its own code stamp
    assert "results/runs/qwen2-m-grpo/metrics.parquet" in plan.stdout  # the runs configured, and only those
    assert "qwen2-m-clipcov" not in plan.stdout
