"""Run specs: one resolved dict per run, read by the mini trainer and turned into verl overrides
(``paper.launch``).

A run is base model × algorithm × entropy treatment × hyperparameters. Its spec
is the scale's ``train`` defaults, updated by the treatment's settings, then by
the run's own ``overrides`` (the ``loss`` section merges key by key). The keys
follow verl's names so the same spec drives both trainers.
"""

from __future__ import annotations

import copy


def _merge(base: dict, update: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in (update or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def resolve_run(scale_cfg: dict, run_id: str) -> dict:
    """The full, self-contained settings of one run (what the rule passes as ``params``).

    Layers, each updating the one before (``loss`` merges key by key): the scale's ``train``
    defaults, the run's named ``recipe`` (a partial ``train`` section of the scale's ``recipes``,
    e.g. the paper's Section 4 launch settings), the treatment (into ``loss``), the run's
    ``overrides``. The spec names its recipe (or None).
    """
    run = scale_cfg["runs"][run_id]
    treatment = scale_cfg["treatments"][run["treatment"]]
    recipe = run.get("recipe")
    recipes = scale_cfg.get("recipes", {})
    if recipe is not None and recipe not in recipes:
        raise KeyError(f"run {run_id!r} names recipe {recipe!r}, which this config's recipes do not hold: {sorted(recipes)}")
    spec = _merge(scale_cfg["train"], recipes[recipe] if recipe is not None else {})
    spec = _merge(spec, {"loss": treatment})
    spec = _merge(spec, run.get("overrides", {}))
    # PRIME's settings belong to PRIME runs only: otherwise editing them would
    # change, and so rerun, every other run.
    if run["algorithm"] != "prime":
        spec.pop("prime", None)
    spec.update(run_id=run_id, model=run["model"], algorithm=run["algorithm"], treatment=run["treatment"], recipe=recipe)
    model = scale_cfg.get("models", {}).get(run["model"], {})
    if "train_data" in run or "train_data" in model:  # a named training set (paper scale: always)
        spec["train_data"] = run.get("train_data", model.get("train_data"))
    return spec


def run_scope(scale_cfg: dict, run_id: str) -> dict:
    """The parts of a scale's config that ``resolve_run`` reads for one run: resolving the run from
    them gives its whole spec, and a change elsewhere in the config leaves them as they are."""
    run = scale_cfg["runs"][run_id]
    return {
        "runs": {run_id: run},
        "models": {run["model"]: scale_cfg["models"][run["model"]]},
        "treatments": {run["treatment"]: scale_cfg["treatments"][run["treatment"]]},
        "recipes": {run["recipe"]: scale_cfg["recipes"][run["recipe"]]} if "recipe" in run else {},
        "train": scale_cfg["train"],
    }


def eval_max_new_tokens(scale_cfg: dict, run_id: str) -> int:
    """Tokens an evaluation of the run generates: the scale's cap, or the run's own response cap where
    that is smaller (a model with a short context, like deepseek-math-7b-base, trains and is evaluated
    within it)."""
    return min(scale_cfg["eval"]["max_new_tokens"], resolve_run(scale_cfg, run_id)["max_response_length"])
