"""What a decoded token costs by a roofline: the larger of its FLOPs at the GPU's peak and the bytes it reads at the
GPU's memory bandwidth, for the engine a job runs (its share of GPU memory, its most concurrent sequences and its
tensor-parallel size).

One decoding step of an engine generates a token for each of the ``B`` sequences it holds at once and reads the
model's weights once and every sequence's KV cache. Per token, one GPU's seconds are therefore

    compute: F / peak,    memory: (W / B + kv · c) / bandwidth,

where ``F`` is the token's FLOPs (``architectures.Architecture.decode``), ``W`` the bf16 weights, ``kv`` the cache
bytes a token holds, ``c`` the context it reads (the prompt and half its answer, on average over the answer), and ``B``
the sequences the engine's KV room holds: its memory share over the replica's GPUs less the weights, over ``kv · c``
per sequence, at most ``max_num_seqs``. Tensor parallelism splits the weights, the cache and the FLOPs over the same
GPUs, so it changes a token's GPU-seconds only through the room. The roofline is what no engine beats; a rollout runs
at a fraction of it (the budget's ``rollout_mfu``: for a compute-bound token, its MFU), lower than any benchmark's for
the long tails and the drain at each batch's end.

DeepSeek-Math-7B (full multi-head attention, 480 KiB of cache a token) against Qwen2.5-7B (grouped, 56 KiB) at nearly
the same FLOPs is the case this exists for: at TP 2 on A100-80GB with verl's engine settings its room holds about 128
sequences of 1,050 tokens, and each token reads about 0.5 GB of cache.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import gpus
from .architectures import Architecture

WEIGHT_BYTES = 2  # bf16, as every engine here serves the model


@dataclass(frozen=True)
class Engine:
    """The settings of a vLLM engine that decide its room: its share of each GPU's memory, its most concurrent
    sequences, and the GPUs one replica spans."""

    gpu_memory_utilization: float
    max_num_seqs: int
    tensor_parallel: int = 1

    def at(self, tensor_parallel: int) -> Engine:
        return Engine(self.gpu_memory_utilization, self.max_num_seqs, tensor_parallel)


# The rollout engine of every training run: verl 0.9.1's own defaults (verl/trainer/config/rollout/rollout.yaml:
# gpu_memory_utilization 0.5, max_num_seqs 256), which paper.run_command sets explicitly for both trainers (PRIME's
# verl 0.4.1 defaults to 1,024 sequences); tests/paper/test_verl_compose.py holds them equal to verl's composed default.
ROLLOUT_ENGINE = Engine(gpu_memory_utilization=0.5, max_num_seqs=256)


# The evaluation's and the samplers' engine: vLLM 0.27.1's defaults for ``LLM(...)`` (CacheConfig 0.92; EngineArgs
# 256 sequences on an A100 or a GPU under 70 GiB, 1,024 on larger ones), which paper.evaluate leaves as they are.
def eval_engine(gpu: str) -> Engine:
    large = gpus.MEMORY.get(gpu, (0, 0))[0] >= 75 and gpu not in ("A100", "A800")
    return Engine(gpu_memory_utilization=0.92, max_num_seqs=1024 if large else 256)


# paper.power_sampling.vllm_engine's share of memory (its default, which the samplers keep).
SAMPLER_MEMORY = 0.85


class NoRoom(ValueError):
    """The model's weights do not fit the engine's share of its GPUs' memory."""


@dataclass(frozen=True)
class Roofline:
    compute_s: float  # one GPU's seconds a token at peak FLOPs
    memory_s: float  # one GPU's seconds a token at the memory bandwidth (0 where the GPU's memory is not tabled)
    sequences: int  # what the engine holds at once

    @property
    def seconds(self) -> float:
        return max(self.compute_s, self.memory_s)

    @property
    def bound(self) -> str:
        return "memory" if self.memory_s > self.compute_s else "compute"


def sequences(arch: Architecture, context: float, engine: Engine, gpu: str) -> int:
    """The sequences of ``context`` tokens the engine's KV room holds, at most its ``max_num_seqs``."""
    capacity, _ = gpus.MEMORY[gpu]
    weights = WEIGHT_BYTES * arch.parameters
    room = engine.tensor_parallel * capacity * 1e9 * engine.gpu_memory_utilization - weights
    if room <= 0:
        raise NoRoom(
            f"{weights / 1e9:.1f} GB of weights exceed {engine.gpu_memory_utilization:g} of "
            f"{engine.tensor_parallel} × {capacity} GB ({gpu})"
        )
    return max(1, min(engine.max_num_seqs, int(room // (arch.kv_cache_bytes() * context))))


def roofline(
    arch: Architecture, prompt: float, response: float, engine: Engine, gpu: str, peak_tflops: float
) -> Roofline:
    """A generated token's roofline on ``gpu`` (its dense peak ``peak_tflops``), answers of ``response`` tokens after
    prompts of ``prompt``: the context read is the prompt and half the answer."""
    context = prompt + response / 2
    compute = arch.decode(context) / (peak_tflops * 1e12)
    if gpu not in gpus.MEMORY:
        return Roofline(compute, 0.0, engine.max_num_seqs)
    held = sequences(arch, context, engine, gpu)
    _, bandwidth = gpus.MEMORY[gpu]
    memory = (WEIGHT_BYTES * arch.parameters / held + arch.kv_cache_bytes() * context) / (bandwidth * 1e12)
    return Roofline(compute, memory, held)


def roofline_flops(
    arch: Architecture, prompt: float, response: float, engine: Engine, gpu: str, peak_tflops: float
) -> float:
    """The FLOPs a token costs as the roofline counts it: its own, or where memory binds, the FLOPs the GPU's peak
    would do in the time its bytes take. Its MFU is the fraction of the roofline a rollout achieves."""
    return roofline(arch, prompt, response, engine, gpu, peak_tflops).seconds * peak_tflops * 1e12
