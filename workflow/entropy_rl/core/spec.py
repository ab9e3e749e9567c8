"""A scale's config as the stages read it: the layers a run's settings merge (``merge``; the run itself is
``core.run``), the width's learning-rate rule, pre-training settings, instruct models, replicates, the pilot's runs and
the benchmarks' domains."""

from __future__ import annotations

import copy


def merge(base: dict, update: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in (update or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def width_lr_scale(scale_cfg: dict, model: str) -> float:
    """The factor on a model's learning rates (pre-training and RL): ``lr_reference_width / hidden_size``
    where the scale sets ``lr_reference_width``, else 1. Adam's update moves each weight by about the
    learning rate, so a narrower model takes a larger rate for the same change in its outputs (as muP
    scales hidden layers' Adam rates with 1/width): one rule for every size, stated before any result."""
    reference = scale_cfg.get("lr_reference_width")
    if reference is None:
        return 1.0
    entry = scale_cfg["models"][model]
    if "hidden_size" not in entry:  # an instruct model as configured: its base's width (with_instruct_models)
        entry = scale_cfg["models"][entry["instruct_of"]]
    return reference / entry["hidden_size"]


def pretrain_settings(scale_cfg: dict, model: str) -> dict:
    """The scale's pre-training settings for one base model, its learning rate scaled by ``width_lr_scale``;
    for an instruct model (``instruct_of``), the instruction tuning's (``instruct``) over them."""
    settings = copy.deepcopy(scale_cfg["pretrain"])
    if "instruct_of" in scale_cfg["models"][model]:
        settings.update(copy.deepcopy(scale_cfg["instruct"]))
    settings["lr"] = settings["lr"] * width_lr_scale(scale_cfg, model)
    return settings


def with_instruct_models(scale_cfg: dict) -> dict:
    """The scale's config with each instruct model (an entry ``{instruct_of: base}``) given its base's
    architecture: it is that model tuned further, so every stage reads its shape from its own entry."""
    out = copy.deepcopy(scale_cfg)
    for name, entry in scale_cfg.get("models", {}).items():
        if "instruct_of" in entry:
            base = scale_cfg["models"].get(entry["instruct_of"])
            if base is None or "instruct_of" in base:
                raise ValueError(f"instruct model {name!r} names {entry['instruct_of']!r}, which is not a base model")
            out["models"][name] = {**copy.deepcopy(base), **copy.deepcopy(entry)}
    return out


# A replicate's name: its run's (or model's), "@r" and its index. Replicate 0 is the run as configured
# and keeps the plain name, so a scale with one replicate names nothing differently.
REPLICATE = "@r"


def replicate_names(name: str, count: int) -> list[str]:
    """``name`` and its replicates 1 .. count-1: ``name``, ``name@r1``, ``name@r2``, ..."""
    return [name] + [f"{name}{REPLICATE}{k}" for k in range(1, count)]


def replicate_of(name: str) -> tuple[str, int]:
    """The configured run (or model) a replicate's name stands for, and the replicate's index."""
    base, sep, index = name.partition(REPLICATE)
    return base, int(index) if sep else 0


def with_replicates(scale_cfg: dict, base_seed: int = 0, count: int | None = None) -> dict:
    """The scale's config with every run and base model repeated ``replicates`` times under its own seed.

    Replicate k of a run trains replicate k of its base model with RL seed ``train.seed + base_seed + k``;
    replicate k of a model is pre-trained (at mini scale) from seed ``pretrain.seed + base_seed + k``.
    Each replicate is an ordinary run (or model) of the returned config, so one seed's rerun is one job
    and every rule, and ``run.resolve``, take it as they take a configured run; its entry names what it
    replicates (``replicate_of``) and its index (``replicate``). ``base_seed`` moves every seed at once:
    the same study under another draw of its randomness. ``count``, when given, replaces the scale's own
    ``replicates``. With one replicate and base seed 0 the config comes back as it was."""
    count = count or scale_cfg.get("replicates", 1)
    out = copy.deepcopy(scale_cfg)
    if count == 1 and base_seed == 0:
        return out
    runs, models = {}, {}
    for name, model in scale_cfg["models"].items():
        for k, rep in enumerate(replicate_names(name, count)):
            models[rep] = {**copy.deepcopy(model), "replicate_of": name, "replicate": k}
            if "instruct_of" in model:  # replicate k of an instruct model tunes replicate k of its base
                models[rep]["instruct_of"] = replicate_names(model["instruct_of"], count)[k]
            if "pretrain" in scale_cfg:
                models[rep]["pretrain_seed"] = scale_cfg["pretrain"]["seed"] + base_seed + k
    rl_seed = scale_cfg["train"]["seed"] + base_seed
    for name, run in scale_cfg["runs"].items():
        for k, rep in enumerate(replicate_names(name, count)):
            entry = {**copy.deepcopy(run), "replicate_of": name, "replicate": k}
            entry["model"] = replicate_names(run["model"], count)[k]
            entry["overrides"] = merge(run.get("overrides", {}), {"seed": rl_seed + k})
            runs[rep] = entry
    out["runs"], out["models"] = runs, models
    return out


def with_shared_base_models(S: dict) -> dict:
    """Where the scale sets ``replicate_base_models: false``: every replicate of a run on replicate 0 of its base model
    (pre-trained under the study's seed), and the models' other replicates dropped, so the replicates differ in their RL
    seeds alone. ``S`` is a scale config with its replicates (``with_replicates``), returned as it is otherwise."""
    if S.get("replicate_base_models", True):
        return S
    models = {name: entry for name, entry in S["models"].items() if entry.get("replicate", 0) == 0}
    runs = {name: {**entry, "model": replicate_of(entry["model"])[0]} for name, entry in S["runs"].items()}
    return {**S, "models": models, "runs": runs}


def run_scope(scale_cfg: dict, run_id: str) -> dict:
    """The parts of a scale's config that ``run.resolve`` reads for one run: resolving the run from
    them gives its whole spec, and a change elsewhere in the config leaves them as they are."""
    run = scale_cfg["runs"][run_id]
    model = scale_cfg["models"][run["model"]]
    base = model.get("instruct_of")  # an instruct model's width is its base's (width_lr_scale)
    return {
        **({"lr_reference_width": scale_cfg["lr_reference_width"]} if "lr_reference_width" in scale_cfg else {}),
        "runs": {run_id: run},
        "models": {run["model"]: model, **({base: scale_cfg["models"][base]} if base else {})},
        "treatments": {run["treatment"]: scale_cfg["treatments"][run["treatment"]]},
        "recipes": {run["recipe"]: scale_cfg["recipes"][run["recipe"]]} if "recipe" in run else {},
        "train": scale_cfg["train"],
    }


def benchmark_domain(scale_cfg: dict, benchmark: str) -> str:
    """A benchmark's domain, ``math`` or ``code`` (its ``domain``; math where it names none)."""
    return scale_cfg["data"]["benchmarks"][benchmark].get("domain", "math")


def train_domain(scale_cfg: dict, run_id: str) -> str:
    """The domain of the data a run trains on, which its validation measures: at mini scale the domain of
    the benchmark families its training set draws from, at paper scale the ``ability`` of its parts.
    A training set that mixes domains has no one validation to fit the law on, so it is refused."""
    data, run = scale_cfg["data"], scale_cfg["runs"][run_id]
    name = run.get("train_data", scale_cfg["models"][run["model"]].get("train_data"))
    if "parts" in data:  # paper scale: a training set is a list of parts
        domains = {data["parts"][p].get("ability", "math") for p in data["train_sets"][name]}
    else:
        families = data["train"]["from"] if name is None else data["train_sets"][name]["from"]
        domains = {benchmark_domain(scale_cfg, f) for f in families}
    if len(domains) != 1:
        raise ValueError(f"run {run_id!r} trains on {name or 'train'}, which mixes domains {sorted(domains)}")
    return domains.pop()


def domain_benchmarks(scale_cfg: dict, domain: str) -> list[str]:
    """The benchmarks of one domain, sorted."""
    return sorted(b for b in scale_cfg["data"]["benchmarks"] if benchmark_domain(scale_cfg, b) == domain)


# The GPU pilot's runs and power-sampling methods are named with this prefix (paper.pilot in config.yaml).
PILOT = "pilot-"


def with_pilot(scale_cfg: dict) -> dict:
    """The scale's config with the pilot's runs among its runs (paper scale: ``pilot.runs``), so that the rules and
    their jobs resolve them as any other run; the study's lists of runs leave them out (``is_pilot``)."""
    pilot = scale_cfg.get("pilot")
    if not pilot:
        return scale_cfg
    clash = set(pilot["runs"]) & set(scale_cfg["runs"])
    if clash or not all(name.startswith(PILOT) for name in pilot["runs"]):
        raise ValueError(f"pilot runs must be named {PILOT}* and not be study runs: {sorted(pilot['runs'])}")
    return {**scale_cfg, "runs": {**scale_cfg["runs"], **copy.deepcopy(pilot["runs"])}}


def is_pilot(name: str) -> bool:
    return name.startswith(PILOT)
