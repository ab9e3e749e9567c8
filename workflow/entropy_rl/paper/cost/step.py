"""What one training step of a paper-scale run computes, pass by pass, as its trainer's own code runs it: the prompts
it generates answers for, the passes over each token it trains on, and the mean lengths of both.

- **Passes** (forward-pass equivalents a trained token costs, a backward counted as two): verl 0.9.1's V1 trainer
  (``trainer/ppo/v1/trainer_base.py``, ``_step_once``) recomputes the old log-probs (1), the reference's where a KL
  loss needs it (1) and trains each PPO epoch (a forward and a backward, 3). PRIME's recipe (verl 0.4.1,
  ``recipe/prime/prime_ray_trainer.py`` fit, ``reward_model.model.update: before``) also updates its implicit PRM,
  ``update_rm`` (the PRM's forward and backward, 3, and its frozen reference, 1), then scores with it,
  ``compute_rm_score`` (the PRM, 1, and the reference again, 1: ``prime_dp_rm._forward_micro_batch`` runs both
  each time): 6 more. The CPU pilot counts them on the workers' own calls (``verl_plugin.PassCounts``;
  tests/paper/test_pilot_here.py and tests/paper/cost/test_prime_passes.py compare the counts with these).
- **Generation** (prompts answered per prompt trained on): PRIME's recipe answers ``data.oversample_factor`` times the
  batch and trains on the best quarter (``_create_dataloader``, ``filter_and_downsample``); verl 0.9.1 with the
  group filter answers the batch and refills the groups it drops (``verl_plugin.GenerationBound``, logged as
  ``paper/gen_batches``), at most ``max_num_gen_batches`` batches. The refills are charged at a measured figure
  where the budget carries one (the pilot's, ``pilot_measures``), else the configured expected figure; their bound is
  the worst case.
- **Lengths**: the budget's mean prompt and answer, or its train set's (``budget.lengths``), the answer never longer
  than the run's own cap.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.run import Run


def has_reference(run: Run) -> bool:
    """Whether verl computes the reference policy's log-probs each step: a KL loss to it (verl 0.9.1
    ``need_reference_policy``: use_kl_loss or use_kl_in_reward; the runs here set the loss only)."""
    return run.loss.kl_loss_coef > 0


def is_prime(run: Run) -> bool:
    """Whether the run trains PRIME's implicit process reward model beside its policy."""
    return run.method.process_rewards


def actor_passes(run: Run) -> int:
    return 1 + has_reference(run) + 3 * run.ppo_epochs


# PRIME's implicit PRM with update "before": update_rm (PRM forward + backward, its reference) then compute_rm_score
# (PRM forward, its reference): the recipe's config (prime_trainer.yaml reward_model.model.update) and its fit.
PRM_PASSES = 3 + 1 + 1 + 1


def train_passes(run: Run) -> int:
    """Forward passes' worth of FLOPs each trained token costs a step."""
    return actor_passes(run) + (PRM_PASSES if is_prime(run) else 0)


def gen_batches(run: Run, budget: dict) -> float:
    """Generation batches a step of a run with the group filter is charged: the measured or expected figure."""
    return budget["gen_batches"]["expected"] if run.filter_groups else 1.0


def generation_factor(run: Run, budget: dict, end: str = "expected") -> float:
    """Prompts answered a step per prompt trained on: PRIME's oversampling, or the group filter's batches (``end``:
    "expected", or "low" / "high", the ends of the budget's range for them, or "bound", max_num_gen_batches)."""
    if is_prime(run):
        return run.prime.oversample_factor
    if not run.filter_groups:
        return 1.0
    if end == "bound":
        return float(run.max_num_gen_batches)
    figure = budget["gen_batches"]
    return figure["expected"] if end == "expected" else figure["range"][0 if end == "low" else 1]


@dataclass(frozen=True)
class Lengths:
    prompt: float
    response: float


def lengths(run: Run, budget: dict) -> Lengths:
    """The mean prompt and answer of a run's training: its train set's where the budget gives them, else the
    budget's; the answer at most the run's own cap."""
    own = budget.get("lengths", {}).get(run.train_data, {})
    prompt = own.get("prompt_tokens", budget["mean_prompt_tokens"])
    response = own.get("response_tokens", budget["mean_response_tokens"])
    return Lengths(prompt, min(response, run.max_response_length))
