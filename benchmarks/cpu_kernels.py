"""What a mini run repeats on this machine, and what changes on a CPU whose kernels round differently.

    python benchmarks/cpu_kernels.py [--config tests/smoke/config.yaml] [--run qwen2-xs-grpo] [--steps N]

Builds one run's whole chain (data, tokenizer, pre-trained base model, RL) through the workflow, three times, each
in a fresh directory: twice with this CPU's own kernels, and once with PyTorch, oneDNN and MKL held to AVX2
(``ATEN_CPU_CAPABILITY``, ``DNNL_MAX_CPU_ISA``, ``MKL_ENABLE_INSTRUCTIONS``), as on a machine without AVX-512. It
prints, for the rerun and for the AVX2 run against the first: whether the base model's weights, the run's metrics
and its final weights are equal bit for bit, and if not, the largest difference of each metric over the steps and
the first step that differs. On a CPU without AVX-512 the AVX2 run is this CPU's own, and says so.

This is the difference between two machines that the reproducibility page describes: the same seeds, the same
code and the same package versions, and a sum rounded in another order.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import torch
import yaml
from safetensors.torch import load_file

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "workflow"), str(ROOT / "tests")]
from entropy_rl.core import paths  # noqa: E402
from support import one_run_config  # (the tests' helper: the configuration cut to one run)  # noqa: E402

AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "DNNL_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}
COLUMNS = ("entropy", "reward_mean", "response_length", "val_acc")


def build(workdir: Path, cfg: dict, run: str, env: dict[str, str]) -> Path:
    """The run's metrics through Snakemake, one core, with ``env`` added; returns the results directory."""
    workdir.mkdir(parents=True)
    (workdir / "config.yaml").write_text(yaml.safe_dump(cfg))
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(ROOT / "Snakefile"),
        "-d",
        str(workdir),
        "--cores",
        "1",
        paths.RUN_METRICS.format(run=run),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env}, timeout=3600)
    if proc.returncode != 0:
        sys.exit(f"the run failed with {env or 'this CPU'}'s kernels:\n{proc.stderr[-3000:]}")
    return workdir / paths.RESULTS


def weights(directory: Path) -> dict[str, torch.Tensor]:
    return {k: v for f in sorted(directory.glob("*.safetensors")) for k, v in load_file(f).items()}


def weights_diff(a: dict, b: dict) -> str:
    if all(torch.equal(a[k], b[k]) for k in a):
        return "equal bit for bit"
    return f"differ: max |Δ| {max(float((a[k] - b[k]).abs().max()) for k in a):.3g}"


def metrics_diff(a: pd.DataFrame, b: pd.DataFrame) -> str:
    if a.equals(b):
        return "equal bit for bit"
    cols = [c for c in COLUMNS if c in a]
    delta = (a[cols] - b[cols]).abs()
    first = int(delta.fillna(0).gt(0).any(axis=1).idxmax())
    spread = ", ".join(f"{c} {delta[c].max():.3g}" for c in cols)
    return f"differ from step {first}: max |Δ| {spread}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=ROOT / "tests" / "smoke" / "config.yaml")
    parser.add_argument("--run", default="qwen2-xs-grpo")
    parser.add_argument("--steps", type=int, help="RL steps (the configuration's by default)")
    parser.add_argument("--keep", type=Path, help="keep the three directories here")
    args = parser.parse_args()
    cfg = one_run_config(args.run, args.config)
    if args.steps:
        cfg["mini"]["train"]["steps"] = args.steps
    model = cfg["mini"]["runs"][args.run]["model"]
    avx512 = "avx512f" in Path("/proc/cpuinfo").read_text()
    base = args.keep or Path(tempfile.mkdtemp(prefix="cpu_kernels_"))
    variants = {"this CPU": {}, "this CPU, again": {}, "AVX2": AVX2}
    results = {
        name: build(base / name.replace(" ", "_").replace(",", ""), cfg, args.run, env)
        for name, env in variants.items()
    }
    first = results["this CPU"]
    print(
        f"run {args.run} ({cfg['mini']['train']['steps']} steps), torch {torch.__version__}, "
        f"{'AVX-512' if avx512 else 'no AVX-512: the AVX2 run is this CPU own'}"
    )
    for name in ("this CPU, again", "AVX2"):
        other = results[name]
        print(f"\n{name} against the first:")
        print(
            f"  base model {model}: {weights_diff(weights(first / 'models' / model), weights(other / 'models' / model))}"
        )
        a, b = (pd.read_parquet(r / "runs" / args.run / "metrics.parquet") for r in (first, other))
        print(f"  metrics: {metrics_diff(a, b)}")
        final = weights_diff(weights(first / "runs" / args.run / "final"), weights(other / "runs" / args.run / "final"))
        print(f"  final policy: {final}")
    if not args.keep:
        shutil.rmtree(base)


if __name__ == "__main__":
    main()
