"""Every paper run's recorded training command (train_verl's and preflight's ``params.command``) at two revisions (or
a revision and the working tree), and the runs whose command differs: a change that rewrites how commands are built
must leave them byte-identical, or name the runs it changes (each one's GPU job reruns, and its checkpoints no longer
resume).

Exports each revision (``git archive``) and composes its commands with its own code, as its rules do
(``reward_launch.verl_command`` over the paper scale with its replicates and the GPU pilot); without ``NEW_REV``, the
working tree's commands (uncommitted and untracked files included) are the new ones. Run from the repository root; a
few seconds:

    python benchmarks/run_commands.py OLD_REV [NEW_REV] [--json OUT]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = """
import json, sys, yaml
from entropy_rl.core import spec as run_spec
try:
    from entropy_rl.paper import reward_launch as compose
except ImportError:  # a revision before the random-reward control: launch composed every command
    from entropy_rl.paper import launch as compose
paper = yaml.safe_load(open("config.yaml"))["paper"]
S = run_spec.with_pilot(run_spec.with_replicates(run_spec.with_instruct_models(paper), 0, paper.get("replicates", 1)))
try:  # the scale resolved and typed once (core.scale), which verl_command takes
    from entropy_rl.core.scale import build
except ImportError:  # a revision before it: verl_command took the config
    scale = S
else:
    scale = build("paper", S)
json.dump({run: compose.verl_command(scale, run) for run in sorted(S["runs"])}, sys.stdout)
"""


def commands(rev: str | None, work: Path) -> dict[str, list[str]]:
    """The commands of revision ``rev``, exported under ``work``, or (``None``) of the working tree as it is."""
    src = ROOT if rev is None else work / rev.replace("/", "_")
    if rev is not None:
        src.mkdir()
        subprocess.run(f"git archive {rev} | tar -x -C {src}", shell=True, check=True, cwd=ROOT)
    env = {**os.environ, "PYTHONPATH": str(src / "workflow")}
    out = subprocess.run([sys.executable, "-c", COMPOSE], cwd=src, env=env, capture_output=True, text=True, check=False)
    if out.returncode:
        sys.exit(f"{rev}: {out.stderr[-2000:]}")
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old")
    parser.add_argument("new", nargs="?", default=None, help="a revision (default: the working tree)")
    parser.add_argument("--json", type=Path, help="write both revisions' commands here")
    args = parser.parse_args()
    new_name = args.new or "the working tree"
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "old").mkdir(), (Path(tmp) / "new").mkdir()
        old, new = commands(args.old, Path(tmp) / "old"), commands(args.new, Path(tmp) / "new")
    if args.json:
        args.json.write_text(json.dumps({"old": old, "new": new}, indent=1) + "\n")
    changed = sorted(run for run in old.keys() & new.keys() if old[run] != new[run])
    print(
        f"{args.old}: {len(old)} runs; {new_name}: {len(new)} runs; "
        f"only at {args.old}: {sorted(old.keys() - new.keys())}; only at {new_name}: {sorted(new.keys() - old.keys())}"
    )
    print(
        f"{len(changed)} of {len(old.keys() & new.keys())} runs' commands differ" + (f": {changed}" if changed else "")
    )
    for run in changed[:3]:
        a, b = old[run], new[run]
        moved = " (the same arguments, reordered)" if sorted(a) == sorted(b) else ""
        print(
            f"  {run}: only at {args.old}: {[x for x in a if x not in b]}; only at {new_name}: "
            f"{[x for x in b if x not in a]}{moved}"
        )
    sys.exit(1 if changed or old.keys() != new.keys() else 0)


if __name__ == "__main__":
    main()
