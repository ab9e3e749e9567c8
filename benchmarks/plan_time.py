"""How long a `snakemake` call takes before any job runs: the Snakefile's parse, the mini plan, the mini no-op on
complete results, and the paper plan, first (with the launch preflight of every run) and again (preflight remembered).

Each is timed in a fresh directory holding the checkout's config.yaml, as a new user's first call would be, and
printed beside issue 40's target. Beside the parse, Snakemake's own start (a one-rule Snakefile's --list-rules: its
imports and plugins, which no workflow change touches) and the Snakefile's share above it; beside the first paper
plan, the launch preflight's share, as the plan prints it (pipeline.estimate.check_launches). Run from the repository
root, with nothing else running (minutes of one core):

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
sys.path[:0] = [str(ROOT / "workflow"), str(ROOT / "tests")]
from support import make_planned_outputs  # (the tests' helper: the same complete result set)


def snakemake(workflow: Path, work: Path, *args: str, snakefile: Path | None = None) -> tuple[float, str]:
    """One call's wall time, and what it printed to stderr."""
    env = {
        **os.environ,
        "PYTHONPATH": str(workflow / "workflow"),
        "HF_TOKEN": os.environ.get("HF_TOKEN", "hf_not_used"),
    }
    cmd = [sys.executable, "-m", "snakemake", "-s", str(snakefile or workflow / "Snakefile"), "-d", str(work), *args]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - started
    if proc.returncode:
        sys.exit(f"{' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return seconds, proc.stderr


def fresh(workflow: Path) -> Path:
    work = Path(tempfile.mkdtemp(prefix="plan-time-"))
    shutil.copy(workflow / "config.yaml", work / "config.yaml")
    return work


def complete(workflow: Path, work: Path) -> None:
    """Every output of the mini DAG as an empty file or directory, made up to date (as the paid-work tests do)."""
    env = {**os.environ, "PYTHONPATH": str(workflow / "workflow")}
    plan = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(workflow / "Snakefile"), "-d", str(work), "-n", "--cores", "2"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    make_planned_outputs(plan.stdout, work)
    snakemake(workflow, work, "--touch", "--forceall", "--cores", "2")


def preflight_seconds(stderr: str) -> str:
    found = re.search(r"^preflight: \d+ run\(s\) to train .* \(([\d.]+) s\)$", stderr, re.MULTILINE)
    return f"{found.group(1)} s" if found else "not printed by this checkout"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workflow", type=Path, default=ROOT)
    parser.add_argument("--repeat", type=int, default=2, help="timings of each kind; the best is printed")
    args = parser.parse_args()
    wf = args.workflow.resolve()

    def best(label: str, target: str, call, snakefile=None) -> tuple[float, str]:
        """The fastest of --repeat calls; ``call()`` gives each one's work directory and arguments (a fresh one each)."""
        seconds, stderr = min(
            (snakemake(wf, *call(), snakefile=snakefile) for _ in range(args.repeat)), key=lambda r: r[0]
        )
        print(f"{label:55s} {seconds:6.1f} s   (target {target})", flush=True)
        return seconds, stderr

    one_rule = Path(tempfile.mkdtemp(prefix="plan-time-one-rule-"))
    (one_rule / "Snakefile").write_text('rule one:\n    output: "one"\n    shell: "touch {output}"\n')
    floor, _ = best(
        "Snakemake's own start (a one-rule Snakefile)",
        "-",
        lambda: (one_rule, "--list-rules"),
        snakefile=one_rule / "Snakefile",
    )
    work = fresh(wf)
    parse, _ = best("the Snakefile's parse (snakemake --list-rules)", "1 s", lambda: (work, "--list-rules"))
    above = "  the Snakefile, above Snakemake's own start"
    print(f"{above:55s} {parse - floor:6.1f} s")
    best("mini plan, first in a new directory", "-", lambda: (fresh(wf), "-n", "--cores", "2"))
    complete(wf, work)
    best("mini no-op on complete results", "2 s", lambda: (work, "--cores", "2"))
    _, stderr = best(
        "paper plan, first (launch preflight of every run)",
        "60 s",
        lambda: (fresh(wf), "--config", "scale=paper", "-n", "all"),
    )
    print(f"{'  of which the launch preflight':55s} {preflight_seconds(stderr):>8s}")
    paper = fresh(wf)
    snakemake(wf, paper, "--config", "scale=paper", "-n", "all")
    best("paper plan, preflight remembered", "4 s", lambda: (paper, "--config", "scale=paper", "-n", "all"))


if __name__ == "__main__":
    main()
