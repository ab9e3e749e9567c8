"""The study a scale config describes, as the rules read it: the scale, seed and replicates chosen on the command
line, the resolved scale (``core.scale.Scale``: instruct models, replicates, the GPU pilot applied), and the runs,
models, benchmarks and artifacts it has (the study plan holds it, pipeline.plan)."""

from __future__ import annotations

import copy
from dataclasses import dataclass

from ..core import spec as run_spec
from ..core.scale import Scale, build
from ..study import artifacts


@dataclass(frozen=True)
class Scope:
    scale: Scale  # the resolved scale, typed; its name is a key of core.scale.KINDS
    seed: int
    replicates: int
    runs: list[str]  # the study's; the GPU pilot's are pilot_runs
    pilot: dict | None  # paper scale: every GPU rule once, small (workflow/rules/pilot.smk)
    pilot_runs: list[str]
    pilot_node_runs: list[str]  # the speed run trained on its own node, where pilot.speed.node asks (node_run)
    models: list[str]
    benchmarks: list[str]
    power: dict | None  # the power-sampling study beside RL (Karan & Du, 2025), if the scale has one
    artifact_names: list[str]  # the paper's, with their runs
    buildable_artifacts: list[str]  # every artifact the workflow builds, the paper's and the power study's

    @property
    def mini(self) -> bool:
        """The mini engine (the mini package's trainer and evaluation); else verl's and vLLM's rules."""
        return self.scale.kind.engine == "mini"

    @property
    def gpu(self) -> bool:
        """Jobs on a cluster's GPUs, priced in GPU-hours (paper); else on this machine's CPU (mini, small)."""
        return self.scale.kind.gpu


def resolve(config: dict) -> Scope:
    """The scope of ``config`` (the workflow's, validated). The study's base seed moves every seed of the scale at
    once (`snakemake --config seed=1`), and each run and base model is repeated `replicates` times (the scale's, or
    `--config replicates=N`), each replicate a run (or model) of its own."""
    scale = config["scale"]
    seed = config.get("seed", 0)
    replicates = config.get("replicates") or config[scale].get("replicates", 1)
    S = run_spec.with_replicates(run_spec.with_instruct_models(config[scale]), seed, replicates)
    S = run_spec.with_pilot(run_spec.with_shared_base_models(S))
    pilot = S.get("pilot")
    node = pilot and pilot.get("speed", {}).get("node")
    if node:
        S["runs"][NODE_RUN] = node_run(S, pilot["speed"]["run"], node["steps"])
    power = S.get("power_sampling")
    names = [name for name in artifacts.PAPER if name in S["artifacts"]]
    typed = build(scale, S)
    return Scope(
        scale=typed,
        seed=seed,
        replicates=replicates,
        runs=sorted(r for r in S["runs"] if not run_spec.is_pilot(r)),
        pilot=pilot,
        pilot_runs=sorted(pilot["runs"]) if pilot else [],
        pilot_node_runs=[NODE_RUN] if node else [],
        models=sorted(S["models"]),
        benchmarks=sorted(S["data"]["benchmarks"]),
        power=power,
        artifact_names=names,
        buildable_artifacts=names + (artifacts.POWER if power else []),
    )


# The pilot's training of a study run on that run's own placement (config.yaml paper.pilot.speed.node).
NODE_RUN = f"{run_spec.PILOT}node"


def node_run(S: dict, run: str, steps: int) -> dict:
    """The study run ``run`` as it is, on its own model and placement with its own command, cut to ``steps`` steps, a
    checkpoint at the last (the training rule's outputs) and validation on a few problems: what a step of the study
    costs on one node, communication and weight sync included."""
    entry = copy.deepcopy(S["runs"][run])
    cut = {"steps": steps, "val_every": steps, "save_every": steps, "val_max_samples": 16}
    return {**entry, "overrides": {**entry.get("overrides", {}), **cut}}


def run_label(scale: Scale, run: str) -> str:
    """A run as figures and tables name it: model, algorithm, treatment and its own training set."""
    r, entry = scale.runs[run], scale.config["runs"][run]
    treatment = "" if r.treatment == "none" else f" + {r.treatment}"
    data = f" ({entry['train_data']})" if "train_data" in entry else ""  # a run's own training set: code, Appendix C's
    return f"{r.model} {r.method.label}{treatment}{data}"


def artifact_runs(scale: Scale, name: str) -> list[str]:
    return scale.config["artifacts"][name]["runs"]


def with_replicates(scale: Scale, runs: list[str]) -> list[str]:
    """The runs and every replicate of each (core.spec.with_replicates), in order."""
    return [rep for run in runs for rep in scale.replicates(run)]


def validation_benchmarks(scale: Scale, run: str) -> list[str]:
    """The benchmarks a mini run validates on: those of the domain it trains on (math or code)."""
    return scale.domain_benchmarks(scale.train_domain(run))


def part_source(scale: Scale, part: str) -> str:
    """The downloaded source a data part is read from."""
    return scale.config["data"]["parts"][part]["source"]
