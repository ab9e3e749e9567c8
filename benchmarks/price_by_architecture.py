"""What the GPU-hours estimate charges each model of the paper study: its FLOPs a token by architecture (update and
rollout, at the budget's mean lengths), its KV cache, the MFU it gets and the source of that MFU, and its training and
evaluation GPU-hours, under config.yaml's budget and, given a speed measurement (the pilot's speed.json, or
gpu_update.py's --json), under the speed laws fitted to it, priced on the GPU it was timed on unless --gpu-conversion
states another. From the repository root:

    python benchmarks/price_by_architecture.py [--speed results/pilot/speed.json]
"""

import argparse
import collections
import json
import sys
import warnings
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "workflow")]

from entropy_rl.paper.cost import architectures, budget, gpus, speed, speed_report  # noqa: E402
from entropy_rl.pipeline import power, scope  # noqa: E402


def hours_by_model(S: dict, study, priced: dict) -> dict[str, float]:
    out = collections.Counter()
    for job, value in budget.job_hours(S, study, priced).items():
        kind, name = job.split(":", 1)
        if not name.startswith("pilot-"):
            out[S["power_sampling"]["model"] if kind == "power" else S["runs"][name]["model"]] += value
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--speed", type=Path, help="a speed measurement (paper.cost.speed.measure's JSON)")
    args = parser.parse_args()
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    paper = scope.resolve({**config, "scale": "paper"})
    S, study = paper.S, power.study(paper.S, paper.replicates, paper.seed)
    assumed = S["budget"]
    priced = assumed
    if args.speed:
        result = json.loads(args.speed.read_text())
        result = result.get("measured", result)  # gpu_update.py --json wraps it
        laws = speed_report.laws(result)
        timed = speed.timed_on(result, "update") or speed.timed_on(result, "rollout")
        kind = gpus.gpu_type(timed["gpu"])
        priced = {**assumed, "gpu": kind, "gpu_peak_tflops": gpus.PEAK_TFLOPS[kind],
                  "speed_laws": {k: law.to_dict() for k, law in laws.items()}}  # fmt: skip
        for law in laws.values():
            print(law.describe())
    before, after = hours_by_model(S, study, assumed), hours_by_model(S, study, priced)
    prompt, response = assumed["mean_prompt_tokens"], assumed["mean_response_tokens"]
    print(f"| model | update GFLOPs a token | rollout GFLOPs a token | KV cache KiB a token | train MFU, source "
          f"| rollout MFU, source | GPU-hours, {assumed['gpu']} at config.yaml's MFUs | GPU-hours, {priced['gpu']} priced |")
    print("|---|---|---|---|---|---|---|---|")
    for model in sorted(after, key=lambda m: (S["models"][m]["params_b"], m)):
        arch = architectures.of_model(S, model)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            mfus = [budget.law_mfu(priced, key, arch) for key in ("train_mfu", "rollout_mfu")]
        shown = [f"{value:.3f}, {source}" for value, source in mfus]
        print(f"| {model} | {architectures.update_flops(arch, prompt, response) / 1e9:.3g} "
              f"| {architectures.rollout_flops(arch, prompt, response) / 1e9:.3g} | {arch.kv_cache_bytes() / 1024:.0f} "
              f"| {shown[0]} | {shown[1]} | {before[model]:,.0f} | {after[model]:,.0f} |"
              + (" capped" if caught else ""))  # fmt: skip
    print(f"total: {sum(before.values()):,.0f} {assumed['gpu']} GPU-hours at config.yaml's MFUs; "
          f"{sum(after.values()):,.0f} {priced['gpu']} GPU-hours priced")


if __name__ == "__main__":
    main()
