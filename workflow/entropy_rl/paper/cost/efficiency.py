"""The efficiency the estimate gives each architecture, with its source and, where the data cannot say more, its range.

Two efficiencies: the update's MFU (``train_mfu``: its FLOPs, counted as verl counts them, over the GPU's peak) and the
rollout's (``rollout_mfu``: the fraction of its decoding roofline a rollout achieves, ``decode``; for a token bound by
compute, its MFU). Each is, in order: what the pilot's run on a node measured for that architecture; the pilot's speed
law (``speed_law``) converted to the budget's GPU (``gpus``); or the budget's one assumed value.

A range, low to high efficiency, beside the value charged:

- measured (on a node, or at a timed architecture) or fitted within ``BEYOND`` times the largest timed FLOPs: none;
- further out: the law's two forms (one efficiency; an efficiency and a fixed cost, through two timed points or fitted
  to three or more) and the budget's assumed value, which the anchors' published steps stand beside (``anchors``);
- assumed: the budget's ``ranges`` for the key, set from outside the data (config.yaml says from where).

The value charged is the law's own (its form by the points' number) or the assumed one; the report says which end of
the range that is.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import architectures, decode, gpus, speed_law
from .architectures import Architecture

# The budget's MFU keys and the speed law that replaces each.
LAWS = {"train_mfu": "update", "rollout_mfu": "rollout"}
# How far past the largest timed FLOPs a law is taken at its word; beyond, its forms' spread is the range.
BEYOND = 3.0


@dataclass(frozen=True)
class Efficiency:
    value: float  # charged
    low: float  # the range's ends (equal to value where the data leave none)
    high: float
    source: str  # measured, fitted, extrapolated, capped, measured on a node, budget

    @property
    def spread(self) -> bool:
        return self.low < self.value or self.high > self.value


def kind_flops(
    kind: str, arch: Architecture, prompt: float, response: float, engine: decode.Engine, gpu: str, peak_tflops: float
) -> float:
    """The FLOPs a token of ``kind`` is charged as on ``gpu``: the update's (the old log-probs and one PPO epoch), or
    a generated token's by the decoding roofline of ``engine``. What a speed law's points and its use are placed by."""
    if kind == "update":
        return architectures.update_flops(arch, prompt, response)
    return decode.roofline_flops(arch, prompt, response, engine, gpu, peak_tflops)


def of(
    budget: dict,
    key: str,
    arch: Architecture,
    prompt: float,
    response: float,
    engine: decode.Engine = decode.ROLLOUT_ENGINE,
) -> Efficiency:
    """``key``'s efficiency for ``arch`` at these mean lengths (and, for the rollout, this engine), as a fraction of
    the budget's GPU peak, with its range and source."""
    laws = budget.get("speed_laws", {})
    node = laws.get("node")
    on_node = speed_law.node_mfu(node, key, arch)
    if on_node is not None:
        value = gpus.convert(on_node[0], node["gpu"], node["peak_tflops"], budget)
        return Efficiency(value, value, value, on_node[1])
    law = laws.get(LAWS[key])
    if law is None:
        low, high = budget.get("ranges", {}).get(key, (budget[key], budget[key]))
        return Efficiency(budget[key], min(low, budget[key]), max(high, budget[key]), "budget")
    law = speed_law.Law.from_dict(law)
    timed_on = gpus.gpu_type(law.gpu) or law.gpu
    flops = kind_flops(law.kind, arch, prompt, response, engine, timed_on, law.peak_tflops)
    raw, source = law.mfu(arch, flops)
    value = gpus.convert(raw, law.gpu, law.peak_tflops, budget)
    if source == "measured" or flops <= BEYOND * max(p.flops for p in law.points):
        return Efficiency(value, value, value, source)
    ends = [
        value,
        budget[key],
        *(gpus.convert(f.mfu(arch, flops)[0], law.gpu, law.peak_tflops, budget) for f in law.other_forms()),
    ]
    return Efficiency(value, min(ends), max(ends), source)


def mfu(
    budget: dict,
    key: str,
    arch: Architecture,
    prompt: float | None = None,
    response: float | None = None,
    engine: decode.Engine = decode.ROLLOUT_ENGINE,
) -> float:
    """The efficiency charged (the budget's mean lengths unless given)."""
    prompt = budget["mean_prompt_tokens"] if prompt is None else prompt
    response = budget["mean_response_tokens"] if response is None else response
    return of(budget, key, arch, prompt, response, engine).value
