"""How close each sampler of p^α comes to the exact p^α, on a model small enough to list every answer.

The toy model of tests/power_toy.py (three tokens, answers of at most four, α = 4). Each sampler draws ``--samples``
answers through the workflow's proposal interface; the total variation distance between its first n answers and
p^α is printed for n = 125 .. samples, beside the Monte Carlo floor (the mean distance of n exact draws), with the
tokens drawn per answer token. Low temperature is printed against p^α and against its own target. The figure goes to
``--out`` (default results/benchmarks/power_exactness.png). Run from the repository root:

    python benchmarks/power_exactness.py [--samples 2000] [--seed 1]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "workflow"), str(ROOT / "tests")]  # the toy model lives with the tests
from entropy_rl.core import paths  # noqa: E402
from support import power_toy as toy  # noqa: E402

SAMPLERS = [
    ("low temperature (T = 1/α)", "low-temp", {}),
    ("Algorithm 1, N_MCMC 2", "mcmc", {"block_size": 2, "n_mcmc": 2}),
    ("Algorithm 1, N_MCMC 10", "mcmc", {"block_size": 2, "n_mcmc": 10}),
    ("Algorithm 1, N_MCMC 40", "mcmc", {"block_size": 2, "n_mcmc": 40}),
    ("Power-SMC, N 4", "smc", {"particles": 4, "resample_every": 1, "ess_threshold": 0.5}),
    ("Power-SMC, N 16", "smc", {"particles": 16, "resample_every": 1, "ess_threshold": 0.5}),
    ("Power-SMC, N 64", "smc", {"particles": 64, "resample_every": 1, "ess_threshold": 0.5}),
    ("SPS, L 4, M 2", "sps", {"block_size": 1, "candidates": 4, "rollouts": 2, "horizon": 4}),
    ("SPS, L 16, M 8", "sps", {"block_size": 1, "candidates": 16, "rollouts": 8, "horizon": 4}),
    ("SPS, L 64, M 8", "sps", {"block_size": 1, "candidates": 64, "rollouts": 8, "horizon": 4}),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default=paths.BENCHMARK_OUTPUT.format(name="power_exactness.png"))
    args = parser.parse_args()
    target, own = toy.exact(toy.ALPHA), toy.exact(toy.ALPHA, per_token=True)
    ns = [n for n in (125, 250, 500, 1000, 2000, 4000, 8000) if n <= args.samples]
    rng = np.random.default_rng(0)
    floor = [np.mean([toy.floor(target, n, rng) for _ in range(10)]) for n in ns]
    print(f"{'sampler':30} {'tokens/answer token':>20} " + " ".join(f"{f'n={n}':>8}" for n in ns) + "   seconds")
    print(f"{'Monte Carlo floor':30} {'':>20} " + " ".join(f"{f:8.3f}" for f in floor))
    curves = {}
    for label, sampler, settings in SAMPLERS:
        started = time.perf_counter()
        answers, cost = toy.draw(sampler, args.samples, args.seed, **settings)
        curves[label] = [toy.tv(answers[:n], target) for n in ns]
        print(
            f"{label:30} {cost:20.1f} "
            + " ".join(f"{d:8.3f}" for d in curves[label])
            + f"   {time.perf_counter() - started:.1f}"
        )
        if sampler == "low-temp":
            print(
                f"{'  ... against its own target':30} {'':>20} "
                + " ".join(f"{toy.tv(answers[:n], own):8.3f}" for n in ns)
            )
    draw(ns, floor, curves, Path(args.out))


def draw(ns, floor, curves, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.5), layout="constrained")
    for label, tv in curves.items():
        ax.plot(ns, tv, marker="o", ms=3, label=label)
    ax.plot(ns, floor, color="black", ls="--", lw=1.5, label="Monte Carlo floor (exact draws)")
    ax.set(xscale="log", yscale="log", xlabel="answers drawn", ylabel="total variation to exact p^α")
    ax.set_title("Samplers of p^α on a toy model with every answer listed (α = 4)")
    ax.legend(fontsize=7, ncol=2)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=150)
    print(f"figure: {out}")


if __name__ == "__main__":
    main()
