"""The samplers of p^α by method kind: each kind's core algorithm over a ``mcmc.Proposer``, as a scale's sampler
calls it (the mini sampler at mini scale; vLLM at paper scale).

A kind is a power-sampling method's ``kind`` in ``methods`` (``power`` is Karan & Du's Algorithm 1, ``smc``
Power-SMC, ``sps`` scalable power sampling), and its settings that kind's type there (``methods.Power``, ``.SMC``,
``.SPS``); plain sampling (``sample``) is a scale's own engine call and has no entry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# Bound by their names before the move into core/power/, which this module's behaviour hash reads (core.modules).
from . import mcmc as power_mcmc
from . import smc as power_smc
from . import sps as power_sps


@dataclass(frozen=True)
class Algorithm:
    chains: Callable  # (proposer, prompt_ids, method, n, max_new_tokens, rng) -> n chains per prompt, grouped
    costs: Callable  # chains -> (tokens drawn per answer, MH acceptance per answer)


ALGORITHMS: dict[str, Algorithm] = {}


def register(kind: str, algorithm: Algorithm) -> None:
    if kind in ALGORITHMS:
        raise ValueError(f"power-sampling kind {kind!r} is registered twice")
    ALGORITHMS[kind] = algorithm


register("power", Algorithm(power_mcmc.method_chains, power_mcmc.chain_costs))
register("smc", Algorithm(power_smc.method_chains, power_smc.costs))
register("sps", Algorithm(power_sps.method_chains, power_sps.costs))
