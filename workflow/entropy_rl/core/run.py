"""The resolved run: one frozen, typed object a run's every stage reads, built once from the validated config.

``resolve(scale_cfg, run_id)`` layers the run's settings, each over the one before (``loss`` merges key by key): the
scale's ``train`` defaults, the run's named ``recipe`` (a partial ``train`` section of the scale's ``recipes``, e.g.
the paper's Section 4 launch settings), its treatment (into ``loss``) and its own ``overrides``. Field names follow
verl's, so the same run drives the mini trainer and verl's command (``paper.run_command``).

A rule passes a run to its job as ``Run.params()``, a plain dict with the same keys (Snakemake compares params by their
text, so the dict is what decides a rerun); the job reads it back with ``Run.from_params``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from . import algorithms
from .evaluation import Protocol
from .spec import merge, width_lr_scale


@dataclass(frozen=True)
class Loss:
    """The policy loss in verl's terms (the schema's ``loss``): the PPO clip, the entropy and KL terms, and the
    covariance treatments' settings (Clip-Cov, Eq. 11; KL-Cov, Eq. 12). ``reward`` is the random-reward control's
    setting (``core.random_reward``), unset for the verifiable reward."""

    loss_mode: str
    loss_agg_mode: str
    clip_ratio_low: float
    clip_ratio_high: float
    clip_ratio_c: float
    entropy_coeff: float
    kl_loss_coef: float
    kl_loss_type: str
    clip_cov_ratio: float
    clip_cov_lb: float
    clip_cov_ub: float
    kl_cov_ratio: float
    ppo_kl_coef: float
    reward: str | None = None


@dataclass(frozen=True)
class Prime:
    """PRIME's implicit process reward model: its beta and learning rate; at paper scale the prompts verl 0.4.1's
    recipe answers per prompt it trains on."""

    beta: float
    lr: float
    oversample_factor: float | None = None


# The loss setting (``loss.reward``, a treatment's) that rewards a run at random (core.random_reward).
RANDOM_REWARD = "random"

# Settings a run carries only where its config sets them (or, for ``prime``, where its algorithm reads them): the
# params leave them out when unset, as the config does.
OPTIONAL = (
    "val_size",
    "save_every",
    "val_max_samples",
    "interrupt_at_step",
    "rollout_seeds",
    "prime",
    "train_data",
    "replicate_of",
)


@dataclass(frozen=True)
class Run:
    """One RL run, resolved: base model x algorithm x entropy treatment, and every setting it trains with."""

    id: str
    model: str  # the key of its base model (a replicate's own, ``name@rK``) in the scale's models
    algorithm: str  # a name of core.algorithms' registry
    treatment: str
    recipe: str | None
    seed: int
    steps: int
    prompts_per_step: int
    rollout_n: int
    ppo_mini_batch_size: int
    ppo_epochs: int
    lr: float  # already scaled by spec.width_lr_scale
    weight_decay: float
    grad_clip: float
    temperature: float
    max_response_length: int
    gamma: float
    filter_groups: bool
    max_num_gen_batches: int
    val_every: int
    val_protocol: Protocol
    loss: Loss
    val_size: int | None = None
    save_every: int | None = None
    val_max_samples: int | None = None
    interrupt_at_step: int | None = None
    rollout_seeds: str | None = None
    prime: Prime | None = None
    train_data: str | None = None  # a named training set (paper scale: always), else the scale's default mix
    replicate_of: str | None = None  # a replicate (spec.with_replicates): the configured run it repeats
    replicate: int = 0  # which repeat (0: the run as configured)

    @property
    def method(self) -> algorithms.Algorithm:
        """Its algorithm's registry entry (label, advantage estimator, trainer)."""
        return algorithms.ALGORITHMS[self.algorithm]

    @property
    def trainer(self) -> str:
        """What trains it at paper scale: ``prime`` for PRIME (verl 0.4.1's recipe), ``verl`` for every other run."""
        return self.method.trainer

    @property
    def random_reward(self) -> bool:
        """Whether it is the random-reward control: rewarded by a seeded coin, its answers never read."""
        return self.loss.reward == RANDOM_REWARD

    @property
    def configured(self) -> str:
        """The configured run it is (itself, or the run it replicates)."""
        return self.replicate_of or self.id

    def params(self) -> dict:
        """The run as a rule's params: a plain dict, unset optional settings left out."""
        out = dataclasses.asdict(self)
        out["run_id"] = out.pop("id")
        for key in OPTIONAL:
            if out[key] is None:
                del out[key]
        if self.replicate_of is None:
            del out["replicate"]
        if self.loss.reward is None:
            del out["loss"]["reward"]
        if self.prime is not None and self.prime.oversample_factor is None:
            del out["prime"]["oversample_factor"]
        return out

    @classmethod
    def from_params(cls, params: dict) -> Run:
        """The run a rule's params (``Run.params``) stand for."""
        settings = {k: v for k, v in params.items() if k != "run_id"}
        settings["val_protocol"] = Protocol(**params["val_protocol"])
        settings["loss"] = Loss(**params["loss"])
        if params.get("prime") is not None:
            settings["prime"] = Prime(**params["prime"])
        return cls(id=params["run_id"], **settings)

    def but(self, **changes) -> Run:
        """The same run with some settings changed (``loss`` and ``val_protocol`` take a dict of their keys)."""
        for part in ("loss", "val_protocol"):
            if isinstance(changes.get(part), dict):
                changes[part] = dataclasses.replace(getattr(self, part), **changes[part])
        return dataclasses.replace(self, **changes)


def replicates(runs: Mapping[str, Run], run_id: str) -> list[str]:
    """The replicates of a configured run among ``runs`` (spec.with_replicates), replicate 0 (the run itself) first."""
    return sorted((r for r, run in runs.items() if run.configured == run_id), key=lambda r: runs[r].replicate)


def resolve(scale_cfg: dict, run_id: str) -> Run:
    """The run ``run_id`` of a scale's (validated) config, every layer of its settings applied."""
    entry = scale_cfg["runs"][run_id]
    treatment = scale_cfg["treatments"][entry["treatment"]]
    recipe = entry.get("recipe")
    recipes = scale_cfg.get("recipes", {})
    if recipe is not None and recipe not in recipes:
        raise KeyError(
            f"run {run_id!r} names recipe {recipe!r}, which this config's recipes do not hold: {sorted(recipes)}"
        )
    settings = merge(scale_cfg["train"], recipes[recipe] if recipe is not None else {})
    settings = merge(settings, {"loss": treatment})
    settings = merge(settings, entry.get("overrides", {}))
    # PRIME's settings belong to PRIME runs only: otherwise editing them would change, and so rerun, every other run.
    if not algorithms.ALGORITHMS[entry["algorithm"]].process_rewards:
        settings.pop("prime", None)
    settings["lr"] = settings["lr"] * width_lr_scale(scale_cfg, entry["model"])
    model = scale_cfg.get("models", {}).get(entry["model"], {})
    train_data = entry.get("train_data", model.get("train_data"))
    settings.update(
        run_id=run_id,
        model=entry["model"],
        algorithm=entry["algorithm"],
        treatment=entry["treatment"],
        recipe=recipe,
        **({"train_data": train_data} if train_data is not None else {}),
        **({"replicate_of": entry["replicate_of"], "replicate": entry["replicate"]} if "replicate_of" in entry else {}),
    )
    return Run.from_params(settings)
