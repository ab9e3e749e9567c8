"""Each scale's backend for the evaluation and power-sampling jobs: the one registry of the modules that run them (what a
job hands its backend is ``core.evaluation.Evaluation`` or ``core.power.methods.Sampler``).

The registry names its modules (under ``entropy_rl``, as a rule's code stamp names them) rather than importing them:
``core`` imports no scale's package at module level (the import-linter layers), and a job imports only the module it
runs. At paper scale the later samplers of p^alpha (``power_samplers``) live apart from plain sampling and Algorithm 1
(``power_sampling``), so that their code is not in the code stamp of those jobs (``pipeline.stamps``).
"""

from __future__ import annotations

import importlib
from types import ModuleType

# Scale -> the module whose ``evaluate_benchmarks(model, frames, evaluation)`` evaluates a run's final policy.
EVALUATIONS = {"mini": "mini.evaluate", "paper": "paper.evaluate"}

# (scale, method kind) -> the module whose ``sample_benchmarks(base, policy, frames, sampler)`` samples a
# power-sampling method of that kind (``core.power.methods.KINDS``).
SAMPLERS = {
    ("mini", "sample"): "mini.power_sampling",
    ("mini", "power"): "mini.power_sampling",
    ("mini", "smc"): "mini.power_sampling",
    ("mini", "sps"): "mini.power_sampling",
    ("paper", "sample"): "paper.power_sampling",
    ("paper", "power"): "paper.power_sampling",
    ("paper", "smc"): "paper.power_samplers",
    ("paper", "sps"): "paper.power_samplers",
}


def evaluation_module(scale: str) -> str:
    """The module (under ``entropy_rl``) that evaluates at ``scale``; an unknown scale is refused."""
    if scale not in EVALUATIONS:
        raise ValueError(f"no evaluation for scale {scale!r}: core.backends.EVALUATIONS has {sorted(EVALUATIONS)}")
    return EVALUATIONS[scale]


def sampler_module(scale: str, kind: str) -> str:
    """The module (under ``entropy_rl``) that samples a method of ``kind`` at ``scale``; an unknown pair is refused."""
    if (scale, kind) not in SAMPLERS:
        known = ", ".join(f"{s}/{k}" for s, k in SAMPLERS)
        raise ValueError(f"no sampler for a {kind!r} method at scale {scale!r}: core.backends.SAMPLERS has {known}")
    return SAMPLERS[(scale, kind)]


def evaluation(scale: str) -> ModuleType:
    """The evaluation module of ``scale``, imported."""
    return importlib.import_module(f"entropy_rl.{evaluation_module(scale)}")


def sampler(scale: str, kind: str) -> ModuleType:
    """The sampler module of a method of ``kind`` at ``scale``, imported."""
    return importlib.import_module(f"entropy_rl.{sampler_module(scale, kind)}")
