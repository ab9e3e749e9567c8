"""Preflight: every paper-scale GPU job checked by verl's own code, as far as it runs without a GPU.

A booking of GPU nodes is lost to a job that dies at start. Before any GPU job, for each run:

* **launch** (plan time, nothing downloaded): the exact command the job runs is composed against
  verl's Hydra config and passed to ``verl.utils.config.validate_config``, as ``main_ppo`` does;
  the reward is loaded by verl's own loader (``get_custom_reward_fn``) and scores a right and a
  wrong answer; the loss plugin is imported by verl's ``import_external_libs`` and the configured
  loss is called with the actor config verl builds (``omega_conf_to_dataclass``); the token budget
  of a micro-batch holds prompt + response; no setting verl would accept and then ignore
  (``ignored_settings``), and the group filter bounded. PRIME commands go through verl 0.4.1 (``prime_check``).
  These are ``verl.checks``.
* **model** (once downloaded): every vLLM engine the model will be started in (training rollout,
  evaluation, power sampling) fits its ``config.json`` and tokenizer: context, tensor-parallel
  size, prompt format (``prompt_format.engine_problems``). Each job's preflight checks its own
  engine: the run's (rollout), ``preflight_eval`` (evaluation), ``preflight_power``.
* **data** (once prepared, ``verl.checks``): verl's own ``HFModelConfig`` loads the model's tokenizer with the recorded
  template as a worker would, and the train and validation parquet go through verl's ``RLHFDataset``;
  validation ``data_source`` values must name the benchmarks (verl names its metrics after them).

Each check returns problems as sentences; none raises. ``python -m entropy_rl.paper.preflight`` runs
them for a whole scale of ``config.yaml``; the ``preflight`` rule runs them per run before its GPU job.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

from ..core import algorithms, atomic, logs, modules, paths
from ..core.run import Run
from ..core.scale import Scale, build
from . import launch, reward_launch
from .verl import checks


def bound_command(scale: Scale, run: str, results: str = paths.RESULTS) -> list[str]:
    return launch.bind(reward_launch.verl_command(scale, run), results)  # train.smk's command, bound


# ---- launch: plan time ------------------------------------------------------------------------


def launch_problems(scale: Scale, run: str, results: str = paths.RESULTS) -> list[str]:
    """The run's exact verl command through verl's validation, reward loader and loss plugin."""
    return command_launch_problems(scale.runs[run], bound_command(scale, run, results))


def command_launch_problems(run: Run, bound: list[str]) -> list[str]:
    prime = run.trainer == algorithms.PRIME
    return checks.prime_problems(run.id, bound) if prime else checks.command_problems(bound, run)


# Modules whose code the launch checks run (besides verl's): a change to one invalidates a passed check
# (launch_key). verl loads the plugin and the reward by name and PRIME's main is launched with -m, so every
# trainer's (launch.TRAINER_MODULES) is named here besides what this module imports.
LAUNCH_CODE = modules.closure(__name__, *(m for trainer in launch.TRAINER_MODULES.values() for m in trainer))


def launch_key(scale: Scale, run: str) -> str:
    """What a passed launch check depends on: the exact command, the verl versions it ran on, our code."""
    from importlib import metadata

    from .verl import prime_check

    digest = hashlib.sha256(
        json.dumps([reward_launch.verl_command(scale, run), metadata.version("verl"), prime_check.PRIME_VERL]).encode()
    )
    for name in LAUNCH_CODE:
        digest.update(name.encode() + b"\0" + modules.source(name).read_bytes())
    return digest.hexdigest()


def launch_problems_cached(scale: Scale, run: str, cache_dir: str | Path) -> list[str]:
    """``launch_problems``, skipped for a command that passed before with the same verl and code (a
    paper-scale plan would otherwise import verl and check every run at each invocation)."""
    passed = Path(cache_dir) / launch_key(scale, run)
    if passed.exists():
        return []
    problems = launch_problems(scale, run)
    if not problems:
        passed.parent.mkdir(parents=True, exist_ok=True)
        passed.write_text(f"{run}\n")
    return problems


# ---- model: once downloaded -------------------------------------------------------------------


# The engines a model is started in, by the job that starts it. Each job's preflight checks its own, from the resolved
# values only (the run's response cap, the evaluation's length), so a setting that changes no engine's values, or only
# another job's (eval.max_new_tokens: the evaluation's context), reruns no preflight of the job, nor the job after it.
ENGINE_KINDS = ("rollout", "evaluate", "power")


def run_engine(scale: Scale, run: str, kind: str) -> dict:
    """The vLLM engine one of a run's jobs starts: its ``rollout`` in training, or its ``evaluate``."""
    length = scale.runs[run].max_response_length if kind == "rollout" else scale.eval_max_new_tokens(run)
    return {
        "job": f"train {run} (rollout)" if kind == "rollout" else f"evaluate {run}",
        "tensor_parallel": scale.placement(run).tensor_parallel,  # the run's own: what its jobs start engines with
        "max_model_len": scale.config["data"]["max_prompt_length"] + length,
        "template": scale.model_of(run).chat_template,
    }


def power_engine(tensor_parallel: int, template: str, max_prompt_length: int, max_new_tokens: int) -> dict:
    """The vLLM engine power sampling starts its model in."""
    return {
        "job": "power_sample",
        "tensor_parallel": tensor_parallel,
        "template": template,
        "max_model_len": max_prompt_length + max_new_tokens + 1,
    }


def scoped_power_engine(scope: dict) -> dict:
    """``power_engine`` from the power preflight's scope (``pipeline.params.preflight_power_scope``)."""
    # The scope holds the engine's fields only, too few for a Scale: its text reruns the preflight, and every sampling
    # job after it, for no other field.
    power = scope["power_sampling"]
    entry = scope["models"][power["model"]]
    prompt = scope["data"]["max_prompt_length"]
    return power_engine(entry["tensor_parallel"], entry["chat_template"], prompt, power["max_new_tokens"])


def engines(scale: Scale, model: str, kinds=ENGINE_KINDS) -> list[dict]:
    """Every vLLM engine of ``kinds`` the model's jobs start: one rollout per run, evaluation, power sampling."""
    runs = sorted(r for r, v in scale.runs.items() if v.model == model)
    found = [run_engine(scale, run, kind) for run in runs for kind in ("rollout", "evaluate") if kind in kinds]
    power, entry = scale.config.get("power_sampling"), scale.models[model]
    if "power" in kinds and power and power["model"] == model:
        prompt = scale.config["data"]["max_prompt_length"]
        found.append(
            power_engine(entry.placement.tensor_parallel, entry.chat_template, prompt, power["max_new_tokens"])
        )
    return found


def engine_problems(model_dir: str | Path, engines_: list[dict], tokenizer_dir: str | Path | None = "") -> list[str]:
    """The downloaded model against each engine it will be started in (its tokenizer files are in ``model_dir``
    unless ``tokenizer_dir`` says otherwise; ``None`` skips the tokenizer checks)."""
    from . import prompt_format

    model_dir = Path(model_dir)
    try:
        hf_config = json.loads((model_dir / "config.json").read_text())
    except (OSError, ValueError) as error:
        return [checks.problem(f"{model_dir}/config.json", error)]
    problems = []
    for engine in engines_:
        found = prompt_format.engine_problems(
            hf_config,
            engine["tensor_parallel"],
            engine["max_model_len"],
            engine["template"],
            model_dir if tokenizer_dir == "" else tokenizer_dir,
        )
        problems += [f"{engine['job']}: {p}" for p in found if f"{engine['job']}: {p}" not in problems]
    return problems


def model_problems(
    scale: Scale, model: str, model_dir: str | Path, tokenizer_dir: str | Path | None = "", kinds=ENGINE_KINDS
) -> list[str]:
    """The downloaded model against every engine of ``kinds`` the scale starts it in."""
    return engine_problems(model_dir, engines(scale, model, kinds), tokenizer_dir)


# ---- one run, and the command line ------------------------------------------------------------


def stages(run: Run, results: str = paths.RESULTS) -> list[str]:
    """The parts of a run's preflight that what exists now allows: launch always, model and data once present."""
    model_dir = Path(paths.rooted(paths.MODEL_DIR, results, model=run.model))
    data = [
        Path(paths.rooted(paths.TRAIN_SET, results, train_set=run.train_data)),
        Path(paths.rooted(paths.VALIDATION_SET, results)),
    ]
    found = ["launch"]
    if (model_dir / "config.json").exists():
        found.append("model")
        if run.trainer != algorithms.PRIME and all(p.exists() for p in data):
            found.append("data")
    return found


def training_problems(
    run: Run, command: list[str], rollout: dict, benchmarks: list[str], results: str = paths.RESULTS
) -> list[str]:
    """Everything checkable for one run's training with what exists now (``stages``), from exactly what the training
    job runs: the run and its recorded command (train_verl's params), its rollout engine and the benchmarks it
    validates on."""
    present = stages(run, results)
    bound = launch.bind(command, results)
    problems = command_launch_problems(run, bound)
    if "model" in present:
        problems += engine_problems(Path(paths.rooted(paths.MODEL_DIR, results, model=run.model)), [rollout])
    if "data" in present and not problems:
        problems += checks.data_problems(checks.compose(bound[3:]), benchmarks)
    return problems


def run_problems(scale: Scale, run: str, results: str = paths.RESULTS, kinds=("rollout",)) -> list[str]:
    """``training_problems`` of a run of ``scale``, and with ``evaluate`` in ``kinds`` its evaluation's engine
    (which the ``preflight_eval`` rule checks apart)."""
    resolved = scale.runs[run]
    command = reward_launch.verl_command(scale, run)
    problems = training_problems(
        resolved, command, run_engine(scale, run, "rollout"), sorted(scale.benchmarks), results
    )
    if "evaluate" in kinds and "model" in stages(resolved, results):
        model_dir = Path(paths.rooted(paths.MODEL_DIR, results, model=resolved.model))
        problems += engine_problems(model_dir, [run_engine(scale, run, "evaluate")])
    return problems


def main(argv: list[str] | None = None) -> int:
    import yaml

    parser = argparse.ArgumentParser(prog="python -m entropy_rl.paper.preflight", description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="*", help="runs to check (default: every run of the scale)")
    parser.add_argument("--config", default="config.yaml")
    parser.add_argument("--scale", default="paper")
    parser.add_argument("--results", default=paths.RESULTS)
    args = parser.parse_args(argv)
    scale = build(args.scale, yaml.safe_load(Path(args.config).read_text())[args.scale])
    failed = 0
    for run in args.runs or sorted(scale.runs):
        start = time.perf_counter()
        problems = run_problems(scale, run, args.results, kinds=("rollout", "evaluate"))
        failed += bool(problems)
        checked = ", ".join(stages(scale.runs[run], args.results))
        print(f"{'FAIL' if problems else 'ok  '} {run} ({checked}; {time.perf_counter() - start:.1f} s)")
        for p in problems:
            print(f"     - {p}")
    print(f"preflight: {failed} of {len(args.runs or scale.runs)} runs with problems")
    return 1 if failed else 0


def preflight_main(snakemake) -> None:
    """The preflight rules' job, by rule: a run's training (its command, the rollout engine, the data), the engine of a
    run's evaluation, or the power study's model against its engines. Fails with every problem, one line each."""
    log = logs.setup(snakemake.log[0])
    p = snakemake.params
    run = snakemake.wildcards.get("run")
    if snakemake.rule == "preflight":
        what = run
        problems = training_problems(Run.from_params(p.spec), p.command, p.rollout, p.benchmarks, paths.RESULTS)
    elif snakemake.rule == "preflight_eval":
        what, problems = f"{run}'s evaluation", engine_problems(snakemake.input.model, p.engines)
    else:
        what, problems = "power sampling", engine_problems(snakemake.input.model, [scoped_power_engine(p.scope)])
    for problem in problems:
        log.error("%s: %s", what, problem)
    if problems:
        sys.exit(f"preflight of {what} found {len(problems)} problem(s):\n" + "\n".join(f"  - {x}" for x in problems))
    atomic.write_text(snakemake.output[0], f"preflight of {what}: no problem found\n")
    log.info("preflight of %s: no problem found", what)


if __name__ == "__main__":
    sys.exit(main())
