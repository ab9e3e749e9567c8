"""Config validation: the JSON schema first, then the cross-references a schema cannot express.

Errors name the offending key as a dotted path and what is allowed there, and
are raised before Snakemake plans a single job.
"""

from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml

from .. import WORKFLOW_DIR
from . import algorithms, spec
from .run import resolve
from .scale import KINDS

SCHEMA = WORKFLOW_DIR / "schemas" / "config.schema.yaml"


class ConfigError(ValueError):
    pass


def read_yaml(path) -> dict:
    """A YAML file, read by libyaml's parser where PyYAML has it: the same documents as ``yaml.safe_load`` (the
    resolver is the same Python), ten times as fast on the schema and the claims ledger every plan reads."""
    return yaml.load(Path(path).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def known(where: str, name, defined, what: str, plural: str | None = None) -> None:
    """``name`` is one of ``defined``, or the error names the key ``where`` and what it could be:
    "config key <where>: unknown <what> 'name'; <what>s are [...]" (``plural`` when not <what>s)."""
    if name not in defined:
        raise ConfigError(f"config key {where}: unknown {what} {name!r}; {plural or what + 's'} are {sorted(defined)}")


def _path(error) -> str:
    return ".".join(str(p) for p in error.absolute_path) or "<top level>"


def _explain(error, what: str = "config") -> str:
    where = _path(error)
    schema = error.schema
    if error.validator == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        return f"{what} key {where}: unknown key(s) {extra}; allowed keys are {allowed}"
    if error.validator == "enum":
        return f"{what} key {where}: {error.instance!r} is not allowed; allowed values are {schema['enum']}"
    return f"{what} key {where}: {error.message}"


def validate_against(document: dict, schema_path, what: str, schema: dict | None = None) -> dict:
    """Check ``document`` against a JSON schema (the file's, or ``schema`` read from it); the error names the
    deepest offending key."""
    schema = schema or read_yaml(schema_path)
    validator = jsonschema.Draft202012Validator(schema)
    deepest = max(validator.iter_errors(document), key=lambda e: len(e.absolute_path), default=None)
    if deepest is not None:
        raise ConfigError(_explain(jsonschema.exceptions.best_match([deepest]), what))
    return document


def validate(config: dict, artifacts=None) -> dict:
    """Check the config against the schema, whose algorithm names are core.algorithms' and whose artifact names are
    ``artifacts`` (the study's registry of figures and tables, study.artifacts.PAPER) when given, then the
    cross-references of each scale."""
    schema = read_yaml(SCHEMA)
    schema["$defs"]["run"]["properties"]["algorithm"]["enum"] = list(algorithms.ALGORITHMS)  # the registry's names
    if artifacts is not None:
        schema["$defs"]["artifacts"]["propertyNames"] = {"enum": list(artifacts)}
    validate_against(config, SCHEMA, "config", schema)
    scale = config["scale"]
    if scale not in config:
        raise ConfigError(f"config key scale: {scale!r} has no section '{scale}:' in the config")
    for section in KINDS:
        if section in config:
            check_references(config[section], section)
    return config


def check_references(scfg: dict, scale: str) -> None:
    """Cross-references and limits a JSON schema cannot express, for one scale's section."""
    try:  # an instruct model takes its base model's architecture, which the checks below read
        scfg = spec.with_instruct_models(scfg)
    except ValueError as err:
        raise ConfigError(f"config key {scale}.models: {err}") from None
    models, treatments, runs = scfg["models"], scfg["treatments"], scfg["runs"]
    recipes = scfg.get("recipes", {})
    for run_id, run in runs.items():
        known(f"{scale}.runs.{run_id}.model", run["model"], models, "model")
        known(f"{scale}.runs.{run_id}.treatment", run["treatment"], treatments, "treatment")
        if "recipe" in run:
            known(f"{scale}.runs.{run_id}.recipe", run["recipe"], recipes, "recipe")
    for run_id in runs:
        resolved = resolve(scfg, run_id)
        loss, layers = resolved.loss, _layers(runs[run_id])
        if loss.clip_cov_lb >= loss.clip_cov_ub:
            raise ConfigError(
                f"config key {scale}.runs.{run_id}: clip_cov_lb ({loss.clip_cov_lb}) must be below clip_cov_ub "
                f"({loss.clip_cov_ub}) (from {layers})"
            )
        if resolved.ppo_mini_batch_size > resolved.prompts_per_step:
            raise ConfigError(
                f"config key {scale}.runs.{run_id}: ppo_mini_batch_size ({resolved.ppo_mini_batch_size}) must not "
                f"exceed prompts_per_step ({resolved.prompts_per_step}) (from {layers})"
            )
    for name, art in scfg.get("artifacts", {}).items():
        for run_id in art["runs"]:
            known(f"{scale}.artifacts.{name}.runs", run_id, runs, "run")
    if "power_sampling" in scfg:
        check_power_sampling(scfg, scale)
    train = scfg["train"]
    if train["ppo_mini_batch_size"] > train["prompts_per_step"]:
        raise ConfigError(
            f"config key {scale}.train.ppo_mini_batch_size: must not exceed prompts_per_step ({train['prompts_per_step']})"
        )
    if KINDS[scale].engine == "paper":
        check_paper_data(scfg, scale)
        return
    for name, arch in models.items():
        head_dim, rest = divmod(arch["hidden_size"], arch["num_heads"])
        if rest or head_dim % 2:
            raise ConfigError(
                f"config key {scale}.models.{name}.hidden_size: {arch['hidden_size']} / num_heads {arch['num_heads']} "
                "must be an even whole number (rotary embeddings rotate pairs of dimensions)"
            )
        if arch["num_heads"] % arch.get("num_kv_heads", arch["num_heads"]):
            raise ConfigError(
                f"config key {scale}.models.{name}.num_kv_heads: must divide num_heads ({arch['num_heads']})"
            )
    benches = scfg["data"]["benchmarks"]
    sets = scfg["data"].get("train_sets", {})
    for run_id, run in runs.items():
        if "train_data" in run:
            known(f"{scale}.runs.{run_id}.train_data", run["train_data"], sets, "training set", "sets")
    for part in ["train", "pretrain", *(f"train_sets.{name}" for name in sets)]:
        section = sets[part.split(".", 1)[1]] if part.startswith("train_sets.") else scfg["data"][part]
        for name in section["from"]:
            known(f"{scale}.data.{part}.from", name, benches, "benchmark")
    for name, bench in scfg["data"]["benchmarks"].items():
        if bench["protocol"]["temperature"] == 0 and bench["protocol"]["n"] != 1:
            raise ConfigError(
                f"config key {scale}.data.benchmarks.{name}.protocol.n: greedy decoding (temperature 0) takes n: 1"
            )
    early = scfg["analysis"]["early_fit_steps"]
    if early // train["val_every"] + 1 < 3 or early >= train["steps"]:
        raise ConfigError(
            f"config key {scale}.analysis.early_fit_steps: {early} must cover at least 3 validation points "
            f"(every {train['val_every']} steps from 0) and end before the last step ({train['steps']})"
        )


def _layers(run: dict) -> str:
    """Where a run's settings come from, for an error message."""
    recipe = f", recipe {run['recipe']!r}" if "recipe" in run else ""
    return f"train{recipe}, treatment {run['treatment']!r} and the run's overrides"


def check_paper_data(scfg: dict, scale: str) -> None:
    """Every name the data section, models and runs of a scale on verl's rules use resolves to something defined."""
    data = scfg["data"]
    for name, part in data["parts"].items():
        known(f"{scale}.data.parts.{name}.source", part["source"], data["sources"], "source")
    for name, parts in data["train_sets"].items():
        for part in parts:
            known(f"{scale}.data.train_sets.{name}", part, data["parts"], "part")
    for name, bench in data["benchmarks"].items():
        known(f"{scale}.data.benchmarks.{name}.part", bench["part"], data["parts"], "part")
        if bench["protocol"]["temperature"] == 0 and bench["protocol"]["n"] != 1:
            raise ConfigError(
                f"config key {scale}.data.benchmarks.{name}.protocol.n: greedy decoding (temperature 0) takes n: 1"
            )
    for name, model in scfg["models"].items():
        known(f"{scale}.models.{name}.train_data", model["train_data"], data["train_sets"], "train set")
        if model["gpus_per_node"] % model["tensor_parallel"]:
            raise ConfigError(
                f"config key {scale}.models.{name}.tensor_parallel: must divide gpus_per_node ({model['gpus_per_node']})"
            )
    for run_id, run in scfg["runs"].items():
        if "train_data" in run:
            known(f"{scale}.runs.{run_id}.train_data", run["train_data"], data["train_sets"], "train set")


def check_power_sampling(scfg: dict, scale: str) -> None:
    """The power-sampling study samples one base model and RL runs of that same model."""
    ps, where = scfg["power_sampling"], f"{scale}.power_sampling"
    known(f"{where}.model", ps["model"], scfg["models"], "model")
    for name, run in ps["runs"].items():
        known(f"{where}.runs.{name}", run, scfg["runs"], "run")
        if scfg["runs"][run]["model"] != ps["model"]:
            raise ConfigError(
                f"config key {where}.runs.{name}: run {run!r} trains {scfg['runs'][run]['model']!r}, not {ps['model']!r}"
            )
    for bench in ps["benchmarks"]:
        known(f"{where}.benchmarks", bench, scfg["data"]["benchmarks"], "benchmark")
    for bench in ps["sweeps"].get("benchmarks", []):  # a sweep point answers some of the study's benchmarks
        known(f"{where}.sweeps.benchmarks", bench, ps["benchmarks"], "benchmark", "the study's benchmarks")
    if max(ps["pass_k"]) > ps["n"]:
        raise ConfigError(
            f"config key {where}.pass_k: pass@{max(ps['pass_k'])} needs at least that many answers per problem (n is {ps['n']})"
        )
