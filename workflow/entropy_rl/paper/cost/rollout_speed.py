"""The rollout's speed at one model size: vLLM's own engine serving random weights of the size's shape
(``load_format="dummy"``, as vLLM's throughput benchmarks do: no download, the weights never read) and generating a
batch of answers of the budget's mean length (``ignore_eos``, a fixed output length).

The engine takes the settings verl's rollout server gives it from the run's composed command (``ENGINE``: its
concurrency, batched tokens, memory share, chunked prefill, prefix caching, eager mode; verl's
``vllm_async_server``), at one tensor-parallel rank: a throughput per GPU. Run as its own process per size
(``python -m entropy_rl.paper.cost.rollout_speed SPEC OUT``), so the engine's memory is given back when it ends.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

# The rollout config's keys verl passes to vLLM's engine as they are (verl 0.9.1, vllm_async_server.py).
ENGINE = (
    "dtype",
    "max_num_seqs",
    "max_num_batched_tokens",
    "enable_chunked_prefill",
    "enable_prefix_caching",
    "enforce_eager",
    "gpu_memory_utilization",
)


def main(spec_path: str, out_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    from . import shapes

    model_dir = Path(spec["work"]) / "config-only"
    model_dir.mkdir(parents=True, exist_ok=True)
    fields = shapes.hf_config(spec["family"], spec["arch"])
    fields["max_position_embeddings"] = spec["prompt_tokens"] + spec["response_tokens"]
    (model_dir / "config.json").write_text(json.dumps(fields, indent=2))
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(spec["tokenizer"])
    tokenizer.save_pretrained(model_dir)
    from . import update_speed

    rollout = update_speed.run_config(spec, model_dir)[0].actor_rollout_ref.rollout
    engine_args = {key: rollout[key] for key in ENGINE}
    max_len = spec["prompt_tokens"] + spec["response_tokens"]
    if not engine_args["enable_chunked_prefill"]:  # as verl raises it: a whole prompt must fit one batch
        engine_args["max_num_batched_tokens"] = max(engine_args["max_num_batched_tokens"], max_len)
    started = time.perf_counter()
    engine = LLM(
        model=str(model_dir), load_format="dummy", tensor_parallel_size=1, seed=0, max_model_len=max_len, **engine_args
    )
    start_s = time.perf_counter() - started
    rng = random.Random(0)
    vocab = min(spec["arch"]["vocab_size"], len(tokenizer))
    prompts = [
        TokensPrompt(prompt_token_ids=[rng.randrange(vocab) for _ in range(spec["prompt_tokens"])])
        for _ in range(spec["sequences"])
    ]
    params = SamplingParams(temperature=1.0, max_tokens=spec["response_tokens"], ignore_eos=True, seed=0)
    engine.generate(prompts[: max(1, len(prompts) // 8)], params, use_tqdm=False)  # warm-up: kernels, caches
    started = time.perf_counter()
    outputs = engine.generate(prompts, params, use_tqdm=False)
    seconds = time.perf_counter() - started
    generated = sum(len(o.outputs[0].token_ids) for o in outputs)
    import torch

    from . import gpus

    device_name = torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU"
    result = {
        "model": spec["model"],
        "params": shapes.params(spec["family"], spec["arch"]),
        "engine_start_s": start_s,
        "device_name": device_name,
        "peak_tflops": gpus.PEAK_TFLOPS.get(gpus.gpu_type(device_name)),
        "tensor_parallel": 1,
        "prompt_tokens": spec["prompt_tokens"],
        "response_tokens": spec["response_tokens"],
        "sequences": len(prompts),
        "generated_tokens": generated,
        "seconds": seconds,
        "tokens_per_s": generated / seconds,
        "engine": engine_args,
    }
    Path(out_path).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
