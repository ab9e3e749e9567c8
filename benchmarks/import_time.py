"""What a job pays before its first line of work: the time to run a rule script's imports
and its first call, ``logs.setup``.

For each script, a fresh interpreter runs only the script's top-level import statements (read
from its text, so any checkout's layout works) and ``logs.setup``, timed inside the child; prints the median over
repeats and the heavy packages (torch, verl, vLLM, transformers, math-verify, reasoning-gym) the
imports loaded. Run from the repository root:

    python benchmarks/import_time.py [--workflow DIR] [--repeats 5] [figure.py audit.py download.py]

``--workflow`` points at another checkout's ``workflow/`` directory (to compare commits).
"""

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from entropy_rl import WORKFLOW_DIR

HEAVY = ("torch", "verl", "vllm", "transformers", "math_verify", "reasoning_gym", "matplotlib", "scipy")
CHILD = """
import json, sys, time
t0 = time.perf_counter()
{imports}
if "logs" in globals():  # every rule script's first call: its log file, and torch's threads
    import tempfile
    logs.setup(tempfile.mkdtemp() + "/job.log")
elapsed = time.perf_counter() - t0
print(json.dumps({{"s": elapsed, "heavy": [h for h in {heavy!r} if h in sys.modules], "modules": len(sys.modules)}}), file=sys.__stdout__)
"""


def script_imports(path: Path) -> str:
    """The script's top-level imports, as code (what runs before the script does anything)."""
    tree = ast.parse(path.read_text())
    return "\n".join(ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom)))


def measure(script: Path, workflow: Path, repeats: int) -> dict:
    code = CHILD.format(imports=script_imports(script), heavy=HEAVY)
    env = {**os.environ, "PYTHONPATH": str(workflow)}
    runs = []
    for _ in range(repeats):
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        runs.append(json.loads(proc.stdout.splitlines()[-1]))
    return {
        "median_s": statistics.median(r["s"] for r in runs),
        "heavy": runs[0]["heavy"],
        "modules": runs[0]["modules"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("scripts", nargs="*", default=["figure.py", "audit.py", "download.py"])
    ap.add_argument("--workflow", type=Path, default=WORKFLOW_DIR)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    print(f"{'script':<22} {'import s':>9} {'modules':>8}  heavy packages loaded")
    for name in args.scripts:
        r = measure(args.workflow / "scripts" / name, args.workflow, args.repeats)
        print(f"{name:<22} {r['median_s']:>9.2f} {r['modules']:>8}  {', '.join(r['heavy']) or '-'}")


if __name__ == "__main__":
    main()
