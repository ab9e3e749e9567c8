"""What repeats bit for bit on this machine's accelerator, what only within a tolerance, and what seeding costs.

Three measurements, printed as tables (and written with --json), on random weights in the paper's shapes
(their shapes in config.yaml paper.models; the values of the weights do not matter to any of them):

1. The same batch twice through the model: the token log-probabilities a rerun computes (verl's old_log_prob and
   entropy come from this forward pass). Identical shapes give identical kernels, so this should be exact.
2. The same sequences alone and inside a larger batch, as a rollout engine's continuous batching or a trainer's
   dynamic batch places them: the largest and the mean difference of each token's log-probability, and the share of
   tokens whose draw changes under the same random numbers (a seeded request's draw: argmax of p / q, q ~ Exp(1)).
   This is the tolerance a rerun is held to where batch composition differs.
3. What a per-request seed costs at a decode step: vLLM draws the exponential noise of seeded requests one request at
   a time, each from its own generator (vllm/v1/sample/ops/topk_topp_sampler.py, random_sample), where unseeded
   requests share one batched draw. Both are timed here over the vocabulary, at batch sizes a rollout runs.

    python benchmarks/gpu_repeatability.py [--cpu] [--json out.json]

On a GPU it uses Qwen2.5-0.5B's and Qwen2.5-7B's shapes in bf16; --cpu uses a tiny Qwen2 shape in fp32 (heads of 32,
like the CPU pilot's model), to show the same on this machine's CPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))
from entropy_rl.core.scale import shape_of  # noqa: E402
from entropy_rl.paper.cost import architectures, shapes  # noqa: E402

TINY = {
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_layers": 2,
    "num_heads": 4,
    "num_kv_heads": 2,
    "vocab_size": 512,
    "tie_word_embeddings": True,
}


def build(family: str, arch: dict, device: str, dtype):
    from transformers import AutoConfig, AutoModelForCausalLM

    fields = shapes.hf_config(family, arch)
    config = AutoConfig.for_model(**{k: v for k, v in fields.items() if k not in ("architectures", "torch_dtype")})
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation="sdpa")
    return model.eval()


@torch.no_grad()
def token_logprobs(model, ids: torch.Tensor, chunk: int) -> torch.Tensor:
    """log p of each next token, [batch, length - 1], computed ``chunk`` sequences at a time (that is the batch)."""
    out = []
    for part in ids.split(chunk):
        logits = model(part).logits[:, :-1].float()
        out.append(torch.log_softmax(logits, -1).gather(-1, part[:, 1:, None])[..., 0])
    return torch.cat(out)


@torch.no_grad()
def draws(model, ids: torch.Tensor, chunk: int, noise_seed: int = 0) -> torch.Tensor:
    """The token a seeded request draws after each prefix: argmax p / q with the same q ~ Exp(1) whatever the batch."""
    out = []
    for k, part in enumerate(ids.split(chunk)):
        probs = torch.softmax(model(part).logits.float(), -1)
        for row in range(part.shape[0]):
            g = torch.Generator(device=probs.device).manual_seed(noise_seed + k * chunk + row)
            q = torch.empty_like(probs[row]).exponential_(generator=g)
            out.append((probs[row] / q).argmax(-1))
    return torch.stack(out)


def batch_invariance(
    name: str, family: str, arch: dict, device: str, dtype, probes: int, batch: int, length: int
) -> dict:
    model = build(family, arch, device, dtype)
    g = torch.Generator(device="cpu").manual_seed(1)
    ids = torch.randint(0, arch["vocab_size"], (batch, length), generator=g).to(device)
    alone = token_logprobs(model, ids[:probes], 1)
    once, again = (token_logprobs(model, ids, batch)[:probes] for _ in range(2))
    diff = (alone - once).abs()
    flips = (draws(model, ids[:probes], 1) != draws(model, ids, batch)[:probes]).float().mean().item()
    result = {
        "model": name,
        "dtype": str(dtype).replace("torch.", ""),
        "batch": batch,
        "length": length,
        "rerun_max_abs_diff": (once - again).abs().max().item(),
        "alone_vs_batch_max_abs_diff": diff.max().item(),
        "alone_vs_batch_mean_abs_diff": diff.mean().item(),
        "draws_changed": flips,
    }
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    return result


def time_it(fn, device: str, repeats: int) -> float:
    fn()
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    times = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def seeded_sampling_cost(device: str, vocab: int, batches: list[int], repeats: int) -> list[dict]:
    rows = []
    for b in batches:
        probs = torch.softmax(torch.randn(b, vocab, device=device), -1)
        q = torch.empty_like(probs)
        generators = [torch.Generator(device=device).manual_seed(i) for i in range(b)]

        def batched():
            q.exponential_()
            return (probs / q).argmax(-1)

        def seeded():
            for i, gen in enumerate(generators):
                q[i].exponential_(generator=gen)
            return (probs / q).argmax(-1)

        rows.append(
            {
                "batch": b,
                "vocab": vocab,
                "unseeded_ms": time_it(batched, device, repeats),
                "seeded_ms": time_it(seeded, device, repeats),
            }
        )
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cpu", action="store_true", help="a tiny shape on this machine's CPU")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    paper = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
    device = "cpu" if args.cpu or not torch.cuda.is_available() else "cuda"
    if device == "cpu":
        models = [("tiny qwen2 (h128, 2 layers)", "qwen2", TINY)]
        dtype, probes, batch, length, vocab, batches = torch.float32, 4, 16, 128, 151936, [16, 64]
    else:
        models = [
            (m, paper["models"][m]["family"], architectures.record(shape_of(paper["models"][m])))
            for m in ("qwen2.5-0.5b", "qwen2.5-7b")
        ]
        dtype, probes, batch, length, vocab, batches = torch.bfloat16, 8, 32, 256, 151936, [64, 256, 512]
    where = torch.cuda.get_device_name() if device == "cuda" else f"CPU ({torch.get_num_threads()} threads)"
    print(f"device: {where}; torch {torch.__version__}")
    invariance = [batch_invariance(name, fam, arch, device, dtype, probes, batch, length) for name, fam, arch in models]
    print("\nlog p of each token: the same batch twice, and the same sequences alone against inside a batch")
    print(
        f"{'model':28} {'dtype':9} {'batch':>5} {'rerun max|Δ|':>13} {'alone/batch max|Δ|':>19} {'mean|Δ|':>9} {'draws changed':>14}"
    )
    for r in invariance:
        print(
            f"{r['model']:28} {r['dtype']:9} {r['batch']:5d} {r['rerun_max_abs_diff']:13.3g} "
            f"{r['alone_vs_batch_max_abs_diff']:19.3g} {r['alone_vs_batch_mean_abs_diff']:9.3g} {r['draws_changed']:14.2%}"
        )
    cost = seeded_sampling_cost(device, vocab, batches, repeats=20)
    print(
        f"\nthe exponential noise of one decode step over {vocab:,} tokens: one batched draw, or one draw per seeded request"
    )
    print(f"{'batch':>5} {'unseeded ms':>12} {'seeded ms':>10} {'extra ms per step':>18}")
    for r in cost:
        print(
            f"{r['batch']:5d} {r['unseeded_ms']:12.3f} {r['seeded_ms']:10.3f} {r['seeded_ms'] - r['unseeded_ms']:18.3f}"
        )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {"device": where, "torch": torch.__version__, "batch_invariance": invariance, "seeded_sampling": cost},
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
