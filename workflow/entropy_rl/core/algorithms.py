"""The RL algorithms a run may name (``runs.<run>.algorithm``), one entry each: how figures and tables name it,
verl's advantage estimator that computes it, and the trainer that runs it at paper scale. Adding one of verl's
advantage estimators is its entry here and the runs that name it in config.yaml; the config's schema, the mini
trainer, the paper-scale command and the captions read it from here (tests/core/test_algorithm_registry.py)."""

from __future__ import annotations

from dataclasses import dataclass

VERL = "verl"  # verl 0.9.1's main_ppo, with the entropy plugin (paper.verl_plugin)
PRIME = "prime"  # verl 0.4.1's PRIME recipe (containers/prime.def): verl 0.9.1 has no PRIME


@dataclass(frozen=True)
class Algorithm:
    name: str  # as runs name it in the config
    label: str  # as figures, tables and captions name it
    estimator: str  # verl's advantage estimator (algorithm.adv_estimator; mini.algorithms calls the same function)
    trainer: str = VERL  # what runs it at paper scale
    process_rewards: bool = False  # an implicit process reward model trained beside the policy (PRIME, Cui et al.)


ALGORITHMS: dict[str, Algorithm] = {}


def register(algorithm: Algorithm) -> Algorithm:
    """Add ``algorithm``; a second entry of the same name is refused."""
    if algorithm.name in ALGORITHMS:
        raise ValueError(f"algorithm {algorithm.name!r} is registered already")
    if algorithm.trainer not in (VERL, PRIME):
        raise ValueError(f"algorithm {algorithm.name!r}: no trainer {algorithm.trainer!r} (verl or prime)")
    ALGORITHMS[algorithm.name] = algorithm
    return algorithm


# The paper's (Section 4, Table 2 and Figure 6). PRIME's advantage is RLOO's over the outcome reward plus its implicit
# process rewards (mini.prime; at paper scale the recipe's own).
register(Algorithm("grpo", "GRPO", "grpo"))
register(Algorithm("rloo", "RLOO", "rloo"))
register(Algorithm("reinforce_plus_plus", "REINFORCE++", "reinforce_plus_plus"))
register(Algorithm("prime", "PRIME", "rloo", trainer=PRIME, process_rewards=True))
