"""The power-sampling study's methods (Karan & Du, 2025), built from a scale's ``power_sampling`` config.

The methods, in this order: plain sampling of the base model (``base``, temperature 1) and at low
temperature (``low-temp``, 1/alpha), power sampling at the main setting (``power``, Algorithm 1), the later samplers
of p^alpha configured (``smc``, Power-SMC; ``sps``, scalable power sampling; ``core.power.algorithms``), each RL
checkpoint sampled at temperature 1 (named as in ``power_sampling.runs``), and the alpha and N_MCMC
sweeps (``power-alpha<a>``, ``power-mcmc<n>``; their point at the main setting is ``power``
itself). A name is a rule wildcard and a file stem, so a name registered twice is refused.

Replicates: with ``replicates`` k > 1, every method is repeated as ``<name>@r1`` .. (``core.spec``'s replicate
names), replicate j sampling replicate j of the base model (and of an RL method's run) under the study's seed
+ the base seed + j, as the runs are repeated; the artifacts and the audit take the spread over them.

A sampling job reads its method as its kind's type (``Sample``, ``Power``, ``SMC``, ``SPS``: ``method_of``), with the
rest of its settings, as one ``Sampler``; ``core.backends.SAMPLERS`` names the module that samples each kind at each
scale.

Read by the rules and by the audit's params, so it imports nothing heavy (no torch).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from .. import spec
from ..evaluation import Engines

PLAIN = ("base", "low-temp", "power")  # the base model's methods at the main setting
LATER = ("smc", "sps")  # the samplers after Algorithm 1, each a method of its kind's name when configured


@dataclass(frozen=True)
class Sample:
    """Plain sampling at ``temperature``: of the base model, or of an RL checkpoint."""

    kind: ClassVar[str] = "sample"
    temperature: float


@dataclass(frozen=True)
class Power:
    """p^alpha by Karan & Du's Algorithm 1 (``core.power.mcmc``): blocks of ``block_size`` tokens from the
    temperature-1/alpha proposal, each followed by ``n_mcmc`` Metropolis-Hastings steps."""

    kind: ClassVar[str] = "power"
    alpha: float
    block_size: int
    n_mcmc: int


@dataclass(frozen=True)
class SMC:
    """p^alpha by Power-SMC (``core.power.smc``): ``particles`` particles, reweighted every ``resample_every`` tokens
    and resampled when their effective sample size falls below ``ess_threshold`` of them."""

    kind: ClassVar[str] = "smc"
    alpha: float
    particles: int
    resample_every: int
    ess_threshold: float


@dataclass(frozen=True)
class SPS:
    """p^alpha by scalable power sampling (``core.power.sps``): each block of ``block_size`` tokens chosen among
    ``candidates``, each valued by ``rollouts`` lookaheads of ``horizon`` tokens."""

    kind: ClassVar[str] = "sps"
    alpha: float
    block_size: int
    candidates: int
    rollouts: int
    horizon: int


Method = Sample | Power | SMC | SPS
KINDS: dict[str, type[Method]] = {m.kind: m for m in (Sample, Power, SMC, SPS)}
# Settings that say which inputs a job reads (the RL run it samples, the sweeps' own benchmarks), not how it draws.
ROUTING = ("run", "benchmarks")


def method_of(settings: dict) -> Method:
    """A method's settings (an entry of ``Study.methods``; a sampling rule's ``method`` param) as its kind's type."""
    kind = settings["kind"]
    if kind not in KINDS:
        raise ValueError(f"power-sampling kind {kind!r} is not one of {sorted(KINDS)} (core.power.methods.KINDS)")
    return KINDS[kind](**{k: v for k, v in settings.items() if k not in ("kind", *ROUTING)})


@dataclass(frozen=True)
class Sampler:
    """One sampling job's settings, as its scale's sampler reads them: the method, the first ``problems`` problems of
    each benchmark answered ``n`` times each in up to ``max_new_tokens`` tokens, the seed of every draw, and at paper
    scale where the engines run."""

    method: Method
    problems: int
    n: int
    max_new_tokens: int
    seed: int
    engines: Engines | None = None

    @property
    def kind(self) -> str:
        return self.method.kind

    @classmethod
    def from_params(cls, params) -> Sampler:
        """The settings a sampling rule's params give (``method``, ``problems``, ``n``, ``max_new_tokens``, ``seed``
        and the engines' placement)."""
        return cls(
            method=method_of(params.method),
            problems=params.problems,
            n=params.n,
            max_new_tokens=params.max_new_tokens,
            seed=params.seed,
            engines=Engines.from_params(params),
        )


@dataclass
class Study:
    """The methods of one scale's study: name -> settings, and name -> display label, in registration order."""

    config: dict  # the scale's power_sampling entry
    methods: dict[str, dict] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    replicates: int = 1  # each method's seeds, replicate 0 (the plain name) first
    base_seed: int = 0  # the study's base seed (config ``seed``), added to the sampling seed as to every other
    base_models: int = 1  # the base model's replicates: ``replicates``, or 1 where the replicates share it

    def register(self, name: str, settings: dict, label: str) -> None:
        if name in self.methods:
            raise ValueError(f"power-sampling method {name!r} is registered twice: each name is one job and one file")
        self.methods[name] = settings
        self.labels[name] = label

    def seeds(self, name: str) -> list[str]:
        """A method's replicates, replicate 0 (the method itself) first."""
        return spec.replicate_names(spec.replicate_of(name)[0], self.replicates)

    def model(self, name: str) -> str:
        """The base model a method's replicate samples, or scores an RL checkpoint's answers with."""
        return spec.replicate_names(self.config["model"], self.base_models)[
            min(spec.replicate_of(name)[1], self.base_models - 1)
        ]

    def seed(self, name: str) -> int:
        """The sampling seed of a method's replicate."""
        return self.config["seed"] + self.base_seed + spec.replicate_of(name)[1]

    def with_seeds(self, names: list[str]) -> list[str]:
        """``names`` and every replicate of each, method by method (what an artifact's rule reads)."""
        return [rep for name in names for rep in self.seeds(name)]

    @property
    def main(self) -> list[str]:
        """The methods compared at the main setting: base, low temperature, power, the later samplers and the RL
        checkpoints."""
        return [*PLAIN, *self.later, *self.config["runs"]]

    @property
    def later(self) -> list[str]:
        """The samplers after Algorithm 1 that the study configures (``LATER``), in that order."""
        return [kind for kind in LATER if kind in self.config]

    @property
    def sweep(self) -> list[str]:
        """Every power-sampling setting (by replicate 0's name): the main one and the alpha and N_MCMC sweeps."""
        return [m for m, s in self.methods.items() if s["kind"] == "power" and spec.replicate_of(m)[1] == 0]

    def drawn(self, methods: str) -> list[str]:
        """The methods an artifact of the study draws, by its registered ``methods``: "main" or "sweep"."""
        return {"main": self.main, "sweep": self.sweep}[methods]

    def benchmarks(self, name: str | None = None) -> list[str]:
        """The benchmarks a method answers: the study's, or the sweeps' own where ``sweeps.benchmarks`` names them."""
        return (
            self.config["benchmarks"]
            if name is None
            else self.methods[name].get("benchmarks", self.config["benchmarks"])
        )

    def problems(self, benchmarks: dict[str, dict], name: str | None = None) -> dict[str, int]:
        """Problems answered per benchmark of the study (or of method ``name``): the first ``problems``, or all of a
        smaller one."""
        cap = self.config["problems"]
        return {b: min(cap, benchmarks[b].get("size", cap)) for b in self.benchmarks(name)}

    def answers(self, benchmarks: dict[str, dict], name: str | None = None) -> int:
        """Answers method ``name`` gives (without it, a method that answers all the study's benchmarks): ``n`` to each
        problem answered."""
        return self.config["n"] * sum(self.problems(benchmarks, name).values())

    def caption(self, what: str, scale: str) -> str:
        """Scale, ``what`` is shown (the artifact's first sentence), and the study's shared settings."""
        p = self.config
        runs = ", ".join(f"{n}: {self.labels[n]}" for n in p["runs"])
        first = p["seed"] + self.base_seed
        seeds = (
            f"seed {first}"
            if self.replicates == 1
            else f"{self.replicates} seeds ({first}-{first + self.replicates - 1}), each sampling its own replicate of the base "
            "model and of the RL runs; values are means over the seeds"
        )
        return (
            f"{scale.capitalize()} scale, after Karan & Du (2025). {what} Base model {p['model']}; "
            f"{p['n']} answers to each of the first {p['problems']} problems of {', '.join(p['benchmarks'])}, "
            f"up to {p['max_new_tokens']} tokens, {seeds}. Power sampling targets p^alpha with a "
            f"temperature-1/alpha proposal in blocks of {p['block_size']} tokens (alpha {p['alpha']:g}, "
            f"{p['n_mcmc']} MCMC steps per block unless swept).{self._sweep_caption()}{self._later_caption()} RL "
            f"checkpoints sampled at temperature 1: {runs}."
        )

    def _sweep_caption(self) -> str:
        only = self.config["sweeps"].get("benchmarks")
        return (
            f" The alpha and N_MCMC sweeps answer {', '.join(only)} only, the benchmark their claim reads."
            if only
            else ""
        )

    def _later_caption(self) -> str:
        if not self.later:
            return ""
        return (
            " The later samplers target the same p^alpha from the same proposal: "
            + "; ".join(self.labels[k] for k in self.later)
            + "."
        )


def _power_label(settings: dict) -> str:
    return f"Power sampling (alpha {settings['alpha']:g}, B {settings['block_size']}, N_MCMC {settings['n_mcmc']})"


def _later_label(settings: dict) -> str:
    if settings["kind"] == "smc":
        every = settings["resample_every"]
        return f"Power-SMC (N {settings['particles']}, ESS < {settings['ess_threshold']:g}N, every {every} tokens)"
    return (
        f"Scalable power sampling (B {settings['block_size']}, L {settings['candidates']}, "
        f"M {settings['rollouts']}, H {settings['horizon']})"
    )


def build(
    power: dict, run_labels: dict[str, str], replicates: int = 1, base_seed: int = 0, base_models: int | None = None
) -> Study:
    """Every method of the study ``power`` (a scale's ``power_sampling``), each ``replicates`` times; ``run_labels``
    names each RL run it samples (run id -> display name); ``base_models`` is how many replicates the base model has
    (``replicates`` unless they share one, core.spec.with_shared_base_models)."""
    study = Study(power, replicates=replicates, base_seed=base_seed, base_models=base_models or replicates)
    alpha = power["alpha"]
    main = {"kind": "power", "alpha": alpha, "block_size": power["block_size"], "n_mcmc": power["n_mcmc"]}
    methods = [
        ("base", {"kind": "sample", "temperature": 1.0}, "Base (T = 1)"),
        ("low-temp", {"kind": "sample", "temperature": 1.0 / alpha}, f"Low temperature (T = 1/{alpha:g})"),
        ("power", main, _power_label(main)),
    ]
    later = [(kind, {"kind": kind, "alpha": alpha, **power[kind]}) for kind in LATER if kind in power]
    methods += [(name, settings, _later_label(settings)) for name, settings in later]
    methods += [
        (name, {"kind": "sample", "temperature": 1.0, "run": run}, run_labels[run])
        for name, run in power["runs"].items()
    ]
    # A sweep point answers the sweeps' own benchmarks where they are named (sized by the claim that reads them).
    only = {"benchmarks": power["sweeps"]["benchmarks"]} if "benchmarks" in power["sweeps"] else {}
    sweeps = [(f"power-alpha{a:g}", dict(main, alpha=a, **only)) for a in power["sweeps"]["alpha"] if a != alpha]
    sweeps += [
        (f"power-mcmc{n}", dict(main, n_mcmc=n, **only)) for n in power["sweeps"]["n_mcmc"] if n != power["n_mcmc"]
    ]
    methods += [(name, settings, _power_label(settings)) for name, settings in sweeps]
    for k in range(replicates):
        for name, settings, label in methods:
            if "run" in settings:  # replicate k samples replicate k of the run
                settings = dict(settings, run=spec.replicate_names(settings["run"], replicates)[k])
            study.register(spec.replicate_names(name, replicates)[k], settings, label)
    return study
