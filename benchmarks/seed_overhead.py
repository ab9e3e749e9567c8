"""What per-request seeds cost a paper-scale rollout: the extra time a decode step takes with every request seeded
(measured: benchmarks/gpu_repeatability.py on an H200, docs/results.md, 2026-11-27: 0.6, 2.3 and 4.9 ms at 64, 256
and 512 requests) against the decode step itself.

With no GPU at hand the decode step is bounded below by what it must read from memory: every matmul weight once
(bf16) and each request's KV cache up to its position, at the GPU's datasheet bandwidth. The real step is slower (the
bandwidth is never fully used), so the share printed is an upper bound on the seeds' share; --step-ms gives measured
step times instead. From the repository root:

    python benchmarks/seed_overhead.py [--model qwen2.5-7b] [--bandwidth-tbs 4.8] [--step-ms 64=.. 256=.. 512=..]
"""

import argparse
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "workflow")]

from entropy_rl.core import spec  # noqa: E402
from entropy_rl.core.scale import build  # noqa: E402
from entropy_rl.paper.cost import architectures  # noqa: E402

MEASURED_MS = {64: 0.6, 256: 2.3, 512: 4.9}  # docs/results.md, benchmarks/gpu_repeatability.py, one H200


def step_bytes(arch: architectures.Architecture, requests: int, context: float) -> float:
    """Bytes a decode step reads at least: the matmul weights (the head's included, the embedding's lookup not) in
    bf16, and every request's K and V up to ``context`` tokens."""
    weights = 2 * (arch.dense - arch.vocab * arch.hidden)
    return weights + requests * context * arch.kv_cache_bytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen2.5-7b")
    parser.add_argument("--bandwidth-tbs", type=float, default=4.8, help="HBM bandwidth, TB/s (H200 datasheet: 4.8)")
    parser.add_argument("--step-ms", nargs="*", default=[], metavar="REQUESTS=MS", help="measured decode steps")
    args = parser.parse_args()
    paper = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
    arch = architectures.of_model(build("paper", spec.with_instruct_models(paper)), args.model)
    budget = paper["budget"]
    context = budget["mean_prompt_tokens"] + budget["mean_response_tokens"] / 2
    measured = {int(k): float(v) for k, v in (item.split("=") for item in args.step_ms)}
    print(f"{args.model}: {context:.0f} tokens of context on average, {args.bandwidth_tbs} TB/s")
    print("| requests | seeds' extra ms a step (measured, H200) | decode step ms | seeds' share of a step |")
    print("|---|---|---|---|")
    for requests, extra in MEASURED_MS.items():
        step = measured.get(requests)
        how = "measured" if step else "at least, by bytes read"
        step = step or step_bytes(arch, requests, context) / (args.bandwidth_tbs * 1e12) * 1e3
        share = extra / (step + extra)
        print(f"| {requests} | {extra} | {step:.1f} ({how}) | {'' if how == 'measured' else 'at most '}{share:.0%} |")


if __name__ == "__main__":
    main()
