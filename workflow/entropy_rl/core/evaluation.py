"""How a policy is evaluated: a decoding protocol (a benchmark's, or a run's validation), where a paper-scale job's vLLM
engines run, and one evaluation's settings, built once from its rule's params. Read by the trainers' validation, the
evaluate jobs and the power-sampling jobs; the registry of the modules that run them is ``core.backends``."""

from __future__ import annotations

from dataclasses import dataclass

# What verl and vLLM run on, a scale's ``launch.platform`` (paper.platforms holds each one's settings): a cluster's GPUs,
# or this machine's CPU (the small scale).
GPU, CPU = "gpu", "cpu"
PLATFORMS = (GPU, CPU)


@dataclass(frozen=True)
class Protocol:
    """A decoding protocol (the schema's ``protocol``): a benchmark's evaluation, or a run's validation."""

    temperature: float  # 0 decodes greedily, with n = 1
    n: int  # answers sampled per problem; accuracy is their mean (avg@n)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


@dataclass(frozen=True)
class Engines:
    """Where a job's vLLM engines run and how they render prompts: the model's tensor-parallel GPUs
    (``paper.models.<model>.tensor_parallel``, a size that divides its attention heads) and its prompt format
    (``chat_template``: a format of ``paper.prompt_format``)."""

    tensor_parallel: int
    chat_template: str
    platform: str = GPU  # what the engines run on (paper.platforms): a GPU, or at small scale the CPU

    @classmethod
    def from_params(cls, params) -> Engines | None:
        """The engines a rule's params place (``tensor_parallel``, ``chat_template``, and ``platform`` where it is not
        a GPU), or None for a rule that runs no engine (the mini scale's, on the CPU)."""
        if getattr(params, "tensor_parallel", None) is None:
            return None
        return cls(params.tensor_parallel, params.chat_template, getattr(params, "platform", GPU))


@dataclass(frozen=True)
class Evaluation:
    """One evaluation's settings: each benchmark's decoding protocol (by benchmark name), the answers' length, the seed
    every benchmark starts from (so a sampled benchmark draws the same answers on every run), the k of the pass@k
    summarised, and, at paper scale, the engine's placement."""

    protocols: dict[str, Protocol]
    max_new_tokens: int
    seed: int
    pass_k: tuple[int, ...]
    engines: Engines | None = None

    @classmethod
    def from_params(cls, params) -> Evaluation:
        """The settings an evaluate rule's params give (``protocols``, ``max_new_tokens``, ``seed``, ``pass_k`` and
        the engines' placement)."""
        return cls(
            protocols={name: Protocol(**protocol) for name, protocol in params.protocols.items()},
            max_new_tokens=params.max_new_tokens,
            seed=params.seed,
            pass_k=tuple(params.pass_k),
            engines=Engines.from_params(params),
        )
