"""Every figure and table of the study as the workflow reads them: the registry's declared view
(``registry.declared``, no plotting library imported), with what the workflow asks of it.

The rules (figures.smk) loop over ``ARTIFACTS``, the config's artifact names are validated against it, and the
evaluations the study needs are planned from it (``evaluated``, ``reads_tests``). Adding a figure is its function
with the ``registry.artifact`` decorator in the module of its section and, for a paper artifact, its runs in
config.yaml (``<scale>.artifacts.<name>.runs``).
"""

from __future__ import annotations

from ..core.run import Run
from . import registry
from .registry import Artifact  # noqa: F401  (what the workflow reads)

# The registry as declared: read without importing the modules that draw (registry.declared).
ARTIFACTS = registry.declared()
FIGURES = [name for name, a in ARTIFACTS.items() if a.kind == "figure"]
TABLES = [name for name, a in ARTIFACTS.items() if a.kind == "table"]
PAPER = [name for name, a in ARTIFACTS.items() if not a.power]  # drawn from runs named in the config
POWER = [name for name, a in ARTIFACTS.items() if a.power]  # drawn from the power-sampling study's methods

# The audit's measurements that read test-set evaluations (results/eval), by name: those of study.audit.accuracy
# (a test holds the two equal). The names are here so that the workflow, which imports this module, plans the
# evaluations without loading the audit.
EVAL_MEASUREMENTS = frozenset({"accuracy_vs_baseline", "benchmark_average", "benchmark_cell", "best_gain_over_grpo"})


def evaluated(claims: list[dict]) -> list[str]:
    """The artifacts whose runs' test-set evaluations are read: those of a claim of the ledger (claims.yaml's
    ``claims``) that ``reads_tests``, and those that show them (``reads`` "eval"). Only their runs are evaluated
    for the study; the other runs' curves are measured on the validation sets."""
    named = {c["measure"]["artifact"] for c in claims if reads_tests(c)}
    return [name for name in PAPER if "eval" in ARTIFACTS[name].reads or name in named]


def reads_tests(claim: dict) -> bool:
    """Does a claim of the ledger read its runs' test-set evaluations: is it measured with one of
    ``EVAL_MEASUREMENTS``, or on an artifact that shows them (``reads`` "eval")?"""
    name = claim["measure"]["artifact"]
    return claim["measure"]["fn"] in EVAL_MEASUREMENTS or (name in ARTIFACTS and "eval" in ARTIFACTS[name].reads)


def output_files(name: str) -> list[str]:
    """The files an artifact writes (figures: PDF and PNG; tables: CSV and Markdown)."""
    return list(ARTIFACTS[name].outputs.values())


def _setting(run: Run) -> str:
    """What sets a run apart: its algorithm and the loss settings its treatment changes."""
    loss = run.loss
    parts = [run.method.label]
    if loss.loss_mode == "clip_cov":
        parts.append(f"Clip-Cov ratio {loss.clip_cov_ratio:g}, bounds [{loss.clip_cov_lb:g}, {loss.clip_cov_ub:g}]")
    elif loss.loss_mode == "kl_cov":
        parts.append(f"KL-Cov ratio {loss.kl_cov_ratio:g}, coefficient {loss.ppo_kl_coef:g}")
    if loss.loss_mode == "vanilla" and loss.clip_ratio_high != loss.clip_ratio_low:
        parts.append(f"clip-higher {loss.clip_ratio_low:g}/{loss.clip_ratio_high:g}")
    if loss.entropy_coeff:
        parts.append(f"entropy loss {loss.entropy_coeff:g}")
    if loss.kl_loss_coef:
        parts.append(f"reference KL {loss.kl_loss_coef:g}")
    if run.random_reward:
        parts.append("random reward (a seeded coin per response)")
    if run.train_data is not None:
        parts.append(f"trained on {run.train_data}")
    return ", ".join(parts)


SEEDS = {
    True: " Seeds: RL's, every replicate of a run starting from its model's one base model.",
    False: " Seeds: pre-training's and RL's, each replicate of a run on a base model pre-trained under its own seed.",
}


def caption(
    name: str, scale: str, specs: dict[str, Run], labels: dict[str, str], shared_base: bool | None = None
) -> str:
    """Scale, what is shown, the shared training settings and what sets each run apart; where a run has several
    seeds at mini scale, what they vary (``shared_base``: whether its replicates share one base model)."""
    first = next(iter(specs.values()))
    rates = sorted({s.lr for s in specs.values()})  # one each when learning rates scale with width
    lr = f"lr {rates[0]:g}" if len(rates) == 1 else f"lr {rates[0]:g}-{rates[-1]:g} (scaled with 1/width)"
    shared = (
        f"{first.steps} steps of {first.prompts_per_step} prompts x {first.rollout_n} responses, "
        f"{lr}, temperature {first.temperature:g}, validation every {first.val_every} steps"
    )
    per_run = "; ".join(f"{labels[r]}: {_setting(s)}" for r, s in specs.items())
    seeds = "" if shared_base is None else SEEDS[shared_base]
    return f"{scale.capitalize()} scale. {ARTIFACTS[name].what} ({ARTIFACTS[name].source}.) Settings: {shared}. Runs: {per_run}.{seeds}"
