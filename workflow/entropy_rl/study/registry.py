"""The registry of the study's figures and tables: each is a function with the ``artifact`` decorator.

A name is the function's, the Snakemake rule's and the output files' stem, so `snakemake <name>`,
``figures.<module>.<name>`` and `results/figures/<name>.pdf` name the same thing; a name
registered twice is refused. An entry holds the function itself, what it reads and what it writes; the rules
(figures.smk) make one rule per entry, and each kind's job (``figure_job``, ``table_job``) calls its function with
its ``inputs.Inputs``.
Which runs a paper artifact draws is configuration (``<scale>.artifacts.<name>.runs``); the power-sampling study's
artifacts draw its methods (``methods``: the main comparison or the sweeps).

Two views of the same decorators. ``load()`` imports the modules that register (``SECTIONS``) and returns every
entry with its function, for the scripts that draw. ``declared()`` reads the decorators from those modules' source
without importing them, for the workflow, which declares its rules from it: so the Snakefile needs no matplotlib,
seaborn or scipy, which the evaluation image (and its CPU stand-in) does not have. A test holds the two equal.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from ..core import paths

KINDS = {"figure": ("pdf", "png"), "table": ("csv", "md")}  # the files each kind writes
# What an artifact can read: its runs' metrics, their models' configs (for sizes), their test-set evaluations, or
# the power-sampling study's answers.
READS = frozenset({"metrics", "models", "eval", "samples"})
# The modules whose functions are artifacts, in the order they register: the paper's Sections 2, 3 and 4, the
# appendices and the tables, then the power-sampling study.
SECTIONS = ("figures.law", "figures.covariance", "figures.control", "figures.appendix", "tables", "power_study")


@dataclass(frozen=True)
class Artifact:
    name: str
    kind: str  # a key of KINDS
    source: str  # where in the paper
    what: str  # the first sentence of its caption
    module: str  # the module that defines it
    reads: tuple[str, ...] = ("metrics",)
    methods: str | None = None  # a power-sampling artifact's methods: "main" or "sweep"
    # figure: make(inputs, stem) -> paths; table: make(inputs) -> DataFrame (None in the declared view)
    make: Callable | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.kind not in KINDS or not set(self.reads) <= READS or (self.methods is not None) != self.power:
            raise ValueError(
                f"artifact {self.name!r}: {self.kind} reading {self.reads} (methods {self.methods!r}) "
                "is not one the rules build"
            )

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
        return {ext: paths.ARTIFACT_FILE.format(kind=self.kind, name=self.name, ext=ext) for ext in KINDS[self.kind]}

    @property
    def modules(self) -> tuple[str, ...]:
        """The code its job runs: its function's module and its kind's job (``figure_job``, ``table_job``), which
        loads its inputs and writes a table."""
        return (self.module, f"{__package__}.{self.kind}_job")


ARTIFACTS: dict[str, Artifact] = {}


def artifact(kind: str, source: str, what: str, reads: tuple[str, ...] = ("metrics",), methods: str | None = None):
    """Register the decorated function as the artifact of its name; a name registered twice is refused. The
    arguments are literals, so that ``declared`` can read them from the source."""

    def register(make: Callable) -> Callable:
        if make.__name__ in ARTIFACTS:
            raise ValueError(f"artifact {make.__name__!r} is registered twice: each name is one rule and one output")
        entry = Artifact(make.__name__, kind, source, what, make.__module__, tuple(reads), methods, make)
        ARTIFACTS[make.__name__] = entry
        return make

    return register


def load() -> dict[str, Artifact]:
    """Every artifact with its function, the modules of ``SECTIONS`` imported: in their order, each module's in the
    order it defines them (whichever module a process happened to import first)."""
    for section in SECTIONS:
        importlib.import_module(f"{__package__}.{section}")
    order = {f"{__package__}.{section}": k for k, section in enumerate(SECTIONS)}
    return dict(sorted(ARTIFACTS.items(), key=lambda item: order.get(item[1].module, len(order))))


@cache
def declared() -> dict[str, Artifact]:
    """Every artifact as its decorator declares it, read from the source of ``SECTIONS`` (no function: nothing is
    imported), in the order ``load`` registers them; a name declared twice is refused."""
    out: dict[str, Artifact] = {}
    for section in SECTIONS:
        path = Path(__file__).parent.joinpath(*section.split(".")).with_suffix(".py")
        for node in ast.parse(path.read_text()).body:
            for call in getattr(node, "decorator_list", []):
                if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "artifact":
                    if node.name in out:
                        raise ValueError(
                            f"artifact {node.name!r} is declared twice: each name is one rule and one output"
                        )
                    args = [ast.literal_eval(a) for a in call.args]
                    kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
                    names = ("kind", "source", "what", "reads", "methods")
                    given = {**dict(zip(names, args)), **kwargs}
                    out[node.name] = Artifact(
                        node.name,
                        given["kind"],
                        given["source"],
                        given["what"],
                        f"{__package__}.{section}",
                        tuple(given.get("reads", ("metrics",))),
                        given.get("methods"),
                    )
    return out
