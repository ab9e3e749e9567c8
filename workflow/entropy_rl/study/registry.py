"""The registry of the study's figures and tables: each is a function with the ``artifact`` decorator.

A name is the function's, the Snakemake rule's and the output files' stem, so `snakemake fig08_covariance`,
``figures.covariance.fig08_covariance`` and `results/figures/fig08_covariance.pdf` name the same thing; a name
registered twice is refused. The entry holds the function itself, what it reads and what it writes; the rules
(figures.smk) make one rule per entry and one script per kind calls the function with its ``inputs.Inputs``. Which runs
a paper artifact draws is configuration (``<scale>.artifacts.<name>.runs``); the power-sampling study's artifacts
draw its methods (``methods``: the main comparison or the sweeps).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

KINDS = {"figure": ("pdf", "png"), "table": ("csv", "md")}  # the files each kind writes
# What an artifact can read: its runs' metrics, their models' configs (for sizes), their test-set evaluations, or
# the power-sampling study's answers.
READS = frozenset({"metrics", "models", "eval", "samples"})


@dataclass(frozen=True)
class Artifact:
    name: str
    kind: str  # a key of KINDS
    source: str  # where in the paper
    what: str  # the first sentence of its caption
    make: Callable = field(repr=False)  # figure: make(inputs, stem) -> paths; table: make(inputs) -> DataFrame
    reads: tuple[str, ...] = ("metrics",)
    methods: str | None = None  # a power-sampling artifact's methods: "main" or "sweep"

    @property
    def power(self) -> bool:
        """Drawn from the power-sampling study's answers rather than from runs named in the config."""
        return "samples" in self.reads

    @property
    def category(self) -> str:
        """Its section of `snakemake --report`."""
        return "Power sampling" if self.power else f"{self.kind.capitalize()}s"

    @property
    def outputs(self) -> dict[str, str]:
        """The files it writes, by extension: figures under results/figures, tables under results/tables."""
        return {ext: f"results/{self.kind}s/{self.name}.{ext}" for ext in KINDS[self.kind]}

    @property
    def modules(self) -> tuple[str, ...]:
        """The code its job runs: its function's module, the loading of its inputs, and a table's writer."""
        extra = [f"{__package__}.tables"] if self.kind == "table" else []
        return (self.make.__module__, f"{__package__}.inputs", *extra)


ARTIFACTS: dict[str, Artifact] = {}


def artifact(kind: str, source: str, what: str, reads: tuple[str, ...] = ("metrics",), methods: str | None = None):
    """Register the decorated function as the artifact of its name; a name registered twice is refused."""
    if kind not in KINDS or not set(reads) <= READS or (methods is not None) != ("samples" in reads):
        raise ValueError(f"artifact of kind {kind!r} reading {reads} (methods {methods!r}) is not one the rules build")

    def register(make: Callable) -> Callable:
        if make.__name__ in ARTIFACTS:
            raise ValueError(f"artifact {make.__name__!r} is registered twice: each name is one rule and one output")
        ARTIFACTS[make.__name__] = Artifact(make.__name__, kind, source, what, make, tuple(reads), methods)
        return make

    return register
