"""What a code change would rerun on a complete result set, and, at paper scale, what the paid-work guard says of it.

Exports two revisions of this repository (``git archive``), builds every output of the paper-scale DAG with the
old one as empty files made up to date by ``snakemake --touch --forceall`` (so each job has the metadata a real run
leaves), then asks the new one: a dry run's jobs by rule, and ``snakemake all`` for real, where the guard
(pipeline.guard.paid_work_guard) stops before submitting if a GPU job would run again, naming its causes and pricing
it. No job runs: outputs are empty, and the guard stops first or the first job fails at once. Run from the
repository root; it takes a few minutes of one core:

    python benchmarks/rerun_cost.py OLD_REV [NEW_REV] [--dir /tmp/rerun-cost] [--apptainer] [--scale mini]

With --scale mini the same is asked of the mini study's DAG (every seed), and only the dry run: the mini scale has no
paid-work guard, and its jobs run here.

With --apptainer both revisions plan as the SLURM profile runs them (--software-deployment-method apptainer), so a
changed image reference counts too (Snakemake's software-env trigger); benchmarks/apptainer_chroot/apptainer answers
Snakemake's version check, and nothing is ever executed in an image.
"""

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "workflow"), str(ROOT / "tests")]
from entropy_rl.core import paths  # noqa: E402
from support import make_planned_outputs  # (the tests' helper: the same complete result set)  # noqa: E402


def export(rev: str, dest: Path) -> None:
    dest.mkdir(parents=True)
    subprocess.run(f"git archive {rev} | tar -x -C {dest}", shell=True, check=True)


def updated(old: str, new: str, src: Path) -> int:
    """Date the files that differ between the revisions now, after the old results were made, as `git pull` or
    `git checkout` does: Snakemake reruns a rule's jobs when its script is newer than their outputs (the code
    trigger reads scripts by date, not content), while an unchanged file keeps the archive's older date."""
    names = subprocess.run(["git", "diff", "--name-only", old, new], capture_output=True, text=True, check=True)
    changed = [src / name for name in names.stdout.split() if (src / name).is_file()]
    for path in changed:
        os.utime(path)
    return len(changed)


APPTAINER: list[str] = []  # --software-deployment-method apptainer, with --apptainer
SCALE = ["paper"]  # --scale


def snakemake(wf: Path, work: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_TOKEN": os.environ.get("HF_TOKEN", "hf_not_used"), "PYTHONPATH": str(wf / "workflow")}
    if APPTAINER:
        env["PATH"] = f"{ROOT / 'benchmarks' / 'apptainer_chroot'}:{env['PATH']}"
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(wf / "Snakefile"),
        "-d",
        str(work),
        "--config",
        f"scale={SCALE[0]}",
        *APPTAINER,
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def old_results(old: Path, work: Path) -> int:
    """Every output of the old revision's paper DAG, empty and up to date; returns the number of jobs."""
    shutil.copy2(old / "config.yaml", work / "config.yaml")
    for run in yaml.safe_load((old / "config.yaml").read_text())["paper"]["runs"] if SCALE[0] == "paper" else ():
        (work / paths.RUN_DIR.format(run=run)).mkdir(parents=True)  # so the plan runs no launch preflight
        (work / paths.RUN_METRICS.format(run=run)).touch()
    plan = snakemake(old, work, "-n", "all")
    if plan.returncode:
        sys.exit(plan.stderr[-3000:])
    jobs = make_planned_outputs(plan.stdout, work)
    touched = snakemake(old, work, "--touch", "--forceall", "--cores", "2", "all")
    if touched.returncode:
        sys.exit(touched.stderr[-3000:])
    return jobs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old")
    parser.add_argument("new", nargs="?", default="HEAD")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/rerun-cost"))
    parser.add_argument("--apptainer", action="store_true", help="plan with the SLURM profile's container method")
    parser.add_argument("--scale", choices=("paper", "mini"), default="paper")
    args = parser.parse_args()
    SCALE[0] = args.scale
    if args.apptainer:
        APPTAINER[:] = ["--software-deployment-method", "apptainer"]
    shutil.rmtree(args.dir, ignore_errors=True)
    # One source path for both revisions, the new one exported where the old one was, as a checkout is updated in
    # place: a path that differs between them (an image reference is relative to the working directory) is not a
    # change of code.
    src, work = args.dir / "src", args.dir / "work"
    export(args.old, src), work.mkdir(parents=True)
    print(f"{args.old}: a complete {args.scale}-scale result set of {old_results(src, work)} jobs")
    shutil.rmtree(src)
    export(args.new, src)
    print(f"{args.new}: {updated(args.old, args.new, src)} files differ, dated now as a checkout's update dates them")
    shutil.copy2(src / "config.yaml", work / "config.yaml")
    dry = snakemake(src, work, "-n", "all")
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", dry.stdout, re.M))
    total = counts.pop("total", "0")
    print(f"{args.new}: {total} jobs would run: {counts}")
    if args.scale == "mini":
        return
    lines = snakemake(src, work, "--cores", "1", "all").stderr.splitlines()
    guard = [line for line in lines if line.startswith("paid work")]
    print(guard[0] if guard else "the paid-work guard lets it through: no GPU job whose outputs exist is outdated")
    jobs = collections.Counter(
        m.group(1) for line in lines if (m := re.match(r"^  (train_verl|evaluate_vllm|power_sample_vllm) ", line))
    )
    if jobs:
        print("GPU jobs by rule:", dict(jobs))
        print(
            "changed modules named:", sorted({m for line in lines for m in re.findall(r"code changed: ([\w.]+)", line)})
        )


if __name__ == "__main__":
    main()
