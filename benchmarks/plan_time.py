"""How long a `snakemake` call takes before any job runs: the Snakefile's parse, the mini plan, the mini no-op on
complete results, and the paper plan, first (with the launch preflight of every run) and again (preflight remembered).

Each is timed in a fresh directory holding the checkout's config.yaml, as a new user's first call would be, and
printed beside issue 40's target. Run from the repository root, with nothing else running (minutes of one core):

    python benchmarks/plan_time.py [--workflow CHECKOUT] [--repeat 2]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = {".parquet", ".txt", ".json", ".csv", ".md", ".html", ".pdf", ".png"}  # the DAG's other outputs are directories


def snakemake(workflow: Path, work: Path, *args: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(workflow / "workflow"), "HF_TOKEN": os.environ.get("HF_TOKEN", "hf_not_used")}
    cmd = [sys.executable, "-m", "snakemake", "-s", str(workflow / "Snakefile"), "-d", str(work), *args]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if proc.returncode:
        sys.exit(f"{' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return seconds


def fresh(workflow: Path) -> Path:
    work = Path(tempfile.mkdtemp(prefix="plan-time-"))
    shutil.copy(workflow / "config.yaml", work / "config.yaml")
    return work


def complete(workflow: Path, work: Path) -> None:
    """Every output of the mini DAG as an empty file or directory, made up to date (as rerun_cost.py does)."""
    env = {**os.environ, "PYTHONPATH": str(workflow / "workflow")}
    plan = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(workflow / "Snakefile"), "-d", str(work), "-n",
                           "--cores", "2"], capture_output=True, text=True, env=env, check=True)  # fmt: skip
    for out in {o for line in re.findall(r"^\s+output: (.*)$", plan.stdout, re.M) for o in line.split(", ")}:
        path = work / out
        if path.suffix in FILES:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
        else:
            path.mkdir(parents=True, exist_ok=True)
    snakemake(workflow, work, "--touch", "--forceall", "--cores", "2")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workflow", type=Path, default=ROOT)
    parser.add_argument("--repeat", type=int, default=2, help="timings of each kind; the best is printed")
    args = parser.parse_args()
    wf = args.workflow.resolve()
    rows = []

    def best(label: str, target: str, measure) -> None:
        seconds = min(measure() for _ in range(args.repeat))
        rows.append((label, seconds, target))
        print(f"{label:55s} {seconds:6.1f} s   (target {target})", flush=True)

    work = fresh(wf)
    best("the Snakefile's parse (snakemake --list-rules)", "1 s", lambda: snakemake(wf, work, "--list-rules"))
    best("mini plan, first in a new directory", "-", lambda: snakemake(wf, fresh(wf), "-n", "--cores", "2"))
    complete(wf, work)
    best("mini no-op on complete results", "2 s", lambda: snakemake(wf, work, "--cores", "2"))
    best("paper plan, first (launch preflight of every run)", "60 s",
         lambda: snakemake(wf, fresh(wf), "--config", "scale=paper", "-n", "all"))
    paper = fresh(wf)
    snakemake(wf, paper, "--config", "scale=paper", "-n", "all")
    best("paper plan, preflight remembered", "4 s", lambda: snakemake(wf, paper, "--config", "scale=paper", "-n", "all"))


if __name__ == "__main__":
    main()
