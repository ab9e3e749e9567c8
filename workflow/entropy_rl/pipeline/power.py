"""The sampling jobs of the power-sampling study beside RL (Karan & Du, 2025; core.power.methods) and of the GPU
pilot (pilot.power): each one's settings, model, placement, problems, answers and seed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core import spec as run_spec
from ..core.power import methods as power_registry
from .scope import run_label

if TYPE_CHECKING:
    from ..core.scale import Scale


def study(scale: Scale, replicates: int, seed: int):
    """The power-sampling study of the scale (core.power.methods.Study), or None when it has none."""
    power = scale.config.get("power_sampling")
    if not power:
        return None
    base_models = sum(run_spec.replicate_of(m)[0] == power["model"] for m in scale.models)  # 1 where shared (scope)
    return power_registry.build(
        power, {r: run_label(scale, r) for r in power["runs"].values()}, replicates, seed, base_models
    )


def methods(power_study) -> dict:
    """Every sampling method of the study, by name (name -> settings); none when the scale has no study."""
    return power_study.methods if power_study else {}


def pilot_methods(scale: Scale, pilot: dict | None, pilot_runs: list[str]) -> dict:
    """The pilot's sampling jobs (pilot.power): plain sampling of the pilot's model, p^alpha by Algorithm 1 and by the
    later samplers it configures (Power-SMC, SPS), and plain sampling of its RL checkpoint."""
    if not pilot:
        return {}
    p, run = pilot["power"], pilot_runs[0]
    job = {
        "model": scale.runs[run].model,
        "placement": scale.placement(run),
        "chat_template": scale.model_of(run).chat_template,
        "problems": p["problems"],
        "n": p["n"],
        "max_new_tokens": p["max_new_tokens"],
        "seed": scale.config["eval"]["seed"],
    }
    power = {"kind": "power", "alpha": p["alpha"], "block_size": p["block_size"], "n_mcmc": p["n_mcmc"]}
    later = {
        f"{run_spec.PILOT}{kind}": {**job, "settings": {"kind": kind, "alpha": p["alpha"], **p[kind]}}
        for kind in power_registry.LATER
        if kind in p
    }
    return {
        f"{run_spec.PILOT}plain": {**job, "settings": {"kind": "sample", "temperature": 1.0}},
        f"{run_spec.PILOT}power": {**job, "settings": power},
        **later,
        f"{run_spec.PILOT}rl": {**job, "settings": {"kind": "sample", "temperature": 1.0, "run": run}},
    }


def job(scale: Scale, power_study, pilot_jobs: dict, method: str) -> dict:
    """One sampling job's facts, for the study's methods and the pilot's alike: its settings, the base model, the
    placement of its engines and their prompt format, problems per benchmark, answers per problem, answer length and
    seed."""
    if method in pilot_jobs:
        return pilot_jobs[method]
    power = scale.config["power_sampling"]
    return {
        "settings": methods(power_study)[method],
        "model": power_study.model(method),
        "placement": scale.models[power["model"]].placement,
        "chat_template": scale.models[power["model"]].chat_template,
        "problems": power["problems"],
        "n": power["n"],
        "max_new_tokens": power["max_new_tokens"],
        "seed": power_study.seed(method),
    }


def benchmarks(scale: Scale, settings: dict) -> list[str]:
    """The benchmarks a sampling job answers: the study's, or a sweep's own (core.power.methods.Study.benchmarks)."""
    return settings.get("benchmarks", scale.config["power_sampling"]["benchmarks"])
