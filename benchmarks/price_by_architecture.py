"""What the GPU-hours estimate charges each model of the paper study: its FLOPs a token by architecture (update and
rollout, at the budget's mean lengths), its KV cache, the MFU it gets and the source of that MFU, and its training and
evaluation GPU-hours with their range and largest term (paper.cost.ranges), under config.yaml's budget or, given a speed measurement (the pilot's speed.json, or
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

from entropy_rl.core.scale import Scale  # noqa: E402
from entropy_rl.paper.cost import architectures, decode, efficiency, gpus, ranges, speed, speed_report  # noqa: E402
from entropy_rl.pipeline import power, scope  # noqa: E402


def spread_by_model(scale: Scale, study, priced: dict) -> dict[str, ranges.Spread]:
    out = collections.defaultdict(lambda: ranges.NONE)
    for job, spread in ranges.job_spread(scale, study, priced).items():
        kind, name = job.split(":", 1)
        if not name.startswith("pilot-"):
            out[scale.config["power_sampling"]["model"] if kind == "power" else scale.runs[name].model] += spread
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--speed", type=Path, help="a speed measurement (paper.cost.speed.measure's JSON)")
    args = parser.parse_args()
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    paper = scope.resolve({**config, "scale": "paper"})
    scale, study = paper.scale, power.study(paper.scale, paper.replicates, paper.seed)
    assumed = scale.config["budget"]
    priced = assumed
    if args.speed:
        result = json.loads(args.speed.read_text())
        result = result.get("measured", result)  # gpu_update.py --json wraps it
        laws = speed_report.laws(result)
        timed = speed.timed_on(result, "update") or speed.timed_on(result, "rollout")
        kind = gpus.gpu_type(timed["gpu"])
        priced = {
            **assumed,
            "gpu": kind,
            "gpu_peak_tflops": gpus.PEAK_TFLOPS[kind],
            "speed_laws": {k: law.to_dict() for k, law in laws.items()},
        }
        for law in laws.values():
            print(law.describe())
    by_model = spread_by_model(scale, study, priced)
    prompt, response = assumed["mean_prompt_tokens"], assumed["mean_response_tokens"]
    print(
        f"| model | update GFLOPs a token | rollout GFLOPs a token | KV cache KiB a token | rollout roofline "
        f"(sequences held, bound, × its FLOPs' time) | train MFU, source [range] | rollout efficiency, source [range] "
        f"| GPU-hours, {priced['gpu']}, charged | low – high | largest term |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for model in sorted(by_model, key=lambda m: (scale.models[m].params_b, m)):
        arch = architectures.of_model(scale, model)
        engine = decode.ROLLOUT_ENGINE.at(scale.models[model].placement.tensor_parallel)
        roof = decode.roofline(arch, prompt, response, engine, priced["gpu"], priced["gpu_peak_tflops"])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            effs = [efficiency.of(priced, key, arch, prompt, response, engine) for key in ("train_mfu", "rollout_mfu")]
        shown = [f"{e.value:.3f}, {e.source}" + (f" [{e.low:.3f}–{e.high:.3f}]" if e.spread else "") for e in effs]
        total = by_model[model]
        print(
            f"| {model} | {architectures.update_flops(arch, prompt, response) / 1e9:.3g} "
            f"| {architectures.rollout_flops(arch, prompt, response) / 1e9:.3g} | {arch.kv_cache_bytes() / 1024:.0f} "
            f"| {roof.sequences}, {roof.bound}, {roof.seconds / roof.compute_s:.2f} | {shown[0]} | {shown[1]} "
            f"| {total.value:,.0f} | {total.low:,.0f} – {total.high:,.0f} "
            f"| {total.largest} ({total.terms[total.largest] / total.value:.0%}) |" + (" capped" if caught else "")
        )
    whole = sum(by_model.values(), ranges.NONE)
    print(
        f"total: {whole.value:,.0f} {priced['gpu']} GPU-hours charged, {whole.low:,.0f} – {whole.high:,.0f}; "
        f"{whole.worst:,.0f} with every step's refills at max_num_gen_batches; by term: "
        + ", ".join(f"{k} {v:,.0f}" for k, v in sorted(whole.terms.items(), key=lambda kv: -kv[1]))
    )


if __name__ == "__main__":
    main()
