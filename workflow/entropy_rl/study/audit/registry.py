"""The measurements a claim can name (its ``measure.fn`` in claims.yaml), registered by function name.

Each family module (entropy_law, covariance, control, accuracy, power) registers its functions with
``@measurement`` when imported; verdicts imports them all, so ``MEASUREMENTS`` is complete wherever
a claim is judged or checked. A name registered twice is refused: the second would silently replace
the first, and claims naming it would be measured by whichever module happened to import last.

Seeds. When the study repeats its runs under several seeds, a measurement is by default made once per
seed, on the study as that seed ran it (``Study.at_seed``), and the audit combines the seeds
(``seeds.combine``): a number becomes its mean over seeds; a qualitative test is decided on its
``effects``, the signed quantities it is about, each tested against zero with the spread across seeds.
A measurement registered with ``pools_seeds=True`` reads every seed itself (a fit over all of them,
a test whose noise is the seeds').
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .relations import RELATIONS, Effect


@dataclass
class Measured:
    """What a measurement returns: the value, how it was computed, and a test's outcome or a number's interval."""

    value: float | str
    how: str  # exactly what was computed, on which runs
    holds: bool | None = None  # a qualitative test's outcome
    interval: tuple[float, float] | None = None  # a number's 95% interval, when it comes from the data
    # A number's estimate with its noise (an Effect: standard error and degrees of freedom), judged against the
    # paper's value within the ledger's band; without it the interval stands in (verdicts.number_effect).
    spread: Effect | None = None
    # A qualitative test's signed quantities (named by configured run, never by replicate): a point reading
    # (float) or an Effect with the standard error the data give it; judged by the claim's relation
    # (relations.decide), which the measurement's registration names.
    effects: dict[str, float | Effect] | None = None


MEASUREMENTS: dict[str, Callable[..., Measured]] = {}


def measurement(
    fn: Callable[..., Measured] | None = None,
    *,
    pools_seeds: bool = False,
    relation: str | Callable[[dict], str] = "above",
):
    """Register ``fn`` under its name (``@measurement``, or ``@measurement(pools_seeds=True)`` for one
    that reads every seed itself); a name already registered raises ValueError.

    ``relation`` is what a test claims of its effects (relations.RELATIONS): one for every claim, or a function
    of the claim's ``measure`` arguments where the ledger chooses it, so the ledger check can tell, before any
    result, which claims need a margin."""

    def register(fn: Callable[..., Measured]) -> Callable[..., Measured]:
        if (known := MEASUREMENTS.get(fn.__name__)) is not None:
            raise ValueError(
                f"measurement {fn.__name__!r} is registered twice: in {known.__module__} and in {fn.__module__}"
            )
        if isinstance(relation, str) and relation not in RELATIONS:
            raise ValueError(f"measurement {fn.__name__!r}: unknown relation {relation!r}; known are {RELATIONS}")
        fn.pools_seeds = pools_seeds
        fn.relation = relation
        MEASUREMENTS[fn.__name__] = fn
        return fn

    return register if fn is None else register(fn)


def relation_of(spec: dict) -> str:
    """The relation a claim's measurement (its ``measure`` block) tests its effects by."""
    fn = MEASUREMENTS[spec["fn"]]
    relation = fn.relation(spec) if callable(fn.relation) else fn.relation
    if relation not in RELATIONS:
        raise ValueError(f"measure {spec}: relation {relation!r} is none of {RELATIONS}")
    return relation
