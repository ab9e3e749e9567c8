"""The measurements a claim can name (its ``measure.fn`` in claims.yaml), registered by function name.

Each family module (entropy_law, covariance, control, accuracy, power) registers its functions with
``@measurement`` when imported; verdicts imports them all, so ``MEASUREMENTS`` is complete wherever
a claim is judged or checked. A name registered twice is refused: the second would silently replace
the first, and claims naming it would be measured by whichever module happened to import last.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Measured:
    """What a measurement returns: the value, how it was computed, and a test's outcome or a number's interval."""

    value: float | str
    how: str  # exactly what was computed, on which runs
    holds: bool | None = None  # a qualitative test's outcome
    interval: tuple[float, float] | None = None  # a number's acceptance interval, when it comes from the data


MEASUREMENTS: dict[str, Callable[..., Measured]] = {}


def measurement(fn: Callable[..., Measured]) -> Callable[..., Measured]:
    """Register ``fn`` under its name; a name already registered raises ValueError."""
    if (known := MEASUREMENTS.get(fn.__name__)) is not None:
        raise ValueError(
            f"measurement {fn.__name__!r} is registered twice: in {known.__module__} and in {fn.__module__}"
        )
    MEASUREMENTS[fn.__name__] = fn
    return fn
